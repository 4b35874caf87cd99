/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank dies under plain flitrun (no --keep-going). Three ranks stream
 * requests to each other; once rank 1 has handled --kill-after requests from
 * each of the others it raises SIGKILL on itself. The other ranks go on with
 * their traffic and never finish on their own (they give up after
 * --give-up seconds with status 3): the test is that flitrun notices,
 * names rank 1 and the signal, stops the others and exits 137 promptly.
 *
 * Each rank writes its pid to DIR/rank.R (--pid-dir DIR) so that the wrapper
 * (expect_job.cmake) can check that no process is left behind.
 */
#include <signal.h>

#include "mp.h"

enum { H_REQ = 1, H_REP = 2 };

#define VICTIM 1u

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    uint64_t rx[64], rep[64], tx[64];
} g;

static void on_req(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    (void)buf;
    (void)nbytes;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(src < g.n && nargs == 1 && args[0] == (uint32_t)g.rx[src]);
    g.rx[src]++;
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_REP), args, 1));
}

static void on_rep(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)user;
    (void)buf;
    (void)nbytes;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(src < g.n && nargs == 1 && args[0] == (uint32_t)g.rep[src]);
    g.rep[src]++;
}

/* Requests to the dead rank come back: expected here. */
static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep;
    (void)user;
    CHECK(r->reason == FLIT_ERR_PEER_DOWN && r->peer.idx == VICTIM);
}

static void write_pid(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank.%u", dir, g.me);
    FILE *f = fopen(path, "w");
    if (!f)
        FAIL("cannot write %s", path);
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

static int others_done(uint64_t n)
{
    for (uint32_t r = 0; r < g.n; r++)
        if (r != g.me && g.rx[r] < n)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    uint64_t kill_after = mp_arg_u64(argc, argv, "--kill-after", 500);
    double give_up = (double)mp_arg_u64(argc, argv, "--give-up", 60);
    const char *dir = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--pid-dir") == 0)
            dir = argv[i + 1];
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    CHECK(g.n >= 2 && g.n <= 64);
    if (dir)
        write_pid(dir);
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_set_returned_handler(g.ep, on_returned, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_req, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_rep, NULL));
    CHECK_OK(flit_barrier(g.ep));

    if (g.me == VICTIM) {
        MP_WAIT(g.ep, others_done(kill_after));
        printf("kill_job: rank %u raising SIGKILL\n", g.me);
        fflush(stdout);
        raise(SIGKILL);
    }
    /* Traffic until flitrun stops us; a bounded "forever". */
    double end = mp_now() + give_up;
    for (uint64_t iter = 1; mp_now() < end; iter++) {
        for (uint32_t r = 0; r < g.n; r++) {
            if (r == g.me)
                continue;
            uint32_t a[1] = {(uint32_t)g.tx[r]};
            flit_status st =
                flit_am_short(g.ep, flit_rank(r), flit_handler(H_REQ), a, 1, 0);
            if (st == FLIT_OK)
                g.tx[r]++;
            else if (st != FLIT_ERR_PEER_DOWN)
                FAIL("request to rank %u: %s", r, flit_status_name(st));
        }
        CHECK_OK(flit_poll(g.ep));
        if (iter % 64 == 0) {
            flit_status w = flit_wait(g.ep, 1000); /* not a pure spin */
            CHECK(w == FLIT_OK || w == FLIT_ERR_TIMEOUT);
        }
    }
    fprintf(stderr,
            "kill_job: rank %u was not stopped within %.0f s of rank %u's "
            "death\n",
            g.me, give_up, VICTIM);
    return 3;
}
