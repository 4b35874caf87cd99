/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale RMA handles (<flit/rma.h>) in a job of one rank: a region, an
 * import and an operation, each used after it died while new ones are
 * made and ended one at a time, until one of them takes the dead one's
 * slot (the pool reuses a dead slot once enough others died after it);
 * and each after its endpoint was destroyed (its pools freed). A stale
 * handle answers the documented status (FLIT_ERR_REVOKED or
 * FLIT_ERR_INVALID_ARG while its slot is kept dead, FLIT_ERR_INVALID_ARG
 * once it serves a new one) without reading freed memory, and never acts
 * on the new one. Each case runs on an endpoint of its own (fresh pools);
 * argv[1], when given, names the one case to run.
 */
#include <flit/rma.h>
#include <stdbool.h>

#include "unit.h"

enum { ROUNDS = 1100 }; /* more than the dead slots a pool keeps apart */

static flit_ep_t *ep;
static uint64_t mem[64];

static flit_rma_region_t *export(void)
{
    flit_rma_region_t *g;
    CHECK_OK(flit_rma_export(ep, mem, sizeof mem, FLIT_RMA_READ | FLIT_RMA_WRITE, NULL, 0,
                             &g));
    return g;
}

static flit_rma_remote_t *import(flit_rma_region_t *g)
{
    flit_rma_remote_t *rm;
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(g), &rm));
    return rm;
}

/* A stale call's answer: one of the two documented, and which. */
static void stale_answer(flit_status st, flit_status dead, bool *reused)
{
    if (st != dead && st != FLIT_ERR_INVALID_ARG)
        FAIL("a stale handle answered %s", flit_status_name(st));
    *reused = *reused || (st == FLIT_ERR_INVALID_ARG && dead != FLIT_ERR_INVALID_ARG);
}

static void stale_region(void)
{
    flit_rma_region_t *old = export();
    CHECK_OK(flit_rma_unexport(old));
    bool reused = false;
    for (int i = 0; i < ROUNDS; i++) {
        flit_rma_region_t *fresh = export();
        stale_answer(flit_rma_unexport(old), FLIT_ERR_REVOKED, &reused);
        stale_answer(flit_rma_region_set_key(old, 9), FLIT_ERR_REVOKED, &reused);
        CHECK(flit_rma_region_id(old) == 0);
        CHECK(flit_rma_region_id(fresh) != 0); /* untouched */
        CHECK_OK(flit_rma_release(import(fresh)));
        CHECK_OK(flit_rma_unexport(fresh));
    }
    CHECK(reused); /* a new region took the slot, and the old handle saw it */
}

static void stale_import(void)
{
    flit_rma_region_t *g = export();
    flit_rma_remote_t *old = import(g);
    CHECK_OK(flit_rma_release(old));
    uint64_t v = 42;
    for (int i = 0; i < ROUNDS; i++) {
        flit_rma_remote_t *fresh = import(g);
        CHECK_ST(flit_rma_release(old), FLIT_ERR_INVALID_ARG);
        CHECK_ST(flit_rma_put(old, 0, &v, sizeof v, 0, NULL), FLIT_ERR_INVALID_ARG);
        CHECK(flit_rma_remote_size(old) == 0);
        CHECK(flit_rma_remote_size(fresh) == sizeof mem); /* untouched */
        CHECK_OK(flit_rma_put(fresh, 8, &v, sizeof v, 0, NULL));
        CHECK_OK(flit_rma_release(fresh));
    }
    CHECK(mem[1] == 42);
    CHECK_OK(flit_rma_unexport(g));
}

static void stale_op(void)
{
    flit_rma_region_t *g = export();
    flit_rma_remote_t *rm = import(g);
    uint64_t v = 7;
    flit_rma_op_t *old, *fresh;
    CHECK_OK(flit_rma_put(rm, 0, &v, sizeof v, 0, &old));
    CHECK_OK(flit_rma_wait(old, -1));
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_OK(flit_rma_put(rm, 0, &v, sizeof v, 0, &fresh)); /* held */
        int done = 5;
        CHECK_ST(flit_rma_test(old, &done), FLIT_ERR_INVALID_ARG);
        CHECK(done == 5);
        CHECK_ST(flit_rma_wait(old, 0), FLIT_ERR_INVALID_ARG);
        CHECK_OK(flit_rma_wait(fresh, -1)); /* untouched: ends once, here */
    }
    CHECK_OK(flit_rma_release(rm));
    CHECK_OK(flit_rma_unexport(g));
}

/* Handles of an endpoint destroyed since: its pools were freed. */
static void stale_endpoint(void)
{
    flit_rma_region_t *g = export();
    flit_rma_remote_t *rm = import(g);
    uint64_t v = 1;
    flit_rma_op_t *op;
    CHECK_OK(flit_rma_put(rm, 0, &v, sizeof v, 0, &op));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_ep_create(NULL, &ep)); /* most likely in the same blocks */
    flit_rma_region_t *fresh = export();
    CHECK_ST(flit_rma_unexport(g), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_release(rm), FLIT_ERR_INVALID_ARG);
    int done = 5;
    CHECK_ST(flit_rma_test(op, &done), FLIT_ERR_INVALID_ARG);
    CHECK(flit_rma_region_id(g) == 0 && flit_rma_remote_size(rm) == 0);
    CHECK(flit_rma_region_id(fresh) != 0);
    CHECK_OK(flit_rma_unexport(fresh));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"region", stale_region},
                 {"import", stale_import},
                 {"op", stale_op},
                 {"endpoint", stale_endpoint}};
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (argc >= 2 && strcmp(argv[1], cases[i].name) != 0)
            continue;
        CHECK_OK(flit_ep_create(NULL, &ep));
        cases[i].run();
        CHECK_OK(flit_ep_destroy(ep));
    }
    CHECK_OK(flit_finalize());
    return 0;
}
