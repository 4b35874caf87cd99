/* The Active Message layer's internal interface. */
#ifndef FL_AM_AM_H
#define FL_AM_AM_H

#include "am/wire.h"
#include "core/ep.h"

/* Registers the AM opcodes with the progress engine (once, at flit_init). */
void fl_am_init(void);

/* Sends a library-internal control packet (barrier, quiesce). */
flit_status fl_am_send_ctrl(struct flit_ep *ep, uint32_t dst, unsigned lane,
                            enum fl_ctrl_kind kind, uint32_t arg);

/* Receive side (dispatch.c). */
void fl_am_recv(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                size_t len);
void fl_am_recv_return(struct flit_ep *ep, uint32_t src, unsigned lane,
                       void *pkt, size_t len);
void fl_am_recv_ctrl(struct flit_ep *ep, uint32_t src, unsigned lane,
                     void *pkt, size_t len);

/* Stats index of a message kind. */
static inline unsigned fl_am_stat(flit_am_kind kind, bool reply)
{
    return (unsigned)kind + (reply ? FLIT_STAT_REP_SHORT : FLIT_STAT_REQ_SHORT);
}

#endif /* FL_AM_AM_H */
