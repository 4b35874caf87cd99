/* SPDX-License-Identifier: BSD-3-Clause */
/* The reliability channel's settings (config.c's table). Their names say
   UDP, the first transport under the channel, and stay for compatibility. */
#ifndef FL_CHANNEL_CONFIG_H
#define FL_CHANNEL_CONFIG_H

#include <stdint.h>

#include "util/config.h"

struct fl_chan_config {
    int64_t window;       /* FLIT_UDP_WINDOW_KB, in bytes */
    int64_t ack_delay_us; /* FLIT_ACK_DELAY_US */
    int64_t rto_min_us;   /* FLIT_RTO_MIN_US */
    int64_t path_probe_ms; /* FLIT_PATH_PROBE_MS */
};

extern struct fl_chan_config fl_chan_cfg;
extern const struct fl_setting fl_chan_settings[];

#endif /* FL_CHANNEL_CONFIG_H */
