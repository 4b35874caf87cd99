/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Communicators and groups. A communicator is its ranks' world ranks, both
 * ways, and a context: every rank keeps the next context it may use, and a
 * communicator's creation takes the largest of its members' (so no member
 * has used it) and moves every member past it. Two communicators that
 * share a rank thus never share a context; contexts are never reused, and
 * there are CTX_MAX / 2 (32767) creations in a job.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

struct flit_mpi_comm flit_mpi_comm_world, flit_mpi_comm_self, flit_mpi_comm_null;
struct flit_mpi_group flit_mpi_group_empty = {.size = 0, .predefined = 1, .refs = 1};

static uint32_t next_ctx;

enum { T_CTX = 1, T_CTX_RESULT = 2, T_CTX_OK = 3, T_CTX_OK_RESULT = 4 };

int mp_comm_ok(MPI_Comm comm)
{
    return comm && !comm->freed && comm->world && mp_ready();
}

/* A communicator of n ranks (world ranks w, taken over), this rank's index
   me, context ctx; NULL without memory. */
static MPI_Comm comm_new(int n, int *w, int me, uint32_t ctx, MPI_Errhandler errh)
{
    uint32_t wsize = flit_job_size();
    MPI_Comm c = calloc(1, sizeof *c);
    int *fw = malloc(wsize * sizeof *fw);
    if (!c || !fw) {
        free(c);
        free(fw);
        return NULL;
    }
    for (uint32_t i = 0; i < wsize; i++)
        fw[i] = -1;
    for (int i = 0; i < n; i++)
        fw[w[i]] = i;
    c->size = n, c->rank = me, c->ctx = ctx, c->world = w, c->from_world = fw;
    c->errh = errh;
    c->refs = 1;
    return c;
}

static int fill_predefined(MPI_Comm c, int n, const int *w, int me, uint32_t ctx)
{
    uint32_t wsize = flit_job_size();
    c->world = malloc((size_t)n * sizeof *c->world);
    c->from_world = malloc(wsize * sizeof *c->from_world);
    if (!c->world || !c->from_world)
        return MPI_ERR_NO_MEM;
    for (uint32_t i = 0; i < wsize; i++)
        c->from_world[i] = -1;
    for (int i = 0; i < n; i++) {
        c->world[i] = w ? w[i] : i;
        c->from_world[c->world[i]] = i;
    }
    c->size = n, c->rank = me, c->ctx = ctx, c->predefined = 1, c->freed = 0;
    c->errh = MPI_ERRORS_ARE_FATAL;
    return MPI_SUCCESS;
}

int mp_comm_init_world(void)
{
    int me = (int)flit_job_rank().idx;
    int rc = fill_predefined(&flit_mpi_comm_world, (int)flit_job_size(), NULL, me, 0);
    if (!rc)
        rc = fill_predefined(&flit_mpi_comm_self, 1, &me, 0, 2);
    next_ctx = 4;
    return rc;
}

void mp_comm_fini(void)
{
    MPI_Comm pre[] = {&flit_mpi_comm_world, &flit_mpi_comm_self};
    for (int i = 0; i < 2; i++) {
        free(pre[i]->world);
        free(pre[i]->from_world);
        free(pre[i]->name);
        pre[i]->world = pre[i]->from_world = NULL;
        pre[i]->name = NULL;
        pre[i]->freed = 1;
    }
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    MP_LOCKED(PMPI_Comm_size, (comm, size));
    MP_CHECK_INIT("MPI_Comm_size");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_size");
    if (!size)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_size");
    *size = comm->size;
    return MPI_SUCCESS;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    MP_LOCKED(PMPI_Comm_rank, (comm, rank));
    MP_CHECK_INIT("MPI_Comm_rank");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_rank");
    if (!rank)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_rank");
    *rank = comm->rank;
    return MPI_SUCCESS;
}

/*
 * Collective over comm: every rank's n ints to all (rank 0 gathers them
 * and sends the whole table back), the table in out (comm->size * n).
 */
