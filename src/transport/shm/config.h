/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared-memory transport's FLIT_SHM_* settings (config.c's table). */
#ifndef FL_TRANSPORT_SHM_CONFIG_H
#define FL_TRANSPORT_SHM_CONFIG_H

#include <stdint.h>

#include "util/config.h"

enum fl_bulk_mode {
    FL_BULK_AUTO = 0, /* shared mapping if the library made the segment, else CMA */
    FL_BULK_CMA,      /* cross-memory attach even for shared segments */
    FL_BULK_COPY,     /* pipelined two copies through the rings */
};

enum fl_rndv_mode {
    FL_RNDV_AUTO = 0, /* the receiver pulls where it measures that cheaper */
    FL_RNDV_ON,       /* the receiver pulls, every one */
    FL_RNDV_OFF,      /* two copies through the rings */
};

enum fl_watch_mode {
    FL_WATCH_AUTO = 0, /* pidfds, else /proc where the kernel refuses them */
    FL_WATCH_PROC,     /* /proc/PID/stat, read every FLIT_PEER_CHECK_MS */
};

struct fl_shm_config {
    int64_t ring_bytes; /* FLIT_SHM_RING_KB, in bytes */
    int64_t bulk;       /* FLIT_SHM_BULK: enum fl_bulk_mode */
    int64_t watch;      /* FLIT_SHM_WATCH: enum fl_watch_mode */
    int64_t cma_min;    /* FLIT_SHM_CMA_MIN_KB, in bytes: smallest long AM by CMA */
    int64_t rndv;       /* FLIT_SHM_RNDV: enum fl_rndv_mode */
    int64_t rndv_min;   /* FLIT_SHM_RNDV_MIN_KB, in bytes; 0: 64 KiB */
};

extern struct fl_shm_config fl_shm_cfg;
extern const struct fl_setting fl_shm_settings[];

#endif /* FL_TRANSPORT_SHM_CONFIG_H */
