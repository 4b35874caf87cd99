/* SPDX-License-Identifier: BSD-3-Clause */
/* A VMMC program built against the installed flit-vmmc: each node exports
   a buffer, imports the next node's and writes it with a notification. */
#include <string.h>
#include <vmmc.h>

static char buf[4096];
static volatile int notified;

static void on_notify(int name, int sender, size_t offset, size_t nbytes)
{
    notified = name == 1 &&
               sender == (VMMC_MyNode() + VMMC_NumNodes() - 1) % VMMC_NumNodes() &&
               offset == 0 && nbytes == 6;
}

int main(void)
{
    void *proxy;
    size_t len;
    int rc;
    if (VMMC_Init() != VMMC_SUCCESS ||
        VMMC_Export(1, buf, sizeof buf, NULL, 0, on_notify) != VMMC_SUCCESS)
        return 1;
    while ((rc = VMMC_Import((VMMC_MyNode() + 1) % VMMC_NumNodes(), 1, &proxy, &len)) ==
           VMMC_ERR_NO_BUFFER)
        VMMC_Poll();
    if (rc != VMMC_SUCCESS || SendMsgNotify("hello", proxy, 6) != VMMC_SUCCESS)
        return 1;
    while (!notified)
        VMMC_Poll();
    int ok = strcmp(buf, "hello") == 0;
    return VMMC_Finalize() == VMMC_SUCCESS && ok ? 0 : 1;
}
