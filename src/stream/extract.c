/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiver pacing: flit_extract, on the progress engine's byte budget.
 * Handlers pulling a message (pull.c) draw on the same budget; one that
 * spends it waits on the ready list (park.c) and goes on first in the next
 * call, or in any progress pass, through the layer's listener.
 */
#include "stream/stream.h"

flit_status flit_extract(flit_ep_t *ep, size_t max_bytes)
{
    flit_status st = fl_ep_check(ep);
    if (st == FLIT_OK && max_bytes == 0)
        st = FLIT_ERR_INVALID_ARG;
    if (st == FLIT_OK)
        st = fl_stream_park_listen(ep); /* before entering: it enters */
    if (st == FLIT_OK)
        st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    ep->pacing = true;
    ep->pace_left = max_bytes;
    bool resumed = fl_stream_resume_ready(ep); /* pulls paced before go first */
    size_t took = fl_progress_paced(ep);
    ep->pacing = false;
    fl_ep_leave(ep);
    return resumed || took ? FLIT_OK : FLIT_ERR_AGAIN;
}
