/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided communication with a rank that dies. Three ranks; rank 2 is the
 * victim:
 *
 *  - rank 0 exports a region; rank 2 imports it and, when it reaches it
 *    directly (shared memory), raises its busy mark on it the way an access
 *    does, then dies without clearing it (a process killed in the middle of
 *    a copy). Rank 0's flit_rma_unexport must still return, once the death
 *    is known, rather than wait for the mark for ever;
 *  - rank 2 exports a region that rank 1 imports. Rank 2 stops making
 *    progress and tells rank 1 so (a message); then rank 1 starts a get
 *    from it and tells rank 2 that the get is out (a byte through a FIFO:
 *    rank 2 no longer runs flit), and rank 2 dies. When the get travels as
 *    packets (--packets) nobody answers it, and it must complete with
 *    FLIT_ERR_PEER_DOWN once rank 2 is known dead. Then every call towards
 *    rank 2 answers FLIT_ERR_PEER_DOWN (put, get, import, flush), while
 *    rank 0's region is still reached normally.
 *
 * Each survivor prints "rma_down: rank R OK". Run under `flitrun
 * --keep-going` (flitrun exits 137 naming rank 2); over UDP with
 * FLIT_PEER_TIMEOUT, the channel's give-up is the only news.
 */
#include <errno.h>
#include <fcntl.h>
#include <flit/rma.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>

#include "mp.h"
#include "rma/rma.h"

enum { H_ID = 1, H_STOPPED = 2 };
#define VICTIM 2u

static struct {
    flit_ep_t *ep;
    uint32_t me;
    uint64_t ids[3];
    int down_calls;
    bool packets;
    bool victim_stopped; /* rank 2 makes no more progress */
} g;

static void on_id(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                  void *user)
{
    (void)buf, (void)n, (void)user;
    CHECK(na == 2);
    g.ids[flit_token_rank(t).idx] = (uint64_t)a[1] << 32 | a[0];
}

static void on_stopped(flit_token_t *t, void *buf, size_t n, const uint32_t *a,
                       unsigned na, void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.victim_stopped = true;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status why, void *user)
{
    (void)ep, (void)why, (void)user;
    /* The victim's death, once; the other survivor may finish and leave
       first (no barrier with a dead rank), which says nothing here. */
    if (peer.idx == VICTIM)
        g.down_calls++;
}

static void publish(flit_rma_region_t *reg)
{
    uint64_t id = flit_rma_region_id(reg);
    uint32_t a[2] = {(uint32_t)id, (uint32_t)(id >> 32)};
    for (uint32_t r = 0; r < 3; r++)
        CHECK_OK(flit_am_short(g.ep, flit_rank(r), flit_handler(H_ID), a, 2, 0));
}

/* The FIFO through which rank 1 tells rank 2, which no longer makes
   progress on flit, that its get is out: named after the job. */
static void get_out_path(char *buf, size_t len)
{
    const char *tmp = getenv("TMPDIR"), *job = getenv("FLIT_JOB_ID");
    snprintf(buf, len, "%s/flit-rma_down-%s", tmp && *tmp ? tmp : "/tmp",
             job ? job : "single");
}

/* Rank 2: the FIFO, open before rank 1 may write to it. Read and write, so
   that it never reads as ended while rank 1 has not opened it yet. */
static int get_out_open(void)
{
    char path[4096];
    get_out_path(path, sizeof path);
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0);
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    CHECK(fd >= 0);
    return fd;
}

static void get_out_wait(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, (int)(MP_WAIT_LIMIT_S * 1000))) < 0 && errno == EINTR)
        ;
    char b;
    if (n != 1 || read(fd, &b, 1) != 1)
        FAIL("rank 1 did not say within %.0f s that its get is out", MP_WAIT_LIMIT_S);
    close(fd);
}

/* Rank 1. */
static void get_out_tell(void)
{
    char path[4096];
    get_out_path(path, sizeof path);
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    CHECK(fd >= 0 && write(fd, "g", 1) == 1);
    close(fd);
    unlink(path);
}

static void victim(void)
{
    static uint8_t mine[1 << 16];
    flit_rma_region_t *reg;
    CHECK_OK(flit_rma_export(g.ep, mine, sizeof mine, FL_RMA_ACCESS_ALL, NULL, 0, &reg));
    publish(reg);
    MP_WAIT(g.ep, g.ids[0] != 0);
    flit_rma_remote_t *r;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), g.ids[0], &r));
    struct flit_rma_remote *in = fl_rma_remote_of(r);
    if (in->path == FL_RMA_PATH_MAP || in->path == FL_RMA_PATH_TP)
        atomic_store(in->busy, (uint64_t)(uint32_t)in->id + 1); /* "copying" */
    CHECK_OK(flit_barrier(g.ep));
    /* No more progress from here: requests to this rank stay unanswered.
       Rank 1 sends none before it hears this. */
    int fd = get_out_open();
    uint32_t none[1] = {0};
    CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_STOPPED), none, 1, 0));
    get_out_wait(fd);
    fflush(NULL);
    raise(SIGKILL);
}

