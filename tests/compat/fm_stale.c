/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale FM streams: a sender's stream used after FM_end_message, once the
 * next FM_begin_message took its memory (streams come from a free list),
 * and a receiver's stream kept by a handler and used in the next handler
 * (which gets a stream in the same place). Each call answers FM_FAILURE
 * and leaves the new message as it was. One process, sending to itself.
 *
 *   fm_stale
 */
#include <fm.h>
#include <string.h>

#include "test.h" /* CHECK, FAIL */

#define H_MSG 1

static int got;
static char bodies[2][8];
static FM_stream *kept; /* the last handler's stream */

static int msg_handler(FM_stream *s, unsigned sender)
{
    CHECK(sender == 0 && got < 2);
    char b;
    if (kept) /* the last message's stream: dead, not this one */
        CHECK(FM_receive(&b, kept, 1) == FM_FAILURE);
    CHECK(FM_receive(bodies[got], s, sizeof bodies[got]) == (int)sizeof bodies[got]);
    kept = s;
    got++;
    return FM_CONTINUE;
}

int main(void)
{
    CHECK(FM_initialize() == FM_SUCCESS);
    CHECK(FM_register_handler(H_MSG, msg_handler) == H_MSG);
    FM_stream *old = FM_begin_message(0, 8, H_MSG);
    CHECK(old != NULL);
    CHECK(FM_send_piece(old, "aaaa", 4) == FM_SUCCESS);
    CHECK(FM_end_message(old) == FM_SUCCESS); /* the rest: zeros */
    FM_stream *fresh = FM_begin_message(0, 8, H_MSG); /* most likely old's */
    CHECK(fresh != NULL);
    CHECK(FM_send_piece(old, "XXXX", 4) == FM_FAILURE);
    CHECK(FM_end_message(old) == FM_FAILURE);
    CHECK(FM_send_piece(fresh, "bbbbbbbb", 8) == FM_SUCCESS); /* untouched */
    CHECK(FM_end_message(fresh) == FM_SUCCESS);
    for (int i = 0; i < 100000 && got < 2; i++)
        FM_extract(~0ul);
    CHECK(got == 2);
    CHECK(memcmp(bodies[0], "aaaa\0\0\0\0", 8) == 0);
    CHECK(memcmp(bodies[1], "bbbbbbbb", 8) == 0);
    char b;
    CHECK(FM_receive(&b, kept, 1) == FM_FAILURE); /* after its handler */
    return 0;
}
