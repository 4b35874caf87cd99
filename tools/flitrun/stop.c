/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ending the job: the signals flitrun takes (through a signalfd, so the
 * loop sees them), a rank's failure, the --timeout with its dumps, and the
 * stop itself: SIGTERM (and SIGCONT) to the ranks, SIGKILL after a grace.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "flitrun.h"
#include "platform/os.h"

#define GRACE_NS     (2 * NS_PER_S) /* between SIGTERM and SIGKILL */
#define DUMP_WAIT_NS (2 * NS_PER_S) /* for the ranks' DUMPED answers */

int take_signals(struct job *job)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &job->inherit.mask);
    struct sigaction ignore = {.sa_handler = SIG_IGN}, deflt = {.sa_handler = SIG_DFL};
    /* a closed stdout must cost the output, not the launcher */
    sigaction(SIGPIPE, &ignore, &job->inherit.pipe);
    /* an inherited SIG_IGN would have the kernel reap our ranks for us */
    sigaction(SIGCHLD, &deflt, &job->inherit.chld);
    job->stop.signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (job->stop.signal_fd < 0) {
        say("signalfd: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The group reaches the ranks' own children too; the pids reach ranks that
   left the group. Only while a rank is unreaped: its zombie keeps the pgid
   from being reused by a stranger. */
static void signal_job(struct job *job, int sig)
{
    if (job->live == 0)
        return;
    if (job->pgid > 0)
        kill(-job->pgid, sig);
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].live)
            kill(job->ranks[r].pid, sig);
}

void kill_now(struct job *job)
{
    signal_job(job, SIGKILL);
    job->stop.killed = true;
}

/* The one way to end a job early. The first caller decides the exit status. */
void job_stop(struct job *job, int exit_code)
{
    if (!job->stop.decided) {
        job->stop.exit_code = exit_code;
        job->stop.decided = true;
    }
    if (job->stop.phase == PHASE_STOPPING)
        return;
    job->stop.phase = PHASE_STOPPING;
    signal_job(job, SIGTERM);
    signal_job(job, SIGCONT); /* a stopped rank must wake to die */
    job->stop.kill_at = fl_now_ns() + GRACE_NS;
}

/* A rank failed: that stops a running job (unless --keep-going: then it
   only decides the exit status); a timed-out or stopping one is ending
   anyway, with its own reason. */
void rank_failed(struct job *job, int exit_code)
{
    if (job->stop.phase != PHASE_RUNNING)
        return;
    if (!job->opt.keep_going) {
        job_stop(job, exit_code);
    } else if (!job->stop.decided) {
        job->stop.exit_code = exit_code;
        job->stop.decided = true;
    }
}

static void stop_signal(struct job *job, int sig)
{
    char name[32];
    signal_name(sig, name, sizeof name);
    if (job->opt.proxy_spec) {
        /* flitrun stops the job, and said why; it may signal a proxy more
           than once (its group, its pid), and kills it after the grace */
        note(job, "caught %s, stopping the ranks on %s", name, job->opt.proxy_host);
        job_stop(job, 128 + sig);
    } else if (job->stop.phase != PHASE_STOPPING) {
        say("caught %s, stopping the job", name);
        job_stop(job, 128 + sig);
    } else if (!job->stop.killed) {
        say("caught %s while stopping; killing the job now", name);
        kill_now(job);
    }
}

void signals_readable(struct job *job)
{
    struct signalfd_siginfo si;
    while (read(job->stop.signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            reap_ranks(job);
        else
            stop_signal(job, (int)si.ssi_signo);
    }
}

static void dump_start(struct job *job)
{
    job->stop.phase = PHASE_DUMPING;
    job->stop.dump_until = fl_now_ns() + DUMP_WAIT_NS;
    note(job, "timeout expired; asking the ranks for their state");
    leave_report_rounds(job);
    boot_ask_dumps(job);
}

void check_deadlines(struct job *job)
{
    uint64_t now = fl_now_ns();
    conns_expire(job, now);
    leave_check(job, now);
    if (job->stop.phase == PHASE_RUNNING && job->stop.timeout_at &&
        now >= job->stop.timeout_at)
        dump_start(job);
    if (job->stop.phase == PHASE_DUMPING &&
        (now >= job->stop.dump_until || boot_dumps_done(job))) {
        say("job timed out after %.9g s; stopping it", job->opt.timeout_s);
        job_stop(job, EXIT_TIMEOUT);
    }
    if (job->stop.phase == PHASE_STOPPING && !job->stop.killed && job->live > 0 &&
        now >= job->stop.kill_at) {
        note(job, "%u ranks still running 2 s after SIGTERM; sending SIGKILL", job->live);
        kill_now(job);
    }
}
