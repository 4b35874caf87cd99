/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress engine (progress.c): drains the transports, hands packets
 * to their layers, spins then sleeps, and the optional progress thread.
 * Called with the endpoint entered unless said otherwise.
 */
#ifndef FL_CORE_PROGRESS_H
#define FL_CORE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

struct flit_ep;

/*
 * fl_ep_reserve found no room: waits for it unless FLIT_AM_NONBLOCK (then
 * FLIT_ERR_AGAIN); FLIT_ERR_CLOSED when another thread destroys the
 * endpoint meanwhile.
 * While it waits it polls the endpoint: every lane, or only the reply lane
 * inside a handler (handlers there cannot send, so the wait always ends).
 */
flit_status fl_ep_reserve_slow(struct flit_ep *ep, uint32_t dst, unsigned lane,
                               size_t len, unsigned flags, void **pkt);

/*
 * A program that only sends still answers its peers. Every
 * FL_SENDS_PER_LOOK reservations fl_ep_reserve calls this: when no poll
 * pass ran for FL_SEND_POLL_NS, it runs one (not in handlers, nor for a
 * FLIT_AM_NONBLOCK send, whose caller polls when refused), so that
 * acknowledgements and keep-alive answers go out and the sender's own
 * windows drain while it sends for seconds (a long loop of first contacts
 * on an overloaded host), instead of its peers resending to it and giving
 * it up as silent.
 */
#define FL_SENDS_PER_LOOK 16u
#define FL_SEND_POLL_NS   10000000ull
void fl_progress_on_send(struct flit_ep *ep);

/* Drains every transport once on lane_mask; the packets handled. */
int fl_progress(struct flit_ep *ep, unsigned lane_mask);
/* The same for the one transport that reaches peer: a layer looking for
   that peer's answer between the packets of a send. */
int fl_progress_peer(struct flit_ep *ep, uint32_t peer, unsigned lane_mask);
/*
 * Receiver pacing: one packet at a time from each transport in turn, until
 * the budget in ep->pace_left (ep->pacing set) is spent or none is
 * waiting; the bytes charged meanwhile, those handlers pulled included
 * (fl_pace_take). A datagram transport receives whole datagrams, so it may
 * hold a few packets more than were handled; they wait in its buffers, not
 * the kernel's. Called with the endpoint entered.
 */
size_t fl_progress_paced(struct flit_ep *ep);
/* Sleeps until a transport may have work on lane_mask, or timeout. */
void fl_progress_sleep(struct flit_ep *ep, unsigned lane_mask, int64_t timeout_us);
/* Looks for dead peers if the period has passed (or now, if force). */
void fl_progress_check_peers(struct flit_ep *ep, bool force);
/*
 * Makes progress (every lane) until done(ep, arg) holds: spins for the spin
 * time, then sleeps between checks. FLIT_ERR_TIMEOUT after timeout_us
 * (< 0: never). Not for handler context.
 */
typedef bool (*fl_done_fn)(struct flit_ep *ep, void *arg);
flit_status fl_progress_until(struct flit_ep *ep, fl_done_fn done, void *arg,
                              int64_t timeout_us);
flit_status fl_progress_thread_start(struct flit_ep *ep);
void fl_progress_thread_stop(struct flit_ep *ep);
/* The effective spin time before sleeping, microseconds (set at init). */
int64_t fl_progress_spin_us(void);
void fl_progress_init(void);

#endif /* FL_CORE_PROGRESS_H */
