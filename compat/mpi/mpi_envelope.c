/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How a derived datatype was made (MPI 3.1, 4.1.13): each constructor
 * records its combiner and its arguments (mp_type_made), and
 * MPI_Type_get_envelope / MPI_Type_get_contents give them back, as
 * libraries that decode a program's types (I/O layers, language bindings)
 * ask. The types an envelope names are held by it, so they outlive the
 * program's handles to them; a derived one handed out by get_contents is
 * held once more, for the program's MPI_Type_free.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

struct mp_envelope {
    int combiner, ni, na, nd;
    MPI_Aint *aints;
    MPI_Datatype *types;
    int *ints;
};

/* One block: the envelope, then its addresses, types and ints. */
static struct mp_envelope *env_new(int combiner, int ni, int na, int nd)
{
    size_t bytes = sizeof(struct mp_envelope) + (size_t)na * sizeof(MPI_Aint) +
                   (size_t)nd * sizeof(MPI_Datatype) + (size_t)ni * sizeof(int);
    struct mp_envelope *e = malloc(bytes);
    if (!e)
        return NULL;
    *e = (struct mp_envelope){.combiner = combiner, .ni = ni, .na = na, .nd = nd};
    e->aints = (MPI_Aint *)(e + 1);
    e->types = (MPI_Datatype *)(e->aints + na);
    e->ints = (int *)(e->types + nd);
    return e;
}

void mp_type_forget(MPI_Datatype t)
{
    struct mp_envelope *e = t->env;
    if (!e)
        return;
    t->env = NULL;
    for (int i = 0; i < e->nd; i++)
        mp_type_release(e->types[i]);
    free(e);
}

int mp_type_made(MPI_Datatype t, int combiner, const mp_iseg *iseg, int nseg, int na,
                 const MPI_Aint *aints, int nd, const MPI_Datatype *types)
{
    int ni = 0;
    for (int s = 0; s < nseg; s++)
        ni += iseg[s].n;
    struct mp_envelope *e = env_new(combiner, ni, na, nd);
    if (!e)
        return MPI_ERR_NO_MEM;
    int *at = e->ints;
    for (int s = 0; s < nseg; s++) {
        if (iseg[s].n)
            memcpy(at, iseg[s].p, (size_t)iseg[s].n * sizeof *at);
        at += iseg[s].n;
    }
    if (na)
        memcpy(e->aints, aints, (size_t)na * sizeof *aints);
    for (int i = 0; i < nd; i++) {
        e->types[i] = types[i];
        if (!types[i]->predefined)
            types[i]->refs++;
    }
    mp_type_forget(t); /* what a constructor it was built on recorded */
    t->env = e;
    return MPI_SUCCESS;
}

int MPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                          int *num_datatypes, int *combiner)
{
    MP_LOCKED(PMPI_Type_get_envelope,
              (datatype, num_integers, num_addresses, num_datatypes, combiner));
    static const char fn[] = "MPI_Type_get_envelope";
    if (!mp_type_live(datatype))
        return mp_err(MPI_COMM_NULL, MPI_ERR_TYPE, fn);
    if (!num_integers || !num_addresses || !num_datatypes || !combiner)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    const struct mp_envelope *e = datatype->env;
    *num_integers = e ? e->ni : 0;
    *num_addresses = e ? e->na : 0;
    *num_datatypes = e ? e->nd : 0;
    *combiner = e ? e->combiner : MPI_COMBINER_NAMED;
    return MPI_SUCCESS;
}

int MPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                          int max_datatypes, int array_of_integers[],
                          MPI_Aint array_of_addresses[],
                          MPI_Datatype array_of_datatypes[])
{
    MP_LOCKED(PMPI_Type_get_contents,
              (datatype, max_integers, max_addresses, max_datatypes, array_of_integers,
               array_of_addresses, array_of_datatypes));
    static const char fn[] = "MPI_Type_get_contents";
    if (!mp_type_live(datatype))
        return mp_err(MPI_COMM_NULL, MPI_ERR_TYPE, fn);
    const struct mp_envelope *e = datatype->env;
    /* a predefined type has no contents (MPI: erroneous to ask) */
    if (!e || max_integers < e->ni || max_addresses < e->na || max_datatypes < e->nd ||
        (e->ni && !array_of_integers) || (e->na && !array_of_addresses) ||
        (e->nd && !array_of_datatypes))
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    if (e->ni)
        memcpy(array_of_integers, e->ints, (size_t)e->ni * sizeof *e->ints);
    if (e->na)
        memcpy(array_of_addresses, e->aints, (size_t)e->na * sizeof *e->aints);
    for (int i = 0; i < e->nd; i++) {
        array_of_datatypes[i] = e->types[i];
        if (!e->types[i]->predefined)
            e->types[i]->refs++; /* the program frees it with MPI_Type_free */
    }
    return MPI_SUCCESS;
}

MP_PROFILED(MPI_Type_get_envelope);
MP_PROFILED(MPI_Type_get_contents);
