/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Region keys and the export directory in a job of one rank (a rank
 * looking up its own regions):
 *
 *  - flit_rma_region_set_key and flit_rma_lookup refuse bad input with
 *    their exact status: NULL handles and outputs, key 0, a key another
 *    live region holds, a rank outside the job, a dead region;
 *  - a key finds its region's id; a new key replaces the old; unexport
 *    takes the region out (FLIT_ERR_REVOKED), and a later region takes its
 *    entry and is found under its own key;
 *  - past FL_RMA_DIR_MAX live regions the directory says it cannot tell
 *    (FLIT_ERR_NOT_SUPPORTED) for a key it lacks, and says "no such
 *    region" again once those left out are gone.
 */
#include <flit/rma.h>

#include <stdlib.h>

#include "rma/rma.h"
#include "unit.h"

#define MANY (FL_RMA_DIR_MAX + 6)

static flit_ep_t *ep;
static uint8_t mem[MANY];

static flit_rma_region_t *export_one(size_t at)
{
    flit_rma_region_t *g;
    CHECK_OK(flit_rma_export(ep, mem + at, 1, FLIT_RMA_WRITE, NULL, 0, &g));
    return g;
}

static void expect_found(uint64_t key, flit_rma_region_t *g)
{
    uint64_t id = 0;
    CHECK_OK(flit_rma_lookup(ep, flit_rank(0), key, &id));
    CHECK(id == flit_rma_region_id(g));
}

static void bad_input(void)
{
    uint64_t id = 7;
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 1, &id), FLIT_ERR_REVOKED); /* none yet */
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 0, &id), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_rma_lookup(ep, flit_rank(1), 1, &id), FLIT_ERR_RANK);
    CHECK_ST(flit_rma_lookup(NULL, flit_rank(0), 1, &id), FLIT_ERR_INVALID_ARG);
    CHECK(id == 7); /* outputs written only on success */
    CHECK_ST(flit_rma_region_set_key(NULL, 1), FLIT_ERR_INVALID_ARG);
}

/* Keys found, replaced, taken out with their region, entries reused. */
static void keys(void)
{
    flit_rma_region_t *a = export_one(0), *b = export_one(1);
    CHECK_ST(flit_rma_region_set_key(a, 0), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_rma_region_set_key(a, 5));
    CHECK_OK(flit_rma_region_set_key(a, 5)); /* its own key again */
    CHECK_ST(flit_rma_region_set_key(b, 5), FLIT_ERR_INVALID_ARG);
    expect_found(5, a);
    CHECK_OK(flit_rma_region_set_key(a, 6));
    uint64_t id;
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 5, &id), FLIT_ERR_REVOKED);
    expect_found(6, a);
    CHECK_OK(flit_rma_region_set_key(b, 5)); /* free again */
    expect_found(5, b);
    CHECK_OK(flit_rma_unexport(a));
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 6, &id), FLIT_ERR_REVOKED);
    CHECK_ST(flit_rma_region_set_key(a, 6), FLIT_ERR_REVOKED);
    flit_rma_region_t *c = export_one(2); /* takes a's entry */
    CHECK_OK(flit_rma_region_set_key(c, 6));
    expect_found(6, c);
    flit_rma_remote_t *r;
    CHECK_OK(flit_rma_import(ep, flit_rank(0), flit_rma_region_id(c), &r));
    CHECK_OK(flit_rma_release(r));
    CHECK_OK(flit_rma_unexport(b));
    CHECK_OK(flit_rma_unexport(c));
}

/* More live regions than the directory holds. */
static void overflow(void)
{
    static flit_rma_region_t *g[MANY];
    for (size_t i = 0; i < MANY; i++) {
        g[i] = export_one(i);
        CHECK_OK(flit_rma_region_set_key(g[i], 100 + i));
    }
    uint64_t id;
    expect_found(100, g[0]);
    expect_found(100 + FL_RMA_DIR_MAX - 1, g[FL_RMA_DIR_MAX - 1]);
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 99, &id), FLIT_ERR_NOT_SUPPORTED);
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 100 + MANY - 1, &id),
             FLIT_ERR_NOT_SUPPORTED); /* left out: the owner must be asked */
    for (size_t i = FL_RMA_DIR_MAX; i < MANY; i++)
        CHECK_OK(flit_rma_unexport(g[i]));
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 99, &id), FLIT_ERR_REVOKED);
    for (size_t i = 0; i < FL_RMA_DIR_MAX; i++)
        CHECK_OK(flit_rma_unexport(g[i]));
    CHECK_ST(flit_rma_lookup(ep, flit_rank(0), 100, &id), FLIT_ERR_REVOKED);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    bad_input();
    keys();
    overflow();
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
