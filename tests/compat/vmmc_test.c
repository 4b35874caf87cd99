/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VMMC's deliberate update through vmmc.h: every node exports a receive
 * buffer, imports the next node's into its destination proxy space and
 * writes it with SendMsg, short and long, at offsets named by proxy
 * addresses, the last one with a notification; the exporter's handler
 * runs after the data is in, and every byte is checked. Then bad input:
 * proxy addresses outside every import, a range past the buffer's end, an
 * import the exporter did not allow, names that do not exist.
 *
 *   vmmc_test [ROUNDS]
 */
#include <string.h>
#include <vmmc.h>

#include "test.h" /* CHECK */

#define BUF                (256 * 1024)
#define NAME               7
#define PRIVATE            8  /* exported to its own node only */
#define ACK                10 /* written by the next node once it checked a round */
#define EXPECT(expr, want) CHECK((expr) == (want))

static unsigned char recvbuf[BUF], privatebuf[64];
static int notified, acks, me, n;

static unsigned char byte_at(size_t k, int round, int from)
{
    return (unsigned char)(k * 7u + (unsigned)round * 13u + (unsigned)from);
}

static void on_notify(int name, int sender, size_t offset, size_t nbytes)
{
    CHECK(name == NAME && sender == (me + n - 1) % n);
    CHECK(offset == BUF - 4096 && nbytes == 4096);
    notified++;
}

static void on_ack(int name, int sender, size_t offset, size_t nbytes)
{
    CHECK(name == ACK && sender == (me + 1) % n && offset == 0 && nbytes == sizeof(int));
    acks++;
}

/* Imports node's buffer name, answering the others' lookups meanwhile
   until it is exported there. */
static int import_when_ready(int node, int name, void **proxy, size_t *len)
{
    int rc;
    while ((rc = VMMC_Import(node, name, proxy, len)) == VMMC_ERR_NO_BUFFER)
        EXPECT(VMMC_Poll(), VMMC_SUCCESS);
    return rc;
}

static void bad_input(char *proxy, size_t len, int next)
{
    static char src[64];
    void *p;
    size_t l;
    int local;
    EXPECT(SendMsg(src, proxy + len, 1), VMMC_ERR_PROXY);
    EXPECT(SendMsg(src, proxy - 1, 1), VMMC_ERR_PROXY);
    EXPECT(SendMsg(src, &local, 1), VMMC_ERR_PROXY);
    EXPECT(SendMsg(src, proxy + len - 10, 20), VMMC_ERR_BAD_ARG); /* owner refuses */
    EXPECT(SendMsg(NULL, proxy, 8), VMMC_ERR_BAD_ARG);
    EXPECT(VMMC_Import(next, 99, &p, &l), VMMC_ERR_NO_BUFFER);
    EXPECT(VMMC_Import(n, NAME, &p, &l), VMMC_ERR_BAD_ARG);
    EXPECT(VMMC_Import(next, NAME, NULL, &l), VMMC_ERR_BAD_ARG);
    if (next != me)
        EXPECT(VMMC_Import(next, PRIVATE, &p, &l), VMMC_ERR_DENIED);
    EXPECT(VMMC_Export(NAME, recvbuf, BUF, NULL, 0, NULL), VMMC_ERR_IN_USE);
    EXPECT(VMMC_Export(-1, recvbuf, BUF, NULL, 0, NULL), VMMC_ERR_BAD_ARG);
    EXPECT(VMMC_Export(9, NULL, BUF, NULL, 0, NULL), VMMC_ERR_BAD_ARG);
    EXPECT(VMMC_Unexport(99), VMMC_ERR_NO_BUFFER);
    EXPECT(VMMC_Unimport(src), VMMC_ERR_PROXY);
    EXPECT(VMMC_Flush(n), VMMC_ERR_BAD_ARG);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    void *p;
    size_t l;
    EXPECT(VMMC_Import(0, NAME, &p, &l), VMMC_ERR_NOT_INIT);
    EXPECT(SendMsg(&l, &l, 1), VMMC_ERR_NOT_INIT);
    EXPECT(VMMC_Init(), VMMC_SUCCESS);
    me = VMMC_MyNode(), n = VMMC_NumNodes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    EXPECT(VMMC_Export(NAME, recvbuf, BUF, NULL, 0, on_notify), VMMC_SUCCESS);
    EXPECT(VMMC_Export(PRIVATE, privatebuf, sizeof privatebuf, &me, 1, NULL),
           VMMC_SUCCESS);
    static int ackbuf;
    EXPECT(VMMC_Export(ACK, &ackbuf, sizeof ackbuf, &next, 1, on_ack), VMMC_SUCCESS);
    char *proxy;
    void *ack_proxy;
    size_t len;
    EXPECT(import_when_ready(next, NAME, &p, &len), VMMC_SUCCESS);
    proxy = p;
    CHECK(len == BUF);
    EXPECT(import_when_ready(prev, ACK, &ack_proxy, &l), VMMC_SUCCESS);
    CHECK(l == sizeof(int));

    static unsigned char src[BUF];
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < BUF; k++)
            src[k] = byte_at(k, r, me);
        /* short pieces at the start, one long message, the notified tail */
        for (size_t off = 0; off < 4096; off += 64)
            EXPECT(SendMsg(src + off, proxy + off, 64), VMMC_SUCCESS);
        EXPECT(SendMsg(src + 4096, proxy + 4096, BUF - 8192), VMMC_SUCCESS);
        EXPECT(SendMsgNotify(src + BUF - 4096, proxy + BUF - 4096, 4096), VMMC_SUCCESS);
        EXPECT(VMMC_Flush(next), VMMC_SUCCESS);
        while (notified <= r)
            EXPECT(VMMC_Poll(), VMMC_SUCCESS);
        for (size_t k = 0; k < BUF; k++)
            if (recvbuf[k] != byte_at(k, r, prev))
                FAIL("round %d: byte %zu from node %d differs", r, k, prev);
        /* round r + 1 is written only once the next node checked round r */
        EXPECT(SendMsgNotify(&r, ack_proxy, sizeof r), VMMC_SUCCESS);
        while (acks <= r)
            EXPECT(VMMC_Poll(), VMMC_SUCCESS);
    }
    bad_input(proxy, len, next);
    EXPECT(VMMC_Unimport(proxy), VMMC_SUCCESS);
    EXPECT(SendMsg(src, proxy, 1), VMMC_ERR_PROXY);
    printf("node %d of %d: %d rounds of deliberate update, bad input refused\n", me, n,
           rounds);
    EXPECT(VMMC_Finalize(), VMMC_SUCCESS);
    return 0;
}