static int allgather_ints(MPI_Comm comm, const int *mine, int n, int *out, int tag)
{
    size_t bytes = (size_t)n * sizeof(int);
    int rc = MPI_SUCCESS;
    if (comm->rank != 0) {
        rc = mp_coll_send(comm, 0, tag, mine, bytes);
        if (!rc)
            rc = mp_coll_recv(comm, 0, tag + 1, out, bytes * (size_t)comm->size);
        return rc;
    }
    memcpy(out, mine, bytes);
    for (int r = 1; r < comm->size && !rc; r++)
        rc = mp_coll_recv(comm, r, tag, out + (size_t)r * n, bytes);
    for (int r = 1; r < comm->size && !rc; r++)
        rc = mp_coll_send(comm, r, tag + 1, out, bytes * (size_t)comm->size);
    return rc;
}

/* Each member of comm with its color and key, and the context to use. */
struct member {
    int color, key, rank;
};

static int by_key(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/*
 * Agreements on contexts can run at once in one process (over different
 * communicators): threads under MPI_THREAD_MULTIPLE, each giving the lock
 * up while it waits, and MPI_Comm_idup's coroutine waiting while the
 * program goes on (to another MPI_Comm_dup, say), so two agreements could
 * end on one context. Whether one runs beside another differs from rank
 * to rank, and every member must take the same steps, so every agreement
 * takes these. Each proposal is reserved here
 * (marked taken, next_ctx moved past it) when made; the largest proposal
 * of the members is then checked by each of them: its own proposal, or
 * one no other agreement of this process has taken. When every member
 * finds it free it is the context; else the members propose again, above
 * it. Contexts are never reused: the bits are never cleared but for a
 * context one member refused.
 */
static unsigned char ctx_taken[CTX_MAX / 16 + 1];

static int taken(uint32_t c)
{
    return ctx_taken[c / 16] >> (c / 2 % 8) & 1;
}

static void take(uint32_t c, int on)
{
    if (on)
        ctx_taken[c / 16] |= (unsigned char)(1u << (c / 2 % 8));
    else
        ctx_taken[c / 16] &= (unsigned char)~(1u << (c / 2 % 8));
}

/* A context proposed by this rank, reserved. */
static uint32_t ctx_propose(void)
{
    uint32_t c = next_ctx;
    if (c + 2 <= CTX_MAX) {
        take(c, 1);
        next_ctx = c + 2;
    }
    return c;
}

/* The largest of the members' proposals mine (into *ctx). */
static int ctx_max(MPI_Comm comm, uint32_t mine, uint32_t *ctx)
{
    int *all = malloc((size_t)comm->size * sizeof *all), p = (int)mine;
    int rc = all ? allgather_ints(comm, &p, 1, all, T_CTX) : MPI_ERR_NO_MEM;
    *ctx = 0;
    for (int r = 0; !rc && r < comm->size; r++)
        if ((uint32_t)all[r] > *ctx)
            *ctx = (uint32_t)all[r];
    free(all);
    return rc;
}

/* *ctx, the members' largest proposal (this rank's: mine),
   checked by every member; another when one refuses it. */
static int ctx_confirm(MPI_Comm comm, uint32_t mine, uint32_t *ctx)
{
    int *oks = malloc((size_t)comm->size * sizeof *oks), rc = oks ? 0 : MPI_ERR_NO_MEM;
    while (!rc && *ctx + 2 <= CTX_MAX) {
        uint32_t v = *ctx;
        int fresh = v != mine && !taken(v), ok = v == mine || fresh, all_ok = 1;
        if (fresh)
            take(v, 1);
        rc = allgather_ints(comm, &ok, 1, oks, T_CTX_OK);
        for (int r = 0; !rc && r < comm->size; r++)
            all_ok &= oks[r];
        if (rc || all_ok) {
            if (!rc && next_ctx < v + 2)
                next_ctx = v + 2;
            break;
        }
        if (fresh)
            take(v, 0);
        if (next_ctx < v + 2)
            next_ctx = v + 2;
        mine = ctx_propose();
        rc = ctx_max(comm, mine, ctx);
    }
    free(oks);
    return rc;
}

/* Collective over comm: the new communicator of the ranks of this rank's
   color (MPI_UNDEFINED: none, *out MPI_COMM_NULL), ordered by key then
   rank. */
static int split(MPI_Comm comm, int color, int key, MPI_Comm *out, const char *fn)
{
    uint32_t proposal = ctx_propose();
    int mine[3] = {color, key, (int)proposal};
    int *all = malloc((size_t)comm->size * sizeof mine);
    struct member *m = malloc((size_t)comm->size * sizeof *m);
    int rc = all && m ? allgather_ints(comm, mine, 3, all, T_CTX) : MPI_ERR_NO_MEM;
    uint32_t ctx = 0;
    int n = 0;
    for (int r = 0; !rc && r < comm->size; r++) {
        if ((uint32_t)all[3 * r + 2] > ctx)
            ctx = (uint32_t)all[3 * r + 2];
        if (color != MPI_UNDEFINED && all[3 * r] == color)
            m[n++] = (struct member){color, all[3 * r + 1], r};
    }
    if (!rc)
        rc = ctx_confirm(comm, proposal, &ctx);
    if (!rc && ctx + 2 > CTX_MAX)
        rc = MPI_ERR_INTERN; /* every context used */
    free(all);
    if (!rc && next_ctx < ctx + 2)
        next_ctx = ctx + 2;
    if (rc || color == MPI_UNDEFINED) {
        free(m);
        *out = MPI_COMM_NULL;
        return rc ? mp_err(comm, rc, fn) : MPI_SUCCESS;
    }
    qsort(m, (size_t)n, sizeof *m, by_key);
    int *w = malloc((size_t)n * sizeof *w), me = 0;
    for (int i = 0; w && i < n; i++) {
        w[i] = comm->world[m[i].rank];
        if (m[i].rank == comm->rank)
            me = i;
    }
    free(m);
    MPI_Comm c = w ? comm_new(n, w, me, ctx, comm->errh) : NULL;
    if (!c) {
        free(w);
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    }
    *out = c;
    return MPI_SUCCESS;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    MP_LOCKED(PMPI_Comm_split, (comm, color, key, newcomm));
    MP_CHECK_INIT("MPI_Comm_split");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_split");
    if (!newcomm || (color < 0 && color != MPI_UNDEFINED))
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_split");
    mp_coll_begin(comm);
    return split(comm, color, key, newcomm, "MPI_Comm_split");
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    MP_LOCKED(PMPI_Comm_dup, (comm, newcomm));
    MP_CHECK_INIT("MPI_Comm_dup");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_dup");
    if (!newcomm)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_dup");
    mp_coll_begin(comm);
    int rc = split(comm, 0, comm->rank, newcomm, "MPI_Comm_dup");
    if (rc)
        return rc;
    /* A duplicate keeps the virtual topology (MPI 3.1, 6.4.2), and the
       attributes the keys' copy functions let it have. */
    if (comm->topo && !((*newcomm)->topo = mp_topo_copy(comm->topo)))
        rc = MPI_ERR_NO_MEM;
    if (!rc)
        rc = mp_attr_comm_dup(comm, *newcomm);
    if (rc) {
        mp_attr_comm_clear(*newcomm);
        mp_comm_release(*newcomm);
        *newcomm = MPI_COMM_NULL;
        return mp_err(comm, rc, "MPI_Comm_dup");
    }
    return MPI_SUCCESS;
}

static int run_dup(const mp_coll_args *a)
{
    return PMPI_Comm_dup(a->comm, a->rbuf);
}

/* MPI_Comm_dup on a coroutine, as the non-blocking collectives are
   (mpi_nbc.c): *newcomm is set when the request completes. */
int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    MP_LOCKED(PMPI_Comm_idup, (comm, newcomm, request));
    MP_CHECK_INIT("MPI_Comm_idup");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_idup");
    if (!newcomm)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_idup");
    mp_coll_args a = {.rbuf = newcomm, .comm = comm};
    return mp_nbc_start(run_dup, &a, request, "MPI_Comm_idup");
}

