/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which transports serve which peers: FLIT_TRANSPORT (a list of names, or
 * auto) read against each transport's reach and default (transport.h),
 * for the build's list in its order of preference.
 */
#ifndef FL_CORE_SELECT_H
#define FL_CORE_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/transport.h"

/* The kind of peer r is to this rank (FL_REACH_SELF, _HOST or _REMOTE),
   by the launcher's hosts. */
unsigned fl_select_kind(uint32_t r);
/* Whether tp may serve a peer of that kind. */
bool fl_select_allowed(const struct fl_transport *tp, unsigned kind);
/* Whether tp may serve anybody in any job (its ->prepare then runs). */
bool fl_select_may_use(const struct fl_transport *tp);
/* Whether an endpoint opens tp: it comes first, of the allowed ones, for a
   kind of peer this job has. */
bool fl_select_opens(const struct fl_transport *tp);
/* "shm" for transports that may serve kind, in order, comma-separated,
   into buf (for the error that no transport reached a peer). */
void fl_select_describe(unsigned kind, char *buf, size_t len);

#endif /* FL_CORE_SELECT_H */
