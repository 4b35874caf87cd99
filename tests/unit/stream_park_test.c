/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_stream_park / unpark (<flit/stream.h>) in a job of one rank,
 * messages to itself: an inline handler cannot park, nor one with bytes of
 * its message left; an unpark before the park counts; parked handlers wait
 * while the endpoint handles other messages, and resume in the order they
 * were unparked, in a later progress pass; an unpark from another thread
 * wakes a thread-safe endpoint asleep in flit_wait; destroying the
 * endpoint lets a parked handler go with FLIT_ERR_FINALIZED; bad handles.
 */
#include <flit/stream.h>
#include <pthread.h>
#include <stdatomic.h>

#include "unit.h"

enum { H_INLINE = 1, H_PARK = 2, H_EARLY = 3, H_PLAIN = 4 };

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

static void register_all(void)
{
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
    /* The last one is let go by the endpoint's end. */
    last_park = FLIT_ERR_BOOT;
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_ST(last_park, FLIT_ERR_FINALIZED);
    CHECK(norder == 3);
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
