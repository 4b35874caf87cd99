/* SPDX-License-Identifier: BSD-3-Clause */
/* The stream layer as the core sees it (core/layer.h). */
#include <stdlib.h>

#include "stream/stream.h"

static void stream_init(void)
{
    fl_op_register(FL_OP_STREAM, fl_stream_recv_packet, fl_stream_back);
}

flit_status fl_stream_ep_open(struct flit_ep *ep, void *state)
{
    struct fl_stream_ep *se = state;
    se->handlers = calloc(ep->handler_count, sizeof *se->handlers);
    se->active = calloc(ep->size, sizeof *se->active);
    se->next_sid = calloc(ep->size, sizeof *se->next_sid);
    se->park_lock_ok = pthread_mutex_init(&se->park_lock, NULL) == 0;
    if (!se->park_lock_ok)
        return FLIT_ERR_SYSTEM;
    return se->handlers && se->active && se->next_sid ? FLIT_OK : FLIT_ERR_NO_MEMORY;
}

void fl_stream_ep_close(struct flit_ep *ep, void *state)
{
    struct fl_stream_ep *se = state;
    if (se->active)
        for (uint32_t r = 0; r < ep->size; r++)
            fl_stream_end_all(ep, r, FLIT_ERR_FINALIZED);
    while (se->free_in) {
        struct flit_stream *s = se->free_in;
        se->free_in = s->next;
        free(s);
    }
    while (se->free_out) {
        struct flit_stream_out *s = se->free_out;
        se->free_out = s->next;
        free(s);
    }
    free(se->handlers);
    free(se->active);
    free(se->next_sid);
    if (se->park_lock_ok)
        pthread_mutex_destroy(&se->park_lock);
}

void fl_stream_peer_down(struct flit_ep *ep, void *state, uint32_t rank)
{
    (void)state;
    fl_stream_end_all(ep, rank, FLIT_ERR_PEER_DOWN);
}

static void stream_stats(const void *state, flit_stats_t *out)
{
    const struct fl_stream_ep *se = state;
    out->stream_sent_msgs = FL_READ(se->sent_msgs);
    out->stream_sent_bytes = FL_READ(se->sent_bytes);
    out->stream_recv_msgs = FL_READ(se->recv_msgs);
    out->stream_recv_bytes = FL_READ(se->recv_bytes);
    out->stream_fibers = FL_READ(se->fibers);
    out->stream_offers = FL_READ(se->offers);
    out->stream_placed_bytes = FL_READ(se->placed_bytes);
}

static void stream_report(const flit_stats_t *s, struct fl_report *r)
{
    if (s->stream_sent_msgs || s->stream_recv_msgs)
        fl_report_line(r,
                       "  streams sent %llu msgs %llu B, received %llu msgs %llu B; "
                       "handlers on fibers %llu",
                       (unsigned long long)s->stream_sent_msgs,
                       (unsigned long long)s->stream_sent_bytes,
                       (unsigned long long)s->stream_recv_msgs,
                       (unsigned long long)s->stream_recv_bytes,
                       (unsigned long long)s->stream_fibers);
    if (s->stream_offers || s->stream_placed_bytes)
        fl_report_line(r, "  stream places offered %llu; bytes placed in receivers' %llu",
                       (unsigned long long)s->stream_offers,
                       (unsigned long long)s->stream_placed_bytes);
}

static uint32_t stream_handlers_used(const void *state, uint32_t below)
{
    const struct fl_stream_ep *se = state;
    uint32_t n = below;
    while (n && !se->handlers[n - 1].fn)
        n--;
    return n;
}

struct fl_layer fl_stream_layer = {
    .name = "stream",
    .state_size = sizeof(struct fl_stream_ep),
    .init = stream_init,
    .ep_open = fl_stream_ep_open,
    .ep_close = fl_stream_ep_close,
    .peer_down = fl_stream_peer_down,
    .stats = stream_stats,
    .report = stream_report,
    .handlers_used = stream_handlers_used,
};
