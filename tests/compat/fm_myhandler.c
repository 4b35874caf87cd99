/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handler example of the FM 2.x paper (Lauria, Pakin and Chien,
 * "Efficient Layering for High Speed Communication: Fast Messages 2.x",
 * section 4.1), as printed there, completed into a program: the header
 * and buffers it assumes, a sender, and checks of what landed. Every node
 * sends the next one little and long messages alternately; myHandler takes
 * the header, then the payload straight into the buffer the header picks.
 *
 *   fm_myhandler [MESSAGES]
 */
#include <fm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LITTLE_MAX 64
#define LONG_LEN   20000
#define MAX_MSGS   512

struct header {
    int length;
    int littlemsg;
};

static char littlebufs[MAX_MSGS + LITTLE_MAX];
static char *littlebuf = littlebufs; /* the paper steps it a byte per message */
static char longbufs[MAX_MSGS][LONG_LEN];
static int nlong, done;

static char *findBuf(int msglen)
{
    (void)msglen;
    return longbufs[nlong++];
}

FM_handler myHandler; /* registered in main */

/* clang-format off */
int myHandler(FM_stream *str, unsigned sender)
{
    struct header myHeader;
    int msglen;

    /* get the header */
    FM_receive(&myHeader, str,
        sizeof(struct header));

msglen = myHeader.length;

if (myHeader.littlemsg)
    /* short message */
    FM_receive(littlebuf++, str, msglen);
else
    /* long message */
    FM_receive(findBuf(msglen), str, msglen);

return FM_CONTINUE;
}
/* clang-format on */

static int doneHandler(FM_stream *str, unsigned sender)
{
    (void)str;
    (void)sender;
    done = 1;
    return FM_CONTINUE;
}

static char content(int msg, int k)
{
    return (char)(msg * 7 + k * 3 + 1);
}

static void send_one(unsigned dest, int msg)
{
    static char payload[LONG_LEN];
    struct header h;
    h.littlemsg = msg % 2 == 0;
    h.length = h.littlemsg ? 1 + msg % LITTLE_MAX : LONG_LEN;
    for (int k = 0; k < h.length; k++)
        payload[k] = content(msg, k);
    FM_stream *s = FM_begin_message(dest, sizeof h + (unsigned long)h.length, 1);
    if (!s || FM_send_piece(s, &h, sizeof h) != FM_SUCCESS ||
        FM_send_piece(s, payload, (unsigned long)h.length) != FM_SUCCESS ||
        FM_end_message(s) != FM_SUCCESS) {
        fprintf(stderr, "FAIL: sending message %d\n", msg);
        exit(1);
    }
}

/* Little message i starts at littlebufs[i]; long message i is longbufs[i]. */
static int check(int msgs)
{
    int little = 0, lng = 0;
    for (int m = 0; m < msgs; m++) {
        if (m % 2 == 0 && littlebufs[little++] != content(m, 0))
            return fprintf(stderr, "FAIL: little message %d\n", m), 1;
        if (m % 2 == 1)
            for (int k = 0; k < LONG_LEN; k++)
                if (longbufs[lng][k] != content(m, k))
                    return fprintf(stderr, "FAIL: long message %d byte %d\n", m, k), 1;
        lng += m % 2;
    }
    return little == littlebuf - littlebufs && lng == nlong ? 0 : 1;
}

int main(int argc, char **argv)
{
    int msgs = argc > 1 ? atoi(argv[1]) : 200;
    if (msgs < 1 || msgs > MAX_MSGS)
        return 2;
    if (FM_initialize() != FM_SUCCESS || FM_register_handler(1, myHandler) != 1 ||
        FM_register_handler(2, doneHandler) != 2)
        return 1;
    unsigned next = (FM_nodeid + 1) % FM_numnodes;
    for (int m = 0; m < msgs; m++)
        send_one(next, m);
    if (FM_send_4(next, 2, 0, 0, 0, 0) != FM_SUCCESS)
        return 1;
    while (!done)
        FM_extract(~0);
    int rc = check(msgs);
    if (rc == 0)
        printf("node %u: %d messages through myHandler\n", FM_nodeid, msgs);
    FM_finalize();
    return rc;
}
