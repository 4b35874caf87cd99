/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A seeded fault interposer: a datagram transport (transport/dgram.h) that
 * wraps another one and, on what that one receives, drops, duplicates,
 * reorders (holds a datagram back behind the next one) and delays (holds
 * one back for a time) datagrams with the probabilities it is given, from a
 * generator seeded so that a failing run can be replayed: the same seed
 * and the same datagrams give the same faults.
 *
 * It composes under the reliability channel wherever an unreliable
 * transport does: src/flit.c puts it between the channel and UDP when
 * FLIT_DROP_RATE, FLIT_DUP_RATE or FLIT_REORDER_RATE is set (seeded with
 * FLIT_FAULT_SEED + rank); the conformance suite (tests/conformance) puts
 * it over a transport made of memory and over UDP.
 *
 * Holding back and delaying happen only in the outermost receive (buffer
 * set 0): a nested one (a handler waiting to reply) must not hand out a
 * held buffer while the outer caller may still be reading another. Nested
 * receives still drop and duplicate; every datagram takes one roll either
 * way, so the sequence stays the seed's. While something is held the
 * interposer's descriptor is readable (behind the next datagram) or
 * becomes readable when it is due (delayed), so a sleeping caller comes
 * back for it.
 */
#ifndef FL_TRANSPORT_FAULT_FAULT_H
#define FL_TRANSPORT_FAULT_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/dgram.h"
#include "util/config.h"

struct fl_fault_params {
    uint64_t seed;
    uint32_t drop_ppm, dup_ppm, reorder_ppm, delay_ppm; /* parts per million */
    uint64_t delay_ns; /* how long a delayed datagram is held */
};

enum fl_fault_action {
    FL_FAULT_NONE,
    FL_FAULT_DROP,
    FL_FAULT_DUP,
    FL_FAULT_REORDER,
    FL_FAULT_DELAY,
};

/* The generator: one action per roll, from *state (splitmix64). The rates
   are tried in the order drop, duplicate, reorder, delay on one draw of
   0 .. 999999, so where they add up to more than a million the later ones
   get what is left. */
enum fl_fault_action fl_fault_roll(const struct fl_fault_params *p, uint64_t *state);

/* The user's switch: FLIT_DROP_RATE, FLIT_DUP_RATE, FLIT_REORDER_RATE and
   FLIT_FAULT_SEED + rank into *p; true when any rate is set. */
bool fl_fault_from_config(uint32_t rank, struct fl_fault_params *p);
/* Those settings as kept (rates in parts per million), and their table. */
struct fl_fault_config {
    int64_t drop_ppm, dup_ppm, reorder_ppm, seed;
};
extern struct fl_fault_config fl_fault_cfg;
extern const struct fl_setting fl_fault_settings[];

/* Opens inner for the endpoint, and the interposer over it. What fails
   opening inner fails the same way (FLIT_ERR_NOT_SUPPORTED included). */
flit_status fl_fault_open(const struct fl_dgram_ops *inner,
                          const struct fl_fault_params *p,
                          const struct fl_tp_open_args *args, struct fl_dgram **out);

/* What happened so far: datagrams received from inner, and of them dropped,
   duplicated, held back behind the next, delayed. */
struct fl_fault_tally {
    uint64_t received, dropped, duplicated, reordered, delayed;
};
void fl_fault_tally(struct fl_dgram *d, struct fl_fault_tally *out);

/* The operations other than open, the same for every inner transport. */
flit_status fl_fault_address(struct fl_dgram *d, void *buf, size_t *len);
bool fl_fault_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len);
flit_status fl_fault_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                             size_t len);
size_t fl_fault_max_payload(struct fl_dgram *d, uint32_t rank);
int fl_fault_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n);
int fl_fault_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in);
int fl_fault_fd(struct fl_dgram *d);
void fl_fault_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len);
void fl_fault_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len);
unsigned fl_fault_paths(struct fl_dgram *d, uint32_t rank);
void fl_fault_path_of(struct fl_dgram *d, uint32_t rank, unsigned path, char *buf,
                      size_t len);
void fl_fault_close(struct fl_dgram *d);

/* A datagram table for the interposer over one inner transport: open_fn
   calls fl_fault_open with it. name_: the inner one's, for messages. */
#define FL_FAULT_DGRAM(name_, open_fn)                                                   \
    {                                                                                    \
        .name = (name_), .open = (open_fn), .address = fl_fault_address,                 \
        .reachable = fl_fault_reachable, .connect = fl_fault_connect,                    \
        .max_payload = fl_fault_max_payload, .send = fl_fault_send,                      \
        .recv = fl_fault_recv, .fd = fl_fault_fd, .address_of = fl_fault_address_of,     \
        .describe = fl_fault_describe, .close = fl_fault_close, .paths = fl_fault_paths, \
        .path_of = fl_fault_path_of,                                                     \
    }

#endif /* FL_TRANSPORT_FAULT_FAULT_H */
