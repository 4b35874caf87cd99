/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The last node ends LATE_S seconds after the others, as a node doing
 * extra work at the end does: the job must still end with status 0.
 * flitrun fails a job in which a rank exits 0 without flit_finalize while
 * others still run (2 s after its exit), so VMMC must end flit on every
 * way a VMMC program ends:
 *
 *   vmmc_late finalize   every node calls VMMC_Finalize, then the last
 *                        node works LATE_S seconds more before it returns
 *                        (also: VMMC_Finalize twice, and VMMC calls after
 *                        it, answer VMMC_ERR_NOT_INIT)
 *   vmmc_late return     no VMMC_Finalize: the nodes return from main, the
 *                        last one LATE_S seconds late
 *   vmmc_late fail       the last node exits with 3 at once, the others
 *                        wait for a notification it never sends: the job
 *                        must end with 3 (VMMC's exit handler must not hold
 *                        a failing node in a collective its peers never
 *                        reach)
 *
 * Each node first writes a word into the next node's buffer with a
 * notification and waits for its own, so the endpoint has carried traffic
 * when it ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vmmc.h>

#include "test.h" /* CHECK, FAIL */

#define NAME   3
#define LATE_S 3

static int word, notified;

static void on_notify(int name, int sender, size_t offset, size_t nbytes)
{
    int n = VMMC_NumNodes();
    CHECK(name == NAME && sender == (VMMC_MyNode() + n - 1) % n);
    CHECK(offset == 0 && nbytes == sizeof word && word == sender);
    notified++;
}

int main(int argc, char **argv)
{
    int finalize = argc == 2 && strcmp(argv[1], "finalize") == 0;
    int fail = argc == 2 && strcmp(argv[1], "fail") == 0;
    if (argc != 2 || (!finalize && !fail && strcmp(argv[1], "return") != 0))
        FAIL("usage: vmmc_late finalize|return|fail");
    CHECK(VMMC_Init() == VMMC_SUCCESS);
    int me = VMMC_MyNode(), n = VMMC_NumNodes(), next = (me + 1) % n;
    CHECK(VMMC_Export(NAME, &word, sizeof word, NULL, 0, on_notify) == VMMC_SUCCESS);
    void *proxy;
    size_t len;
    int rc;
    for (long i = 0; (rc = VMMC_Import(next, NAME, &proxy, &len)) == VMMC_ERR_NO_BUFFER;
         i++) {
        if (i == 100000000L)
            FAIL("node %d: node %d exported nothing in 1e8 tries", me, next);
        CHECK(VMMC_Poll() == VMMC_SUCCESS);
    }
    CHECK(rc == VMMC_SUCCESS && len == sizeof word);
    CHECK(SendMsgNotify(&me, proxy, sizeof me) == VMMC_SUCCESS);
    for (long i = 0; !notified; i++) {
        if (i == 100000000L)
            FAIL("node %d: no notification in 1e8 polls", me);
        CHECK(VMMC_Poll() == VMMC_SUCCESS);
    }
    int late = me == n - 1;
    if (fail && late)
        exit(3);
    for (long i = 0; fail && i < 1000000000L; i++) /* flitrun stops it first */
        CHECK(VMMC_Poll() == VMMC_SUCCESS && notified == 1);
    if (finalize) {
        CHECK(VMMC_Finalize() == VMMC_SUCCESS);
        CHECK(VMMC_Finalize() == VMMC_ERR_NOT_INIT);
        CHECK(VMMC_Poll() == VMMC_ERR_NOT_INIT);
        CHECK(SendMsg(&me, proxy, sizeof me) == VMMC_ERR_NOT_INIT);
    }
    if (late)
        sleep(LATE_S); /* the program's own work at its end: the delay under test */
    printf("node %d: ended (%s)%s\n", me, argv[1], late ? ", 3 s after the others" : "");
    return 0;
}
