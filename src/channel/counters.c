/* SPDX-License-Identifier: BSD-3-Clause */
/* The names of the reliability channel's counters (channel.h): the
   transport composed of the channel shows them as "<its name>.<counter>". */
#include "channel/channel.h"

const struct fl_counter_desc fl_chan_counters[] = {
    /* A datagram transport's own one-sided operations (ofi: fi_write,
       fi_read), first: FL_CHANNEL_COUNTERS starts after them. */
    FL_TP_COUNTER(rma_early, "rma_early",
                  "puts that returned before they landed (FI_INJECT, or from a bounce "
                  "buffer)"),
    FL_TP_COUNTER(rma_bounced, "rma_bounced",
                  "puts and gets copied through a bounce buffer registered once"),
    FL_TP_COUNTER(rma_kept, "rma_kept",
                  "puts and gets from or into an exposed region, whose registration "
                  "served the local side too (FI_MR_LOCAL)"),
    FL_TP_COUNTER(rma_registered, "rma_registered",
                  "registrations of the program's memory for one put or get "
                  "(FI_MR_LOCAL)"),
    /* Every channel's. */
    FL_TP_COUNTER(pairs, "peers_in_contact",
                  "peers this channel exchanged a packet with"),
    FL_TP_COUNTER(datagrams_sent, "datagrams_sent", "datagrams sent, resends included"),
    FL_TP_COUNTER(datagrams_received, "datagrams_received", "datagrams taken in"),
    FL_TP_COUNTER(retransmits, "retransmits",
                  "chunks sent again after a loss or timeout"),
    FL_TP_COUNTER(duplicates, "duplicates", "chunks received twice and dropped"),
    FL_TP_COUNTER(refused_packets, "refused_packets", "malformed or foreign datagrams"),
    FL_TP_COUNTER(faults_injected, "faults_injected",
                  "FLIT_DROP/DUP/REORDER_RATE at work below the channel"),
    FL_COUNTER(struct fl_chan_counters, buffer_bytes, "buffer_bytes", FLIT_COUNTER_GAUGE,
               "bytes of send windows and receive buffers held for peers now"),
    FL_COUNTER(struct fl_chan_counters, idle_peers, "idle_peers", FLIT_COUNTER_GAUGE,
               "peers quiet long enough to have given their buffers back"),
    FL_COUNTER(struct fl_chan_counters, path_down, "path_down", FLIT_COUNTER_COUNT,
               "paths to a peer (FLIT_UDP_RAILS) taken down: silent while another "
               "was heard"),
    FL_COUNTER(struct fl_chan_counters, path_up, "path_up", FLIT_COUNTER_COUNT,
               "paths to a peer used again: a probe by them was answered"),
    FL_COUNTER(struct fl_chan_counters, path_bytes[0], "path0_bytes", FLIT_COUNTER_BYTES,
               "datagram bytes sent by rail 0 (every datagram with one rail)"),
    FL_COUNTER(struct fl_chan_counters, path_bytes[1], "path1_bytes", FLIT_COUNTER_BYTES,
               "datagram bytes sent by rail 1 (FLIT_UDP_RAILS)"),
    FL_COUNTER(struct fl_chan_counters, path_bytes[2], "path2_bytes", FLIT_COUNTER_BYTES,
               "datagram bytes sent by rail 2"),
    FL_COUNTER(struct fl_chan_counters, path_bytes[3], "path3_bytes", FLIT_COUNTER_BYTES,
               "datagram bytes sent by rail 3"),
    {NULL, NULL, 0, 0, NULL},
};
