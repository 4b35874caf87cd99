/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A call of fm.h that answers FM_FAILURE has sent nothing. Node 0 makes
 * every bad call it can to node 1 (a NULL buffer with a length, a node or
 * handler out of range, a piece past the declared size or from NULL) both
 * from the program and from inside a handler; each must answer failure,
 * and node 1 counts what arrives: after the DONE message that follows
 * them (in order per pair), nothing of the failed calls may have run a
 * handler, and the one message with a refused piece in it arrives as its
 * good pieces and zeros. Other nodes only take part in the start and end.
 *
 *   fm_bad
 */
#include <fm.h>
#include <stdio.h>
#include <string.h>

#include "test.h" /* CHECK, FAIL */

#define H_BAD   1 /* every failed call names it */
#define H_PIECE 2 /* the message a piece was refused from */
#define H_DONE  3
#define H_GO    4

static int bad_in, pieces_in, done_in, go_in;

static int bad_handler(FM_stream *s, unsigned sender)
{
    (void)s;
    fprintf(stderr, "node 1: a message from node %u that a failed call sent\n", sender);
    bad_in++;
    return FM_CONTINUE;
}

/* "ab", then zeros: the refused pieces left nothing. */
static int piece_handler(FM_stream *s, unsigned sender)
{
    char b[8];
    (void)sender;
    CHECK(FM_receive(b, s, sizeof b) == (int)sizeof b);
    CHECK(memcmp(b, "ab\0\0\0\0\0\0", sizeof b) == 0);
    pieces_in++;
    return FM_CONTINUE;
}

static int done_handler(FM_stream *s, unsigned sender)
{
    (void)s, (void)sender;
    done_in++;
    return FM_CONTINUE;
}

/* Every bad call, each answering failure; then DONE. */
static void bad_calls(void)
{
    static char buf[64] = "abcdefgh";
    CHECK(FM_send(1, H_BAD, NULL, 5) == FM_FAILURE);
    CHECK(FM_send(FM_numnodes, H_BAD, buf, 5) == FM_FAILURE);
    CHECK(FM_send(1, FM_MAX_HANDLERS, buf, 5) == FM_FAILURE);
    CHECK(FM_send_4(FM_numnodes, H_BAD, 1, 2, 3, 4) == FM_FAILURE);
    CHECK(FM_send_4(1, FM_MAX_HANDLERS, 1, 2, 3, 4) == FM_FAILURE);
    CHECK(FM_begin_message(FM_numnodes, 8, H_BAD) == NULL);
    CHECK(FM_begin_message(1, 8, FM_MAX_HANDLERS) == NULL);
    FM_stream *s = FM_begin_message(1, 8, H_PIECE);
    CHECK(s);
    CHECK(FM_send_piece(s, buf, 1) == FM_SUCCESS);
    CHECK(FM_send_piece(s, NULL, 3) == FM_FAILURE);
    CHECK(FM_send_piece(s, buf, 8) == FM_FAILURE); /* past the size */
    CHECK(FM_send_piece(s, buf + 1, 1) == FM_SUCCESS);
    CHECK(FM_end_message(s) == FM_SUCCESS);
    CHECK(FM_send_piece(s, buf, 1) == FM_FAILURE); /* ended */
    CHECK(FM_send(1, H_DONE, buf, 1) == FM_SUCCESS);
}

static int go_handler(FM_stream *s, unsigned sender)
{
    (void)s, (void)sender;
    /* inside a handler: held, at most 64 MiB of it */
    CHECK(FM_begin_message(1, (unsigned long)65 << 20, H_BAD) == NULL);
    bad_calls(); /* inside a handler: the messages are held, then go */
    go_in++;
    return FM_CONTINUE;
}

int main(void)
{
    CHECK(FM_initialize() == FM_SUCCESS);
    if (FM_numnodes < 2) {
        fprintf(stderr, "fm_bad needs 2 nodes\n");
        return TEST_SKIP;
    }
    CHECK(FM_register_handler(H_BAD, bad_handler) == H_BAD);
    CHECK(FM_register_handler(H_PIECE, piece_handler) == H_PIECE);
    CHECK(FM_register_handler(H_DONE, done_handler) == H_DONE);
    CHECK(FM_register_handler(H_GO, go_handler) == H_GO);
    if (FM_nodeid == 1) {
        CHECK(FM_send(0, H_GO, NULL, 0) == FM_SUCCESS);
        while (done_in < 2)
            CHECK(FM_extract() >= 0);
        if (bad_in)
            FAIL("%d messages arrived from calls that answered FM_FAILURE", bad_in);
        CHECK(pieces_in == 2);
        printf("node 1: failed calls sent nothing, from the program and a handler\n");
    } else if (FM_nodeid == 0) {
        bad_calls();
        while (!go_in)
            CHECK(FM_extract() >= 0);
    }
    FM_finalize();
    return 0;
}