/* The lowest rank of comm this rank reaches through shared memory (itself
   at least): the same for every rank of one host, as flit picks the
   transport of a pair of ranks the same way from either end. */
static int shared_leader(MPI_Comm comm)
{
    for (int r = 0; r < comm->rank; r++) {
        flit_peer_info_t pi = {.struct_size = sizeof pi};
        if (flit_ep_peer_info(mp_ep, flit_rank((uint32_t)comm->world[r]), &pi) ==
                FLIT_OK &&
            (strcmp(pi.transport, "shm") == 0 || strcmp(pi.transport, "self") == 0))
            return r;
    }
    return comm->rank;
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info,
                        MPI_Comm *newcomm)
{
    MP_LOCKED(PMPI_Comm_split_type, (comm, split_type, key, info, newcomm));
    static const char fn[] = "MPI_Comm_split_type";
    (void)info;
    MP_CHECK_INIT(fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    if (!newcomm || (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED))
        return mp_err(comm, MPI_ERR_ARG, fn);
    int color = split_type == MPI_UNDEFINED ? MPI_UNDEFINED : shared_leader(comm);
    mp_coll_begin(comm);
    return split(comm, color, key, newcomm, fn);
}

static int group_ok(MPI_Group g);
static int group_rank_of(MPI_Group g, int w);

/* Every member of group is one of comm's. */
static int group_in_comm(MPI_Group group, MPI_Comm comm)
{
    for (int i = 0; i < group->size; i++)
        if (comm->from_world[group->world[i]] < 0)
            return 0;
    return 1;
}

/* Collective over comm: the members of group (a subset of comm's; MPI 2.2
   lets disjoint groups be given at once, each then its own communicator,
   told apart by its first member) get a communicator in group order. */
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    MP_LOCKED(PMPI_Comm_create, (comm, group, newcomm));
    MP_CHECK_INIT("MPI_Comm_create");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_create");
    if (!group_ok(group) || !group_in_comm(group, comm))
        return mp_err(comm, MPI_ERR_GROUP, "MPI_Comm_create");
    if (!newcomm)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_create");
    int grank = group_rank_of(group, comm->world[comm->rank]);
    int color = grank == MPI_UNDEFINED ? MPI_UNDEFINED : group->world[0];
    mp_coll_begin(comm);
    return split(comm, color, grank, newcomm, "MPI_Comm_create");
}

