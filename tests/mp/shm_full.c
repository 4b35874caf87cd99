/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A full /dev/shm is an error at the call that wanted the room, never a
 * SIGBUS later. Run by shm_full.sh in a mount namespace of its own with a
 * small tmpfs on /dev/shm (--shm-mb, its size).
 *
 * Proves, on rank 0 (rank 1 waits for its ping and answers it):
 *  - flit_ep_create with a segment larger than /dev/shm answers
 *    FLIT_ERR_NO_MEMORY on every rank (rank 0's, the others' from rank 0's
 *    status), and leaves nothing there; so does one with no segment while
 *    /dev/shm is full (its ring file's header; over UDP that one succeeds);
 *    an endpoint whose segment fits is made and its whole segment can be
 *    written;
 *  - with /dev/shm filled to its last page (a file of our own, unlinked),
 *    where shared memory serves rank 1: flit_rma_alloc and the first
 *    flit_rma_export answer FLIT_ERR_NO_MEMORY, and so does first contact
 *    with rank 1, twice (retryable), with rank 1 not down; over UDP no
 *    transport offers memory peers map, so flit_rma_alloc takes private
 *    pages and succeeds, /dev/shm full or not;
 *  - with the room given back, all of them succeed: the exported block is
 *    written whole, rank 1 answers the ping, every pair talks both ways;
 *  - once rank 0's rings in rank 1's file hold a few pages (the first
 *    contact takes only those), /dev/shm filled again: 64 medium messages
 *    of 3,000 bytes (a ring's worth and more) still go, the ring wrapping
 *    within the pages it has, and one of FLIT_AM_MAX_MEDIUM bytes, larger
 *    than those, answers FLIT_ERR_NO_MEMORY with rank 1 not down (over UDP
 *    it goes); with the room given back it goes. Rank 1 checks every byte
 *    and the order of all of them.
 * Each rank prints "shm_full: rank R OK".
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/statvfs.h>

#include "flit/rma.h"
#include "mp.h"

enum { H_PING = 1, H_PONG = 2, H_MED = 3 };
enum { SMALLS = 64, SMALL_LEN = 3000 };

static unsigned pings, pongs, meds;

/* The n-th medium message of the growth phase: its length and bytes. */
static size_t med_len(unsigned n)
{
    return n < SMALLS ? SMALL_LEN : FLIT_AM_MAX_MEDIUM;
}

static void on_med(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)token, (void)user;
    CHECK(nargs == 1 && args[0] == meds); /* in order, none twice */
    CHECK(nbytes == med_len(meds));
    CHECK(mp_pattern_check(buf, nbytes, 0x3000u + meds) == nbytes);
    meds++;
}

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

static flit_ep_t *make_ep(size_t segment, flit_status want)
{
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT, .segment_size = segment};
    flit_ep_t *ep = NULL;
    CHECK_ST(flit_ep_create(&p, &ep), want);
    return ep;
}

/* Takes every free page of /dev/shm; returns the file (already unlinked:
   its pages go back when it is closed, or when we die). */
static int fill_shm(void)
{
    char name[64];
    snprintf(name, sizeof name, "/dev/shm/flit-test-fill-%d", (int)getpid());
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(unlink(name) == 0);
    off_t size = 0;
    for (int i = 0; i < 8; i++) { /* what is free, until nothing is */
        struct statvfs sv;
        CHECK(statvfs("/dev/shm", &sv) == 0);
        off_t free_bytes = (off_t)sv.f_bavail * (off_t)sv.f_frsize;
        if (free_bytes == 0)
            break;
        int err = posix_fallocate(fd, size, free_bytes);
        CHECK(err == 0 || err == ENOSPC); /* ENOSPC: taken meanwhile, look again */
        size += err == 0 ? free_bytes : 0;
    }
    CHECK(posix_fallocate(fd, size, 4096) == ENOSPC); /* truly full */
    return fd;
}

static bool on_shm(flit_ep_t *ep, uint32_t peer)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(ep, flit_rank(peer), &info));
    CHECK(!info.down);
    return strcmp(info.transport, "shm") == 0;
}

