/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One copy or two, chosen by measuring the messages themselves (choose.c):
 * a receiver's record, per sender and size class, of what a byte cost it
 * pulled and through the rings, and the choices that follow from it.
 */
#ifndef FL_STREAM_CHOOSE_H
#define FL_STREAM_CHOOSE_H

#include <stdbool.h>
#include <stdint.h>

#define FL_ST_CLASSES     16u /* size classes: below 64 KiB, [64, 128), ... 2^30 up */
#define FL_ST_CLASS_SHIFT 15u /* the second class starts at 2^(shift + 1) bytes */
#define FL_ST_RATE_MIN    (16u << 10) /* smaller messages are not measured */
/* Of the messages of a class that go one way, every this many-th goes the
   other way once, so a host whose costs change is followed; the receiver
   waits that many times longer as the other way costs more (up to
   FL_ST_EXPLORE_MAX times: a way five times dearer tried every 32nd
   message cost 12% of the bandwidth). */
#define FL_ST_EXPLORE     32u
#define FL_ST_EXPLORE_MAX 16u

/* A sender's messages to us, by size class: nanoseconds per KiB pulled and
   through the rings, smoothed (0: none measured yet). */
struct fl_st_rates {
    uint32_t pull[FL_ST_CLASSES], ring[FL_ST_CLASSES];
    uint16_t since[FL_ST_CLASSES]; /* pulls taken since the rings were tried */
};

/* The size class of a message of n bytes. */
unsigned fl_st_class(uint64_t n);

/* Adds a measurement to *rate: bytes moved in ns nanoseconds. */
void fl_st_rate_note(uint32_t *rate, uint64_t bytes, uint64_t ns);

/* Whether a message of class cls whose sender offers it pulled is to be
   pulled (else its bytes are asked for in packets): whichever way has no
   measurement yet, then the cheaper, and now and then the other. */
bool fl_st_take_pull(struct fl_st_rates *r, unsigned cls);

/* The classes whose messages the sender should offer pulled: bit c for
   class c, those not measured yet included. */
uint32_t fl_st_advice(const struct fl_st_rates *r);

#endif /* FL_STREAM_CHOOSE_H */
