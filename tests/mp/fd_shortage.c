/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A shortage of this process's own is its own: it never kills a peer. Rank 0
 * runs out of file descriptors (RLIMIT_NOFILE lowered to its lowest free
 * one) after its endpoint is made and before it has sent rank 1 anything,
 * so that first contact meets EMFILE where it needs a descriptor.
 *
 * Proves: the call that met the shortage answers a local, retryable status
 * (FLIT_ERR_SYSTEM or FLIT_ERR_NO_MEMORY; with --expect-local it must: the
 * shared-memory transport opens the peer's file then), never
 * FLIT_ERR_PEER_DOWN, twice; neither side ever hears of a peer down; once the
 * limit is raised the same peer answers, and every pair talks both ways.
 * A barrier that meets the shortage part-way (3 ranks or more) fails the
 * same way, and the next flit_barrier completes it with every rank; so
 * does flit_ep_reserve_handlers.
 * --min-datagram N: the path to rank 1 carries datagrams above N bytes
 * afterwards (UDP: the shortage left no lasting mark on its route's MTU).
 * Each rank prints "fd_shortage: rank R OK".
 */
#include <sys/resource.h>

#include "mp.h"

enum { H_PING = 1, H_PONG = 2 };

static unsigned pings, pongs, downs;

static void on_ping(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    pings++;
    CHECK_OK(flit_am_reply_short(token, flit_handler(H_PONG), NULL, 0));
}

static void on_pong(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    pongs++;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    fprintf(stderr, "fd_shortage: rank %u reported down: %s\n", peer.idx,
            flit_status_name(reason));
    downs++;
}

static void check_up(flit_ep_t *ep, uint32_t peer)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(ep, flit_rank(peer), &info));
    if (info.down)
        FAIL("rank %u is marked down", peer);
    CHECK(downs == 0);
}

/* RLIMIT_NOFILE at the lowest free descriptor: the next open is EMFILE. */
static void run_out(struct rlimit *old)
{
    CHECK(getrlimit(RLIMIT_NOFILE, old) == 0);
    int lowest = dup(0);
    CHECK(lowest >= 0);
    close(lowest);
    struct rlimit none = {.rlim_cur = (rlim_t)lowest, .rlim_max = old->rlim_max};
    CHECK(setrlimit(RLIMIT_NOFILE, &none) == 0);
    CHECK(dup(0) < 0);
}

/* Rank 0's first contact with rank 1 under the shortage, then without. */
static void short_then_fine(flit_ep_t *ep, bool expect_local)
{
    struct rlimit old;
    run_out(&old);
    for (int i = 0; i < 2; i++) {
        flit_status st =
            flit_am_short(ep, flit_rank(1), flit_handler(H_PING), NULL, 0, 0);
        if (st == FLIT_OK) {
            CHECK(!expect_local);
            break; /* this transport needed no descriptor: the ping is on its way */
        }
        if (st != FLIT_ERR_SYSTEM && st != FLIT_ERR_NO_MEMORY)
            FAIL("first contact under EMFILE answered %s, not a local error",
                 flit_status_name(st));
        CHECK_OK(flit_poll(ep)); /* peers are checked: nobody may be blamed */
        check_up(ep, 1);
        if (i == 1) {
            CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
            CHECK_OK(flit_am_short(ep, flit_rank(1), flit_handler(H_PING), NULL, 0, 0));
        }
    }
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    MP_WAIT(ep, pongs == 1);
    check_up(ep, 1);
}

/*
 * A barrier under the shortage: its first round goes to rank 1 (in contact
 * already), its second to rank 2 (first contact: EMFILE). The call fails
 * locally part-way, and the next one goes on where it stopped; restarting
 * would send rank 1 a second message of the first round and wait for a
 * second one from rank 2, which never comes.
 */
static void barrier_short(flit_ep_t *ep, bool expect_local)
{
    struct rlimit old;
    run_out(&old);
    flit_status st = flit_barrier(ep);
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    if (st == FLIT_OK) {
        CHECK(!expect_local);
        return;
    }
    if (st != FLIT_ERR_SYSTEM && st != FLIT_ERR_NO_MEMORY)
        FAIL("a barrier under EMFILE answered %s, not a local error",
             flit_status_name(st));
    CHECK(downs == 0);
    CHECK_OK(flit_barrier(ep));
}

static void on_note(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)token, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
}

/*
 * The same for the collective under flit_ep_reserve_handlers (a maximum
 * over every rank, rounds as the barrier's), on an endpoint of its own where
 * rank 0 has reached rank 1 only: it fails locally in its second round, and
 * the next call completes it, where a new one would wait for ever.
 */
static void reserve_short(flit_ep_t *ep2, uint32_t me, bool expect_local)
{
    flit_handler_t first = {0};
    if (me != 0) {
        CHECK_OK(flit_ep_reserve_handlers(ep2, 2, &first));
        return;
    }
    CHECK_OK(flit_am_short(ep2, flit_rank(1), flit_handler(H_PING), NULL, 0, 0));
    struct rlimit old;
    run_out(&old);
    flit_status st = flit_ep_reserve_handlers(ep2, 2, &first);
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
    if (st == FLIT_OK) {
        CHECK(!expect_local);
        return;
    }
    if (st != FLIT_ERR_SYSTEM && st != FLIT_ERR_NO_MEMORY)
        FAIL("reserving handlers under EMFILE answered %s, not a local error",
             flit_status_name(st));
    CHECK_OK(flit_ep_reserve_handlers(ep2, 2, &first));
}

int main(int argc, char **argv)
{
    bool expect_local = mp_arg_flag(argc, argv, "--expect-local");
    uint64_t min_datagram = mp_arg_u64(argc, argv, "--min-datagram", 0);
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    CHECK(n >= 2);
    flit_ep_t *ep = NULL;
    CHECK_OK(flit_ep_create(NULL, &ep));
    flit_ep_t *ep2 = NULL; /* nothing goes on it before reserve_short */
    CHECK_OK(flit_ep_create(NULL, &ep2));
    CHECK_OK(flit_am_register(ep2, flit_handler(H_PING), on_note, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_PING), on_ping, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_PONG), on_pong, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    /* Nothing is sent before rank 0's first contact with rank 1. */
    if (me == 0)
        short_then_fine(ep, expect_local);
    else if (me == 1)
        MP_WAIT(ep, pings == 1);
    pings = pongs = 0; /* before the barrier: a peer's ping may come in it */
    if (me == 0)
        barrier_short(ep, expect_local && n >= 3);
    else
        CHECK_OK(flit_barrier(ep));
    for (uint32_t r = 0; r < n; r++)
        if (r != me)
            CHECK_OK(flit_am_short(ep, flit_rank(r), flit_handler(H_PING), NULL, 0, 0));
    MP_WAIT(ep, pongs == n - 1 && pings == n - 1);
    CHECK_OK(flit_barrier(ep));
    for (uint32_t r = 0; r < n; r++)
        if (r != me)
            check_up(ep, r);
    if (me == 0 && min_datagram) {
        flit_peer_info_t info = {.struct_size = sizeof info};
        CHECK_OK(flit_ep_peer_info(ep, flit_rank(1), &info));
        if (info.datagram <= min_datagram)
            FAIL("datagrams to rank 1 carry %zu bytes, not more than %llu", info.datagram,
                 (unsigned long long)min_datagram);
    }
    reserve_short(ep2, me, expect_local && n >= 3);
    CHECK_OK(flit_finalize());
    printf("fd_shortage: rank %u OK\n", me);
    return 0;
}
