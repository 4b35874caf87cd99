/* SPDX-License-Identifier: BSD-3-Clause */
/* The reliability channel's settings: what they accept, and their values. */
#include "channel/config.h"

#include <stddef.h>

struct fl_chan_config fl_chan_cfg;

#define F(field) (&fl_chan_cfg.field)
const struct fl_setting fl_chan_settings[] = {
    {"FLIT_UDP_WINDOW_KB", FL_SET_KB, F(window), 256, 132, 65536, "KiB",
     "unacknowledged bytes per UDP peer and lane: the credit window"},
    {"FLIT_ACK_DELAY_US", FL_SET_INT, F(ack_delay_us), 100, 0, 1000000, "µs",
     "how long a receiver may hold an acknowledgement back waiting for a reply to "
     "carry it"},
    {"FLIT_RTO_MIN_US", FL_SET_INT, F(rto_min_us), 10000, 100, 10000000, "µs",
     "smallest retransmission timeout (the measured one is 4 round trips above the "
     "mean)"},
    {"FLIT_PATH_PROBE_MS", FL_SET_INT, F(path_probe_ms), 100, 1, 60000, "ms",
     "with several paths to a peer (FLIT_UDP_RAILS): a path unanswered this long is "
     "probed, twice this long (while another answers) taken down and its data sent "
     "by the others; a down path is probed this often (docs/rails.md)"},
    {NULL},
};
#undef F
