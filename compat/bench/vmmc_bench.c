/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-vmmc against flit's one-sided layer: node 0 writes into node 1's
 * exported buffer with SendMsg (through the destination proxy space) and
 * with flit_rma_put (through a flit import of its own), alternately in one
 * run; each run ends with a flush, so the figure is data in the owner's
 * memory.
 *
 *   flitrun -n 2 vmmc-bench [ITERS]
 */
#include <flit/rma.h>
#include <string.h>
#include <vmmc.h>

#include "compare.h"

#define BUF (1 << 20)
enum { H_ID = 1, H_STOP };

static flit_ep_t *nep;
static flit_rma_remote_t *remote;
static char *proxy;
static volatile int stop;
static volatile uint64_t region_id;
static char src[BUF];

static void on_id(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                  void *u)
{
    (void)t, (void)b, (void)n, (void)na, (void)u;
    region_id = a[0] | (uint64_t)a[1] << 32;
}

static void on_stop(flit_token_t *t, void *b, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)t, (void)b, (void)n, (void)a, (void)na, (void)u;
    stop = 1;
}

static double vmmc_put(int iters, size_t bytes)
{
    double t0 = compare_now();
    for (int i = 0; i < iters; i++)
        SendMsg(src, proxy + (size_t)i * bytes % (BUF - bytes + 1), bytes);
    VMMC_Flush(1);
    return compare_now() - t0;
}

static double native_put(int iters, size_t bytes)
{
    double t0 = compare_now();
    for (int i = 0; i < iters; i++)
        flit_rma_put(remote, (size_t)i * bytes % (BUF - bytes + 1), src, bytes, 0, NULL);
    flit_rma_flush(nep, flit_rank(1));
    return compare_now() - t0;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    static char buf1[BUF], buf2[BUF];
    if (VMMC_Init() != VMMC_SUCCESS || VMMC_NumNodes() != 2 ||
        flit_ep_create(NULL, &nep) != FLIT_OK)
        return 2;
    flit_am_register(nep, flit_handler(H_ID), on_id, NULL);
    flit_am_register(nep, flit_handler(H_STOP), on_stop, NULL);
    if (VMMC_MyNode() == 1) {
        flit_rma_region_t *reg;
        if (VMMC_Export(1, buf1, BUF, NULL, 0, NULL) != VMMC_SUCCESS ||
            flit_rma_export(nep, buf2, BUF, FLIT_RMA_WRITE, NULL, 0, &reg) != FLIT_OK)
            return 1;
        uint64_t id = flit_rma_region_id(reg);
        uint32_t a[2] = {(uint32_t)id, (uint32_t)(id >> 32)};
        flit_am_short(nep, flit_rank(0), flit_handler(H_ID), a, 2, 0);
        while (!stop) {
            VMMC_Poll();
            flit_poll(nep);
        }
    } else {
        void *p;
        size_t len;
        int rc;
        while ((rc = VMMC_Import(1, 1, &p, &len)) == VMMC_ERR_NO_BUFFER)
            VMMC_Poll();
        while (!region_id)
            flit_poll(nep);
        if (rc != VMMC_SUCCESS ||
            flit_rma_import(nep, flit_rank(1), region_id, &remote) != FLIT_OK)
            return 1;
        proxy = p;
        printf("flit-vmmc vs flit_rma_put, medians of %d alternated runs; ratio > 1: "
               "VMMC slower\n",
               COMPARE_RUNS);
        compare("SendMsg (per message, flushed)", vmmc_put, native_put, iters, 8, 1, 1);
        compare("SendMsg stream (flushed)", vmmc_put, native_put, iters / 100 + 1,
                BUF / 4, 0, 1);
        flit_rma_release(remote);
        flit_am_short(nep, flit_rank(1), flit_handler(H_STOP), NULL, 0, 0);
    }
    flit_ep_destroy(nep);
    VMMC_Finalize();
    return 0;
}
