/* SPDX-License-Identifier: BSD-3-Clause */
/* What this build of flit is made of (src/flit.c), for the callers above
   the library's own entry points: flitrun checks a job's settings with it. */
#ifndef FL_BUILD_H
#define FL_BUILD_H

#include "flit/flit.h"

/* Registers every FLIT_* table of the build with util/config (the core's,
   each transport's and each layer's) and FLIT_TRANSPORT's names; once is
   enough, again is harmless. flit_init does it first. */
flit_status fl_build_settings(void);

#endif /* FL_BUILD_H */
