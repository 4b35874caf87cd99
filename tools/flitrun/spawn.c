/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Starting the ranks: each is forked into the job's process group (rank 0
 * leads it), tied to flitrun's life, given its stdio, and exec'd; a pipe
 * that closes on exec tells flitrun whether that worked, and why not.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "flitrun.h"
#include "platform/os.h"

/* Each rank costs a socket, and with its output relayed two pipes; while
   starting, the exec-report pipe stands where the socket will be. */
int raise_fd_limit(struct job *job)
{
    rlim_t need = (rlim_t)job->opt.nranks * (relaying(job) ? 3 : 1) + EXTRA_CONNS + 64;
    if (getrlimit(RLIMIT_NOFILE, &job->inherit.nofile) != 0 ||
        job->inherit.nofile.rlim_cur == RLIM_INFINITY ||
        job->inherit.nofile.rlim_cur >= need)
        return 0;
    if (job->inherit.nofile.rlim_max != RLIM_INFINITY &&
        job->inherit.nofile.rlim_max < need) {
        say("%u ranks need %llu open files, but the limit is %llu (ulimit -n)",
            job->opt.nranks, (unsigned long long)need,
            (unsigned long long)job->inherit.nofile.rlim_max);
        return -1;
    }
    struct rlimit raised = {.rlim_cur = need, .rlim_max = job->inherit.nofile.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
        say("cannot raise the open-file limit to %llu: %s", (unsigned long long)need,
            strerror(errno));
        return -1;
    }
    job->inherit.nofile_raised = true;
    return 0;
}

int set_rank_env(struct job *job)
{
    char size[16];
    snprintf(size, sizeof size, "%u", job->opt.nranks);
    job->devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (job->devnull_fd < 0) {
        say("cannot open /dev/null: %s", strerror(errno));
        return -1;
    }
    if (job->opt.proxy_spec)
        return 0; /* the FLIT_* flitrun set came with the proxy's environment */
    /* FLIT_RANK is set before each fork; no other FLIT_* is ours to set */
    if (setenv(FL_ENV_BOOT, job->srv.boot_addr, 1) != 0 ||
        setenv(FL_ENV_SIZE, size, 1) != 0 || setenv(FL_ENV_JOB_ID, job->id_hex, 1) != 0) {
        say("cannot set the ranks' environment: %s", strerror(errno));
        return -1;
    }
    return 0;
}

enum child_stage { STAGE_GROUP, STAGE_PARENT, STAGE_STDIO, STAGE_EXEC, STAGE_COUNT };

static const char *const stage_what[STAGE_COUNT] = {
    [STAGE_GROUP] = "joining the job's process group",
    [STAGE_PARENT] = "tying its life to flitrun's",
    [STAGE_STDIO] = "redirecting its stdio",
    [STAGE_EXEC] = "exec",
};

struct child_error { /* one write, so atomic on the pipe */
    int32_t stage, err;
};

/* In the child: undo what flitrun changed for itself. */
static void child_restore(const struct job *job)
{
    sigaction(SIGPIPE, &job->inherit.pipe, NULL);
    sigaction(SIGCHLD, &job->inherit.chld, NULL);
    sigprocmask(SIG_SETMASK, &job->inherit.mask, NULL);
    if (job->inherit.nofile_raised)
        setrlimit(RLIMIT_NOFILE, &job->inherit.nofile);
}

/* In the child, between fork and exec; the report pipe closes on exec, so
   flitrun reads either EOF (it ran) or why it did not. */
static _Noreturn void child_exec(const struct job *job, uint32_t rank, int report_fd,
                                 int out_fd, int err_fd, int in_fd)
{
    struct child_error ce = {STAGE_GROUP, 0};
    if (setpgid(0, job->pgid) != 0) /* rank 0: pgid 0, a group of its own */
        goto fail;
    ce.stage = STAGE_PARENT;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        goto fail;
    if (getppid() != job->self) /* flitrun died before prctl */
        _exit(EXIT_NOEXEC);
    ce.stage = STAGE_STDIO;
    if (in_fd < 0)
        in_fd = rank == 0 && job->in.rank_end >= 0 ? job->in.rank_end : job->devnull_fd;
    if (dup2(in_fd, STDIN_FILENO) < 0)
        goto fail;
    if (out_fd >= 0 &&
        (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0))
        goto fail;
    child_restore(job);
    char *const *argv = job->ranks[rank].argv ? job->ranks[rank].argv : job->opt.argv;
    execvp(argv[0], argv);
    ce.stage = STAGE_EXEC;
fail:
    ce.err = errno;
    ssize_t ignored = write(report_fd, &ce, sizeof ce); /* nothing to do if it fails */
    (void)ignored;
    _exit(EXIT_NOEXEC);
}

