/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a collective changes algorithm with its size: the thresholds,
 * measured (docs/mpi.md, "Collectives"), and each a FLIT_MPI_* setting,
 * so that a job moves them without recompiling and a test forces every
 * algorithm at every size (0: from the first byte; the largest value:
 * never). flit-mpi seats itself in <flit/layer.h> as the layer "mpi",
 * opened on no endpoint, only for its settings: the library reads,
 * checks and documents them as it does its own layers' (a bad value
 * fails MPI_Init naming the variable; one misspelt is warned of).
 */
#include <flit/layer.h>

#include "mpi_internal.h"

#define NEVER (INT64_C(1) << 40) /* bytes no collective reaches */

size_t mp_bcast_scatter_min, mp_allgather_ring_min, mp_allreduce_halving_min,
    mp_alltoall_pairwise_min, mp_reduce_halving_min, mp_gather_linear_min,
    mp_scatter_linear_min, mp_reduce_scatter_halving_min, mp_reduce_tree_min,
    mp_allreduce_doubling_min;

static const flit_layer_setting_t settings[] = {
    {"FLIT_MPI_BCAST_SCATTER_MIN", 2 << 20, 0, NEVER,
     "bytes from which MPI_Bcast on 4 or more ranks scatters the message and "
     "passes the pieces round a ring (van de Geijn's); below, a binomial tree"},
    {"FLIT_MPI_ALLGATHER_RING_MIN", 64 << 10, 0, NEVER,
     "bytes, all ranks' blocks together, from which MPI_Allgather(v) passes the "
     "blocks round a ring (n - 1 steps); below, on 4 or more ranks, Bruck's "
     "(ceil(log2 n) steps)"},
    {"FLIT_MPI_ALLREDUCE_HALVING_MIN", 8 << 10, 0, NEVER,
     "bytes of each of the p blocks (the vector over the largest power of two p of "
     "ranks) from which MPI_Allreduce with a commutative op halves the vector and "
     "doubles it back (Rabenseifner's); below, recursive doubling"},
    {"FLIT_MPI_ALLTOALL_PAIRWISE_MIN", 64 << 10, 0, NEVER,
     "bytes of the largest block from which MPI_Alltoall(v/w) on 3 or more ranks "
     "exchanges by pairs (n - 1 steps); below, every block sent at once"},
    {"FLIT_MPI_REDUCE_HALVING_MIN", NEVER, 0, NEVER,
     "bytes of each of the p blocks from which MPI_Reduce with a commutative op "
     "halves the vector and sends the root each block (Rabenseifner's); below, a "
     "binomial tree (by default never: the tree was faster at every size measured "
     "on 2 cores)"},
    {"FLIT_MPI_GATHER_LINEAR_MIN", 0, 0, NEVER,
     "bytes of a rank's block from which MPI_Gather on 3 or more ranks sends each "
     "block straight to the root; below, a binomial tree (by default linear from "
     "the first byte: faster at every size measured on 2 cores)"},
    {"FLIT_MPI_SCATTER_LINEAR_MIN", -1, -1, NEVER,
     "bytes of a rank's block from which MPI_Scatter on 3 or more ranks sends each "
     "block straight from the root; below, a binomial tree; -1: 8192 on 5 or more "
     "ranks, linear on fewer (on 4 the tree's extra hop cost what it saved)"},
    {"FLIT_MPI_REDUCE_SCATTER_HALVING_MIN", 1 << 10, 0, NEVER,
     "bytes of the whole vector from which MPI_Reduce_scatter(_block) with a "
     "commutative op on a rank count not a power of two halves it, the ranks past "
     "the power of two folded in; below, a reduction to rank 0 then a scatter (on "
     "2^k ranks it always halves)"},
    {"FLIT_MPI_REDUCE_TREE_MIN", 32 << 10, 0, NEVER,
     "bytes of the vector from which MPI_Reduce on 4 to 32 ranks goes by binomial "
     "tree; below, every rank sends the root its vector and the root reduces them"},
    {"FLIT_MPI_ALLREDUCE_DOUBLING_MIN", 2 << 10, 0, NEVER,
     "bytes of the vector from which MPI_Allreduce on 3 or 5 to 8 ranks goes by "
     "recursive doubling; below, every rank sends every other its vector and reduces "
     "them all (one round, where doubling takes 3 or more)"},
};
static size_t *const value[] = {&mp_bcast_scatter_min,     &mp_allgather_ring_min,
                                &mp_allreduce_halving_min, &mp_alltoall_pairwise_min,
                                &mp_reduce_halving_min,    &mp_gather_linear_min,
                                &mp_scatter_linear_min,    &mp_reduce_scatter_halving_min,
                                &mp_reduce_tree_min,       &mp_allreduce_doubling_min};
_Static_assert(sizeof value / sizeof value[0] == sizeof settings / sizeof settings[0],
               "a variable for each setting");

static flit_status open_none(flit_ep_t *ep, void *state)
{
    (void)ep;
    (void)state;
    return FLIT_OK;
}

static const flit_layer_t layer = {
    .version = FLIT_LAYER_VERSION,
    .name = "mpi",
    .flags = FLIT_LAYER_ON_REQUEST, /* no endpoint asks for it */
    .open = open_none,
    .settings = settings,
    .nsettings = sizeof settings / sizeof settings[0],
};

flit_status mp_coll_choice_init(void)
{
    for (unsigned i = 0; i < layer.nsettings; i++)
        *value[i] = settings[i].def < 0 ? MP_SIZE_AUTO : (size_t)settings[i].def;
    flit_status st = flit_layer_register(&layer);
    if (st == FLIT_ERR_AGAIN) { /* the program made an endpoint before MPI_Init */
        flit_log(FLIT_LOG_WARN, "MPI_Init after flit_ep_create: the FLIT_MPI_* "
                                "settings keep their defaults");
        return FLIT_OK;
    }
    for (unsigned i = 0; st == FLIT_OK && i < layer.nsettings; i++) {
        int64_t v;
        st = flit_layer_setting(&layer, settings[i].name, &v);
        *value[i] = v < 0 ? MP_SIZE_AUTO : (size_t)v;
    }
    return st;
}
