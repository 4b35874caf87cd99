/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handlers that answer every message with more than it brought, faster
 * than the answers can go: node 0 sends MSGS messages of SIZE bytes to
 * node 1, whose handler answers each with ANSWERS messages of SIZE bytes
 * from inside the handler, so that the handlers of one FM_extract hold
 * more than fm.c's high-water mark (1 MiB) of answers. They must all come
 * back to node 0, whole and in order, and none may be refused on the way
 * (FM_begin_message inside the handler never answers NULL here: held
 * bytes are sent before more are taken).
 *
 *   fm_echo [MSGS]
 */
#include <fm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h" /* CHECK, FAIL */

#define H_PING  1
#define H_ECHO  2
#define SIZE    (64 * 1024)
#define ANSWERS 4

static long pings_in, echoes_in;

static unsigned char byte_at(uint32_t k, uint32_t seq)
{
    return (unsigned char)(k * 13u + seq * 7u);
}

static void fill(unsigned char *b, uint32_t seq)
{
    memcpy(b, &seq, sizeof seq);
    for (uint32_t k = sizeof seq; k < SIZE; k++)
        b[k] = byte_at(k, seq);
}

/* The message numbered want, whole. */
static void take(FM_stream *s, uint32_t want)
{
    static unsigned char b[SIZE];
    CHECK(FM_receive(b, s, SIZE) == SIZE);
    uint32_t seq;
    memcpy(&seq, b, sizeof seq);
    if (seq != want)
        FAIL("message %u arrived as number %u", seq, want);
    for (uint32_t k = sizeof seq; k < SIZE; k++)
        if (b[k] != byte_at(k, seq))
            FAIL("message %u: byte %u differs", seq, k);
}

/* Node 1: the answers go from here, each in two pieces. */
static int ping_handler(FM_stream *s, unsigned sender)
{
    static unsigned char b[SIZE];
    CHECK(sender == 0);
    take(s, (uint32_t)pings_in);
    for (int a = 0; a < ANSWERS; a++) {
        uint32_t seq = (uint32_t)(pings_in * ANSWERS + a);
        fill(b, seq);
        FM_stream *out = FM_begin_message(0, SIZE, H_ECHO);
        if (!out)
            FAIL("FM_begin_message in the handler answered NULL at answer %u", seq);
        CHECK(FM_send_piece(out, b, SIZE / 2) == FM_SUCCESS);
        CHECK(FM_send_piece(out, b + SIZE / 2, SIZE / 2) == FM_SUCCESS);
        CHECK(FM_end_message(out) == FM_SUCCESS);
    }
    pings_in++;
    return FM_CONTINUE;
}

static int echo_handler(FM_stream *s, unsigned sender)
{
    CHECK(sender == 1);
    take(s, (uint32_t)echoes_in++);
    return FM_CONTINUE;
}

int main(int argc, char **argv)
{
    long msgs = argc > 1 ? atol(argv[1]) : 300;
    CHECK(FM_initialize() == FM_SUCCESS);
    if (FM_numnodes < 2) {
        fprintf(stderr, "fm_echo needs 2 nodes\n");
        return TEST_SKIP;
    }
    CHECK(FM_register_handler(H_PING, ping_handler) == H_PING);
    CHECK(FM_register_handler(H_ECHO, echo_handler) == H_ECHO);
    if (FM_nodeid == 0) {
        static unsigned char b[SIZE];
        for (long m = 0; m < msgs; m++) {
            fill(b, (uint32_t)m);
            CHECK(FM_send(1, H_PING, b, SIZE) == FM_SUCCESS);
        }
        while (echoes_in < msgs * ANSWERS) /* bounded by flitrun --timeout */
            CHECK(FM_extract() >= 0);
    } else if (FM_nodeid == 1) {
        while (pings_in < msgs)
            CHECK(FM_extract() >= 0);
    }
    printf("node %u: %ld messages of %d bytes answered %d times each from handlers, "
           "in order\n",
           FM_nodeid, FM_nodeid ? pings_in : echoes_in / ANSWERS, SIZE, ANSWERS);
    FM_finalize();
    return 0;
}
