/* SPDX-License-Identifier: BSD-3-Clause */
/* The UDP transport's FLIT_UDP_* settings (config.c's table). */
#ifndef FL_TRANSPORT_UDP_CONFIG_H
#define FL_TRANSPORT_UDP_CONFIG_H

#include <stdint.h>

#include "util/config.h"

struct fl_udp_config {
    int64_t mtu;  /* FLIT_UDP_MTU: 0 = the path's */
    int64_t addr; /* FLIT_UDP_ADDR: IPv4, host order; 0 = pick one */
    char rails[FL_CONFIG_WORD]; /* FLIT_UDP_RAILS: "" = one, FLIT_UDP_ADDR's */
};

extern struct fl_udp_config fl_udp_cfg;
extern const struct fl_setting fl_udp_settings[];

#endif /* FL_TRANSPORT_UDP_CONFIG_H */
