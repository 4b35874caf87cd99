/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks ending: reaping them as SIGCHLD says, what each exit means (a
 * failure stops the job; an exit without flit_finalize is leave.c's), and
 * taking along what they left running in their process group.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "flitrun.h"
#include "platform/os.h"

#define DRAIN_NS (NS_PER_S / 2) /* for output held by strays at the end */

/* Whether pid is the last child the job has running: every live rank's. */
static bool last_child(const struct job *job, pid_t pid)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].live && job->ranks[r].pid != pid)
            return false;
    return true;
}

static struct rank *find_rank(struct job *job, pid_t pid)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].live && job->ranks[r].pid == pid)
            return &job->ranks[r];
    return NULL;
}

/* "exited with status C" or "was killed by signal S (SIGNAME)"; returns
   the exit status flitrun takes on for it. */
static int describe_exit(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status)) {
        char name[32];
        signal_name(WTERMSIG(status), name, sizeof name);
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), name);
        return 128 + WTERMSIG(status);
    }
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

/* Rank r is no more: the bookkeeping, before anything is said. */
static void rank_gone(struct job *job, uint32_t r, int code)
{
    job->ranks[r].live = false;
    if (r == 0)
        stdin_stop(job); /* nobody else to give it to */
    if (--job->live == 0)
        job->drain_until = fl_now_ns() + DRAIN_NS;
    if (job->up) { /* a proxy's ranks are judged by flitrun */
        if (job->ranks[r].conn) /* a BYE it sent just before it exited goes first */
            conn_read(job, job->ranks[r].conn);
        uint8_t status[4];
        fl_put32(status, (uint32_t)code);
        upstream_tell(job, r, FL_PROTO_EXITED, status, sizeof status);
    } else if (!job->ranks[r].exited) { /* its proxy may have told it */
        leave_rank_exited(job, r, code);
    }
}

/* A proxy's pid was reaped: every rank of its host still live ends with its
   status, told once, naming the host. */
static void proxy_exited(struct job *job, uint32_t lead, int status)
{
    char what[192], ranks[64] = "";
    int code = describe_exit(status, what, sizeof what);
    pid_t pid = job->ranks[lead].pid;
    uint32_t n = 0, first = lead, last = lead;
    for (uint32_t r = lead; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (!rk->live || !rk->proxied || rk->lead != lead)
            continue;
        first = n++ ? first : r;
        last = r;
        rank_gone(job, r, code);
    }
    if (n == 1)
        snprintf(ranks, sizeof ranks, "rank %u", first);
    else
        snprintf(ranks, sizeof ranks, "%u ranks (%u..%u)", n, first, last);
    if (code == 0 || job->stop.phase == PHASE_STOPPING) {
        note(job, "the proxy on %s (pid %d) %s; %s there ended with it",
             host_name(job, lead), (int)pid, what, ranks);
        return;
    }
    leave_judge_all(job, first);
    say("the proxy on %s (pid %d) %s; %s there ended with it", host_name(job, lead),
        (int)pid, what, ranks);
    rank_failed(job, code);
}

static void rank_exited(struct job *job, struct rank *rk, int status)
{
    uint32_t r = (uint32_t)(rk - job->ranks);
    if (rk->proxied) {
        proxy_exited(job, rk->lead, status);
        return;
    }
    char what[192], who[160];
    int code = describe_exit(status, what, sizeof what);
    if (rk->remote && WIFEXITED(status))
        describe_remote(job, code, what, sizeof what);
    rank_who(job, r, who, sizeof who);
    rank_gone(job, r, code);
    if (code == 0 || job->stop.phase == PHASE_STOPPING) {
        note(job, "%s %s", who, what);
        return;
    }
    leave_judge_all(job, r); /* a rank that left before it is the likelier cause */
    say("%s %s", who, what);
    rank_failed(job, code);
}

/* Reaps the child whose end si shows; false when it cannot. */
static bool reap_one(struct job *job, const siginfo_t *si)
{
    struct rank *rk = find_rank(job, si->si_pid);
    /* The last rank's zombie still holds the job's process group: take
       whatever the ranks left running in it along, while that is safe. */
    if (rk && last_child(job, si->si_pid) && job->pgid > 0)
        kill(-job->pgid, SIGKILL);
    int status;
    if (waitpid(si->si_pid, &status, 0) != si->si_pid)
        return false;
    if (rk)
        rank_exited(job, rk, status);
    return true;
}

/* Whether a rank's end, as waitid shows it, is of the kind taken first. */
typedef bool (*end_kind)(const siginfo_t *si);

static bool by_signal(const siginfo_t *si)
{
    return si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED;
}

static bool clean_exit(const siginfo_t *si)
{
    return si->si_code == CLD_EXITED && si->si_status == 0;
}

/* Reaps the ranks whose end since the last turn is of that kind; false
   when one cannot be reaped. */
static bool reap_kind(struct job *job, end_kind kind)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (!job->ranks[r].live ||
            waitid(P_PID, (id_t)job->ranks[r].pid, &si, WEXITED | WNOHANG | WNOWAIT) !=
                0 ||
            si.si_pid == 0 || !kind(&si))
            continue;
        if (!reap_one(job, &si))
            return false;
    }
    return true;
}

/*
 * The ends of one turn in the order their causes most likely ran, since
 * waitid gives them in no order of time: ranks killed by a signal first
 * (nothing a peer does ends a rank so: its death is the cause others
 * react to), then those that exited with status 0 (a rank that failed in
 * the same turn because its peer had left is then judged with the one
 * that left known), then the rest. A rank that saw its peer killed and
 * returned 0 is so not blamed for the kill.
 */
void reap_ranks(struct job *job)
{
    if (!reap_kind(job, by_signal) || !reap_kind(job, clean_exit))
        return;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        /* look before reaping: see reap_one */
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0 ||
            !reap_one(job, &si))
            return;
    }
}

/* When the loop itself cannot go on: nothing is left behind even so. */
void reap_blocking(struct job *job)
{
    kill_now(job);
    while (job->live > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno != EINTR)
            return;
        struct rank *rk = pid > 0 ? find_rank(job, pid) : NULL;
        if (rk)
            rank_exited(job, rk, status);
    }
}
