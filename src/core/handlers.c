/* SPDX-License-Identifier: BSD-3-Clause */
/* Handler indices reserved for layers built on the public API (flit.h). */
#include "core/barrier.h"
#include "util/log.h"

flit_status flit_ep_reserve_handlers(flit_ep_t *ep, unsigned count, flit_handler_t *first)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (!first || count == 0 || count > FLIT_HANDLER_COUNT_MAX) {
        fl_ep_leave(ep);
        return FLIT_ERR_INVALID_ARG;
    }
    /* Agree on how far up any rank's program installed handlers (below the
       reservations so far, whose handlers the layers installed), and check
       that every rank's tables have one size: the largest, and the largest
       of its complement, name the extremes. */
    uint64_t used = fl_layers_handlers_used(ep, ep->handler_floor);
    uint64_t big = ep->handler_count, small = UINT32_MAX - ep->handler_count;
    st = fl_ep_allmax(ep, &used);
    if (st == FLIT_OK)
        st = fl_ep_allmax(ep, &big);
    if (st == FLIT_OK)
        st = fl_ep_allmax(ep, &small);
    uint32_t top = ep->handler_floor;
    if (st == FLIT_OK &&
        (big != ep->handler_count || UINT32_MAX - small != ep->handler_count)) {
        fl_error("endpoint %u: handler tables of %llu to %llu entries across ranks; "
                 "reserving handlers needs one size everywhere",
                 ep->index, (unsigned long long)(UINT32_MAX - small),
                 (unsigned long long)big);
        st = FLIT_ERR_INVALID_ARG;
    } else if (st == FLIT_OK && (top < count || top - count < used)) {
        st = FLIT_ERR_EXHAUSTED;
    } else if (st == FLIT_OK) {
        ep->handler_floor = top - count;
        first->idx = (uint16_t)(top - count);
    }
    fl_ep_leave(ep);
    return st;
}
