/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks leaving the job before the others. Two things follow from a rank
 * that is gone:
 *
 * - The launcher's exchange can no longer complete a round it has not
 *   joined: every rank is told (LEFT: who, from which round, why), so a
 *   rank waiting in flit_init's or flit_ep_create's exchange, or entering
 *   one later, gets an error naming the rank instead of waiting for ever.
 *
 * - A rank that exits with status 0 without flit_finalize (no BYE) while
 *   others still run is, as under mpirun, a failed job: flitrun names it and
 *   stops the job with status 1. So is one that exits 0 before flit_init in
 *   a job whose other ranks joined. It is judged at once when another rank
 *   waits for it in the exchange or fails; otherwise after LEAVE_GRACE_NS,
 *   and only if some other rank is still running then. The grace is for
 *   AMUDP_SPMDExit, which ends every worker at once without flit_finalize
 *   (it may run in a signal handler): its workers end within 2.5 s of each
 *   other at worst (a lost word waited out, then a flush), half the
 *   grace. The compat libraries' other ways to end (FM_finalize,
 *   VMMC_Finalize, AM_Terminate, a return from main) say BYE.
 *
 * --allow-exit-without-finalize keeps the old way: such a rank is a rank
 * that ended, and nobody is told (a rank waiting for it waits for the
 * --timeout).
 */
#include <stdio.h>

#include "flitrun.h"
#include "platform/os.h"

#define LEAVE_GRACE_NS (5 * NS_PER_S)
/* A rank that hung up without BYE is told of once reaped (its exit status
   says more), or after this if it runs on. */
#define LOST_WAIT_NS (NS_PER_S / 2)
/* leave_judge_at of a rank that left before flit_init while no rank has
   called it: no deadline until one does (a job of other programs). */
#define NOT_YET UINT64_MAX

/* Whether the job is a flit job: some rank said HELLO (it stays so). */
static bool any_hello(struct job *job)
{
    for (uint32_t r = 0; r < job->opt.nranks && !job->leave.flit_job; r++)
        job->leave.flit_job = job->ranks[r].said_hello;
    return job->leave.flit_job;
}

static uint32_t others_live(const struct job *job, uint32_t r)
{
    return job->live - (job->ranks[r].live ? 1u : 0u);
}

/* The first live rank, other than r, that sent a GATHER for a round r
   cannot join; -1 when none. */
static int waiter_for(const struct job *job, uint32_t r)
{
    const struct rank *gone = &job->ranks[r];
    for (uint32_t w = 0; w < job->opt.nranks; w++) {
        const struct rank *rk = &job->ranks[w];
        if (w != r && rk->live && rk->gather_round > gone->gather_round)
            return (int)w;
    }
    return -1;
}

/* A rank that said HELLO and hung up without BYE, not reaped yet. */
static bool hung_up(const struct rank *rk)
{
    return rk->said_hello && !rk->conn && !rk->said_bye && !rk->exited;
}

/* Why rank r can join no more rounds; 0 while it still may. */
static uint32_t out_why(const struct job *job, const struct rank *rk, uint64_t now)
{
    if (rk->said_bye)
        return FL_PROTO_LEFT_FINALIZED;
    if (rk->exited && !rk->exit_zero)
        return FL_PROTO_LEFT_FAILED;
    if (job->opt.allow_unfinalized)
        return 0; /* the old way: an exit 0 is only an end */
    if (rk->exited)
        return rk->said_hello ? FL_PROTO_LEFT_UNFINALIZED : FL_PROTO_LEFT_NEVER;
    return hung_up(rk) && now >= rk->lost_at + LOST_WAIT_NS ? FL_PROTO_LEFT_LOST : 0;
}

/* The earliest round some rank that left cannot join. */
static void find_doom(struct job *job, uint64_t now)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (hung_up(rk) && !rk->lost_at)
            rk->lost_at = now;
        uint32_t why = out_why(job, rk, now);
        uint32_t round = rk->gather_round + 1;
        if (!why || (job->leave.round && job->leave.round <= round))
            continue;
        job->leave.round = round;
        job->leave.rank = r;
        job->leave.why = why;
    }
}

/* Every connected rank learns of the earliest doomed round, once. */
static void tell_ranks(struct job *job, uint64_t now)
{
    find_doom(job, now);
    if (!job->leave.round)
        return;
    struct frame *f = NULL;
    uint64_t mark = ++job->srv.marks;
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (!rk->conn || rk->said_bye || rk->told_round == job->leave.round)
            continue; /* a rank that said BYE makes no more exchanges */
        if (!f && !(f = frame_new(FL_PROTO_LEFT, FL_PROTO_LEFT_LEN)))
            return; /* no memory: told on a later turn */
        fl_put32(f->bytes + 5, job->leave.rank);
        fl_put32(f->bytes + 9, job->leave.round);
        fl_put32(f->bytes + 13, job->leave.why);
        rk->told_round = job->leave.round;
        note(job, "telling rank %u that rank %u left: rounds from %u cannot complete", r,
             job->leave.rank, job->leave.round);
        conn_send_once(job, rk->conn, f, mark); /* a proxy: once for its ranks */
    }
    if (f)
        frame_unref(f);
}

