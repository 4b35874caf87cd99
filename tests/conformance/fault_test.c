/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seeded fault interposer (src/transport/fault), over the memory
 * datagram network between two endpoints of this process: rank 0 sends
 * numbered datagrams one at a time, rank 1 receives them through the
 * interposer.
 *
 *  - what comes out is exactly what a model of the documented behaviour
 *    makes of the generator's actions (fl_fault_roll with the same seed):
 *    dropped, duplicated, held back behind the next one, none of that
 *    held back in a nested receive (buffer set 1); and every kind happens;
 *  - the same seed gives the same sequence, another seed another;
 *  - a delayed datagram comes out only once due, and the interposer's
 *    descriptor turns readable for it (no sleeper misses it); a datagram
 *    held behind the next one makes the descriptor readable at once;
 *  - held datagrams keep their bytes while later ones come and go;
 *  - with no rate set, nothing happens to anything;
 *  - FLIT_DROP_RATE and friends and FLIT_FAULT_SEED + rank are what
 *    fl_fault_from_config reads.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memnet.h"
#include "platform/le.h"
#include "platform/os.h"
#include "transport/fault/fault.h"
#include "unit.h"
#include "util/config.h"

#define N 3000u

static struct fl_tp_counters counters;
static const uint32_t host_of[2];

static struct fl_dgram *open_rank(uint32_t rank, const struct fl_fault_params *p)
{
    struct fl_tp_open_args a = {.rank = rank,
                                .size = 2,
                                .segment_fd = -1,
                                .host_of = host_of,
                                .counters = &counters};
    struct fl_dgram *d;
    flit_status st = p ? fl_fault_open(&memnet_ops, p, &a, &d) : memnet_ops.open(&a, &d);
    CHECK((st) == (FLIT_OK));
    return d;
}

static void send_id(struct fl_dgram *tx, uint32_t id)
{
    uint8_t b[64];
    fl_put32(b, id);
    for (size_t i = 4; i < sizeof b; i++)
        b[i] = (uint8_t)(id + i);
    struct iovec iov = {b, sizeof b};
    struct fl_dgram_out o = {.dst = 1, .iov = &iov, .iovcnt = 1};
    CHECK((memnet_ops.send(tx, &o, 1)) == (1));
}

/* Receives on slot, appending the ids (bytes checked) to out. */
static void take(struct fl_dgram *rx, unsigned slot, uint32_t *out, uint32_t *n)
{
    struct fl_dgram_in *in;
    int got = fl_fault_recv(rx, slot, &in);
    CHECK(got >= 0);
    for (int i = 0; i < got; i++) {
        CHECK(in[i].len == 64 && in[i].src == 0 && ((uintptr_t)in[i].buf & 7) == 0);
        uint32_t id = fl_get32(in[i].buf);
        for (size_t k = 4; k < 64; k++)
            if (in[i].buf[k] != (uint8_t)(id + k))
                FAIL("datagram %u: byte %zu damaged", id, k);
        CHECK(*n < 3 * N);
        out[(*n)++] = id;
    }
}

/* One datagram per receive; every fifth received in a nested set. */
static uint32_t run(const struct fl_fault_params *p, uint32_t *out)
{
    struct fl_dgram *tx = open_rank(0, NULL), *rx = open_rank(1, p);
    uint32_t n = 0;
    for (uint32_t id = 0; id < N; id++) {
        send_id(tx, id);
        take(rx, id % 5 == 4 ? 1 : 0, out, &n);
    }
    take(rx, 0, out, &n); /* nothing came: what is held goes */
    struct fl_fault_tally t;
    fl_fault_tally(rx, &t);
    CHECK(t.received == N);
    fl_fault_close(rx);
    memnet_ops.close(tx);
    return n;
}

/* The model: what the documented behaviour makes of the same rolls. */
static uint32_t model(const struct fl_fault_params *p, uint32_t *out, uint32_t kinds[5])
{
    uint64_t state = p->seed;
    uint32_t n = 0;
    int64_t held = -1;
    for (uint32_t id = 0; id < N; id++) {
        enum fl_fault_action a = fl_fault_roll(p, &state);
        bool outer = id % 5 != 4;
        kinds[a]++;
        if (a == FL_FAULT_DROP)
            continue;
        if (a == FL_FAULT_DUP)
            out[n++] = id;
        if (outer && a == FL_FAULT_REORDER && held < 0) {
            held = id;
            continue;
        }
        out[n++] = id;
        if (outer && held >= 0) {
            out[n++] = (uint32_t)held;
            held = -1;
        }
    }
    if (held >= 0)
        out[n++] = (uint32_t)held;
    return n;
}

