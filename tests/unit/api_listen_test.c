/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoint listeners (flit_ep_listen):
 *  - bad arguments: NULL endpoint or listener, a pair added twice, one too
 *    many, removing what is not there;
 *  - a progress listener runs from flit_poll and inside flit_wait, never
 *    inside a handler, never inside itself, and may send: flit_wait
 *    returns for the message the listener sent from inside that wait;
 *  - a listener removes itself from inside and is not run again; one added
 *    from inside runs from the next pass;
 *  - a closing listener runs once, first thing in flit_ep_destroy, and may
 *    send and wait there;
 *  - thread-safe endpoint: no listener runs after flit_ep_unlisten has
 *    returned to another thread (a thread waits in flit_wait the whole
 *    time, running the listeners; the main thread adds one, sees it run,
 *    removes it and poisons its state; ASan turns a late call into a
 *    use-after-free report, the poison into a failure without it).
 * The peer-down event is tested with real deaths in tests/mp/peer_down.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "unit.h"

enum { H_PING = 1 };

static flit_ep_t *ep;
static int pings, in_handler, in_progress, progress_runs, sent_from_listener;
static bool want_send;

static void on_ping(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    in_handler = 1;
    pings++;
    CHECK_ST(flit_poll(ep), FLIT_ERR_IN_HANDLER);
    in_handler = 0;
}

static void on_progress(flit_ep_t *e, void *user)
{
    (void)user;
    CHECK(e == ep);
    CHECK(!in_handler && !in_progress);
    in_progress = 1;
    progress_runs++;
    CHECK_OK(flit_poll(e)); /* program code: it may poll (not re-run here) */
    if (want_send) {
        flit_status st = flit_am_short(e, flit_rank(0), flit_handler(H_PING), NULL, 0,
                                       FLIT_AM_NONBLOCK);
        CHECK(st == FLIT_OK || st == FLIT_ERR_AGAIN);
        if (st == FLIT_OK) {
            want_send = false;
            sent_from_listener++;
        }
    }
    in_progress = 0;
}

static const flit_ep_listener_t progress_l = {.progress = on_progress};

/* Removes itself on its first run. */
static int once_runs;
static const flit_ep_listener_t once_l;
static void on_once(flit_ep_t *e, void *user)
{
    once_runs++;
    CHECK_OK(flit_ep_unlisten(e, &once_l, user));
    CHECK_ST(flit_ep_unlisten(e, &once_l, user), FLIT_ERR_INVALID_ARG);
}
static const flit_ep_listener_t once_l = {.progress = on_once};

static int closing_runs;
static void on_closing(flit_ep_t *e, void *user)
{
    (void)user;
    closing_runs++;
    int before = pings;
    CHECK_OK(flit_am_short(e, flit_rank(0), flit_handler(H_PING), NULL, 0, 0));
    while (pings == before)
        CHECK_OK(flit_wait(e, (int64_t)UNIT_HANG_S * 1000000));
}
static const flit_ep_listener_t closing_l = {.closing = on_closing};

static void bad_arguments(void)
{
    static const flit_ep_listener_t many = {.progress = on_progress};
    CHECK_ST(flit_ep_listen(NULL, &many, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_listen(ep, NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_unlisten(ep, NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_unlisten(NULL, &many, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_unlisten(ep, &many, NULL), FLIT_ERR_INVALID_ARG);
    static int users[FLIT_EP_MAX_LISTENERS + 1];
    for (int i = 0; i < FLIT_EP_MAX_LISTENERS; i++)
        CHECK_OK(flit_ep_listen(ep, &many, &users[i]));
    CHECK_ST(flit_ep_listen(ep, &many, &users[0]), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_listen(ep, &many, &users[FLIT_EP_MAX_LISTENERS]),
             FLIT_ERR_EXHAUSTED);
    CHECK_ST(flit_ep_unlisten(ep, &many, &users[FLIT_EP_MAX_LISTENERS]),
             FLIT_ERR_INVALID_ARG);
    for (int i = 0; i < FLIT_EP_MAX_LISTENERS; i++)
        CHECK_OK(flit_ep_unlisten(ep, &many, &users[i]));
    CHECK_ST(flit_ep_unlisten(ep, &many, &users[0]), FLIT_ERR_INVALID_ARG);
}

static void progress_and_sends(void)
{
    CHECK_OK(flit_ep_listen(ep, &progress_l, NULL));
    int runs = progress_runs;
    CHECK_OK(flit_poll(ep));
    CHECK(progress_runs == runs + 1);

    /* The only message flit_wait can get is the one the listener sends
       from inside the wait. */
    want_send = true;
    int before = pings, sent = sent_from_listener;
    CHECK_OK(flit_wait(ep, (int64_t)UNIT_HANG_S * 1000000));
    for (int i = 0; i < 1000 && pings == before; i++)
        CHECK_OK(flit_wait(ep, (int64_t)UNIT_HANG_S * 1000000));
    CHECK(sent_from_listener == sent + 1 && pings == before + 1);

    once_runs = 0;
    CHECK_OK(flit_ep_listen(ep, &once_l, &once_runs));
    for (int i = 0; i < 5; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(once_runs == 1);
    CHECK_OK(flit_ep_unlisten(ep, &progress_l, NULL));
    runs = progress_runs;
    CHECK_OK(flit_poll(ep));
    CHECK(progress_runs == runs);
}

/* ---- thread-safe: removal is final once it returns ---- */

#define LIVE 0x4c495645u
#define DEAD 0xdeadu
struct watched {
    _Atomic unsigned magic;
    _Atomic int runs;
};
static _Atomic int stop_waiter;

static void on_watched(flit_ep_t *e, void *user)
{
    (void)e;
    struct watched *w = user;
    CHECK(atomic_load(&w->magic) == LIVE);
    atomic_fetch_add(&w->runs, 1);
}
static const flit_ep_listener_t watched_l = {.progress = on_watched};

static void *waiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_waiter)) {
        flit_status st = flit_wait(ep, 200);
        CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
    }
    return NULL;
}

static void removal_is_final(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
    int rounds = (int)test_scaled(200);
    for (int i = 0; i < rounds; i++) {
        struct watched *w = calloc(1, sizeof *w);
        CHECK(w);
        atomic_store(&w->magic, LIVE);
        CHECK_OK(flit_ep_listen(ep, &watched_l, w));
        double start = unit_now();
        uint64_t spins = 0;
        while (atomic_load(&w->runs) == 0) {
            unit_pause(&spins);
            if (unit_now() - start > UNIT_HANG_S)
                FAIL("the waiting thread never ran the listener");
        }
        CHECK_OK(flit_ep_unlisten(ep, &watched_l, w));
        atomic_store(&w->magic, DEAD);
        free(w);
    }
    atomic_store(&stop_waiter, 1);
    CHECK(pthread_join(t, NULL) == 0);
}

static void run(flit_thread_mode mode)
{
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE, .thread_mode = mode};
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_PING), on_ping, NULL));
    bad_arguments();
    progress_and_sends();
    if (mode == FLIT_THREAD_SAFE)
        removal_is_final();
    CHECK_OK(flit_ep_listen(ep, &closing_l, NULL));
    closing_runs = 0;
    CHECK_OK(flit_ep_destroy(ep));
    CHECK(closing_runs == 1);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    run(FLIT_THREAD_SINGLE);
    run(FLIT_THREAD_SAFE);
    CHECK_OK(flit_finalize());
    return unit_exit_status();
}