/*
 * Collective over group alone: its members agree on a context among
 * themselves, on comm's collective context with a number made of tag
 * (above any number comm's own collectives reach before their 2^22nd),
 * so comm's other ranks and its later collectives are not involved.
 */
int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    MP_LOCKED(PMPI_Comm_create_group, (comm, group, tag, newcomm));
    const char *fn = "MPI_Comm_create_group";
    MP_CHECK_INIT(fn);
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, fn);
    int grank = group_ok(group) ? group_rank_of(group, comm->world[comm->rank]) : -1;
    if (grank < 0 || !group_in_comm(group, comm)) /* MPI: callers are members */
        return mp_err(comm, MPI_ERR_GROUP, fn);
    if (tag < 0)
        return mp_err(comm, MPI_ERR_TAG, fn);
    if (!newcomm)
        return mp_err(comm, MPI_ERR_ARG, fn);
    int *w = malloc((size_t)group->size * sizeof *w);
    if (w)
        memcpy(w, group->world, (size_t)group->size * sizeof *w);
    MPI_Comm sub = w ? comm_new(group->size, w, grank, comm->ctx, comm->errh) : NULL;
    if (!sub) {
        free(w);
        return mp_err(comm, MPI_ERR_NO_MEM, fn);
    }
    mp_coll_seq = (COLL_SEQ_MASK + 1) / 2 | ((uint32_t)tag & (COLL_SEQ_MASK >> 1));
    int rc = split(sub, 0, grank, newcomm, fn);
    mp_comm_release(sub);
    return rc;
}

void mp_comm_hold(MPI_Comm comm)
{
    comm->refs++;
}

void mp_comm_release(MPI_Comm c)
{
    if (c->predefined || --c->refs > 0)
        return;
    free(c->world);
    free(c->from_world);
    mp_topo_free(c->topo);
    free(c->name);
    free(c);
}

/* Not collective here: the context is never reused, so messages still on
   their way to it are never taken by another communicator. Receives still
   posted on it keep it (its rank tables) until they complete. */