static void full_then_fine(flit_ep_t *ep)
{
    void *block = NULL;
    flit_rma_region_t *reg = NULL;
    static uint8_t private_mem[4096];
    bool shm = on_shm(ep, 1);
    int fill = fill_shm();
    CHECK_ST(flit_rma_alloc(ep, 1 << 16, &block), shm ? FLIT_ERR_NO_MEMORY : FLIT_OK);
    if (!shm) { /* private pages: every one is there */
        memset(block, 0x5a, 1 << 16);
        CHECK_OK(flit_rma_free(ep, block));
    }
    if (shm) /* the control file peers on this host map */
        CHECK_ST(flit_rma_export(ep, private_mem, sizeof private_mem, FLIT_RMA_READ, NULL,
                                 0, &reg),
                 FLIT_ERR_NO_MEMORY);
    for (int i = 0; shm && i < 2; i++) {
        CHECK_ST(flit_am_short(ep, flit_rank(1), flit_handler(H_PING), NULL, 0, 0),
                 FLIT_ERR_NO_MEMORY);
        CHECK_OK(flit_poll(ep)); /* peers are checked: nobody may be blamed */
        CHECK(on_shm(ep, 1));
    }
    close(fill);
    CHECK_OK(flit_rma_alloc(ep, 1 << 16, &block));
    memset(block, 0x5a, 1 << 16); /* every page is there */
    CHECK_OK(flit_rma_export(ep, block, 1 << 16, FLIT_RMA_READ, NULL, 0, &reg));
    CHECK_OK(flit_am_short(ep, flit_rank(1), flit_handler(H_PING), NULL, 0, 0));
    MP_WAIT(ep, pongs == 1);
    CHECK_OK(flit_rma_unexport(reg));
    CHECK_OK(flit_rma_free(ep, block));
}

static void send_med(flit_ep_t *ep, unsigned n, flit_status want)
{
    static uint8_t buf[FLIT_AM_MAX_MEDIUM];
    uint32_t arg = n;
    mp_pattern_fill(buf, med_len(n), 0x3000u + n);
    CHECK_ST(flit_am_medium(ep, flit_rank(1), flit_handler(H_MED), buf, med_len(n), &arg,
                            1, 0),
             want);
}

/* Rank 0's rings in rank 1's file grow as they fill: with /dev/shm full,
   small packets wrap within what they have, a large one fails cleanly. */
static void grow_while_full(flit_ep_t *ep)
{
    bool shm = on_shm(ep, 1);
    int fill = fill_shm();
    for (unsigned i = 0; i < SMALLS; i++)
        send_med(ep, i, FLIT_OK);
    send_med(ep, SMALLS, shm ? FLIT_ERR_NO_MEMORY : FLIT_OK);
    CHECK_OK(flit_poll(ep));
    CHECK(on_shm(ep, 1) == shm); /* and not down */
    close(fill);
    if (shm)
        send_med(ep, SMALLS, FLIT_OK);
}

/*
 * An endpoint with no segment while /dev/shm is full: on shared memory its
 * ring file's header has no room, and creation fails on every rank. The
 * ranks keep in step on an endpoint whose pairs a barrier set up before the
 * filling (its barriers then need no new room).
 */
static void ring_file_full(uint32_t me)
{
    flit_ep_t *sync = make_ep(0, FLIT_OK);
    CHECK_OK(flit_barrier(sync));
    bool shm = on_shm(sync, me == 0 ? 1 : 0);
    int fill = me == 0 ? fill_shm() : -1;
    CHECK_OK(flit_barrier(sync));
    flit_ep_t *ep = make_ep(0, shm ? FLIT_ERR_NO_MEMORY : FLIT_OK);
    if (ep)
        CHECK_OK(flit_ep_destroy(ep));
    if (fill >= 0)
        close(fill);
    CHECK_OK(flit_barrier(sync));
    CHECK_OK(flit_ep_destroy(sync));
}

int main(int argc, char **argv)
{
    uint64_t shm_mb = mp_arg_u64(argc, argv, "--shm-mb", 0);
    CHECK(shm_mb > 0);
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    CHECK(n >= 2);
    /* Every rank asks: with FLIT_SHM_BULK and peers' mappings, all segments
       of a host share /dev/shm. */
    make_ep((size_t)shm_mb << 21, FLIT_ERR_NO_MEMORY);
    ring_file_full(me);
    flit_ep_t *ep = make_ep(1 << 16, FLIT_OK);
    void *seg;
    size_t seg_size;
    CHECK_OK(flit_ep_segment(ep, &seg, &seg_size));
    memset(seg, 0xa5, seg_size);
    CHECK_OK(flit_am_register(ep, flit_handler(H_PING), on_ping, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_PONG), on_pong, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_MED), on_med, NULL));
    /* Nothing is sent before rank 0's first contact with rank 1. */
    if (me == 0) {
        full_then_fine(ep);
        grow_while_full(ep);
    } else if (me == 1) {
        MP_WAIT(ep, pings == 1 && meds == SMALLS + 1);
    }
    pings = pongs = 0; /* before the barrier: a peer's ping may come in it */
    CHECK_OK(flit_barrier(ep));
    for (uint32_t r = 0; r < n; r++)
        if (r != me)
            CHECK_OK(flit_am_short(ep, flit_rank(r), flit_handler(H_PING), NULL, 0, 0));
    MP_WAIT(ep, pongs == n - 1 && pings == n - 1);
    CHECK_OK(flit_barrier(ep));
    for (uint32_t r = 0; r < n; r++)
        if (r != me)
            (void)on_shm(ep, r);
    CHECK_OK(flit_finalize());
    printf("shm_full: rank %u OK\n", me);
    return 0;
}
