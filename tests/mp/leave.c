/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank that leaves the job early, and output written in pieces.
 *
 *   --at init      rank --who (1) returns 0 right after flit_init, before
 *                  flit_ep_create; the others call flit_ep_create, whose
 *                  exchange with the launcher cannot complete
 *   --at barrier   every rank creates an endpoint and passes a barrier;
 *                  then rank --who returns 0 without flit_finalize while the
 *                  others are in a second barrier
 *   --at never     rank --who returns 0 before flit_init
 *   --at killed    (2 ranks) after a barrier, rank --who stops flitrun
 *                  (SIGSTOP) and kills itself (SIGKILL); the other gets
 *                  FLIT_ERR_PEER_DOWN from a second barrier and returns 0
 *                  without flit_finalize (the job is broken), leaving a
 *                  child that wakes flitrun (SIGCONT) once it has exited.
 *                  flitrun so finds both ends in one turn: it must name
 *                  the kill, not blame the rank that saw it
 *   --pieces N     no leaving: every rank writes N lines to stdout and to
 *                  stderr one character at a time (no buffering), half of
 *                  each line before a barrier and half after, so that every
 *                  rank has half a line out while the others write theirs;
 *                  its last line has no newline
 *
 * The ranks that stay print what their call answered ("leave: rank R:
 * flit_ep_create: FLIT_ERR_PEER_DOWN") and exit 1 on an error, 0 if the
 * call succeeded (which it must not). Under plain flitrun the job must end
 * with status 1 naming rank --who; under --keep-going the others say which
 * error they got; under --allow-exit-without-finalize they wait until the
 * --timeout, and the dumps say which flit call each is in.
 *
 * Each rank writes its pid to DIR/rank.R (--pid-dir DIR) for expect_job.
 */
#include <errno.h>
#include <signal.h>

#include "mp.h"

static void write_pid(const char *dir, uint32_t me)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank.%u", dir, me);
    FILE *f = fopen(path, "w");
    if (!f)
        FAIL("cannot write %s", path);
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

/* This process's rank before flit_init, as flitrun, PMIx or Slurm say. */
static uint32_t launcher_rank(void)
{
    static const char *const vars[] = {"FLIT_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return (uint32_t)atoi(getenv(vars[i]));
    return 0;
}

/* What a rank that stays got from call: an error ends it with status 1. */
static int stayed(uint32_t me, const char *call, flit_status st)
{
    printf("leave: rank %u: %s: %s\n", me, call, flit_status_name(st));
    fflush(stdout);
    return st == FLIT_OK ? 0 : 1;
}

/* One character a write, so that nothing but flitrun can keep it whole. */
static void put_slowly(int fd, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (write(fd, s + i, 1) != 1)
            FAIL("write: lost output");
}

/*
 * Leaves a child that sends SIGCONT to launcher once this process has
 * exited: it waits for the end of a pipe whose writing end only this
 * process holds. A test's tool, not flit's.
 */
static void wake_after_exit(pid_t launcher)
{
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        char c;
        while (read(p[0], &c, 1) < 0 && errno == EINTR)
            ;
        kill(launcher, SIGCONT);
        _exit(0);
    }
    close(p[0]); /* p[1] closes when this process exits */
}

static int pieces(uint32_t me, unsigned lines)
{
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    for (unsigned i = 0; i < lines; i++) {
        char out[96], err[96];
        int no = snprintf(out, sizeof out, "piece %u of rank %u: %s\n", i, me,
                          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        int ne = snprintf(err, sizeof err, "spiece %u of rank %u: %s\n", i, me,
                          "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
        if (i + 1 == lines)
            no--; /* the last line without its newline: flitrun must end it */
        put_slowly(STDOUT_FILENO, out, (size_t)no / 2);
        put_slowly(STDERR_FILENO, err, (size_t)ne / 2);
        CHECK_OK(flit_barrier(ep)); /* every rank has half a line out */
        put_slowly(STDOUT_FILENO, out + no / 2, (size_t)(no - no / 2));
        put_slowly(STDERR_FILENO, err + ne / 2, (size_t)(ne - ne / 2));
        CHECK_OK(flit_barrier(ep));
    }
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}

int main(int argc, char **argv)
{
    const char *at = mp_arg_str(argc, argv, "--at", "init");
    const char *dir = mp_arg_str(argc, argv, "--pid-dir", NULL);
    uint32_t who = (uint32_t)mp_arg_u64(argc, argv, "--who", 1);
    unsigned lines = (unsigned)mp_arg_u64(argc, argv, "--pieces", 0);
    uint32_t me = launcher_rank();
    if (dir)
        write_pid(dir, me);
    if (strcmp(at, "never") == 0 && me == who)
        return 0; /* before flit_init */
    CHECK_OK(flit_init(NULL));
    me = flit_job_rank().idx;
    CHECK(flit_job_size() >= 2 && who < flit_job_size());
    if (lines)
        return pieces(me, lines);
    if (strcmp(at, "init") == 0 && me == who)
        return 0; /* no flit_finalize, no endpoint */
    flit_ep_t *ep;
    flit_status st = flit_ep_create(NULL, &ep);
    bool killed = strcmp(at, "killed") == 0;
    if (st != FLIT_OK || (strcmp(at, "barrier") != 0 && !killed))
        return stayed(me, "flit_ep_create", st);
    CHECK_OK(flit_barrier(ep));
    CHECK(!killed || flit_job_size() == 2);
    if (me == who && killed) {
        CHECK(kill(getppid(), SIGSTOP) == 0);
        raise(SIGKILL);
    }
    if (me == who)
        return 0; /* no flit_finalize: the others are in the barrier */
    st = flit_barrier(ep);
    if (!killed)
        return stayed(me, "flit_barrier", st);
    stayed(me, "flit_barrier", st);
    CHECK_ST(st, FLIT_ERR_PEER_DOWN);
    wake_after_exit(getppid());
    return 0;
}
