/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One copy or two: whether a receiver pulling a large message from its
 * sender's memory by cross-memory attach beats the two copies through the
 * rings, and from what size. It depends on the host: on an Intel Xeon guest
 * one copy won from about 64 KiB (shm tagged bandwidth 16.9 vs 22.2 GB/s
 * for UCX at 64 KiB), on an AMD host two copies were faster. So it is
 * measured, once per process at first use: for each size below, the best
 * of a few process_vm_readv calls of our own memory against two memcpys of
 * the same bytes (the ring's copy in and copy out). The smallest size from
 * which the read wins at every larger size probed is the threshold; none:
 * never. It costs a few hundred microseconds, and one log line at
 * FLIT_VERBOSE. A read the kernel refuses (seccomp, a container without
 * the call) means never too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/os.h"
#include "transport/shm/config.h"
#include "transport/shm/onesided.h"
#include "transport/shm/probe.h"
#include "util/log.h"

#define PROBE_FIRST (16u << 10)
#define PROBE_LAST  (256u << 10)
#define PROBE_REPS  3
#define RNDV_ON_MIN (64u << 10) /* FLIT_SHM_RNDV=on without a size */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static size_t probed_min; /* 0: never */

/* The best of PROBE_REPS runs of one way of moving n bytes, in ns;
   UINT64_MAX when the read fails. */
static uint64_t best_ns(uint8_t *src, uint8_t *mid, uint8_t *dst, size_t n, bool cma)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < PROBE_REPS; i++) {
        uint64_t t0 = fl_now_ns();
        if (cma) {
            if (fl_shm_cma_copy(getpid(), false, (uint64_t)(uintptr_t)src, dst, n) != 0)
                return UINT64_MAX;
        } else {
            memcpy(mid, src, n);
            memcpy(dst, mid, n);
        }
        /* Keeps the compiler from dropping copies whose result is unread. */
        __asm__ volatile("" : : "r"(dst) : "memory");
        uint64_t t = fl_now_ns() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

/* The smallest probed size from which one read beats two copies; 0: none. */
static size_t crossover(uint8_t *src, uint8_t *mid, uint8_t *dst, bool *refused)
{
    size_t from = 0;
    *refused = false;
    for (size_t n = PROBE_FIRST; n <= PROBE_LAST; n *= 2) {
        uint64_t one = best_ns(src, mid, dst, n, true);
        if (one == UINT64_MAX) {
            *refused = true;
            return 0;
        }
        uint64_t two = best_ns(src, mid, dst, n, false);
        fl_debug("shm: probe %zu bytes: one read %llu ns, two copies %llu ns", n,
                 (unsigned long long)one, (unsigned long long)two);
        if (one < two) {
            if (!from)
                from = n;
        } else {
            from = 0; /* it must win at every larger size too */
        }
    }
    return from;
}

static void probe(void)
{
    uint8_t *mem = malloc(3 * (size_t)PROBE_LAST);
    if (!mem) {
        fl_info("shm: no memory to probe one copy against two: large messages go "
                "through the rings");
        return;
    }
    memset(mem, 1, 3 * (size_t)PROBE_LAST); /* no page faults in the timing */
    bool refused;
    probed_min = crossover(mem, mem + PROBE_LAST, mem + 2 * (size_t)PROBE_LAST, &refused);
    free(mem);
    if (refused)
        fl_info("shm: cross-memory attach is refused here: large stream and tagged "
                "messages go through the rings (two copies)");
    else if (!probed_min)
        fl_info("shm: two copies through the rings beat a cross-memory read up to "
                "%u KiB here: large messages are not pulled",
                PROBE_LAST >> 10);
    else
        fl_info("shm: receivers pull stream messages from %zu KiB (probed)",
                probed_min >> 10);
}

size_t fl_shm_pull_min(void)
{
    switch (fl_shm_cfg.rndv) {
    case FL_RNDV_OFF:
        return 0;
    case FL_RNDV_ON:
        return fl_shm_cfg.rndv_min ? (size_t)fl_shm_cfg.rndv_min : RNDV_ON_MIN;
    default:
        pthread_once(&probe_once, probe);
        if (!probed_min || !fl_shm_cfg.rndv_min)
            return probed_min;
        return (size_t)fl_shm_cfg.rndv_min;
    }
}
