/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A token ring as FM 2.x programs write it: the token is forwarded from
 * inside its handler, with FM_begin_message / FM_send_piece /
 * FM_end_message, HOPS times around the nodes, while the main program does
 * nothing but FM_extract and, now and then, send a message of its own to
 * the next node. Those must arrive in order with the handler's: every
 * message carries a sequence number per destination, taken when it
 * begins, that the receiver checks. Every 64th hop the token carries a
 * payload of several packets, sent in pieces and checked byte by byte.
 *
 *   fm_ring [HOPS]
 */
#include <fm.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "test.h" /* CHECK, FAIL */

#define H_TOKEN  1
#define H_SIDE   2
#define BIG      20000 /* the payload of every 64th hop */
#define SIDES    100   /* the program's own messages to the next node */
#define LIMIT_NS (90ll * 1000000000)

struct hdr {
    uint32_t hop, seq, len;
};

static unsigned next, prev;
static uint32_t seq_out, seq_in;
static long hops, tokens_in, sides_in;

static unsigned char byte_at(uint32_t k, uint32_t hop)
{
    return (unsigned char)(k * 7u + hop);
}

/* Begins a message to the next node: its header, with the next sequence
   number of that pair. */
static FM_stream *begin(unsigned handler, uint32_t hop, uint32_t len)
{
    struct hdr h = {hop, seq_out++, len};
    FM_stream *s = FM_begin_message(next, sizeof h + len, handler);
    if (!s)
        FAIL("FM_begin_message to node %u answered NULL (hop %u)", next, hop);
    CHECK(FM_send_piece(s, &h, sizeof h) == FM_SUCCESS);
    return s;
}

static void send_token(uint32_t hop)
{
    static unsigned char payload[BIG];
    uint32_t len = hop % 64 == 0 ? BIG : 0;
    for (uint32_t k = 0; k < len; k++)
        payload[k] = byte_at(k, hop);
    FM_stream *s = begin(H_TOKEN, hop, len);
    for (uint32_t off = 0; off < len; off += 1000)
        CHECK(FM_send_piece(s, payload + off, len - off < 1000 ? len - off : 1000) ==
              FM_SUCCESS);
    CHECK(FM_end_message(s) == FM_SUCCESS);
}

static struct hdr take_header(FM_stream *s, unsigned sender)
{
    struct hdr h;
    CHECK(sender == prev);
    CHECK(FM_receive(&h, s, sizeof h) == (int)sizeof h);
    if (h.seq != seq_in)
        FAIL("message %u from node %u arrived as number %u: out of order", h.seq, sender,
             seq_in);
    seq_in++;
    return h;
}

/* The token: checked, then sent on from here, as FM 2.x programs do. */
static int token_handler(FM_stream *s, unsigned sender)
{
    static unsigned char b[BIG];
    struct hdr h = take_header(s, sender);
    CHECK(h.len == (h.hop % 64 == 0 ? BIG : 0u));
    CHECK(FM_receive(b, s, h.len) == (int)h.len);
    for (uint32_t k = 0; k < h.len; k++)
        if (b[k] != byte_at(k, h.hop))
            FAIL("hop %u: payload byte %u differs", h.hop, k);
    tokens_in++;
    if (h.hop < hops)
        send_token(h.hop + 1);
    return FM_CONTINUE;
}

static int side_handler(FM_stream *s, unsigned sender)
{
    CHECK(take_header(s, sender).len == 0);
    sides_in++;
    return FM_CONTINUE;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
}

int main(int argc, char **argv)
{
    hops = argc > 1 ? atol(argv[1]) : 10000;
    CHECK(FM_initialize() == FM_SUCCESS);
    CHECK(FM_register_handler(H_TOKEN, token_handler) == H_TOKEN);
    CHECK(FM_register_handler(H_SIDE, side_handler) == H_SIDE);
    next = (FM_nodeid + 1) % FM_numnodes;
    prev = (FM_nodeid + FM_numnodes - 1) % FM_numnodes;
    /* hop h is taken by node h % n */
    long mine = hops / FM_numnodes + (FM_nodeid && FM_nodeid <= hops % FM_numnodes);
    if (FM_nodeid == 0)
        send_token(1);
    long sides_out = 0;
    long long deadline = now_ns() + LIMIT_NS;
    for (long pass = 0; tokens_in < mine || sides_in < SIDES; pass++) {
        /* FM_extract(bytes) every other pass: the paced path forwards too */
        int n = pass % 2 ? FM_extract(4096) : FM_extract();
        CHECK(n >= 0);
        if (sides_out < SIDES && sides_out * mine <= tokens_in * SIDES) {
            FM_stream *s = begin(H_SIDE, 0, 0);
            CHECK(FM_end_message(s) == FM_SUCCESS);
            sides_out++;
        }
        if (n == 0)
            sched_yield(); /* two cores for all the nodes */
        if (now_ns() > deadline)
            FAIL("stuck: %ld of %ld tokens and %ld of %d messages in", tokens_in, mine,
                 sides_in, SIDES);
    }
    while (sides_out < SIDES) {
        CHECK(FM_end_message(begin(H_SIDE, 0, 0)) == FM_SUCCESS);
        sides_out++;
    }
    printf("node %u of %u: %ld tokens forwarded from handlers, %d messages in order\n",
           FM_nodeid, FM_numnodes, tokens_in, SIDES);
    FM_finalize();
    return 0;
}
