/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The last node ends LATE_S seconds after the others, as a node doing
 * extra work at the end does: the job must still end with status 0.
 * flitrun fails a job in which a rank exits 0 without flit_finalize while
 * others still run (2 s after its exit), so FM must end flit on every way
 * an FM program ends:
 *
 *   fm_late finalize   every node calls FM_finalize, then the last node
 *                      works LATE_S seconds more before it returns (also:
 *                      FM_finalize twice, and FM calls after it, fail
 *                      cleanly)
 *   fm_late return     no FM_finalize: the nodes return from main (FM 1.x
 *                      programs do), the last one LATE_S seconds late
 *   fm_late fail       the last node exits with 3 at once, the others wait
 *                      for a message it never sends: the job must end with
 *                      3 (FM's exit handler must not hold a failing node in
 *                      a collective its peers never reach)
 *
 * Each node first sends one message round the ring and takes one, so the
 * endpoint has carried traffic when it ends.
 */
#include <fm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h" /* CHECK, FAIL */

#define H_RING 1
#define LATE_S 3

static int got;

static int ring_handler(FM_stream *s, unsigned sender)
{
    unsigned word;
    CHECK(FM_receive(&word, s, sizeof word) == (int)sizeof word);
    CHECK(word == sender && sender == (FM_nodeid + FM_numnodes - 1) % FM_numnodes);
    got++;
    return FM_CONTINUE;
}

int main(int argc, char **argv)
{
    int finalize = argc == 2 && strcmp(argv[1], "finalize") == 0;
    int fail = argc == 2 && strcmp(argv[1], "fail") == 0;
    if (argc != 2 || (!finalize && !fail && strcmp(argv[1], "return") != 0))
        FAIL("usage: fm_late finalize|return|fail");
    CHECK(FM_initialize() == FM_SUCCESS);
    CHECK(FM_register_handler(H_RING, ring_handler) == H_RING);
    unsigned me = FM_nodeid;
    CHECK(FM_send(((me + 1) % FM_numnodes), H_RING, &me, sizeof me) == FM_SUCCESS);
    for (long i = 0; !got; i++) {
        if (i == 100000000L)
            FAIL("node %u: no message in 1e8 FM_extract calls", me);
        CHECK(FM_extract(~0ul) >= 0);
    }
    int late = me == FM_numnodes - 1;
    if (fail && late)
        exit(3);
    for (long i = 0; fail && i < 1000000000L; i++) /* flitrun stops it first */
        CHECK(FM_extract(~0ul) >= 0 && got == 1);
    if (finalize) {
        FM_finalize();
        FM_finalize(); /* the second does nothing */
        CHECK(FM_send(0, H_RING, &me, sizeof me) == FM_FAILURE);
        CHECK(FM_extract(~0ul) == FM_FAILURE);
    }
    if (late)
        sleep(LATE_S); /* the program's own work at its end: the delay under test */
    printf("node %u: ended (%s)%s\n", me, argv[1], late ? ", 3 s after the others" : "");
    return 0;
}
