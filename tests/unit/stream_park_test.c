/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_stream_park / unpark (<flit/stream.h>) in a job of one rank,
 * messages to itself: an inline handler cannot park, nor one with bytes of
 * its message left; an unpark before the park counts; parked handlers wait
 * while the endpoint handles other messages, and resume in the order they
 * were unparked, in a later progress pass; an unpark from another thread
 * wakes a thread-safe endpoint asleep in flit_wait; destroying the
 * endpoint lets a parked handler go with FLIT_ERR_FINALIZED; bad handles.
 * flit_stream_spawn from an active-message handler: the spawned function
 * runs before spawn returns, the request's token stays usable after it
 * (when it returned, and when it parked), a parked one goes on in a later
 * pass or ends FLIT_ERR_FINALIZED with the endpoint; its bad arguments;
 * flit_in_handler in program context, in a handler and in a spawned one.
 */
#include <flit/stream.h>
#include <pthread.h>
#include <stdatomic.h>

#include "unit.h"

enum { H_INLINE = 1, H_PARK = 2, H_EARLY = 3, H_PLAIN = 4, H_SPAWN = 5, H_ACK = 6 };

static flit_ep_t *ep;
static flit_stream_t *parked[4];
static _Atomic int nparked, order[4], norder, plain_runs;
static flit_status last_park = FLIT_ERR_BOOT;

static void send_to_self(uint16_t h, uint32_t v)
{
    flit_stream_out_t *o;
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(h), sizeof v, 0, &o));
    CHECK_OK(flit_stream_send(o, &v, sizeof v));
    CHECK_OK(flit_stream_end(o));
}

static void on_inline(flit_stream_t *s, size_t total, void *user)
{
    (void)total, (void)user;
    CHECK_ST(flit_stream_park(s), FLIT_ERR_NOT_SUPPORTED);
}

/* Parks until unparked; records the order it went on in. */
static void on_park(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    uint32_t v;
    CHECK_ST(flit_stream_park(s), FLIT_ERR_AGAIN); /* its 4 bytes are not taken */
    CHECK_OK(flit_stream_recv(s, &v, total));
    parked[v] = s;
    nparked++;
    flit_status st = flit_stream_park(s);
    last_park = st;
    if (st == FLIT_OK)
        order[norder++] = (int)v;
}

/* Unparks itself first: the park returns at once. */
static void on_early(flit_stream_t *s, size_t total, void *user)
{
    (void)total, (void)user;
    CHECK_OK(flit_stream_skip(s, total));
    CHECK_OK(flit_stream_unpark(s));
    CHECK_OK(flit_stream_unpark(s)); /* counts once */
    CHECK_OK(flit_stream_park(s));
    order[norder++] = 99;
}

static void on_plain(flit_stream_t *s, size_t total, void *user)
{
    (void)s, (void)total, (void)user;
    plain_runs++;
}

/* ---- spawn ---- */

static void poll_until(_Atomic int *v, int want);

static flit_stream_t *spawned_parked;
static _Atomic int spawn_runs, spawn_done, acks;
static flit_status spawn_park = FLIT_ERR_BOOT;

/* Returns at once: a message of no bytes from this rank. */
static void spawned(flit_stream_t *s, size_t total, void *user)
{
    CHECK(total == 0 && flit_stream_remaining(s) == 0 && user == &spawn_runs);
    CHECK(flit_stream_rank(s).idx == 0 && flit_stream_ep(s) == ep);
    uint8_t b;
    CHECK_ST(flit_stream_recv(s, &b, 1), FLIT_ERR_TOO_LARGE);
    CHECK(flit_in_handler() == 1); /* on its own stack, in handler context */
    spawn_runs++;
}

static void spawned_parks(flit_stream_t *s, size_t total, void *user)
{
    (void)total, (void)user;
    spawn_runs++;
    spawned_parked = s;
    spawn_park = flit_stream_park(s);
    spawned_parked = NULL;
    spawn_done++;
}

static void on_ack(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)n, (void)args, (void)nargs, (void)user;
    acks++;
}

static void on_spawn(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)buf, (void)n, (void)user;
    CHECK(nargs == 1); /* args[0]: the spawned function parks */
    CHECK(flit_in_handler() == 1);
    int before = spawn_runs;
    CHECK_ST(flit_stream_spawn(NULL, flit_rank(0), spawned, &spawn_runs),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_spawn(ep, flit_rank(0), NULL, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_spawn(ep, flit_rank(1), spawned, &spawn_runs), FLIT_ERR_RANK);
    CHECK(spawn_runs == before); /* none of those ran anything */
    CHECK_OK(flit_stream_spawn(ep, flit_rank(0), args[0] ? spawned_parks : spawned,
                               &spawn_runs));
    CHECK(spawn_runs == before + 1); /* ran at once, up to its return or park */
    CHECK(args[0] ? spawned_parked != NULL : spawned_parked == NULL);
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_ACK), NULL, 0)); /* token alive */
}

