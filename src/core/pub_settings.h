/* SPDX-License-Identifier: BSD-3-Clause */
/* The FLIT_* settings of layers built on the public API (flit/layer.h). */
#ifndef FL_CORE_PUB_SETTINGS_H
#define FL_CORE_PUB_SETTINGS_H

#include "flit/layer.h"

/* Checks layer l's settings and reads their variables, for the l that
   will be the i-th registered: FLIT_ERR_INVALID_ARG for a bad
   declaration, FLIT_ERR_CONFIG (logged, naming the variable) for a bad
   value, FLIT_ERR_NO_MEMORY. */
flit_status fl_pub_settings_read(const flit_layer_t *l, unsigned i);

#endif /* FL_CORE_PUB_SETTINGS_H */
