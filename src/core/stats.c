/* SPDX-License-Identifier: BSD-3-Clause */
/* Counters: the API snapshot, FLIT_STATS printing, and state dumps. */
#include "core/stats.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/ep.h"
#include "core/pub_layer.h"
#include "platform/os.h"

void fl_stats_snapshot(struct flit_ep *ep, flit_stats_t *out)
{
    const struct fl_counters *c = &ep->stats;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->credit_stalls = FL_READ(c->credit_stalls);
    out->refused_packets = FL_READ(c->refused_packets) + FL_READ(c->tp.refused_packets);
    out->polls = FL_READ(c->polls);
    out->sleeps = FL_READ(c->sleeps);
    out->wakeups_sent = FL_READ(c->tp.wakeups_sent);
    out->peers_down = FL_READ(c->peers_down);
    out->datagrams_sent = FL_READ(c->tp.datagrams_sent);
    out->datagrams_received = FL_READ(c->tp.datagrams_received);
    out->retransmits = FL_READ(c->tp.retransmits);
    out->duplicates = FL_READ(c->tp.duplicates);
    out->faults_injected = FL_READ(c->tp.faults_injected);
    out->peers_in_contact = FL_READ(c->tp.pairs);
    fl_layers_stats(ep, out);
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

/* Lines of a dump or of FLIT_STATS=1: one write() each, "who" first. */
struct fl_report {
    int fd;
    const char *who;
    char buf[512];
};

static void vline(struct fl_report *r, const char *fmt, va_list ap)
{
    int n = snprintf(r->buf, sizeof r->buf, "%s ", r->who);
    n += vsnprintf(r->buf + n, sizeof r->buf - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof r->buf - 2)
        n = (int)sizeof r->buf - 2;
    r->buf[n++] = '\n';
    ssize_t w = write(r->fd, r->buf, (size_t)n);
    (void)w;
}

void fl_report_line(struct fl_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(r, fmt, ap);
    va_end(ap);
}

static void report_counters(struct fl_report *r, struct flit_ep *ep)
{
    flit_stats_t s;
    fl_stats_snapshot(ep, &s);
    fl_report_line(r, "  credit stalls %llu, refused packets %llu, peers down %llu",
                   (unsigned long long)s.credit_stalls,
                   (unsigned long long)s.refused_packets,
                   (unsigned long long)s.peers_down);
    fl_report_line(r, "  polls %llu, sleeps %llu, wake-ups sent %llu",
                   (unsigned long long)s.polls, (unsigned long long)s.sleeps,
                   (unsigned long long)s.wakeups_sent);
    fl_report_line(r, "  peers in contact %llu of %u",
                   (unsigned long long)s.peers_in_contact, ep->size);
    if (s.datagrams_sent || s.datagrams_received)
        fl_report_line(
            r,
            "  datagrams sent %llu, received %llu; retransmits %llu, "
            "duplicates %llu, faults injected %llu",
            (unsigned long long)s.datagrams_sent,
            (unsigned long long)s.datagrams_received, (unsigned long long)s.retransmits,
            (unsigned long long)s.duplicates, (unsigned long long)s.faults_injected);
    fl_layers_report(&s, r);
    fl_pub_report(ep, r);
}

void fl_stats_dump(struct flit_ep *ep, int fd)
{
    char who[32];
    snprintf(who, sizeof who, "flit[%u]", ep->rank);
    struct fl_report r = {.fd = fd, .who = who};
    const char *call = atomic_load_explicit(&ep->call, memory_order_relaxed);
    fl_report_line(&r, "endpoint %u: %s%s", ep->index,
                   call ? "inside " : "in no flit call", call ? call : "");
    uint64_t since = atomic_load_explicit(&ep->blocked_since_ns, memory_order_relaxed);
    if (since)
        fl_report_line(&r, "endpoint %u: blocked %.1f ms sending to rank %u (no room)",
                       ep->index, (double)(fl_now_ns() - since) / 1e6,
                       atomic_load_explicit(&ep->blocked_dst, memory_order_relaxed));
    else
        fl_report_line(&r, "endpoint %u: not blocked in a send", ep->index);
    for (uint32_t p = 0; p < ep->size; p++) {
        struct fl_peer *peer = &ep->peers[p];
        if (!peer->tp)
            continue;
        char line[256];
        peer->tp->dump_peer(peer->tpe, p, line, sizeof line);
        int down = atomic_load_explicit(&peer->down, memory_order_relaxed);
        fl_report_line(&r,
                       "  peer %u via %s%s: %s; sent %llu, received %llu, stalls %llu", p,
                       peer->tp->name, down ? " (DOWN)" : "", line,
                       (unsigned long long)FL_READ(peer->sent),
                       (unsigned long long)FL_READ(peer->recv),
                       (unsigned long long)FL_READ(peer->stalls));
    }
    report_counters(&r, ep);
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
    char who[32];
    snprintf(who, sizeof who, "flit[%u]", ep->rank);
    struct fl_report r = {.fd = STDERR_FILENO, .who = who};
    fl_report_line(&r, "endpoint %u counters:", ep->index);
    report_counters(&r, ep);
}
