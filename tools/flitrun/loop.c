/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop: one poll() over everything the job waits on, each ready
 * descriptor handed to the part that owns it, then the deadlines. Runs
 * until every rank is reaped and its output drained.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "flitrun.h"
#include "platform/os.h"

enum watch_kind {
    WATCH_SIGNAL,
    WATCH_LISTEN,
    WATCH_CONN,
    WATCH_RELAY,
    WATCH_STDIN,
    WATCH_STDIN_PIPE,
};

struct watch { /* what a pollfd entry stands for */
    enum watch_kind kind;
    void *obj;
};

static int poll_timeout_ms(const struct job *job)
{
    uint64_t next = UINT64_MAX;
    if (job->stop.phase == PHASE_RUNNING && job->stop.timeout_at)
        next = job->stop.timeout_at;
    else if (job->stop.phase == PHASE_DUMPING)
        next = job->stop.dump_until;
    else if (job->stop.phase == PHASE_STOPPING && !job->stop.killed && job->live > 0)
        next = job->stop.kill_at;
    if (job->live == 0 && job->drain_until < next)
        next = job->drain_until;
    uint64_t expiry = conns_next_expiry(job);
    if (expiry < next)
        next = expiry;
    expiry = leave_next_deadline(job);
    if (expiry < next)
        next = expiry;
    if (next == UINT64_MAX)
        return -1;
    uint64_t now = fl_now_ns();
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999) / 1000000; /* round up: no early wake */
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void watch(struct job *job, nfds_t *n, int fd, short events, enum watch_kind kind,
                  void *obj)
{
    job->ps.pfds[*n] = (struct pollfd){.fd = fd, .events = events};
    job->ps.watches[*n] = (struct watch){.kind = kind, .obj = obj};
    (*n)++;
}

static nfds_t pollset_build(struct job *job)
{
    nfds_t n = 0;
    watch(job, &n, job->stop.signal_fd, POLLIN, WATCH_SIGNAL, NULL);
    if (!job->srv.listen_paused)
        watch(job, &n, job->srv.listen_fd, POLLIN, WATCH_LISTEN, NULL);
    for (uint32_t i = 0; i < job->srv.nconns; i++) {
        struct conn *c = job->srv.conns[i];
        watch(job, &n, c->fd, (short)(POLLIN | (c->head ? POLLOUT : 0)), WATCH_CONN, c);
    }
    if (job->up && !job->up->dead)
        watch(job, &n, job->up->fd, (short)(POLLIN | (job->up->head ? POLLOUT : 0)),
              WATCH_CONN, job->up);
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (rk->out.fd >= 0)
            watch(job, &n, rk->out.fd, POLLIN, WATCH_RELAY, &rk->out);
        if (rk->err.fd >= 0)
            watch(job, &n, rk->err.fd, POLLIN, WATCH_RELAY, &rk->err);
    }
    if (job->in.in_fd >= 0 && job->in.len < STDIN_CAP)
        watch(job, &n, job->in.in_fd, POLLIN, WATCH_STDIN, NULL);
    if (job->in.pipe_fd >= 0 && job->in.len > 0)
        watch(job, &n, job->in.pipe_fd, POLLOUT, WATCH_STDIN_PIPE, NULL);
    return n;
}

static void pollset_dispatch(struct job *job, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++) {
        short revents = job->ps.pfds[i].revents;
        if (!revents)
            continue;
        struct watch *w = &job->ps.watches[i];
        switch (w->kind) {
        case WATCH_SIGNAL:
            signals_readable(job);
            break;
        case WATCH_LISTEN:
            conns_accept(job);
            break;
        case WATCH_CONN:
            conn_ready(job, w->obj, revents);
            break;
        case WATCH_RELAY:
            relay_readable(job, w->obj);
            break;
        case WATCH_STDIN:
            stdin_readable(job);
            break;
        case WATCH_STDIN_PIPE:
            stdin_flush(job);
            break;
        }
    }
}

/* Done once every rank is reaped and its output drained; output still held
   open by something that escaped the job gets DRAIN_NS, no more. */
static bool job_done(const struct job *job)
{
    if (job->live > 0 || job->stop.phase == PHASE_DUMPING)
        return false;
    return fl_now_ns() >= job->drain_until || !relays_open(job);
}

void job_run(struct job *job)
{
    check_deadlines(job);
    while (!job_done(job)) {
        nfds_t n = pollset_build(job);
        int r = poll(job->ps.pfds, n, poll_timeout_ms(job));
        if (r < 0 && errno != EINTR) {
            say("poll: %s; killing the job", strerror(errno));
            job_stop(job, EXIT_OWN_ERROR);
            reap_blocking(job);
            return;
        }
        if (r > 0)
            pollset_dispatch(job, n);
        conns_sweep(job);
        check_deadlines(job);
    }
    /* what ranks sent just before they exited (a BYE) may still be unread */
    for (uint32_t i = 0; i < job->srv.nconns; i++)
        conn_read(job, job->srv.conns[i]);
    if (job->up)
        conn_read(job, job->up);
}

int pollset_alloc(struct pollset *ps, size_t n)
{
    ps->pfds = calloc(n, sizeof *ps->pfds);
    ps->watches = calloc(n, sizeof *ps->watches);
    return ps->pfds && ps->watches ? 0 : -1;
}

void pollset_free(struct pollset *ps)
{
    free(ps->pfds);
    free(ps->watches);
    ps->pfds = NULL;
    ps->watches = NULL;
}
