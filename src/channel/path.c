/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several paths to a peer: the transport's rails (FLIT_UDP_RAILS), path i
 * from our rail i to the peer's rail i (transport/dgram.h). Datagrams take
 * the paths that are up in turn; sequence numbers, acknowledgements and
 * the window stay the peer's, so whatever path a chunk takes it is
 * delivered once and in order.
 *
 * A path is judged by what comes back by it. Sending chunks or a ping by
 * a path that was heard since starts its question (asked_ns); a datagram
 * from the peer by that path answers it. The answer to a datagram that
 * asks (its acknowledgement, a reply) goes back by the path it came by, so
 * acknowledgements follow the data off a path its sender took down, and a
 * probe is answered by its own path. Unanswered for a probe interval
 * (FLIT_PATH_PROBE_MS, or the retransmission timeout when longer), a ping
 * goes by it. Unanswered for two,
 * while another path was heard since the question began, the path is
 * down: it takes nothing but probes (one an interval), and the chunks last
 * sent by it go again at once by the others. A datagram by it, a probe's
 * answer, brings it back up. The last path heard is never taken down: a
 * peer silent on every path is the peer timeout's to judge (peer.c).
 *
 * Loss by the order of transmissions (ack.c) is judged per path: the
 * datagrams of two paths overtake each other, those of one do not.
 */
#include "channel/path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/channel.h"
#include "channel/config.h"
#include "channel/rto.h"
#include "util/log.h"

bool fl_chan_paths_open(struct chan_peer *p, unsigned n)
{
    if (n < 2)
        return true;
    p->path = calloc(n, sizeof *p->path);
    p->npaths = p->path ? (uint8_t)n : 0;
    return p->path != NULL;
}

void fl_chan_paths_close(struct chan_peer *p)
{
    free(p->path);
    p->path = NULL;
    p->npaths = 0;
}

unsigned fl_chan_path_pick(struct chan_peer *p)
{
    if (!p->path)
        return 0;
    if (p->reply_path) { /* a probe's answer goes back its way */
        unsigned k = p->reply_path - 1u;
        p->reply_path = 0;
        return k;
    }
    for (unsigned i = 0; i < p->npaths; i++) {
        unsigned k = (p->next_path + i) % p->npaths;
        if (!p->path[k].down) {
            p->next_path = (uint8_t)(k + 1);
            return k;
        }
    }
    return p->next_path++ % p->npaths; /* none up: unreachable (one stays up) */
}

void fl_chan_path_sent(struct fl_tp_ep *t, struct chan_peer *p, unsigned path,
                       size_t bytes, bool asks, uint64_t now)
{
    struct chan_path *w = &p->path[path];
    if (asks && !w->asked_ns)
        w->asked_ns = now;
    FL_COUNT(t->chan_counters->path_bytes[path], bytes);
}

void fl_chan_path_heard(struct fl_tp_ep *t, struct chan_peer *p, unsigned path, bool asks,
                        uint64_t now)
{
    if (path >= p->npaths)
        return;
    struct chan_path *w = &p->path[path];
    w->heard_ns = now;
    w->asked_ns = 0;
    if (asks)
        p->reply_path = (uint8_t)(path + 1);
    if (!w->down)
        return;
    w->down = false;
    FL_COUNT(t->chan_counters->path_up, 1);
    fl_info("%s: rank %u: path %u is up again", t->ops->name, (uint32_t)(p - t->peers),
            path);
}

/* Whether a path other than k was heard after since. */
static bool other_heard(const struct chan_peer *p, unsigned k, uint64_t since)
{
    for (unsigned i = 0; i < p->npaths; i++)
        if (i != k && !p->path[i].down && p->path[i].heard_ns > since)
            return true;
    return false;
}

/* Path k is down: what was last sent by it and is not held goes again. */
static void take_down(struct fl_tp_ep *t, struct chan_peer *p, unsigned k)
{
    p->path[k].down = true;
    FL_COUNT(t->chan_counters->path_down, 1);
    fl_info("%s: rank %u: path %u is silent, taken down", t->ops->name,
            (uint32_t)(p - t->peers), k);
    for (unsigned l = 0; l < FL_LANES; l++) {
        struct tx_lane *tx = &p->tx[l];
        for (uint32_t s = tx->acked; s != tx->unsent; s++) {
            struct tx_chunk *c = fl_tx_chunk(tx, s);
            if (c->path == k && !c->sacked && c->sent_ns)
                c->rexmit = true;
        }
    }
    fl_chan_mark(t, p);
}

void fl_chan_path_timers(struct fl_tp_ep *t, struct chan_peer *p, uint64_t now,
                         uint64_t *next)
{
    uint64_t wait = (uint64_t)fl_chan_cfg.path_probe_ms * 1000000u;
    uint64_t rto = p->rto; /* the estimate, not backed off: the path is judged */
    if (wait < rto)
        wait = rto;
    for (unsigned k = 0; k < p->npaths; k++) {
        struct chan_path *w = &p->path[k];
        uint64_t asked = w->asked_ns;
        if (!w->down && asked && now - asked >= 2 * wait && other_heard(p, k, asked))
            take_down(t, p, k);
        bool due = w->down || (asked && now - asked >= wait);
        if (due && now - w->probe_at >= wait) {
            w->probe = true;
            w->probe_at = now;
            fl_chan_mark(t, p);
        }
        /* Deadlines in the future only: a past one would spin the timers. */
        if (due)
            fl_chan_note_deadline(next, w->probe_at + wait);
        else if (asked)
            fl_chan_note_deadline(next, asked + wait);
        if (!w->down && asked && asked + 2 * wait > now)
            fl_chan_note_deadline(next, asked + 2 * wait);
    }
}

void fl_chan_path_state(const struct chan_peer *p, char *buf, size_t len)
{
    size_t at = strlen(buf);
    for (unsigned k = 0; k < p->npaths && at < len; k++) {
        snprintf(buf + at, len - at, "%s%s", k ? "," : " rails ",
                 p->path[k].down ? "down" : "up");
        at += strlen(buf + at);
    }
}