static void spawn_once(uint32_t park)
{
    int want = acks + 1;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_SPAWN), &park, 1, 0));
    poll_until(&acks, want);
}

static void register_all(void)
{
    CHECK_OK(flit_am_register(ep, flit_handler(H_SPAWN), on_spawn, NULL));
    CHECK_OK(flit_am_register(ep, flit_handler(H_ACK), on_ack, NULL));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_INLINE), on_inline, NULL));
    CHECK_OK(flit_stream_register_flags(ep, flit_handler(H_PARK), on_park, NULL,
                                        FLIT_STREAM_FIBER));
    CHECK_OK(flit_stream_register_flags(ep, flit_handler(H_EARLY), on_early, NULL,
                                        FLIT_STREAM_FIBER));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_PLAIN), on_plain, NULL));
}

static void poll_until(_Atomic int *v, int want)
{
    double deadline = (double)time(NULL) + 60;
    while (*v != want) {
        flit_status st = flit_wait(ep, 10000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            FAIL("flit_wait: %s", flit_status_name(st));
        if ((double)time(NULL) > deadline)
            FAIL("waited 60 s for %d, have %d", want, (int)*v);
    }
}

static void single_threaded(void)
{
    CHECK_OK(flit_ep_create(NULL, &ep));
    register_all();
    CHECK_ST(flit_stream_register_flags(ep, flit_handler(9), on_plain, NULL, 1u << 5),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_register_flags(NULL, flit_handler(9), on_plain, NULL, 0),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_park(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_unpark(NULL), FLIT_ERR_INVALID_ARG);
    send_to_self(H_INLINE, 0);
    send_to_self(H_EARLY, 0);
    poll_until(&norder, 1);
    CHECK(order[0] == 99);
    /* Three parked; other messages go on meanwhile. */
    for (uint32_t i = 0; i < 3; i++)
        send_to_self(H_PARK, i);
    poll_until(&nparked, 3);
    for (int i = 0; i < 5; i++)
        send_to_self(H_PLAIN, 0);
    poll_until(&plain_runs, 5);
    CHECK(norder == 1);
    CHECK_OK(flit_stream_unpark(parked[2]));
    CHECK_OK(flit_stream_unpark(parked[0]));
    poll_until(&norder, 3);
    CHECK(order[1] == 2 && order[2] == 0 && last_park == FLIT_OK);
    /* Spawned from an active-message handler: returns, then parks. */
    CHECK(flit_in_handler() == 0);
    CHECK_ST(flit_stream_spawn(ep, flit_rank(0), spawned, &spawn_runs),
             FLIT_ERR_INVALID_ARG); /* program context */
    spawn_once(0);
    spawn_once(1);
    CHECK(spawned_parked != NULL && spawn_done == 0);
    for (int i = 0; i < 3; i++) /* other messages go on while it is parked */
        send_to_self(H_PLAIN, 0);
    poll_until(&plain_runs, 8);
    CHECK(spawn_done == 0);
    CHECK_OK(flit_stream_unpark(spawned_parked));
    poll_until(&spawn_done, 1);
    CHECK_ST(spawn_park, FLIT_OK);
    spawn_once(1); /* left parked: the endpoint's end lets it go */
    /* The last ones are let go by the endpoint's end. */
    last_park = FLIT_ERR_BOOT;
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_ST(last_park, FLIT_ERR_FINALIZED);
    CHECK(norder == 3);
    CHECK(spawn_done == 2 && spawn_runs == 3);
    CHECK_ST(spawn_park, FLIT_ERR_FINALIZED);
}

static void *unparker(void *arg)
{
    (void)arg;
    while (nparked < 4)
        sched_yield();
    CHECK_OK(flit_stream_unpark(parked[3]));
    return NULL;
}

static void thread_safe(void)
{
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode = FLIT_THREAD_SAFE};
    CHECK_OK(flit_ep_create(&p, &ep));
    register_all();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, unparker, NULL) == 0);
    send_to_self(H_PARK, 3);
    poll_until(&norder, 4);
    CHECK(order[3] == 3);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_OK(flit_ep_destroy(ep));
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    single_threaded();
    thread_safe();
    CHECK_OK(flit_finalize());
    return 0;
}
