/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Layers built on the public API (flit/layer.h), as the core keeps them:
 * a process-wide list, append-only (flit_layer_register, and the built-in
 * ones src/flit.c lists), and per endpoint the state of each layer opened
 * on it. The endpoint's life calls in here: open at the end of
 * flit_ep_create, quiesce and close at the start of flit_ep_destroy, the
 * bytes freed with the endpoint, peer_down beside the listeners'.
 */
#ifndef FL_CORE_PUB_LAYER_H
#define FL_CORE_PUB_LAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "flit/layer.h"

struct flit_ep;
struct fl_report;

/* The built-in list (NULL-terminated), registered once: at flit_init. */
flit_status fl_pub_builtin(const flit_layer_t *const *list);

/* How many are registered, and the i-th (i below that). */
unsigned fl_pub_count(void);
const flit_layer_t *fl_pub_at(unsigned i);

/* Whether names (a list "a,b", NULL: none) names only registered layers
   that open on request. */
bool fl_pub_names_ok(const char *names);

/* Opens the layers on ep (the ones names asks for, and those that open on
   every endpoint), agreeing with the other ranks when any opened; on
   failure every rank closes what it opened. */
flit_status fl_pub_ep_open(struct flit_ep *ep, const char *names);
/* flit_ep_destroy began: every quiesce bottom up, every close top down. */
void fl_pub_ep_close(struct flit_ep *ep);
/* Frees the states (the endpoint is going). */
void fl_pub_ep_free(struct flit_ep *ep);
void fl_pub_peer_down(struct flit_ep *ep, uint32_t rank, flit_status reason);

struct fl_counter_src;
/*
 * Layer i's counters on ep as every plug-in's are described (core/stats.h:
 * its flit_layer_counter_t table converted to struct fl_counter_desc when
 * it was registered), from its state there; false when layer i has no
 * state on ep. Any thread.
 */
bool fl_pub_counter_src(struct flit_ep *ep, unsigned i, struct fl_counter_src *out);

/* Each layer with a state on ep: its counters, then its dump section. */
void fl_pub_report(struct flit_ep *ep, struct fl_report *r);

/* Whether name (len bytes, not terminated) is a registered layer's
   setting: util/config.c asks, to warn only of variables no one knows. */
bool fl_pub_knows_setting(const char *name, size_t len);

#endif /* FL_CORE_PUB_LAYER_H */
