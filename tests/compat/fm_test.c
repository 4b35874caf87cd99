/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fast Messages through fm.h, as FM programs used it: FM 1.x's FM_send_4
 * and FM_send with FM_extract(); FM 2.x's gather and scatter in pieces of
 * sizes that do not match on the two sides, a declared size larger than
 * what is sent, and FM_extract(bytes) pacing the receiver; then bad input,
 * each with the answer fm.h gives. Every node sends to the next one.
 *
 *   fm_test [MESSAGES]
 */
#include <fm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h" /* CHECK */

#define H_WORDS  1
#define H_BUFFER 2
#define H_PIECES 3
#define H_PACED  4
#define PIECES   10000
#define PACED    1000

static int words_in, buffers_in, pieces_in, paced_in;
static unsigned prev;

static int words_handler(FM_stream *s, unsigned sender)
{
    int w[4];
    CHECK(sender == prev);
    CHECK(FM_receive(w, s, sizeof w) == (int)sizeof w);
    CHECK(w[0] == words_in && w[1] == -1 && w[2] == 0x7fffffff && w[3] == (int)sender);
    CHECK(FM_receive(w, s, 1) == FM_FAILURE); /* nothing more in it */
    words_in++;
    return FM_CONTINUE;
}

static int buffer_handler(FM_stream *s, unsigned sender)
{
    static unsigned char b[3000];
    CHECK(FM_receive(b, s, sizeof b) == (int)sizeof b);
    for (unsigned k = 0; k < sizeof b; k++)
        CHECK(b[k] == (unsigned char)(k + sender));
    buffers_in++;
    return FM_CONTINUE;
}

/* Sent in pieces of 1000 bytes and declared 100 bytes longer than that;
   taken here in pieces of 7, then the padding. */
static int pieces_handler(FM_stream *s, unsigned sender)
{
    static unsigned char b[PIECES + 100];
    unsigned got = 0;
    while (got < PIECES) {
        unsigned n = PIECES - got < 7 ? PIECES - got : 7;
        CHECK(FM_receive(b + got, s, n) == (int)n);
        got += n;
    }
    CHECK(FM_receive(b + got, s, 100) == 100);
    for (unsigned k = 0; k < PIECES; k++)
        CHECK(b[k] == (unsigned char)(k * 3 + sender));
    for (unsigned k = PIECES; k < PIECES + 100; k++)
        CHECK(b[k] == 0);
    pieces_in++;
    return FM_CONTINUE;
}

static int paced_handler(FM_stream *s, unsigned sender)
{
    static char b[PACED];
    (void)sender;
    CHECK(FM_receive(b, s, sizeof b) == (int)sizeof b);
    paced_in++;
    return FM_CONTINUE;
}

static void bad_input(unsigned next, int seq)
{
    CHECK(FM_register_handler(FM_MAX_HANDLERS, words_handler) ==
          (unsigned long)FM_FAILURE);
    CHECK(FM_register_handler(9, NULL) == (unsigned long)FM_FAILURE);
    CHECK(FM_begin_message(FM_numnodes, 8, H_WORDS) == NULL);
    CHECK(FM_begin_message(next, 8, FM_MAX_HANDLERS) == NULL);
    CHECK(FM_send_piece(NULL, "x", 1) == FM_FAILURE);
    CHECK(FM_end_message(NULL) == FM_FAILURE);
    CHECK(FM_receive(NULL, NULL, 0) == FM_FAILURE);
    int w[4] = {seq, -1, 0x7fffffff, (int)FM_nodeid};
    FM_stream *s = FM_begin_message(next, sizeof w, H_WORDS);
    CHECK(s);
    CHECK(FM_send_piece(s, w, sizeof w + 1) == FM_FAILURE); /* past the size */
    CHECK(FM_receive(w, s, 4) == FM_FAILURE);               /* a sender's stream */
    CHECK(FM_send_piece(s, w, sizeof w) == FM_SUCCESS);
    CHECK(FM_end_message(s) == FM_SUCCESS);
}

int main(int argc, char **argv)
{
    int msgs = argc > 1 ? atoi(argv[1]) : 50;
    CHECK(FM_begin_message(0, 8, 1) == NULL); /* before FM_initialize */
    CHECK(FM_extract() == FM_FAILURE);
    CHECK(FM_initialize() == FM_SUCCESS);
    CHECK(FM_register_handler(H_WORDS, words_handler) == H_WORDS);
    CHECK(FM_register_handler(H_BUFFER, buffer_handler) == H_BUFFER);
    CHECK(FM_register_handler(H_PIECES, pieces_handler) == H_PIECES);
    CHECK(FM_register_handler(H_PACED, paced_handler) == H_PACED);
    unsigned long any = FM_register_handler(0, paced_handler);
    CHECK(any > H_PACED && any < FM_MAX_HANDLERS);
    unsigned next = (FM_nodeid + 1) % FM_numnodes;
    prev = (FM_nodeid + FM_numnodes - 1) % FM_numnodes;

    /* FM 1.x */
    static unsigned char buf[3000], big[PIECES];
    for (unsigned k = 0; k < sizeof buf; k++)
        buf[k] = (unsigned char)(k + FM_nodeid);
    for (int m = 0; m < msgs; m++) {
        CHECK(FM_send_4(next, H_WORDS, m, -1, 0x7fffffff, (int)FM_nodeid) == FM_SUCCESS);
        CHECK(FM_send(next, H_BUFFER, buf, sizeof buf) == FM_SUCCESS);
    }
    while (words_in < msgs || buffers_in < msgs)
        CHECK(FM_extract() >= 0);

    /* FM 2.x: pieces, padding */
    for (unsigned k = 0; k < PIECES; k++)
        big[k] = (unsigned char)(k * 3 + FM_nodeid);
    for (int m = 0; m < msgs; m++) {
        FM_stream *s = FM_begin_message(next, PIECES + 100, H_PIECES);
        CHECK(s);
        for (unsigned off = 0; off < PIECES; off += 1000)
            CHECK(FM_send_piece(s, big + off, 1000) == FM_SUCCESS);
        CHECK(FM_end_message(s) == FM_SUCCESS);
    }
    while (pieces_in < msgs)
        CHECK(FM_extract(~0) >= 0);

    /* FM_extract(bytes): a message of PACED bytes at a time at most two */
    static char paced[PACED];
    for (int m = 0; m < msgs; m++)
        CHECK(FM_send(next, H_PACED, paced, sizeof paced) == FM_SUCCESS);
    while (paced_in < msgs) {
        int n = FM_extract(PACED + PACED / 2);
        CHECK(n >= 0 && n <= 2);
    }

    bad_input(next, msgs); /* sends one more word message */
    while (words_in < msgs + 1)
        CHECK(FM_extract() >= 0);
    printf("node %u of %u: FM 1.x, FM 2.x and bad input as fm.h says\n", FM_nodeid,
           FM_numnodes);
    FM_finalize();
    return 0;
}
