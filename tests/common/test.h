/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every flit test program shares: checks that name the file, line and
 * status on failure, a seeded random generator, and a checksum.
 * Tests exit 0 on pass, 1 on failure, 77 when skipped.
 */
#ifndef FLIT_TEST_H
#define FLIT_TEST_H

#include <flit/flit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TEST_SKIP 77

#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "FAIL %s:%d (rank %u): ", __FILE__, __LINE__,                    \
                flit_job_rank().idx);                                                    \
        fprintf(stderr, __VA_ARGS__);                                                    \
        fputc('\n', stderr);                                                             \
        exit(1);                                                                         \
    } while (0)

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond))                                                                     \
            FAIL("%s", #cond);                                                           \
    } while (0)

/* expr must return exactly the status want. */
#define CHECK_ST(expr, want)                                                             \
    do {                                                                                 \
        flit_status st_ = (expr);                                                        \
        if (st_ != (want))                                                               \
            FAIL("%s returned %s (%s), expected %s", #expr, flit_status_name(st_),       \
                 flit_strerror(st_), flit_status_name(want));                            \
    } while (0)

#define CHECK_OK(expr) CHECK_ST(expr, FLIT_OK)

/* xorshift64*: reproducible streams from a seed. */
static inline uint64_t test_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* FNV-1a over a buffer, folded to 32 bits. */
static inline uint32_t test_checksum(const void *buf, size_t len)
{
    const uint8_t *p = (const uint8_t *)buf;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* Scale loop counts down under sanitizers: FLITTEST_SCALE=percent. */
static inline uint64_t test_scaled(uint64_t n)
{
    const char *s = getenv("FLITTEST_SCALE");
    uint64_t pct = s ? strtoull(s, NULL, 10) : 100;
    uint64_t v = n * pct / 100;
    return v ? v : 1;
}

/* The state dump of ep (flit_ep_dump) into out, NUL-terminated, cut to cap;
   returns its length. */
static inline size_t test_dump(flit_ep_t *ep, char *out, size_t cap)
{
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    CHECK_OK(flit_ep_dump(ep, pfd[1]));
    close(pfd[1]);
    size_t n = 0;
    ssize_t r;
    while (n < cap - 1 && (r = read(pfd[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(pfd[0]);
    return n;
}

#endif /* FLIT_TEST_H */
