/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tearing down while another thread is inside a call, and calls from a
 * signal handler. Each case runs in a child process of its own (flit_init
 * once per process) under a watchdog: a spin or a hang fails the case.
 *
 *  - single: thread B is inside flit_poll on a FLIT_THREAD_SINGLE endpoint
 *    (running a handler that holds it) when the main thread calls
 *    flit_finalize: FLIT_ERR_THREAD at once, the job still usable; once B
 *    is out, flit_finalize succeeds.
 *  - safe_wait: B is blocked in flit_wait(ep, -1) on a FLIT_THREAD_SAFE
 *    endpoint when the main thread destroys it: B's wait ends with
 *    FLIT_ERR_CLOSED and the destroy succeeds. The same through
 *    flit_finalize, with two waiters.
 *  - safe_race: B calls flit_poll in a loop on a FLIT_THREAD_SAFE
 *    endpoint, so its calls start while the main thread destroys it: every
 *    call answers FLIT_OK or FLIT_ERR_CLOSED, B stops on the first
 *    FLIT_ERR_CLOSED, and calls on the handle after the destroy answer
 *    FLIT_ERR_CLOSED too (before, the freed endpoint was read: ASan).
 *  - signal: a signal handler calls flit_poll while the interrupted thread
 *    sleeps inside flit_wait: FLIT_ERR_IN_HANDLER, reported as a call from
 *    a signal handler (single-threaded and thread-safe endpoints).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include <flit/am.h>

#include "unit.h"

#define WATCHDOG_S 60

static flit_ep_t *ep;
static _Atomic int inside, release, done_count;
static _Atomic flit_status waiter_st[2];

static void on_watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: watchdog: the case hung or spun\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void start_child(flit_thread_mode mode)
{
    unit_clean_env();
    signal(SIGALRM, on_watchdog);
    alarm(WATCHDOG_S);
    CHECK_OK(flit_init(NULL));
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE, .thread_mode = mode};
    CHECK_OK(flit_ep_create(&p, &ep));
}

static void wait_for(_Atomic int *flag, int value)
{
    uint64_t spins = 0;
    while (atomic_load(flag) < value)
        unit_pause(&spins);
}

/* ---- single ---- */

static void hold(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                 void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    atomic_store(&inside, 1);
    wait_for(&release, 1);
}

static void *poll_thread(void *arg)
{
    (void)arg;
    CHECK_OK(flit_poll(ep));
    return NULL;
}

static void case_single(void)
{
    start_child(FLIT_THREAD_SINGLE);
    CHECK_OK(flit_am_register(ep, flit_handler(1), hold, NULL));
    CHECK_OK(flit_am_short(ep, flit_job_rank(), flit_handler(1), NULL, 0, 0));
    pthread_t b;
    CHECK(pthread_create(&b, NULL, poll_thread, NULL) == 0);
    wait_for(&inside, 1);
    double t0 = unit_now();
    CHECK_ST(flit_finalize(), FLIT_ERR_THREAD);
    CHECK(unit_now() - t0 < WATCHDOG_S / 2);
    CHECK(flit_job_size() == 1); /* the job is as it was */
    atomic_store(&release, 1);
    CHECK(pthread_join(b, NULL) == 0);
    CHECK_OK(flit_finalize());
    exit(0);
}

/* ---- safe_wait ---- */

static void *wait_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    atomic_fetch_add(&inside, 1);
    flit_status st;
    do
        st = flit_wait(ep, -1);
    while (st == FLIT_OK); /* an event: none should come, but wait on */
    atomic_store(&waiter_st[i], st);
    atomic_fetch_add(&done_count, 1);
    return NULL;
}

/* Until the thread with kernel id tid sleeps in the kernel (flit_wait's
   sleep, not its spin before it). */
