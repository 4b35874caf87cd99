/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread rules, made deterministic with a handler that holds the endpoint:
 *
 *  - FLIT_THREAD_SINGLE: thread A is inside flit_poll (running a handler)
 *    when thread B calls in on the same endpoint: B gets FLIT_ERR_THREAD,
 *    for every call, and nothing B tried happened. Once A is out, B's calls
 *    work: the error is not sticky.
 *  - FLIT_THREAD_SAFE: the same scenario never answers FLIT_ERR_THREAD; B
 *    waits for the endpoint and then gets through. A's handler does not wait
 *    for B's result (B is blocked on the lock until A leaves), only for B to
 *    be on its way, so there is no deadlock.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "unit.h"

#define H_HOLD  1
#define H_COUNT 2

static flit_ep_t *ep_single, *ep_safe;
static _Atomic int go, b_started, b_done;
static int hold_runs, count_runs;
static flit_status b_st[8];

/* Waits (bounded) until *flag is set. */
static void wait_flag(_Atomic int *flag, const char *what)
{
    uint64_t spins = 0;
    double start = unit_now();
    while (!atomic_load(flag)) {
        unit_pause(&spins);
        if ((spins & 1023) == 0 && unit_now() - start > UNIT_HANG_S)
            FAIL("waited %.0f s for %s", UNIT_HANG_S, what);
    }
}

static void count_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    count_runs++;
}

/* Single mode: A's handler lets B in and waits until B has tried. */
static void hold_single(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    hold_runs++;
    atomic_store(&go, 1);
    wait_flag(&b_done, "thread B's calls on the single-threaded endpoint");
}

/* Safe mode: A's handler lets B in, waits until B is on its way, gives it a
   chance to reach the lock, and returns. */
static void hold_safe(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    hold_runs++;
    atomic_store(&go, 1);
    wait_flag(&b_started, "thread B to start");
    for (int i = 0; i < 2000; i++)
        sched_yield();
}

static void *b_single(void *arg)
{
    (void)arg;
    wait_flag(&go, "the handler");
    uint32_t x = 1;
    b_st[0] = flit_poll(ep_single);
    b_st[1] = flit_wait(ep_single, 0);
    b_st[2] = flit_am_short(ep_single, flit_rank(0), flit_handler(H_COUNT), &x, 1, 0);
    b_st[3] =
        flit_am_medium(ep_single, flit_rank(0), flit_handler(H_COUNT), &x, 4, &x, 1, 0);
    b_st[4] = flit_barrier(ep_single);
    b_st[5] = flit_ep_arm(ep_single);
    b_st[6] = flit_am_register(ep_single, flit_handler(H_COUNT), NULL, NULL);
    atomic_store(&b_done, 1);
    return NULL;
}

static void *b_safe(void *arg)
{
    (void)arg;
    wait_flag(&go, "the handler");
    atomic_store(&b_started, 1);
    uint32_t x = 1;
    b_st[0] = flit_poll(ep_safe);
    b_st[1] = flit_am_short(ep_safe, flit_rank(0), flit_handler(H_COUNT), &x, 1, 0);
    b_st[2] = flit_wait(ep_safe, -1); /* runs the short just sent */
    atomic_store(&b_done, 1);
    return NULL;
}

static void reset(void)
{
    atomic_store(&go, 0);
    atomic_store(&b_started, 0);
    atomic_store(&b_done, 0);
    hold_runs = count_runs = 0;
    for (int i = 0; i < 8; i++)
        b_st[i] = (flit_status)-1;
}

static void test_single(void)
{
    reset();
    CHECK_OK(flit_am_register(ep_single, flit_handler(H_HOLD), hold_single, NULL));
    CHECK_OK(flit_am_register(ep_single, flit_handler(H_COUNT), count_handler, NULL));
    pthread_t b;
    CHECK(pthread_create(&b, NULL, b_single, NULL) == 0);
    CHECK_OK(flit_am_short(ep_single, flit_rank(0), flit_handler(H_HOLD), NULL, 0, 0));
    CHECK_OK(flit_poll(ep_single));
    CHECK(pthread_join(b, NULL) == 0);
    CHECK(hold_runs == 1);
    for (int i = 0; i < 7; i++)
        if (b_st[i] != FLIT_ERR_THREAD)
            FAIL("thread B's call %d on a busy single-threaded endpoint answered %s, "
                 "expected FLIT_ERR_THREAD",
                 i, flit_status_name(b_st[i]));
    /* Nothing B tried happened: no message sent, the handler still there. */
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep_single, &s));
    CHECK(s.sent_msgs[FLIT_STAT_REQ_SHORT] == 1);
    CHECK(s.sent_msgs[FLIT_STAT_REQ_MEDIUM] == 0);
    for (int i = 0; i < 10; i++)
        CHECK_OK(flit_poll(ep_single));
    CHECK(count_runs == 0);
}

/* Another thread takes over the single-threaded endpoint once A is out. */
static void *b_after(void *arg)
{
    (void)arg;
    uint32_t x = 7;
    b_st[0] = flit_am_short(ep_single, flit_rank(0), flit_handler(H_COUNT), &x, 1, 0);
    b_st[1] = flit_wait(ep_single, -1);
    b_st[2] = flit_poll(ep_single);
    return NULL;
}

static void test_single_after(void)
{
    reset();
    pthread_t b;
    CHECK(pthread_create(&b, NULL, b_after, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    CHECK_OK(b_st[0]);
    CHECK_OK(b_st[1]);
    CHECK_OK(b_st[2]);
    CHECK(count_runs == 1);
}

static void test_safe(void)
{
    reset();
    CHECK_OK(flit_am_register(ep_safe, flit_handler(H_HOLD), hold_safe, NULL));
    CHECK_OK(flit_am_register(ep_safe, flit_handler(H_COUNT), count_handler, NULL));
    pthread_t b;
    CHECK(pthread_create(&b, NULL, b_safe, NULL) == 0);
    CHECK_OK(flit_am_short(ep_safe, flit_rank(0), flit_handler(H_HOLD), NULL, 0, 0));
    CHECK_OK(flit_poll(ep_safe));
    CHECK(hold_runs == 1);
    CHECK(pthread_join(b, NULL) == 0);
    for (int i = 0; i < 3; i++)
        if (b_st[i] != FLIT_OK)
            FAIL("thread B's call %d on a thread-safe endpoint answered %s", i,
                 flit_status_name(b_st[i]));
    CHECK(count_runs == 1);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep_single));
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode = FLIT_THREAD_SAFE};
    CHECK_OK(flit_ep_create(&p, &ep_safe));
    test_single();
    test_single_after();
    test_safe();
    CHECK_OK(flit_finalize());
    return 0;
}
