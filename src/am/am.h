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

/*
 * Sends pkt (len bytes: one of src's packets, or its header) back to src
 * inside a returned message with the reason; counts it.
 */
void fl_am_return_packet(struct flit_ep *ep, uint32_t src, const void *pkt,
                         size_t len, flit_status reason);
/* Runs the returned-message handler for r (our message came back). */
void fl_am_returned(struct flit_ep *ep, uint32_t peer, const flit_returned_t *r);

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