static void wait_asleep(pid_t tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    uint64_t spins = 0;
    for (;;) {
        FILE *f = fopen(path, "r");
        CHECK(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *close_paren = strrchr(buf, ')');
        CHECK(close_paren && close_paren[1] == ' ');
        if (close_paren[2] == 'S')
            return;
        unit_pause(&spins);
    }
}

/* Each waiter's kernel thread id, so that the test can wait until it sleeps
   inside flit_wait: a thread that only counted itself in may not have
   called flit_wait yet, and would then find the endpoint destroyed instead
   of being woken by its destruction. */
static _Atomic pid_t waiter_tid[2];

static void *wait_thread_tid(void *arg)
{
    atomic_store(&waiter_tid[(intptr_t)arg], (pid_t)syscall(SYS_gettid));
    return wait_thread(arg);
}

static void wait_waiter_asleep(int i)
{
    while (!atomic_load(&waiter_tid[i]))
        sched_yield();
    wait_asleep(atomic_load(&waiter_tid[i]));
}

static void case_safe_wait(void)
{
    start_child(FLIT_THREAD_SAFE);
    pthread_t b;
    CHECK(pthread_create(&b, NULL, wait_thread_tid, (void *)0) == 0);
    wait_for(&inside, 1);
    wait_waiter_asleep(0);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK(pthread_join(b, NULL) == 0);
    CHECK_ST(atomic_load(&waiter_st[0]), FLIT_ERR_CLOSED);

    /* Two waiters, ended by flit_finalize. */
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode = FLIT_THREAD_SAFE};
    CHECK_OK(flit_ep_create(&p, &ep));
    atomic_store(&inside, 0);
    atomic_store(&done_count, 0);
    pthread_t w[2];
    for (int i = 0; i < 2; i++) {
        atomic_store(&waiter_tid[i], 0);
        CHECK(pthread_create(&w[i], NULL, wait_thread_tid, (void *)(intptr_t)i) == 0);
    }
    wait_for(&inside, 2);
    for (int i = 0; i < 2; i++)
        wait_waiter_asleep(i);
    CHECK_OK(flit_finalize());
    for (int i = 0; i < 2; i++) {
        CHECK(pthread_join(w[i], NULL) == 0);
        CHECK_ST(atomic_load(&waiter_st[i]), FLIT_ERR_CLOSED);
    }
    exit(0);
}

/* ---- safe_race ---- */

static _Atomic int polls;
static _Atomic flit_status race_st;

static void *poll_loop(void *arg)
{
    (void)arg;
    flit_status st;
    while ((st = flit_poll(ep)) == FLIT_OK)
        atomic_fetch_add(&polls, 1);
    atomic_store(&race_st, st);
    return NULL;
}

static void case_safe_race(void)
{
    start_child(FLIT_THREAD_SAFE);
    pthread_t b;
    CHECK(pthread_create(&b, NULL, poll_loop, NULL) == 0);
    wait_for(&polls, 1000);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK(pthread_join(b, NULL) == 0);
    CHECK_ST(atomic_load(&race_st), FLIT_ERR_CLOSED);
    CHECK_ST(flit_poll(ep), FLIT_ERR_CLOSED);
    CHECK_ST(flit_wait(ep, 0), FLIT_ERR_CLOSED);
    CHECK_ST(flit_ep_destroy(ep), FLIT_ERR_CLOSED);
    CHECK_OK(flit_finalize());
    exit(0);
}

/* ---- signal ---- */

static _Atomic flit_status from_signal = FLIT_OK;
static _Atomic int signalled;

static void on_usr1(int sig)
{
    (void)sig;
    atomic_store(&from_signal, flit_poll(ep));
    atomic_store(&signalled, 1);
}

static pthread_t main_thread;
static pid_t main_tid;

static void *kicker(void *arg)
{
    (void)arg;
    wait_for(&inside, 1);
    wait_asleep(main_tid);
    pthread_kill(main_thread, SIGUSR1);
    return NULL;
}

static void case_signal(flit_thread_mode mode)
{
    start_child(mode);
    struct sigaction sa = {.sa_handler = on_usr1};
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    main_thread = pthread_self();
    main_tid = (pid_t)syscall(SYS_gettid);
    pthread_t k;
    CHECK(pthread_create(&k, NULL, kicker, NULL) == 0);
    atomic_store(&inside, 1);
    while (!atomic_load(&signalled)) {
        flit_status st = flit_wait(ep, 200000);
        CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
    }
    CHECK(pthread_join(k, NULL) == 0);
    CHECK_ST(atomic_load(&from_signal), FLIT_ERR_IN_HANDLER);
    CHECK_OK(flit_poll(ep)); /* outside the signal handler: fine again */
    CHECK_OK(flit_finalize());
    exit(0);
}

static void case_signal_single(void)
{
    case_signal(FLIT_THREAD_SINGLE);
}

static void case_signal_safe(void)
{
    case_signal(FLIT_THREAD_SAFE);
}

static void run(const char *name, void (*fn)(void), const char *want_log)
{
    char out[8192];
    int status = unit_run_child(fn, out, sizeof out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("case %s: status 0x%x, stderr:\n%s", name, status, out);
    if (want_log && !strstr(out, want_log))
        FAIL("case %s: the log does not say \"%s\":\n%s", name, want_log, out);
    printf("api_teardown: %s OK\n", name);
}

int main(void)
{
    run("single", case_single, "call it again once that thread has returned");
    run("safe_wait", case_safe_wait, NULL);
    run("safe_race", case_safe_race, NULL);
    run("signal_single", case_signal_single, "signal handler");
    run("signal_safe", case_signal_safe, "signal handler");
    return 0;
}
