/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-fm against flit's streams: node 0 measures, node 1 serves, through
 * fm.h and through the flit calls the library wraps (a flit endpoint of
 * their own), alternately in one run.
 *
 *   flitrun -n 2 fm-bench [ITERS]
 *
 * Figures: an 8-byte message and its answer (FM_begin_message /
 * FM_send_piece / FM_end_message, FM_receive in the handler, vs
 * flit_stream_begin / send / end and flit_stream_recv); a stream of 64 KiB
 * messages, one answer at the end.
 */
#include <flit/stream.h>
#include <fm.h>
#include <string.h>

#include "compare.h"

enum { H_PING = 1, H_PONG, H_BULK, H_STOP };
#define BULK 65536

static flit_ep_t *nep;
static volatile int fm_count, native_count, stop;
static unsigned char buf[BULK], sink[BULK];

static void fm_msg(unsigned dest, unsigned h, const void *b, unsigned long n)
{
    FM_stream *s = FM_begin_message(dest, n, h);
    FM_send_piece(s, (void *)b, n);
    FM_end_message(s);
}

static int ping(FM_stream *s, unsigned sender)
{
    uint64_t v;
    (void)sender;
    FM_receive(&v, s, sizeof v);
    fm_count = -1; /* answered after the handler, as natively */
    return FM_CONTINUE;
}

static int pong(FM_stream *s, unsigned sender)
{
    uint64_t v;
    (void)sender;
    FM_receive(&v, s, sizeof v);
    fm_count++;
    return FM_CONTINUE;
}

static int bulk(FM_stream *s, unsigned sender)
{
    uint32_t last;
    (void)sender;
    FM_receive(&last, s, sizeof last);
    FM_receive(sink, s, BULK - sizeof last);
    if (last)
        fm_count = -1; /* answered by serve */
    return FM_CONTINUE;
}

static void native_msg(uint32_t dest, unsigned h, const void *b, size_t n)
{
    flit_stream_out_t *o;
    flit_stream_begin(nep, flit_rank(dest), flit_handler((uint16_t)h), n, 0, &o);
    flit_stream_send(o, b, n);
    flit_stream_end(o);
}

static void fping(flit_stream_t *s, size_t total, void *u)
{
    uint64_t v;
    (void)total, (void)u;
    flit_stream_recv(s, &v, sizeof v);
    native_count = -1; /* answered outside the handler: a stream handler may not send */
}

static void fpong(flit_stream_t *s, size_t total, void *u)
{
    uint64_t v;
    (void)total, (void)u;
    flit_stream_recv(s, &v, sizeof v);
    native_count++;
}

static void fbulk(flit_stream_t *s, size_t total, void *u)
{
    uint32_t last;
    (void)total, (void)u;
    flit_stream_recv(s, &last, sizeof last);
    flit_stream_recv(s, sink, BULK - sizeof last);
    if (last)
        native_count = -1; /* answered by serve */
}

static void fstop(flit_stream_t *s, size_t total, void *u)
{
    (void)s, (void)total, (void)u;
    stop = 1;
}

static double fm_latency(int iters, size_t bytes)
{
    (void)bytes;
    fm_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        uint64_t v = (uint64_t)i;
        fm_msg(1, H_PING, &v, sizeof v);
        while (fm_count <= i)
            FM_extract(~0);
    }
    return compare_now() - t0;
}

static double native_latency(int iters, size_t bytes)
{
    (void)bytes;
    native_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        uint64_t v = (uint64_t)i;
        native_msg(1, H_PING, &v, sizeof v);
        while (native_count <= i)
            flit_poll(nep);
    }
    return compare_now() - t0;
}

static double fm_stream(int iters, size_t bytes)
{
    fm_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        memcpy(buf, &(uint32_t){i == iters - 1}, sizeof(uint32_t));
        fm_msg(1, H_BULK, buf, bytes);
    }
    while (fm_count < 1)
        FM_extract(~0);
    return compare_now() - t0;
}

static double native_stream(int iters, size_t bytes)
{
    native_count = 0;
    double t0 = compare_now();
    for (int i = 0; i < iters; i++) {
        memcpy(buf, &(uint32_t){i == iters - 1}, sizeof(uint32_t));
        native_msg(1, H_BULK, buf, bytes);
    }
    while (native_count < 1)
        flit_poll(nep);
    return compare_now() - t0;
}

/* Node 1: answers both ways until told to stop. Handlers may not send
   (flit's stream handlers, hence FM's), so pings are answered here. */
static void serve(void)
{
    while (!stop) {
        FM_extract(~0);
        if (fm_count == -1) {
            uint64_t v = 0;
            fm_count = 0;
            fm_msg(0, H_PONG, &v, sizeof v);
        }
        flit_poll(nep);
        if (native_count == -1) {
            uint64_t v = 0;
            native_count = 0;
            native_msg(0, H_PONG, &v, sizeof v);
        }
    }
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    if (FM_initialize() != FM_SUCCESS || FM_numnodes != 2)
        return 2;
    FM_register_handler(H_PING, ping);
    FM_register_handler(H_PONG, pong);
    FM_register_handler(H_BULK, bulk);
    if (flit_ep_create(NULL, &nep) != FLIT_OK)
        return 1;
    flit_stream_register(nep, flit_handler(H_PING), fping, NULL);
    flit_stream_register(nep, flit_handler(H_PONG), fpong, NULL);
    flit_stream_register(nep, flit_handler(H_BULK), fbulk, NULL);
    flit_stream_register(nep, flit_handler(H_STOP), fstop, NULL);
    flit_barrier(nep);
    if (FM_nodeid == 1) {
        serve();
    } else {
        printf("flit-fm vs flit streams, medians of %d alternated runs; ratio > 1: FM "
               "slower\n",
               COMPARE_RUNS);
        compare("FM message + answer", fm_latency, native_latency, iters, 8, 1, 1);
        compare("FM message stream", fm_stream, native_stream, iters / 4, BULK, 0, 1);
        native_msg(1, H_STOP, NULL, 0);
    }
    flit_barrier(nep);
    flit_ep_destroy(nep);
    FM_finalize();
    return 0;
}
