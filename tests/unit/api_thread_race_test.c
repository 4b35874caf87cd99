/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FLIT_THREAD_SINGLE: concurrent entry must never go unreported, however the
 * two threads' entries interleave (api_thread_test covers the case of one
 * thread parked in a handler deterministically).
 *
 * The entry check is a plain load and store, by design: a locked instruction
 * on every call would cost more than the call. So two outcomes are allowed:
 *   - every overlap was caught at entry: each call worked or answered
 *     FLIT_ERR_THREAD, and every message sent ran its handler exactly once;
 *   - an overlap slipped past the entry check and was caught on the way out:
 *     the library stops the process (SIGABRT) saying that two threads were
 *     inside the endpoint at once.
 * Anything else -- another signal, wrong counts, a silent exit -- fails.
 *
 * Two threads hammer one single-threaded endpoint with non-blocking sends to
 * themselves and polls, in a child process so that the abort can be judged.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#define H_MARK 1

static flit_ep_t *ep;
static uint64_t per_thread;
static uint8_t *seen;
static _Atomic uint64_t sent_ok, bad_ids, thread_errs, other_errs;

static void mark_handler(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                         unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    if (nargs != 1 || args[0] >= 2 * per_thread) {
        atomic_fetch_add(&bad_ids, 1);
        return;
    }
    if (seen[args[0]] < 255)
        seen[args[0]]++;
}

static void count(flit_status st)
{
    if (st == FLIT_ERR_THREAD)
        atomic_fetch_add(&thread_errs, 1);
    else if (st != FLIT_OK && st != FLIT_ERR_AGAIN)
        atomic_fetch_add(&other_errs, 1);
}

static void *hammer(void *arg)
{
    uint32_t base = (uint32_t)((uintptr_t)arg * per_thread);
    for (uint32_t i = 0; i < per_thread; i++) {
        uint32_t id = base + i;
        flit_status st = flit_am_short(ep, flit_rank(0), flit_handler(H_MARK), &id, 1,
                                       FLIT_AM_NONBLOCK);
        if (st == FLIT_OK)
            atomic_fetch_add(&sent_ok, 1);
        else
            count(st);
        count(flit_poll(ep));
    }
    return NULL;
}

static int child(void);

static void run_child(void)
{
    _exit(child());
}

static int child(void)
{
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    per_thread = test_scaled(1000000);
    seen = calloc(2 * per_thread, 1);
    CHECK(seen != NULL);
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_MARK), mark_handler, NULL));
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, hammer, (void *)i) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    for (int i = 0; i < 100000; i++)
        CHECK_OK(flit_poll(ep));
    uint64_t handled = 0, twice = 0;
    for (uint64_t i = 0; i < 2 * per_thread; i++) {
        handled += seen[i] != 0;
        twice += seen[i] > 1;
    }
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(ep, &s));
    fprintf(stderr,
            "sent %llu, handled %llu, twice %llu, bad ids %llu, FLIT_ERR_THREAD %llu, "
            "other errors %llu, refused packets %llu\n",
            (unsigned long long)sent_ok, (unsigned long long)handled,
            (unsigned long long)twice, (unsigned long long)bad_ids,
            (unsigned long long)thread_errs, (unsigned long long)other_errs,
            (unsigned long long)s.refused_packets);
    CHECK(handled == sent_ok && twice == 0 && bad_ids == 0 && other_errs == 0);
    CHECK(s.refused_packets == 0);
    CHECK_OK(flit_finalize());
    return 0;
}

int main(void)
{
    unit_clean_env();
    static char out[16384];
    int status = unit_run_child(run_child, out, sizeof out);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
        strstr(out, "two threads were inside it at once")) {
        printf("overlap caught on the way out, process stopped with a clear message\n");
        return 0;
    }
    if (WIFSIGNALED(status))
        FAIL("two threads on a FLIT_THREAD_SINGLE endpoint: the process died of signal "
             "%d (%s) without the library saying why; its stderr:\n%s",
             WTERMSIG(status), strsignal(WTERMSIG(status)), out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("two threads on a FLIT_THREAD_SINGLE endpoint: child exit %d; its "
             "stderr:\n%s",
             WEXITSTATUS(status), out);
    printf("every overlap caught at entry (FLIT_ERR_THREAD), counts exact\n");
    return 0;
}
