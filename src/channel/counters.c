/* SPDX-License-Identifier: BSD-3-Clause */
/* The names of the reliability channel's counters (channel.h): the
   transport composed of the channel shows them as "<its name>.<counter>". */
#include "channel/channel.h"

const struct fl_counter_desc fl_chan_counters[] = {
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
    {NULL, NULL, 0, 0, NULL},
};
