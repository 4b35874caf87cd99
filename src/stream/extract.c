/* SPDX-License-Identifier: BSD-3-Clause */
/* Receiver pacing: flit_extract, on the progress engine's byte budget. */
#include "stream/stream.h"

flit_status flit_extract(flit_ep_t *ep, size_t max_bytes)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    if (max_bytes == 0) {
        fl_ep_leave(ep);
        return FLIT_ERR_INVALID_ARG;
    }
    size_t took = fl_progress_bytes(ep, max_bytes);
    fl_ep_leave(ep);
    return took ? FLIT_OK : FLIT_ERR_AGAIN;
}