int MPI_Comm_free(MPI_Comm *comm)
{
    MP_LOCKED(PMPI_Comm_free, (comm));
    MP_CHECK_INIT("MPI_Comm_free");
    if (!comm || !mp_comm_ok(*comm) || (*comm)->predefined)
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_free");
    int rc = mp_attr_comm_clear(*comm); /* the delete functions, first */
    if (rc)
        return mp_err(*comm, rc, "MPI_Comm_free");
    (*comm)->freed = 1;
    mp_comm_release(*comm);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

/* IDENT, SIMILAR or UNEQUAL for two lists of world ranks (CONGRUENT is
   the caller's: same list, other context). */
static int compare_ranks(int n1, const int *w1, int n2, const int *w2)
{
    if (n1 != n2)
        return MPI_UNEQUAL;
    int same_order = 1;
    for (int i = 0; i < n1; i++) {
        if (w1[i] != w2[i])
            same_order = 0;
        int found = 0;
        for (int j = 0; j < n2 && !found; j++)
            found = w1[i] == w2[j];
        if (!found)
            return MPI_UNEQUAL;
    }
    return same_order ? MPI_IDENT : MPI_SIMILAR;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    MP_LOCKED(PMPI_Comm_compare, (comm1, comm2, result));
    MP_CHECK_INIT("MPI_Comm_compare");
    if (!mp_comm_ok(comm1) || !mp_comm_ok(comm2))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_compare");
    if (!result)
        return mp_err(comm1, MPI_ERR_ARG, "MPI_Comm_compare");
    if (comm1 == comm2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    int r = compare_ranks(comm1->size, comm1->world, comm2->size, comm2->world);
    *result = r == MPI_IDENT ? MPI_CONGRUENT : r;
    return MPI_SUCCESS;
}

/* ---- groups ---- */

static int group_ok(MPI_Group g)
{
    return g && g->refs > 0;
}

static MPI_Group group_new(int n)
{
    MPI_Group g = calloc(1, sizeof *g);
    if (g && !(g->world = malloc((n ? (size_t)n : 1) * sizeof *g->world))) {
        free(g);
        return NULL;
    }
    if (g) {
        g->size = n;
        g->refs = 1;
    }
    return g;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    MP_LOCKED(PMPI_Comm_group, (comm, group));
    MP_CHECK_INIT("MPI_Comm_group");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_group");
    if (!group)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_group");
    MPI_Group g = group_new(comm->size);
    if (!g)
        return mp_err(comm, MPI_ERR_NO_MEM, "MPI_Comm_group");
    memcpy(g->world, comm->world, (size_t)comm->size * sizeof *g->world);
    *group = g;
    return MPI_SUCCESS;
}

/* ranks[0..n) distinct and in 0 .. size-1. */
static int ranks_ok(MPI_Group g, int n, const int *ranks)
{
    if (n < 0 || n > g->size || (n && !ranks))
        return 0;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->size)
            return 0;
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return 0;
    }
    return 1;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_incl, (group, n, ranks, newgroup));
    if (!group_ok(group))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_incl");
    if (!newgroup || !ranks_ok(group, n, ranks))
        return mp_err(MPI_COMM_NULL, MPI_ERR_RANK, "MPI_Group_incl");
    MPI_Group g = group_new(n);
    if (!g)
        return mp_err(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Group_incl");
    for (int i = 0; i < n; i++)
        g->world[i] = group->world[ranks[i]];
    *newgroup = g;
    return MPI_SUCCESS;
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_excl, (group, n, ranks, newgroup));
    if (!group_ok(group))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_excl");
    if (!newgroup || !ranks_ok(group, n, ranks))
        return mp_err(MPI_COMM_NULL, MPI_ERR_RANK, "MPI_Group_excl");
    MPI_Group g = group_new(group->size - n);
    if (!g)
        return mp_err(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Group_excl");
    int k = 0;
    for (int r = 0; r < group->size; r++) {
        int out = 0;
        for (int i = 0; i < n && !out; i++)
            out = ranks[i] == r;
        if (!out)
            g->world[k++] = group->world[r];
    }
    *newgroup = g;
    return MPI_SUCCESS;
}

