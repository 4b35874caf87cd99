/* SPDX-License-Identifier: BSD-3-Clause */
/* A rank to itself: rings in private memory, read by the same endpoint. */
#ifndef FL_TRANSPORT_SELF_SELF_H
#define FL_TRANSPORT_SELF_SELF_H

#include "transport/transport.h"

extern const struct fl_transport fl_tp_self;

#endif /* FL_TRANSPORT_SELF_SELF_H */
