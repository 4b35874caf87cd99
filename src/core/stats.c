/* SPDX-License-Identifier: BSD-3-Clause */
/* The flit_stats_t snapshot, summed from the named counters; FLIT_STATS
   printing and state dumps. */
#include "core/stats.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/ep.h"
#include "platform/os.h"

/* Which named counters each field of flit_stats_t sums: plugin NULL is
   every plug-in's counter of that name (the core's and each transport's). */
static const struct stats_field {
    const char *plugin, *name;
    size_t offset;
} fields[] = {
#define ANY(n, f)                                                                        \
    {                                                                                    \
        NULL, n, offsetof(flit_stats_t, f)                                               \
    }
#define ONE(p, n, f)                                                                     \
    {                                                                                    \
        p, n, offsetof(flit_stats_t, f)                                                  \
    }
#define AM_KIND(k, i)                                                                    \
    ONE("am", k "_sent", sent_msgs[i]), ONE("am", k "_sent_bytes", sent_bytes[i]),       \
        ONE("am", k "_received", recv_msgs[i]),                                          \
        ONE("am", k "_received_bytes", recv_bytes[i])
    ANY("credit_stalls", credit_stalls),
    ANY("refused_packets", refused_packets),
    ANY("polls", polls),
    ANY("sleeps", sleeps),
    ANY("wakeups_sent", wakeups_sent),
    ANY("peers_down", peers_down),
    ANY("datagrams_sent", datagrams_sent),
    ANY("datagrams_received", datagrams_received),
    ANY("retransmits", retransmits),
    ANY("duplicates", duplicates),
    ANY("faults_injected", faults_injected),
    ANY("peers_in_contact", peers_in_contact),
    AM_KIND("req_short", 0),
    AM_KIND("req_medium", 1),
    AM_KIND("req_long", 2),
    AM_KIND("rep_short", 3),
    AM_KIND("rep_medium", 4),
    AM_KIND("rep_long", 5),
    ONE("am", "returned_to_us", returned_to_us),
    ONE("am", "returned_by_us", returned_by_us),
    ONE("am", "long_direct", long_direct),
    ONE("stream", "sent_msgs", stream_sent_msgs),
    ONE("stream", "sent_bytes", stream_sent_bytes),
    ONE("stream", "recv_msgs", stream_recv_msgs),
    ONE("stream", "recv_bytes", stream_recv_bytes),
    ONE("stream", "fibers", stream_fibers),
    ONE("stream", "offers", stream_offers),
    ONE("stream", "placed_bytes", stream_placed_bytes),
    ONE("rma", "puts", rma_puts),
    ONE("rma", "gets", rma_gets),
    ONE("rma", "put_bytes", rma_put_bytes),
    ONE("rma", "get_bytes", rma_get_bytes),
    ONE("rma", "notifications", rma_notifications),
    ONE("rma", "refused", rma_refused),
    ONE("rma", "refused_by_directory", rma_refused),
#undef AM_KIND
#undef ONE
#undef ANY
};

static void add_to_fields(flit_stats_t *out, const struct fl_counter_src *s,
                          const struct fl_counter_desc *d)
{
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        if (strcmp(fields[f].name, d->name) != 0 ||
            (fields[f].plugin && strcmp(fields[f].plugin, s->plugin) != 0))
            continue;
        *(uint64_t *)((char *)out + fields[f].offset) += fl_counter_read(s, d);
    }
}

void fl_stats_snapshot(struct flit_ep *ep, flit_stats_t *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    for (unsigned i = 0; i < ep->ncounter_srcs; i++) {
        const struct fl_counter_src *s = &ep->counter_srcs[i];
        for (const struct fl_counter_desc *d = s->desc; d->name; d++)
            add_to_fields(out, s, d);
    }
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
    fl_stats_report(ep, &r);
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
    fl_stats_report(ep, &r);
}
