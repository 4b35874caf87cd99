/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the multi-process tests share on top of tests/common/test.h: bounded
 * waits that dump the endpoint and fail instead of hanging, deterministic
 * payload patterns, a returned-message handler for tests where nothing may
 * come back, and small argv helpers.
 */
#ifndef FLIT_MP_H
#define FLIT_MP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/* A wait that has not finished after this long is a hang: fail with a dump
   (flitrun's --timeout, 240 s, is the backstop). */
#define MP_WAIT_LIMIT_S 180.0
/* Each flit_wait sleeps at most this long, so conditions that no message
   announces (another thread's work, a progress thread) are seen soon. */
#define MP_WAIT_SLICE_US 20000

static inline double mp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Makes progress on ep until cond holds. Fails, after printing the endpoint's
 * state, if that takes longer than MP_WAIT_LIMIT_S or flit_wait reports
 * anything but progress or a timeout.
 */
#define MP_WAIT(ep, cond)                                                                \
    do {                                                                                 \
        double mp_deadline_ = mp_now() + MP_WAIT_LIMIT_S;                                \
        while (!(cond)) {                                                                \
            flit_status mp_st_ = flit_wait((ep), MP_WAIT_SLICE_US);                      \
            if (mp_st_ != FLIT_OK && mp_st_ != FLIT_ERR_TIMEOUT)                         \
                FAIL("flit_wait while waiting for %s: %s", #cond,                        \
                     flit_status_name(mp_st_));                                          \
            if (mp_now() > mp_deadline_) {                                               \
                flit_ep_dump((ep), 2);                                                   \
                FAIL("no progress for %.0f s waiting for %s", MP_WAIT_LIMIT_S, #cond);   \
            }                                                                            \
        }                                                                                \
    } while (0)

/* A 64-bit mix of small numbers: seeds for per-stream generators. */
static inline uint64_t mp_mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    uint64_t v[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++) {
        h ^= v[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h ? h : 1;
}

/* Fills buf with the byte stream that seed names. */
static inline void mp_pattern_fill(void *buf, size_t n, uint64_t seed)
{
    uint8_t *p = (uint8_t *)buf;
    uint64_t s = seed;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x = test_rand(&s);
        memcpy(p + i, &x, 8);
    }
    if (i < n) {
        uint64_t x = test_rand(&s);
        memcpy(p + i, &x, n - i);
    }
}

/* Offset of the first byte that differs from the stream, or n if none. */
static inline size_t mp_pattern_check(const void *buf, size_t n, uint64_t seed)
{
    const uint8_t *p = (const uint8_t *)buf;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = test_rand(&s);
        size_t k = n - i < 8 ? n - i : 8;
        if (memcmp(p + i, &x, k) != 0) {
            const uint8_t *e = (const uint8_t *)&x;
            for (size_t j = 0; j < k; j++)
                if (p[i + j] != e[j])
                    return i + j;
        }
    }
    return n;
}

/* For tests in which no message may come back. */
static inline void mp_returned_fail(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep;
    (void)user;
    FAIL("unexpected returned message: %s from rank %u, handler %u, %s, "
         "%u args, %zu bytes",
         flit_status_name(r->reason), r->peer.idx, r->handler.idx,
         flit_am_kind_name(r->kind, r->is_reply), r->nargs, r->nbytes);
}

/* ep's counter named name ("stream.pulled_bytes"). */
static inline uint64_t mp_counter(flit_ep_t *ep, const char *name)
{
    flit_counter_t c;
    flit_status st = flit_ep_counter(ep, name, &c);
    if (st != FLIT_OK)
        FAIL("flit_ep_counter(%s): %s", name, flit_status_name(st));
    return c.value;
}

/* How large messages between ranks of this host travel, as the job's
   environment says: "ring" (FLIT_SHM_RNDV=off, or over UDP: through the
   rings, placed where offered), "pull" (FLIT_SHM_RNDV=on: pulled by the
   receiver) or "any" (auto: the probe decides, either way one copy). */
static inline const char *mp_bulk_path(void)
{
    const char *tp = getenv("FLIT_TRANSPORT"), *rndv = getenv("FLIT_SHM_RNDV");
    if ((tp && strcmp(tp, "udp") == 0) || (rndv && strcmp(rndv, "off") == 0))
        return "ring";
    return rndv && strcmp(rndv, "on") == 0 ? "pull" : "any";
}

/* "--name value" in argv, as an unsigned number; def when absent. */
static inline uint64_t mp_arg_u64(int argc, char **argv, const char *name, uint64_t def)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) != 0)
            continue;
        if (i + 1 >= argc)
            FAIL("%s needs a value", name);
        char *end;
        unsigned long long v = strtoull(argv[i + 1], &end, 0);
        if (*argv[i + 1] == '\0' || *end)
            FAIL("%s: not a number: %s", name, argv[i + 1]);
        return v;
    }
    return def;
}

/* "--name value" in argv, as given; def when absent. */
static inline const char *mp_arg_str(int argc, char **argv, const char *name,
                                     const char *def)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], name) != 0)
            continue;
        if (i + 1 >= argc)
            FAIL("%s needs a value", name);
        return argv[i + 1];
    }
    return def;
}

static inline bool mp_arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

#endif /* FLIT_MP_H */