/* ---- set operations (MPI 3.1, 6.3.2): the result lists the first
   group's members in its order, then (union) the second's others ---- */

enum { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

static int group_set(MPI_Group g1, MPI_Group g2, int op, MPI_Group *out, const char *fn)
{
    if (!group_ok(g1) || !group_ok(g2))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, fn);
    if (!out)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, fn);
    uint32_t wsize = flit_job_size();
    char *in2 = calloc(wsize ? wsize : 1, 1); /* world ranks of g2 */
    MPI_Group g = in2 ? group_new(g1->size + g2->size) : NULL;
    if (!g) {
        free(in2);
        return mp_err(MPI_COMM_NULL, MPI_ERR_NO_MEM, fn);
    }
    for (int i = 0; i < g2->size; i++)
        in2[g2->world[i]] = 1;
    int n = 0;
    for (int i = 0; i < g1->size; i++)
        if (op == SET_UNION || (op == SET_INTERSECTION) == in2[g1->world[i]])
            g->world[n++] = g1->world[i];
    if (op == SET_UNION) {
        for (int i = 0; i < g1->size; i++)
            in2[g1->world[i]] = 2; /* already in */
        for (int i = 0; i < g2->size; i++)
            if (in2[g2->world[i]] == 1)
                g->world[n++] = g2->world[i], in2[g2->world[i]] = 2;
    }
    free(in2);
    g->size = n;
    *out = g;
    return MPI_SUCCESS;
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_union, (group1, group2, newgroup));
    return group_set(group1, group2, SET_UNION, newgroup, "MPI_Group_union");
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_intersection, (group1, group2, newgroup));
    return group_set(group1, group2, SET_INTERSECTION, newgroup,
                     "MPI_Group_intersection");
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_difference, (group1, group2, newgroup));
    return group_set(group1, group2, SET_DIFFERENCE, newgroup, "MPI_Group_difference");
}

/* The ranks n triplets (first, last, stride) name, into *ranks (*count of
   them); MPI_ERR_RANK for a stride of 0, a rank outside g, or more ranks
   than g has (a rank twice: ranks_ok, later). */
static int expand_ranges(MPI_Group g, int n, int ranges[][3], int **ranks, int *count)
{
    if (n < 0 || (n && !ranges))
        return MPI_ERR_ARG;
    int cap = g->size, k = 0, *r = malloc((cap ? (size_t)cap : 1) * sizeof *r);
    if (!r)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0 || first < 0 || first >= g->size || last < 0 || last >= g->size) {
            free(r);
            return MPI_ERR_RANK;
        }
        for (long long x = first; stride > 0 ? x <= last : x >= last; x += stride) {
            if (k == cap) { /* more ranks than the group has: one is there twice */
                free(r);
                return MPI_ERR_RANK;
            }
            r[k++] = (int)x;
        }
    }
    *ranks = r;
    *count = k;
    return MPI_SUCCESS;
}

static int group_range(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup,
                       int excl, const char *fn)
{
    if (!group_ok(group))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, fn);
    int *ranks = NULL, k = 0;
    int rc = expand_ranges(group, n, ranges, &ranks, &k);
    if (rc)
        return mp_err(MPI_COMM_NULL, rc, fn);
    rc = excl ? PMPI_Group_excl(group, k, ranks, newgroup)
              : PMPI_Group_incl(group, k, ranks, newgroup);
    free(ranks);
    return rc;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_range_incl, (group, n, ranges, newgroup));
    return group_range(group, n, ranges, newgroup, 0, "MPI_Group_range_incl");
}

int MPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    MP_LOCKED(PMPI_Group_range_excl, (group, n, ranges, newgroup));
    return group_range(group, n, ranges, newgroup, 1, "MPI_Group_range_excl");
}

/* No intercommunicator is ever made, and no process spawned. */
int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    MP_LOCKED(PMPI_Comm_test_inter, (comm, flag));
    MP_CHECK_INIT("MPI_Comm_test_inter");
    if (!mp_comm_ok(comm))
        return mp_err(MPI_COMM_NULL, MPI_ERR_COMM, "MPI_Comm_test_inter");
    if (!flag)
        return mp_err(comm, MPI_ERR_ARG, "MPI_Comm_test_inter");
    *flag = 0;
    return MPI_SUCCESS;
}