static void test_model(void)
{
    static uint32_t got[3 * N], want[3 * N], again[3 * N], other[3 * N];
    struct fl_fault_params p = {
        .seed = 42, .drop_ppm = 100000, .dup_ppm = 100000, .reorder_ppm = 200000};
    uint32_t kinds[5] = {0};
    uint32_t n = run(&p, got), m = model(&p, want, kinds);
    CHECK(kinds[FL_FAULT_DROP] > 0 && kinds[FL_FAULT_DUP] > 0 &&
          kinds[FL_FAULT_REORDER] > 0);
    if (n != m)
        FAIL("%u datagrams came out, the model says %u", n, m);
    for (uint32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            FAIL("datagram %u of the output is %u, the model says %u", i, got[i],
                 want[i]);
    CHECK(run(&p, again) == n && memcmp(again, got, n * sizeof *got) == 0);
    p.seed = 43;
    uint32_t o = run(&p, other);
    CHECK(o != n || memcmp(other, got, n * sizeof *got) != 0);
    /* no rate: everything once, in order */
    struct fl_fault_params none = {.seed = 42};
    CHECK(run(&none, got) == N);
    for (uint32_t i = 0; i < N; i++)
        CHECK(got[i] == i);
}

static bool readable(int fd, int ms)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    return poll(&pf, 1, ms) > 0;
}

/* Everything delayed: nothing comes out before it is due, the descriptor
   wakes a sleeper for each, and each comes out once. */
static void test_delay(void)
{
    struct fl_fault_params p = {.seed = 7, .delay_ppm = 1000000, .delay_ns = 30000000};
    struct fl_dgram *tx = open_rank(0, NULL), *rx = open_rank(1, &p);
    uint32_t out[16], n = 0;
    uint64_t t0 = fl_now_ns();
    for (uint32_t id = 0; id < 4; id++)
        send_id(tx, id);
    take(rx, 0, out, &n); /* all four held */
    uint64_t t1 = fl_now_ns();
    if (t1 - t0 < p.delay_ns)
        CHECK((n) == (0));
    /* a sleeper: arm-free, the descriptor alone must bring it back */
    while (n < 4) {
        CHECK(readable(fl_fault_fd(rx), 10000));
        take(rx, 0, out, &n);
    }
    CHECK(fl_now_ns() - t0 >= p.delay_ns);
    for (uint32_t i = 0; i < 4; i++)
        CHECK(out[i] == i);
    CHECK(!readable(fl_fault_fd(rx), 0)); /* nothing left: quiet */
    struct fl_fault_tally t;
    fl_fault_tally(rx, &t);
    CHECK(t.delayed == 4 && t.received == 4);
    fl_fault_close(rx);

    /* held behind the next one: readable at once, out on the next receive */
    struct fl_fault_params r = {.seed = 7, .reorder_ppm = 1000000};
    rx = open_rank(1, &r);
    n = 0;
    send_id(tx, 9);
    take(rx, 0, out, &n);
    CHECK((n) == (0));
    CHECK(readable(fl_fault_fd(rx), 0));
    take(rx, 0, out, &n);
    CHECK(n == 1 && out[0] == 9);
    CHECK(!readable(fl_fault_fd(rx), 0));
    fl_fault_close(rx);
    memnet_ops.close(tx);
}

static void test_config(void)
{
    setenv("FLIT_DROP_RATE", "0.25", 1);
    setenv("FLIT_DUP_RATE", "0.125", 1);
    setenv("FLIT_REORDER_RATE", "0.5", 1);
    setenv("FLIT_FAULT_SEED", "1000", 1);
    CHECK((fl_config_add(fl_fault_settings)) == (FLIT_OK));
    CHECK((fl_config_load()) == (FLIT_OK));
    struct fl_fault_params p;
    CHECK(fl_fault_from_config(3, &p));
    CHECK(p.seed == 1003 && p.drop_ppm == 250000 && p.dup_ppm == 125000 &&
          p.reorder_ppm == 500000 && p.delay_ppm == 0);
    unsetenv("FLIT_DROP_RATE");
    unsetenv("FLIT_DUP_RATE");
    unsetenv("FLIT_REORDER_RATE");
    CHECK((fl_config_load()) == (FLIT_OK));
    CHECK(!fl_fault_from_config(0, &p));
    unsetenv("FLIT_FAULT_SEED");
}

int main(void)
{
    CHECK((memnet_create()) == (0));
    test_model();
    test_delay();
    test_config();
    return 0;
}
