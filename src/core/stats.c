/* Counters: the API snapshot, FLIT_STATS printing, and state dumps. */
#include "core/stats.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/ep.h"
#include "platform/os.h"

static const char *const kind_name[FLIT_STAT_KINDS] = {
    "req short", "req medium", "req long", "rep short", "rep medium", "rep long",
};

void fl_stats_snapshot(struct flit_ep *ep, flit_stats_t *out)
{
    const struct fl_counters *c = &ep->stats;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    for (int k = 0; k < FLIT_STAT_KINDS; k++) {
        out->sent_msgs[k] = FL_READ(c->sent_msgs[k]);
        out->sent_bytes[k] = FL_READ(c->sent_bytes[k]);
        out->recv_msgs[k] = FL_READ(c->recv_msgs[k]);
        out->recv_bytes[k] = FL_READ(c->recv_bytes[k]);
    }
    out->credit_stalls = FL_READ(c->credit_stalls);
    out->returned_to_us = FL_READ(c->returned_to_us);
    out->returned_by_us = FL_READ(c->returned_by_us);
    out->refused_packets = FL_READ(c->refused_packets);
    out->polls = FL_READ(c->polls);
    out->sleeps = FL_READ(c->sleeps);
    out->wakeups_sent = FL_READ(c->wakeups_sent);
    out->peers_down = FL_READ(c->peers_down);
    out->datagrams_sent = FL_READ(c->datagrams_sent);
    out->datagrams_received = FL_READ(c->datagrams_received);
    out->retransmits = FL_READ(c->retransmits);
    out->duplicates = FL_READ(c->duplicates);
    out->faults_injected = FL_READ(c->faults_injected);
    out->stream_sent_msgs = FL_READ(c->stream_sent_msgs);
    out->stream_sent_bytes = FL_READ(c->stream_sent_bytes);
    out->stream_recv_msgs = FL_READ(c->stream_recv_msgs);
    out->stream_recv_bytes = FL_READ(c->stream_recv_bytes);
    out->stream_fibers = FL_READ(c->stream_fibers);
    out->rma_puts = FL_READ(c->rma_puts);
    out->rma_gets = FL_READ(c->rma_gets);
    out->rma_put_bytes = FL_READ(c->rma_put_bytes);
    out->rma_get_bytes = FL_READ(c->rma_get_bytes);
    out->rma_notifications = FL_READ(c->rma_notifications);
    out->rma_refused = FL_READ(c->rma_refused);
}

flit_status flit_ep_stats(flit_ep_t *ep, flit_stats_t *stats_out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    /* Older callers may know a shorter struct: fill what they know. */
    if (!stats_out || stats_out->struct_size < offsetof(flit_stats_t, sent_msgs) ||
        stats_out->struct_size > sizeof(flit_stats_t))
        return FLIT_ERR_INVALID_ARG;
    size_t want = stats_out->struct_size;
    flit_stats_t all;
    fl_stats_snapshot(ep, &all);
    memcpy(stats_out, &all, want);
    stats_out->struct_size = want;
    return FLIT_OK;
}

/* Formats into a buffer and writes it with one write() per line. */
struct out {
    int fd;
    char buf[512];
};

static void emit(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf, sizeof o->buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof o->buf - 1)
        n = (int)sizeof o->buf - 1;
    ssize_t w = write(o->fd, o->buf, (size_t)n);
    (void)w;
}

