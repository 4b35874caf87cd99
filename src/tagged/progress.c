/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waiting (internal.h): driving the endpoint until a condition holds,
 * polling first (the message is usually a few hundred nanoseconds away),
 * then sleeping in flit_wait slices, since a condition another thread
 * completes announces nothing on this one.
 */
#include <flit/layer.h>

#include "internal.h"

static int64_t now_us(void)
{
    return flit_clock_ns() / 1000;
}

/* Up to POLLS_FIRST polls. Whether they ended the wait, *st then saying
   how: FLIT_OK once done(arg), or flit_poll's error. */
static bool poll_first(flit_ep_t *ep, bool (*done)(void *), void *arg, flit_status *st)
{
    for (int i = 0; i < POLLS_FIRST; i++) {
        *st = flit_poll(ep);
        if (done(arg)) {
            *st = FLIT_OK;
            return true;
        }
        if (*st != FLIT_OK)
            return true;
    }
    return false;
}

/* The next flit_wait's length: a slice, or what is left before deadline. */
static int64_t slice_of(int64_t timeout_us, int64_t deadline)
{
    int64_t slice = WAIT_SLICE_US;
    if (timeout_us >= 0) {
        int64_t left = deadline - now_us();
        if (left < slice)
            slice = left > 0 ? left : 0;
    }
    return slice;
}

flit_status fl_tagged_progress_until(flit_ep_t *ep, bool (*done)(void *), void *arg,
                                     int64_t timeout_us)
{
    /* Another thread may have done it for us: flit_wait would then sleep
       until the next message, or its slice. */
    if (done(arg))
        return FLIT_OK;
    /* Polls first: flit_wait (like now_us) reads the clock on every call. */
    flit_status st;
    if (poll_first(ep, done, arg, &st))
        return st;
    int64_t deadline = timeout_us >= 0 ? now_us() + timeout_us : 0;
    for (;;) {
        int64_t slice = slice_of(timeout_us, deadline);
        st = flit_wait(ep, slice);
        if (done(arg))
            return FLIT_OK;
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
        if (timeout_us >= 0 && slice < WAIT_SLICE_US && now_us() >= deadline)
            return FLIT_ERR_TIMEOUT;
    }
}

bool fl_tagged_req_done_cb(void *arg)
{
    return req_done(arg);
}
