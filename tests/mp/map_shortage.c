/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiver's side of a shortage: a rank that cannot map the rings a new
 * sender announced (its address space is full: RLIMIT_AS lowered to what it
 * uses) does not blame the sender. Three ranks on shared memory:
 *
 *   0 -> 1 hello, 1 -> 0 pong    pair 0-1 set up both ways
 *   1: RLIMIT_AS at its size     no mapping of a ring block fits
 *   1 -> 0 -> 2 go               through pairs already set up
 *   2 -> 1 ping, 2 -> 0 -> 1 sent  rank 2's first contact with rank 1
 *
 * Proves: once rank 1 knows the ping was sent, it has seen rank 2's
 * announcement, cannot map its block, and neither delivers the ping nor
 * reports rank 2 down, however often it polls; with the limit back the ping
 * is delivered, answered, and every rank finishes with nobody down. Skips
 * under sanitizers (their allocators map memory as they go). Each rank
 * prints "map_shortage: rank R OK".
 */
#include <sys/mman.h>
#include <sys/resource.h>

#include "mp.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

enum { H_HELLO = 1, H_PONG, H_GO, H_PING, H_SENT };

static unsigned got[H_SENT + 1], downs;

static void on_msg(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)args, (void)nargs;
    unsigned h = (unsigned)(uintptr_t)user;
    got[h]++;
    if (h == H_HELLO || h == H_PING)
        CHECK_OK(flit_am_reply_short(token, flit_handler(H_PONG), NULL, 0));
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    fprintf(stderr, "map_shortage: rank %u reported down: %s\n", peer.idx,
            flit_status_name(reason));
    downs++;
}

static void send_to(flit_ep_t *ep, uint32_t r, unsigned h)
{
    CHECK_OK(flit_am_short(ep, flit_rank(r), flit_handler(h), NULL, 0, 0));
}

/* RLIMIT_AS at what the process maps now, and a little for its heap. */
static void fill_address_space(struct rlimit *old)
{
    CHECK(getrlimit(RLIMIT_AS, old) == 0);
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f && fscanf(f, "%ld", &pages) == 1);
    fclose(f);
    rlim_t now = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
    struct rlimit lim = {.rlim_cur = now + (256u << 10), .rlim_max = old->rlim_max};
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
    void *p = mmap(NULL, 1u << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p == MAP_FAILED); /* a ring block (>= 512 KiB) cannot be mapped */
}

static void rank1(flit_ep_t *ep)
{
    MP_WAIT(ep, got[H_HELLO] == 1);
    struct rlimit old;
    fill_address_space(&old);
    send_to(ep, 0, H_GO);
    MP_WAIT(ep, got[H_SENT] == 1);
    for (int i = 0; i < 200; i++) { /* polls, and checks of its peers */
        flit_status st = flit_wait(ep, 1000);
        CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
        CHECK(got[H_PING] == 0 && downs == 0);
    }
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(ep, flit_rank(2), &info));
    CHECK(!info.down);
    CHECK(setrlimit(RLIMIT_AS, &old) == 0);
    MP_WAIT(ep, got[H_PING] == 1);
}

int main(void)
{
#ifdef UNDER_SANITIZER
    printf("SKIP: RLIMIT_AS and a sanitizer's allocator do not mix\n");
    return TEST_SKIP;
#endif
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    CHECK(n == 3);
    flit_ep_t *ep = NULL;
    CHECK_OK(flit_ep_create(NULL, &ep));
    for (unsigned h = H_HELLO; h <= H_SENT; h++)
        CHECK_OK(flit_am_register(ep, flit_handler(h), on_msg, (void *)(uintptr_t)h));
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(ep, flit_rank((me + 1) % n), &info));
    if (strcmp(info.transport, "shm") != 0) {
        printf("SKIP: not on shared memory (%s)\n", info.transport);
        CHECK_OK(flit_finalize());
        return TEST_SKIP;
    }
    if (me == 0) {
        send_to(ep, 1, H_HELLO);
        MP_WAIT(ep, got[H_PONG] == 1 && got[H_GO] == 1);
        send_to(ep, 2, H_GO);
        MP_WAIT(ep, got[H_SENT] == 1);
        send_to(ep, 1, H_SENT);
    } else if (me == 1) {
        rank1(ep);
    } else {
        MP_WAIT(ep, got[H_GO] == 1);
        send_to(ep, 1, H_PING);
        send_to(ep, 0, H_SENT);
        MP_WAIT(ep, got[H_PONG] == 1);
    }
    CHECK_OK(flit_barrier(ep));
    for (uint32_t r = 0; r < n; r++) {
        CHECK_OK(flit_ep_peer_info(ep, flit_rank(r), &info));
        CHECK(!info.down);
    }
    CHECK(downs == 0);
    CHECK_OK(flit_finalize());
    printf("map_shortage: rank %u OK\n", me);
    return 0;
}
