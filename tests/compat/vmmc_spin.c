/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An import is granted without the exporter's help, as VMMC's daemons
 * granted it: node 0 exports a buffer, and a private one only it may
 * import, then spins reading its buffer, making no call at all, until node
 * 1's message has landed in it. Node 1 imports it meanwhile, is refused
 * the private one, and writes the buffer with SendMsg, its last word last;
 * the SendMsg calls it makes past the buffer's end or from NULL between
 * the two must fail and land nothing.
 * Then the roles turn: node 1 spins on a buffer of its own, with no call,
 * while node 0 imports it, revokes its own export (VMMC_Unexport) and says
 * so there; node 1's next SendMsg to the revoked buffer must fail, and
 * node 0's buffer stay as it was. Each spin is bounded (SPIN_S seconds).
 * Nodes past 1 only start and finish. Over UDP only with flit's progress
 * thread (FLIT_PROGRESS_THREAD=1): there packets carry both, and only
 * progress made without the program serves them.
 *
 *   vmmc_spin
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <vmmc.h>

#include "test.h" /* CHECK, FAIL */

#define BUF     (64 * 1024)
#define NAME    3
#define PRIVATE 4
#define ACK     5
#define SPIN_S  60
#define DONE    0x600dd0e5u /* the last word of node 1's message */
#define REVOKED 0x7e40c3edu /* node 0's word to node 1: unexported */

static uint32_t buf[BUF / 4], private_buf[16], ack;

static long long now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec;
}

/* Spins on *word, making no call of VMMC or flit, until it holds want. */
static void spin_for(const uint32_t *word, uint32_t want, const char *what)
{
    long long end = now_s() + SPIN_S;
    const _Atomic uint32_t *w = (const _Atomic uint32_t *)(const void *)word;
    while (atomic_load_explicit(w, memory_order_acquire) != want)
        if (now_s() > end)
            FAIL("%s did not land in %d s while this node made no call", what, SPIN_S);
    /* It landed. Where a progress thread of ours wrote it, a call (which
       takes the endpoint's lock) orders its bytes before our reads. */
    CHECK(VMMC_Poll() == VMMC_SUCCESS);
}

/* Imports node's name, retrying while it is not exported yet (bounded). */
static char *import(int node, int name, size_t want)
{
    void *p;
    size_t len;
    long long end = now_s() + SPIN_S;
    int rc;
    while ((rc = VMMC_Import(node, name, &p, &len)) == VMMC_ERR_NO_BUFFER)
        if (now_s() > end)
            FAIL("node %d's buffer %d was never found", node, name);
    if (rc != VMMC_SUCCESS)
        FAIL("VMMC_Import(%d, %d) answered %d", node, name, rc);
    CHECK(len == want);
    return p;
}

static void exporter(void)
{
    int one = 1, zero = 0;
    /* The private one first: node 1 asks for it once it has found NAME,
       and must be refused it, not told it is not there yet. */
    CHECK(VMMC_Export(PRIVATE, private_buf, sizeof private_buf, &zero, 1, NULL) ==
          VMMC_SUCCESS);
    CHECK(VMMC_Export(NAME, buf, sizeof buf, &one, 1, NULL) == VMMC_SUCCESS);
    spin_for(&buf[BUF / 4 - 1], DONE, "node 1's message");
    for (uint32_t k = 0; k < BUF / 4 - 1; k++)
        if (buf[k] != k * 2654435761u)
            FAIL("word %u of node 1's message differs", k);
    /* node 1 spins now: its buffer is imported without its help too */
    char *ack_proxy = import(1, ACK, sizeof ack);
    CHECK(VMMC_Unexport(NAME) == VMMC_SUCCESS);
    uint32_t said = REVOKED;
    CHECK(SendMsg(&said, ack_proxy, sizeof said) == VMMC_SUCCESS);
}

static void importer(void)
{
    static uint32_t src[BUF / 4];
    int zero = 0;
    CHECK(VMMC_Export(ACK, &ack, sizeof ack, &zero, 1, NULL) == VMMC_SUCCESS);
    char *proxy = import(0, NAME, sizeof buf);
    void *p;
    size_t len;
    CHECK(VMMC_Import(0, PRIVATE, &p, &len) == VMMC_ERR_DENIED);
    for (uint32_t k = 0; k < BUF / 4; k++)
        src[k] = k < BUF / 4 - 1 ? k * 2654435761u : DONE;
    CHECK(SendMsg(src, proxy, sizeof src - 4) == VMMC_SUCCESS);
    /* refused: nothing of them may land (the exporter checks every word) */
    static uint32_t junk[4] = {~0u, ~0u, ~0u, ~0u};
    CHECK(SendMsg(junk, proxy + sizeof src - 8, sizeof junk) == VMMC_ERR_BAD_ARG);
    CHECK(SendMsgNotify(junk, proxy + sizeof src - 8, sizeof junk) == VMMC_ERR_BAD_ARG);
    CHECK(SendMsg(NULL, proxy, 8) == VMMC_ERR_BAD_ARG);
    CHECK(SendMsg(junk, proxy + sizeof src, 4) == VMMC_ERR_PROXY);
    CHECK(SendMsg(&src[BUF / 4 - 1], proxy + sizeof src - 4, 4) == VMMC_SUCCESS);
    spin_for(&ack, REVOKED, "node 0's word");
    uint32_t late = 0xbadu;
    int rc = SendMsg(&late, proxy, sizeof late);
    if (rc == VMMC_SUCCESS) /* in packets the refusal comes back to the flush */
        rc = VMMC_Flush(0);
    if (rc != VMMC_ERR_NO_BUFFER)
        FAIL("SendMsg to an unexported buffer answered %d", rc);
    CHECK(VMMC_Import(0, NAME, &p, &len) == VMMC_ERR_NO_BUFFER);
}

int main(void)
{
    CHECK(VMMC_Init() == VMMC_SUCCESS);
    int me = VMMC_MyNode();
    if (VMMC_NumNodes() < 2) {
        fprintf(stderr, "vmmc_spin needs 2 nodes\n");
        return TEST_SKIP;
    }
    if (me == 0)
        exporter();
    else if (me == 1)
        importer();
    CHECK(VMMC_Finalize() == VMMC_SUCCESS);
    /* the refused message left the buffer as it was */
    if (me == 0)
        CHECK(buf[0] == 0);
    printf("node %d: imports granted while the exporter made no call\n", me);
    return 0;
}
