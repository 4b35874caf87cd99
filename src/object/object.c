/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared objects (Orca's) on the public API alone: <flit/object.h> for the
 * contract. Nothing here includes a header of src/ outside this folder.
 * This file: an object's creation, destruction, id and stats.
 *
 * Every object has a group of its own (id = the object's id) in the
 * objects' group set: a replicated object's writes travel through it
 * (replicated.c), and its collective create and destroy fence the object
 * on every member for both strategies. An owned object's operations are
 * RPCs to its owner (owned.c). An AUTO object's group messages carry its
 * epoch after the header (placement.c).
 *
 * Locking: each object has a mutex, held while an operation's function or
 * guard runs (indivisibility), never across a flit call. The objects' table
 * has a mutex of its own, never held with an object's.
 */
#include "object_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

flit_handles_t *fl_obj_objects;

static flit_status check_type(const flit_object_type_t *t)
{
    if (!t->ops || t->nops == 0 || !t->pack != !t->unpack)
        return FLIT_ERR_INVALID_ARG;
    for (unsigned i = 0; i < t->nops; i++)
        if (!t->ops[i].fn ||
            (t->ops[i].kind != FLIT_OBJECT_READ && t->ops[i].kind != FLIT_OBJECT_WRITE))
            return FLIT_ERR_INVALID_ARG;
    return FLIT_OK;
}

/*
 * The object's group installed a view without `left`. Its messages were
 * delivered by every survivor or by none, all before this runs, so a write
 * of its still in pieces will never be whole: its buffer goes now, not at
 * destroy.
 */
static void object_view(flit_group_t *g, flit_rank_t left, void *user)
{
    flit_object_t *o = user;
    object_parts_forget(o, left.idx);
    if (o->adaptive)
        place_view(g, left, user);
}

static void object_free(flit_object_t *o)
{
    if (o->state && o->type->fini)
        o->type->fini(o->state, o->type->user);
    free(o->state);
    free(o->scratch);
    free(o->spare);
    for (struct part *p = o->parts, *next; p; p = next) {
        next = p->next;
        free(p->buf);
        free(p);
    }
    place_fini(o);
    (void)flit_handle_free(&fl_obj_objects, o->self);
    pthread_mutex_destroy(&o->lock);
    free(o);
}

static void unlink_object(flit_objects_t *objs, flit_object_t *o)
{
    pthread_mutex_lock(&objs->lock);
    flit_object_t **pp = &objs->list;
    while (*pp && *pp != o)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = o->next;
        atomic_fetch_sub_explicit(&objs->ctr->live, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&objs->lock);
}

/* flit_object_create's arguments, as they travel between its steps. */
struct create_args {
    uint32_t id;
    const flit_object_type_t *type;
    const flit_rank_t *members;
    unsigned n;
    flit_object_strategy strategy;
    flit_rank_t owner;
    const void *init_arg;
    size_t init_len;
};

/* What can be judged before anything is made. */
static flit_status create_check(flit_objects_t *objs, const struct create_args *a,
                                flit_object_t **out)
{
    if (!objs || !a->type || !out || (!a->init_arg && a->init_len) ||
        (!a->members && a->n))
        return FLIT_ERR_INVALID_ARG;
    if (a->strategy != FLIT_OBJECT_REPLICATED && a->strategy != FLIT_OBJECT_OWNED &&
        a->strategy != FLIT_OBJECT_AUTO)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = check_type(a->type);
    if (st != FLIT_OK || a->strategy != FLIT_OBJECT_OWNED)
        return st;
    if (a->owner.idx >= flit_job_size())
        return FLIT_ERR_RANK;
    bool found = a->n == 0;
    for (unsigned i = 0; i < a->n; i++)
        found = found || a->members[i].idx == a->owner.idx;
    return found ? FLIT_OK : FLIT_ERR_INVALID_ARG;
}

/* The copy of the state here, made by the type's init. */
static flit_status state_new(flit_object_t *o, const struct create_args *a)
{
    size_t rmax = object_res_max(a->type);
    o->state = calloc(1, a->type->state_size ? a->type->state_size : 1);
    o->scratch = malloc(rmax ? rmax : 1);
    if (!o->state || !o->scratch) {
        free(o->state); /* never made: no fini for it */
        o->state = NULL;
        return FLIT_ERR_NO_MEMORY;
    }
    if (a->type->init)
        a->type->init(o->state, a->init_arg, a->init_len, a->type->user);
    return FLIT_OK;
}

/* A new object, with its handle, its placement (AUTO) and its copy of the
   state when it holds one; in no table and no group yet. */
static flit_status object_new(flit_objects_t *objs, const struct create_args *a,
                              flit_object_t **out)
{
    flit_object_t *o = calloc(1, sizeof *o);
    if (!o)
        return FLIT_ERR_NO_MEMORY;
    o->id = a->id;
    o->objs = objs;
    o->type = a->type;
    /* AUTO starts replicated: every member makes a copy. */
    o->adaptive = a->strategy == FLIT_OBJECT_AUTO;
    o->strategy = o->adaptive ? FLIT_OBJECT_REPLICATED : a->strategy;
    bool owned = a->strategy == FLIT_OBJECT_OWNED;
    o->owner = owned ? a->owner : flit_rank(UINT32_MAX);
    o->holds = !owned || a->owner.idx == flit_job_rank().idx;
    o->tail = &o->queue;
    pthread_mutex_init(&o->lock, NULL);
    flit_status st = flit_handle_new(&fl_obj_objects, o, &o->self) == FLIT_OK
                         ? FLIT_OK
                         : FLIT_ERR_NO_MEMORY;
    if (st == FLIT_OK && o->adaptive)
        st = place_init(o, a->members, a->n);
    if (st == FLIT_OK && o->holds)
        st = state_new(o, a);
    if (st != FLIT_OK) {
        object_free(o);
        return st;
    }
    *out = o;
    return FLIT_OK;
}

/* In the table before the group forms: once any member's create has
   returned, the owner serves the object. FLIT_ERR_INVALID_ARG: the id is
   in use here. */
static flit_status object_insert(flit_objects_t *objs, flit_object_t *o)
{
    pthread_mutex_lock(&objs->lock);
    bool taken = object_find(objs, o->id) != NULL;
    if (!taken) {
        o->next = objs->list;
        objs->list = o;
        atomic_fetch_add_explicit(&objs->ctr->live, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&objs->lock);
    return taken ? FLIT_ERR_INVALID_ARG : FLIT_OK;
}

/* The object's group (collective over the members), and the longest
   write one of its messages takes. */
static flit_status object_join(flit_object_t *o, const struct create_args *a)
{
    flit_group_params_t gp = {
        .field_mask = FLIT_GROUP_PARAM_VIEW_FN, .view_fn = object_view, .view_user = o};
    flit_status st = flit_group_create(o->objs->groups, a->id, a->members, a->n, &gp,
                                       object_deliver, o, &o->group);
    flit_group_stats_t gs = {.struct_size = sizeof gs};
    if (st == FLIT_OK && (st = flit_group_stats(o->group, &gs)) != FLIT_OK)
        (void)flit_group_destroy(o->group);
    /* The group's largest message is half its window (the default one),
       less this layer's words before the bytes. */
    if (st == FLIT_OK)
        o->part_max = FLIT_GROUP_WINDOW_DEFAULT / 2 * gs.frag - PART_SLACK;
    return st;
}

flit_status flit_object_create(flit_objects_t *h, uint32_t id,
                               const flit_object_type_t *type, const flit_rank_t *members,
                               unsigned n, flit_object_strategy strategy,
                               flit_rank_t owner, const void *init_arg, size_t init_len,
                               flit_object_t **out)
{
    flit_objects_t *objs = objs_of(h);
    const struct create_args a = {id,       type,  members,  n,
                                  strategy, owner, init_arg, init_len};
    flit_object_t *o = NULL;
    flit_status st = create_check(objs, &a, out);
    if (st == FLIT_OK)
        st = object_new(objs, &a, &o);
    if (st != FLIT_OK)
        return st;
    if ((st = object_insert(objs, o)) != FLIT_OK)
        goto err_free;
    if ((st = object_join(o, &a)) != FLIT_OK)
        goto err_unlink;
    *out = o->self;
    return FLIT_OK;
err_unlink:
    unlink_object(objs, o);
err_free:
    object_free(o);
    return st;
}

flit_status flit_object_destroy(flit_object_t *h)
{
    flit_object_t *obj = obj_of(h);
    if (!obj)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = flit_group_destroy(obj->group);
    if (st == FLIT_ERR_IN_HANDLER || st == FLIT_ERR_INVALID_ARG)
        return st;
    unlink_object(obj->objs, obj);
    /* The progress listener may hold it (another thread's): let it go. */
    while (atomic_load(&obj->busy))
        flit_wait(obj->objs->ep, WAIT_SLICE);
    /* Operations still waiting for their guard cannot run any more. */
    struct pending *done = NULL;
    while (obj->queue) {
        struct pending *p = obj->queue;
        obj->queue = p->next;
        if (p->reply) {
            p->st = FLIT_ERR_CLOSED;
            p->next = done;
            done = p;
        } else {
            free(p->arg);
            free(p);
        }
    }
    object_answer(done);
    object_free(obj);
    return st;
}

uint32_t flit_object_id(const flit_object_t *h)
{
    const flit_object_t *obj = obj_of(h);
    return obj ? obj->id : UINT32_MAX;
}

flit_status flit_object_stats(flit_object_t *h, flit_object_stats_t *out_)
{
    flit_object_t *obj = obj_of(h);
    /* A program built against an earlier header knows a shorter struct
       (up to retries): it gets what it knows. */
    if (!obj || !out_ ||
        out_->struct_size < offsetof(flit_object_stats_t, partial_writes) ||
        out_->struct_size > sizeof *out_)
        return FLIT_ERR_INVALID_ARG;
    flit_object_stats_t all = {.struct_size = out_->struct_size}, *out = &all;
    pthread_mutex_lock(&obj->lock);
    out->strategy = obj->strategy;
    out->owner = obj->owner;
    out->partial_writes = obj->nparts;
    out->partials_dropped = obj->parts_dropped;
    out->departed = obj->departed;
    out->refused = obj->refused;
    out->missed = obj->missed;
    flit_object_strategy placement = !obj->adaptive ? obj->strategy
                                     : obj->pinned
                                         ? (flit_object_strategy)obj->pin.strategy
                                         : FLIT_OBJECT_AUTO;
    pthread_mutex_unlock(&obj->lock);
    out->placement = placement;
    out->switches = atomic_load(&obj->switches);
    out->retries = atomic_load(&obj->retries);
    out->reads = atomic_load(&obj->reads);
    out->writes = atomic_load(&obj->writes);
    out->local = atomic_load(&obj->local);
    out->applied = atomic_load(&obj->applied);
    out->guard_waits = atomic_load(&obj->guard_waits);
    memcpy(out_, &all, all.struct_size);
    return FLIT_OK;
}
