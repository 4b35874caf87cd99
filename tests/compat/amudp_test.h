/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the AMUDP test programs share: AM-2 status checks that name the call,
 * the SPMD start-up every one of them begins with, and polling until a
 * counter reaches its goal (as AMUDP's own test programs do).
 */
#ifndef FLIT_AMUDP_TEST_H
#define FLIT_AMUDP_TEST_H

#include <amudp.h>
#include <amudp_spmd.h>
#include <stdio.h>
#include <stdlib.h>

#include "test.h"

/* test.h's checks, which name the rank (flit's rank is the SPMD proc). */
#define AMT_FAIL  FAIL
#define AMT_CHECK CHECK

/* expr must return exactly the AM-2 status want. */
#define AMT_ST(expr, want)                                                               \
    do {                                                                                 \
        int rc_ = (expr);                                                                \
        if (rc_ != (want))                                                               \
            AMT_FAIL("%s returned %d, expected %d", #expr, rc_, (int)(want));            \
    } while (0)
#define AMT_OK(expr) AMT_ST(expr, AM_OK)

/* Polls until *counter reaches goal. */
#define AMT_POLL_UNTIL(eb, counter, goal)                                                \
    do {                                                                                 \
        while ((counter) < (goal))                                                       \
            AMT_OK(AM_Poll(eb));                                                         \
    } while (0)

#endif /* FLIT_AMUDP_TEST_H */