static void rank0(void)
{
    uint8_t *mem;
    flit_rma_region_t *reg;
    CHECK_OK(flit_rma_alloc(g.ep, 1 << 16, (void **)&mem));
    CHECK_OK(flit_rma_export(g.ep, mem, 1 << 16, FL_RMA_ACCESS_ALL, NULL, 0, &reg));
    publish(reg);
    CHECK_OK(flit_barrier(g.ep));
    /* Rank 2 may hold its busy mark on the region: this waits until its
       death is known (a hang here is the failure flitrun reports). */
    double t0 = mp_now();
    CHECK_OK(flit_rma_unexport(reg));
    double took = mp_now() - t0;
    MP_WAIT(g.ep, g.down_calls == 1);
    printf("rma_down: rank 0 OK (unexport took %.2f s)\n", took);
}

static void rank1(void)
{
    MP_WAIT(g.ep, g.ids[0] != 0 && g.ids[VICTIM] != 0);
    flit_rma_remote_t *r0, *r2;
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), g.ids[0], &r0));
    CHECK_OK(flit_rma_import(g.ep, flit_rank(VICTIM), g.ids[VICTIM], &r2));
    CHECK_OK(flit_barrier(g.ep));
    MP_WAIT(g.ep, g.victim_stopped);
    uint8_t buf[4096];
    flit_rma_op_t *op;
    flit_status st = flit_rma_get(r2, 0, buf, sizeof buf, 0, &op);
    get_out_tell(); /* rank 2 dies now */
    if (st == FLIT_OK)
        st = flit_rma_wait(op, -1);
    if (g.packets)
        CHECK_ST(st, FLIT_ERR_PEER_DOWN); /* it was never answered */
    else if (st != FLIT_OK)
        CHECK_ST(st, FLIT_ERR_PEER_DOWN);
    if (!g.packets) {
        /* Cross-memory attach: the kernel tells of the death before any
           periodic check does (these gets make no progress). Once one
           call has seen it, every path must know it at once. */
        double end = mp_now() + MP_WAIT_LIMIT_S;
        while ((st = flit_rma_get(r2, 0, buf, 8, 0, NULL)) == FLIT_OK && mp_now() < end)
            sched_yield();
        CHECK_ST(st, FLIT_ERR_PEER_DOWN);
        flit_peer_info_t info = {.struct_size = sizeof info};
        CHECK_OK(flit_ep_peer_info(g.ep, flit_rank(VICTIM), &info));
        CHECK(info.down);
        CHECK_ST(flit_rma_flush(g.ep, flit_rank(VICTIM)), FLIT_ERR_PEER_DOWN);
        CHECK_ST(flit_rma_put(r2, 0, buf, 8, 0, NULL), FLIT_ERR_PEER_DOWN);
    }
    MP_WAIT(g.ep, g.down_calls == 1);
    CHECK_ST(flit_rma_put(r2, 0, buf, 8, 0, NULL), FLIT_ERR_PEER_DOWN);
    CHECK_ST(flit_rma_put(r2, 0, buf, 8, FLIT_RMA_REMOTE_DONE, &op), FLIT_ERR_PEER_DOWN);
    CHECK_ST(flit_rma_get(r2, 0, buf, 8, 0, NULL), FLIT_ERR_PEER_DOWN);
    flit_rma_remote_t *again;
    CHECK_ST(flit_rma_import(g.ep, flit_rank(VICTIM), g.ids[VICTIM], &again),
             FLIT_ERR_PEER_DOWN);
    CHECK_ST(flit_rma_flush(g.ep, flit_rank(VICTIM)), FLIT_ERR_PEER_DOWN);
    CHECK_OK(flit_rma_release(r2));
    /* Rank 0 is alive: its answer is an answer (it unexports its region
       at about this time). */
    st = flit_rma_put(r0, 0, buf, 8, FLIT_RMA_REMOTE_DONE, NULL);
    if (st != FLIT_OK)
        CHECK_ST(st, FLIT_ERR_REVOKED);
    CHECK_OK(flit_rma_release(r0));
    printf("rma_down: rank 1 OK\n");
}

int main(int argc, char **argv)
{
    CHECK_OK(flit_init(NULL));
    CHECK(flit_job_size() == 3);
    g.me = flit_job_rank().idx;
    g.packets = mp_arg_flag(argc, argv, "--packets");
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ID), on_id, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_STOPPED), on_stopped, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(g.ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == VICTIM)
        victim();
    else if (g.me == 0)
        rank0();
    else
        rank1();
    fflush(stdout);
    CHECK_ST(flit_barrier(g.ep), FLIT_ERR_PEER_DOWN);
    CHECK_OK(flit_finalize());
    return 0;
}