/* Rank r left without flit_finalize while others ran: a failed job. */
static void left_early(struct job *job, uint32_t r, const char *because)
{
    struct rank *rk = &job->ranks[r];
    char who[160];
    rk->leave_judge_at = 0;
    rank_who(job, r, who, sizeof who);
    say("%s exited with status 0 %s while other ranks still ran%s%s", who,
        rk->said_hello ? "without calling flit_finalize" : "before calling flit_init",
        because,
        job->opt.keep_going ? ""
                            : "; stopping the job (--allow-exit-without-finalize "
                              "lets ranks end so)");
    rank_failed(job, EXIT_OWN_ERROR);
}

void leave_rank_exited(struct job *job, uint32_t r, int code)
{
    struct rank *rk = &job->ranks[r];
    if (rk->conn)
        conn_read(job, rk->conn); /* a BYE it sent just before it exited */
    leave_rank_ended(job, r, code);
}

void leave_rank_ended(struct job *job, uint32_t r, int code)
{
    struct rank *rk = &job->ranks[r];
    rk->exited = true;
    rk->exit_zero = code == 0;
    if (code == 0 && !rk->said_bye && !job->opt.allow_unfinalized)
        rk->leave_judge_at = fl_now_ns() + LEAVE_GRACE_NS;
}

void leave_judge_all(struct job *job, uint32_t failed)
{
    char because[64];
    snprintf(because, sizeof because, " (rank %u failed after it)", failed);
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (rk->leave_judge_at && !rk->said_bye && (rk->said_hello || any_hello(job)))
            left_early(job, r, because);
    }
}

/* Judges rank r's exit with status 0 without BYE, when it is time. */
static void judge(struct job *job, uint32_t r, uint64_t now)
{
    struct rank *rk = &job->ranks[r];
    char because[96];
    if (rk->said_bye) { /* it came late, over TCP */
        rk->leave_judge_at = 0;
        return;
    }
    if (!rk->said_hello && !any_hello(job)) {
        if (now >= rk->leave_judge_at)
            rk->leave_judge_at = NOT_YET; /* not a flit job, so far */
        return;
    }
    if (rk->leave_judge_at == NOT_YET) /* a rank called flit_init since */
        rk->leave_judge_at = now + LEAVE_GRACE_NS;
    int w = waiter_for(job, r);
    if (w >= 0) {
        snprintf(because, sizeof because,
                 " (rank %d waits for it in the launcher's exchange)", w);
        left_early(job, r, because);
    } else if (now >= rk->leave_judge_at) {
        if (others_live(job, r) > 0)
            left_early(job, r, "");
        rk->leave_judge_at = 0; /* the others ended too: their statuses tell */
    }
}

void leave_check(struct job *job, uint64_t now)
{
    if (job->stop.phase == PHASE_STOPPING || job->up)
        return; /* the ranks are being stopped, or flitrun judges a proxy's */
    tell_ranks(job, now);
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].leave_judge_at)
            judge(job, r, now);
}

uint64_t leave_next_deadline(const struct job *job)
{
    uint64_t next = UINT64_MAX, now = fl_now_ns();
    if (job->stop.phase == PHASE_STOPPING || job->up)
        return next;
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        const struct rank *rk = &job->ranks[r];
        uint64_t lost = rk->lost_at + LOST_WAIT_NS;
        if (rk->leave_judge_at && rk->leave_judge_at < next)
            next = rk->leave_judge_at; /* NOT_YET is no deadline */
        if (hung_up(rk) && rk->lost_at && lost > now && lost < next)
            next = lost; /* past it, find_doom has seen it */
    }
    return next;
}

void leave_report_rounds(const struct job *job)
{
    uint32_t open = job->rounds.done + 1, n = 0;
    char list[256];
    size_t used = 0;
    list[0] = '\0';
    if (job->rounds.count == 0)
        return; /* nobody waits in the exchange */
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        if (job->ranks[r].gather_round == open)
            continue;
        n++;
        if (used < sizeof list - 16)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%u",
                                     n > 1 ? ", " : "", r);
    }
    say("the launcher's exchange round %u waits for rank%s %s%s (%u of %u ranks are "
        "in it: flit_init and each flit_ep_create are calls every rank makes)",
        open, n == 1 ? "" : "s", list, used >= sizeof list - 16 ? ", ..." : "",
        job->rounds.count, job->opt.nranks);
}
