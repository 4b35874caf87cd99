/* SPDX-License-Identifier: BSD-3-Clause */
/* One copy or two for large messages on this host (probe.c). */
#ifndef FL_TRANSPORT_SHM_PROBE_H
#define FL_TRANSPORT_SHM_PROBE_H

#include <stddef.h>

/* The smallest message a receiver should pull by cross-memory attach
   (FLIT_SHM_RNDV, FLIT_SHM_RNDV_MIN_KB; measured at the first call under
   auto, a few hundred microseconds); 0: never. Any thread. */
size_t fl_shm_pull_min(void);

#endif /* FL_TRANSPORT_SHM_PROBE_H */