int MPI_Comm_get_parent(MPI_Comm *parent)
{
    MP_LOCKED(PMPI_Comm_get_parent, (parent));
    MP_CHECK_INIT("MPI_Comm_get_parent");
    if (!parent)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Comm_get_parent");
    *parent = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group)
{
    MP_LOCKED(PMPI_Group_free, (group));
    if (!group || !group_ok(*group))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_free");
    MPI_Group g = *group;
    if (!g->predefined) {
        g->refs = 0;
        free(g->world);
        free(g);
    }
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

int MPI_Group_size(MPI_Group group, int *size)
{
    MP_LOCKED(PMPI_Group_size, (group, size));
    if (!group_ok(group))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_size");
    if (!size)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_size");
    *size = group->size;
    return MPI_SUCCESS;
}

/* The group rank of world rank w, or MPI_UNDEFINED. */
static int group_rank_of(MPI_Group g, int w)
{
    for (int i = 0; i < g->size; i++)
        if (g->world[i] == w)
            return i;
    return MPI_UNDEFINED;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
    MP_LOCKED(PMPI_Group_rank, (group, rank));
    if (!group_ok(group))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_rank");
    if (!rank)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_rank");
    *rank = group_rank_of(group, (int)flit_job_rank().idx);
    return MPI_SUCCESS;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[],
                              MPI_Group group2, int ranks2[])
{
    MP_LOCKED(PMPI_Group_translate_ranks, (group1, n, ranks1, group2, ranks2));
    if (!group_ok(group1) || !group_ok(group2))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_translate_ranks");
    if (n < 0 || (n && (!ranks1 || !ranks2)))
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_translate_ranks");
    for (int i = 0; i < n; i++)
        if (ranks1[i] != MPI_PROC_NULL && (ranks1[i] < 0 || ranks1[i] >= group1->size))
            return mp_err(MPI_COMM_NULL, MPI_ERR_RANK, "MPI_Group_translate_ranks");
    for (int i = 0; i < n; i++)
        ranks2[i] = ranks1[i] == MPI_PROC_NULL
                        ? MPI_PROC_NULL
                        : group_rank_of(group2, group1->world[ranks1[i]]);
    return MPI_SUCCESS;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    MP_LOCKED(PMPI_Group_compare, (group1, group2, result));
    if (!group_ok(group1) || !group_ok(group2))
        return mp_err(MPI_COMM_NULL, MPI_ERR_GROUP, "MPI_Group_compare");
    if (!result)
        return mp_err(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Group_compare");
    *result = compare_ranks(group1->size, group1->world, group2->size, group2->world);
    return MPI_SUCCESS;
}

/* ---- profiling interface: PMPI_ names (mpi_internal.h) ---- */

MP_PROFILED(MPI_Comm_size);
MP_PROFILED(MPI_Comm_rank);
MP_PROFILED(MPI_Comm_split);
MP_PROFILED(MPI_Comm_dup);
MP_PROFILED(MPI_Comm_idup);
MP_PROFILED(MPI_Comm_split_type);
MP_PROFILED(MPI_Group_union);
MP_PROFILED(MPI_Group_intersection);
MP_PROFILED(MPI_Group_difference);
MP_PROFILED(MPI_Group_range_incl);
MP_PROFILED(MPI_Group_range_excl);
MP_PROFILED(MPI_Comm_test_inter);
MP_PROFILED(MPI_Comm_get_parent);
MP_PROFILED(MPI_Comm_create);
MP_PROFILED(MPI_Comm_create_group);
MP_PROFILED(MPI_Comm_free);
MP_PROFILED(MPI_Comm_compare);
MP_PROFILED(MPI_Comm_group);
MP_PROFILED(MPI_Group_incl);
MP_PROFILED(MPI_Group_excl);
MP_PROFILED(MPI_Group_free);
MP_PROFILED(MPI_Group_size);
MP_PROFILED(MPI_Group_rank);
MP_PROFILED(MPI_Group_translate_ranks);
MP_PROFILED(MPI_Group_compare);
