/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_wait's timeout: 0 and 1000 us time out when nothing comes; a
 * message pending returns at once whatever the timeout; and a very large
 * timeout (2e16 us, 2^62, INT64_MAX) means "a long time", not "already
 * past": the wait must last until a message arrives. The message comes
 * from a second thread (thread-safe endpoint) once the waiter is seen
 * making progress; if the waiter returns first, that is the failure.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "unit.h"

#define H_COUNT 1

static flit_ep_t *ep;
static int runs;
static _Atomic int a_returned;
static uint64_t polls_base;

static void count_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    runs++;
}

static uint64_t polls(void)
{
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    return s.polls;
}

/* Sends once the waiter has made 32 progress passes inside flit_wait (or
   has already returned). */
static void *sender(void *arg)
{
    (void)arg;
    uint64_t spins = 0;
    double start = unit_now();
    while (polls() < polls_base + 32 && !atomic_load(&a_returned)) {
        unit_pause(&spins);
        if (unit_now() - start > UNIT_HANG_S)
            FAIL("the waiter made no progress for %.0f s", UNIT_HANG_S);
    }
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), NULL, 0, 0));
    return NULL;
}

static void wait_for_other_thread(int64_t timeout_us)
{
    int before = runs;
    atomic_store(&a_returned, 0);
    polls_base = polls();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, sender, NULL) == 0);
    flit_status st = flit_wait(ep, timeout_us);
    atomic_store(&a_returned, 1);
    CHECK(pthread_join(t, NULL) == 0);
    if (st != FLIT_OK) {
        SOFT_FAIL("flit_wait(ep, %lld) answered %s before any message came",
                  (long long)timeout_us, flit_status_name(st));
        for (int i = 0; i < 100000 && runs == before; i++)
            CHECK_OK(flit_poll(ep));
    }
    CHECK(runs == before + 1);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode = FLIT_THREAD_SAFE};
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_COUNT), count_handler, NULL));

    CHECK_ST(flit_wait(ep, 0), FLIT_ERR_TIMEOUT);
    CHECK_ST(flit_wait(ep, 1000), FLIT_ERR_TIMEOUT);
    static const int64_t pending[] = {0, 1, 1000, INT64_MAX, -1};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_COUNT), NULL, 0, 0));
        CHECK_OK(flit_wait(ep, pending[i]));
        CHECK(runs == i + 1);
    }
    CHECK_ST(flit_wait(ep, 0), FLIT_ERR_TIMEOUT);

    wait_for_other_thread(-1);
    wait_for_other_thread(60 * 1000 * 1000);
    /* Timeouts whose nanoseconds do not fit 64 bits. */
    wait_for_other_thread(20000000000000000); /* 2e16 us, about 630 years */
    wait_for_other_thread((int64_t)1 << 62);
    wait_for_other_thread(INT64_MAX);
    CHECK_OK(flit_finalize());
    return unit_exit_status();
}