static void close_pair(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Parent side after a fork: the rank is live from here on. */
static void rank_started(struct job *job, uint32_t r, pid_t pid, int out_fd, int err_fd)
{
    struct rank *rk = &job->ranks[r];
    if (job->pgid == 0)
        job->pgid = pid; /* the first forked leads the group */
    if (r == 0) {
        if (job->in.rank_end >= 0) { /* rank 0 sees EOF when flitrun closes */
            close(job->in.rank_end);
            job->in.rank_end = -1;
        }
    }
    /* the child does it too: whichever runs first, the group exists before
       the next rank is forked to join it */
    setpgid(pid, job->pgid);
    rk->pid = pid;
    rk->live = true;
    job->live++;
    rk->out.fd = out_fd;
    rk->err.fd = err_fd;
    rk->out.plain = rk->err.plain = rk->proxied; /* the proxy prefixed them */
    if (out_fd >= 0) {
        fl_set_nonblock(out_fd);
        fl_set_nonblock(err_fd);
    }
}

/* Forks rank r; *report_fd will say whether its exec worked. 0 or -1. */
static int spawn_rank(struct job *job, uint32_t r, int *report_fd)
{
    int rep[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, in = -1;
    char num[16];
    snprintf(num, sizeof num, "%u", r);
    if (pipe2(rep, O_CLOEXEC) != 0 ||
        (relaying(job) && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) ||
        setenv(FL_ENV_RANK, num, 1) != 0 || launch_argv(job, r) != 0 ||
        key_stdin(job, r, &in) != 0)
        goto err_close_pipes;
    pid_t pid = fork();
    if (pid == 0)
        child_exec(job, r, rep[1], out[1], err[1], in);
    if (in >= 0)
        close(in);
    if (pid < 0)
        goto err_close_pipes;
    close(rep[1]);
    if (relaying(job)) {
        close(out[1]);
        close(err[1]);
    }
    rank_started(job, r, pid, out[0], err[0]);
    *report_fd = rep[0];
    return 0;

err_close_pipes:
    say("cannot start rank %u: %s", r, strerror(errno));
    close_pair(rep);
    close_pair(out);
    close_pair(err);
    return -1;
}

/* Blocks until rank r has exec'd or failed to. */
static void check_exec(struct job *job, uint32_t r, int report_fd)
{
    struct child_error ce;
    ssize_t n;
    do
        n = read(report_fd, &ce, sizeof ce);
    while (n < 0 && errno == EINTR);
    struct rank *rk = &job->ranks[r];
    char exe[256];
    snprintf(exe, sizeof exe, "%s", rk->argv ? rk->argv[0] : job->opt.argv[0]);
    free(rk->argv);
    rk->argv = NULL;
    if (n != (ssize_t)sizeof ce) {
        note(job, "rank %u is pid %d%s", r, (int)rk->pid,
             rk->remote ? ", its launcher's" : "");
        return;
    }
    if (job->stop.decided)
        return; /* the first failure speaks for all */
    if (ce.stage == STAGE_EXEC) {
        say("cannot execute '%s': %s", exe, strerror(ce.err));
        job_stop(job, EXIT_NOEXEC);
    } else {
        say("cannot start rank %u: %s: %s", r,
            ce.stage >= 0 && ce.stage < STAGE_COUNT ? stage_what[ce.stage] : "?",
            strerror(ce.err));
        job_stop(job, EXIT_OWN_ERROR);
    }
}

/* The ranks a proxy started stand and end with it: its pid is theirs. */
static void proxied_started(struct job *job, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++) {
        struct rank *rk = &job->ranks[r];
        const struct rank *lead = &job->ranks[rk->lead];
        if (!rk->proxied || rk->lead == r || !lead->live)
            continue;
        rk->pid = lead->pid;
        rk->live = true;
        job->live++;
    }
}

/* Forks every rank (or its host's proxy), then collects their exec
   reports: they exec in parallel instead of one after the other. */
void spawn_all(struct job *job)
{
    uint32_t n = job->opt.nranks, r = 0;
    int *report_fds = malloc(n * sizeof *report_fds);
    if (!report_fds) {
        say("out of memory for %u ranks", n);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    for (; r < n; r++) {
        report_fds[r] = -1;
        if (spawns_rank(job, r) && spawn_rank(job, r, &report_fds[r]) != 0)
            break;
    }
    if (r < n)
        job_stop(job, EXIT_OWN_ERROR);
    proxied_started(job, r < n ? r : n);
    for (uint32_t k = 0; k < r && k < n; k++) {
        if (report_fds[k] < 0)
            continue;
        check_exec(job, k, report_fds[k]);
        close(report_fds[k]);
    }
    free(report_fds);
}
