/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libfabric datagrams: an FI_EP_RDM endpoint per flit endpoint, used as an
 * unreliable datagram transport (transport/dgram.h) under flit's
 * reliability channel, exactly as UDP and AF_XDP are (composed in
 * src/flit.c, serving when FLIT_TRANSPORT names it).
 *
 * Why under the channel: an RDM endpoint is reliable, and a provider that
 * states FI_ORDER_SAS keeps sends in order, but flit promises more than
 * any provider states: two independent FIFO lanes per pair, credits, the
 * return of what a dead peer never took, and a peer's death detected
 * within FLIT_PEER_TIMEOUT whatever the provider reports. The channel
 * gives all of that over any provider, so messages ask the provider for
 * nothing beyond FI_MSG. One-sided operations (rma.c) use the provider's
 * FI_RMA where it has it. A later version may drop, for a provider
 * stating reliability and FI_ORDER_SAS, the channel's sequence numbers,
 * acknowledgements and retransmission (keeping its credits and its peer
 * timeout), and move large messages by fi_write rather than in
 * datagram-sized pieces. docs/ofi.md says what each provider must offer.
 */
#ifndef FL_TRANSPORT_OFI_OFI_H
#define FL_TRANSPORT_OFI_OFI_H

#include "transport/dgram.h"
#include "util/config.h"

extern const struct fl_dgram_ops fl_dgram_ofi;
/* FLIT_OFI_PROVIDER. */
extern const struct fl_setting fl_ofi_settings[];

#endif /* FL_TRANSPORT_OFI_OFI_H */