static void emit_counters(struct out *o, struct flit_ep *ep, const char *who)
{
    flit_stats_t s;
    fl_stats_snapshot(ep, &s);
    for (int k = 0; k < FLIT_STAT_KINDS; k++) {
        if (!s.sent_msgs[k] && !s.recv_msgs[k])
            continue;
        emit(o, "%s   %-10s sent %llu msgs %llu B, received %llu msgs %llu B\n",
             who, kind_name[k], (unsigned long long)s.sent_msgs[k],
             (unsigned long long)s.sent_bytes[k], (unsigned long long)s.recv_msgs[k],
             (unsigned long long)s.recv_bytes[k]);
    }
    emit(o, "%s   credit stalls %llu, returned to us %llu, returned by us %llu, "
            "refused packets %llu, peers down %llu\n",
         who, (unsigned long long)s.credit_stalls, (unsigned long long)s.returned_to_us,
         (unsigned long long)s.returned_by_us, (unsigned long long)s.refused_packets,
         (unsigned long long)s.peers_down);
    emit(o, "%s   polls %llu, sleeps %llu, wake-ups sent %llu\n", who,
         (unsigned long long)s.polls, (unsigned long long)s.sleeps,
         (unsigned long long)s.wakeups_sent);
    if (s.datagrams_sent || s.datagrams_received)
        emit(o, "%s   datagrams sent %llu, received %llu; retransmits %llu, "
                "duplicates %llu, faults injected %llu\n",
             who, (unsigned long long)s.datagrams_sent,
             (unsigned long long)s.datagrams_received,
             (unsigned long long)s.retransmits, (unsigned long long)s.duplicates,
             (unsigned long long)s.faults_injected);
    if (s.stream_sent_msgs || s.stream_recv_msgs)
        emit(o, "%s   streams sent %llu msgs %llu B, received %llu msgs %llu B; "
                "handlers on fibers %llu\n",
             who, (unsigned long long)s.stream_sent_msgs,
             (unsigned long long)s.stream_sent_bytes,
             (unsigned long long)s.stream_recv_msgs,
             (unsigned long long)s.stream_recv_bytes,
             (unsigned long long)s.stream_fibers);
    if (s.rma_puts || s.rma_gets || s.rma_notifications || s.rma_refused)
        emit(o, "%s   rma puts %llu (%llu B), gets %llu (%llu B); notifications "
                "run %llu, accesses refused %llu\n",
             who, (unsigned long long)s.rma_puts,
             (unsigned long long)s.rma_put_bytes, (unsigned long long)s.rma_gets,
             (unsigned long long)s.rma_get_bytes,
             (unsigned long long)s.rma_notifications,
             (unsigned long long)s.rma_refused);
}

void fl_stats_dump(struct flit_ep *ep, int fd)
{
    struct out o = {.fd = fd};
    char who[32];
    snprintf(who, sizeof who, "flit[%u]", ep->rank);
    uint64_t since = atomic_load_explicit(&ep->blocked_since_ns, memory_order_relaxed);
    if (since)
        emit(&o, "%s endpoint %u: blocked %.1f ms sending to rank %u (no room)\n",
             who, ep->index, (double)(fl_now_ns() - since) / 1e6,
             atomic_load_explicit(&ep->blocked_dst, memory_order_relaxed));
    else
        emit(&o, "%s endpoint %u: not blocked in a send\n", who, ep->index);
    for (uint32_t r = 0; r < ep->size; r++) {
        struct fl_peer *p = &ep->peers[r];
        if (!p->tp)
            continue;
        char line[256];
        p->tp->dump_peer(p->tpe, r, line, sizeof line);
        int down = atomic_load_explicit(&p->down, memory_order_relaxed);
        emit(&o, "%s   peer %u via %s%s: %s; sent %llu, received %llu, stalls %llu\n",
             who, r, p->tp->name, down ? " (DOWN)" : "", line,
             (unsigned long long)FL_READ(p->sent), (unsigned long long)FL_READ(p->recv),
             (unsigned long long)FL_READ(p->stalls));
    }
    emit_counters(&o, ep, who);
}

flit_status flit_ep_dump(flit_ep_t *ep, int fd)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (fd < 0)
        return FLIT_ERR_INVALID_ARG;
    fl_stats_dump(ep, fd);
    return FLIT_OK;
}

void fl_stats_print(struct flit_ep *ep)
{
    struct out o = {.fd = STDERR_FILENO};
    char who[32];
    snprintf(who, sizeof who, "flit[%u]", ep->rank);
    emit(&o, "%s endpoint %u counters:\n", who, ep->index);
    emit_counters(&o, ep, who);
}
