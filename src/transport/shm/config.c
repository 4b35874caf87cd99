/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared-memory transport's settings: what they accept, and their values. */
#include "transport/shm/config.h"

#include <stddef.h>

struct fl_shm_config fl_shm_cfg;

static const char *const bulk_choices[] = {"auto", "cma", "copy", NULL};
static const char *const watch_choices[] = {"auto", "proc", NULL};
static const char *const rndv_choices[] = {"auto", "on", "off", NULL};

#define F(field) (&fl_shm_cfg.field)
const struct fl_setting fl_shm_settings[] = {
    {"FLIT_SHM_RING_KB", FL_SET_KB, F(ring_bytes), 256, 256, 65536, "KiB",
     "size of each shared-memory ring (one per ordered pair and lane)", .pow2 = true,
     .job = true},
    {"FLIT_SHM_BULK", FL_SET_ENUM, F(bulk), FL_BULK_AUTO, 0, 2, NULL,
     "long payloads on shared memory: auto (mapping, else CMA, else copy), cma, copy",
     .choices = bulk_choices},
    {"FLIT_SHM_WATCH", FL_SET_ENUM, F(watch), FL_WATCH_AUTO, 0, 1, NULL,
     "how a dead peer on this host is noticed: auto (pidfd, else /proc), proc "
     "(reading /proc/PID/stat every FLIT_PEER_CHECK_MS)",
     .choices = watch_choices},
    {"FLIT_SHM_CMA_MIN_KB", FL_SET_KB, F(cma_min), 256, 0, 1048576, "KiB",
     "smallest long AM payload written by cross-memory attach; smaller ones go in "
     "pieces through the rings"},
    {"FLIT_SHM_RNDV", FL_SET_ENUM, F(rndv), FL_RNDV_AUTO, 0, 2, NULL,
     "large stream and tagged messages on shared memory: auto (the receiver pulls them "
     "from the sender's memory by cross-memory attach, one copy, or takes them in two "
     "copies through the rings, whichever it measures cheaper for messages of their "
     "size from their sender), on (pulls every one), off (the rings)",
     .choices = rndv_choices},
    {"FLIT_SHM_RNDV_MIN_KB", FL_SET_KB, F(rndv_min), 0, 1, 1048576, "KiB",
     "smallest stream message (tagged: payload and 8 bytes) the receiver pulls (auto: "
     "may pull)",
     .special = 0, .special_means = "64"},
    {NULL},
};
#undef F
