/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The objects of an endpoint (the object layer's state, or a deprecated
 * flit_objects_t): an RPC object and a group set of their own, and the
 * table of live objects by id.
 */
#include "object_int.h"

#include <stdlib.h>

flit_handles_t *fl_obj_sets;

flit_object_t *object_find(flit_objects_t *objs, uint32_t id)
{
    flit_object_t *o;
    for (o = objs->list; o && o->id != id; o = o->next)
        ;
    return o;
}

flit_object_t *object_lookup(flit_objects_t *objs, uint32_t id)
{
    pthread_mutex_lock(&objs->lock);
    flit_object_t *o = object_find(objs, id);
    pthread_mutex_unlock(&objs->lock);
    return o;
}

/* What the set needs: its RPC object (one procedure), its group set, the
   procedure and the placement's listener; on failure, nothing of it. */
static flit_status objects_open(flit_objects_t *objs)
{
    flit_rpc_params_t rp = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = 1};
    flit_status st = flit_rpc_create(objs->ep, &rp, &objs->rpc);
    if (st != FLIT_OK)
        return st;
    if ((st = flit_groups_create(objs->ep, &objs->groups)) != FLIT_OK)
        goto err_destroy_rpc;
    if ((st = object_serve_register(objs)) != FLIT_OK ||
        (st = place_listen(objs)) != FLIT_OK)
        goto err_destroy_groups;
    return FLIT_OK;
err_destroy_groups:
    (void)flit_groups_destroy(objs->groups);
err_destroy_rpc:
    (void)flit_rpc_destroy(objs->rpc);
    return st;
}

flit_status flit_objects_create(flit_ep_t *ep, flit_objects_t **out)
{
    return object_sets_create(ep, NULL, out);
}

flit_status object_sets_create(flit_ep_t *ep, struct fl_obj_counters *ctr,
                               flit_objects_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    flit_objects_t *objs = calloc(1, sizeof *objs);
    if (!objs)
        return FLIT_ERR_NO_MEMORY;
    flit_status st = flit_handle_new(&fl_obj_sets, objs, &objs->self);
    if (st != FLIT_OK) {
        free(objs);
        return FLIT_ERR_NO_MEMORY;
    }
    objs->ep = ep;
    objs->ctr = ctr ? ctr : &objs->own;
    pthread_mutex_init(&objs->lock, NULL);
    if ((st = objects_open(objs)) != FLIT_OK) {
        (void)flit_handle_free(&fl_obj_sets, objs->self);
        pthread_mutex_destroy(&objs->lock);
        free(objs);
        return st;
    }
    *out = objs->self;
    return FLIT_OK;
}

flit_status flit_objects_destroy(flit_objects_t *h)
{
    flit_objects_t *objs = objs_of(h);
    if (!objs)
        return FLIT_ERR_INVALID_ARG;
    pthread_mutex_lock(&objs->lock);
    bool live = objs->list != NULL;
    pthread_mutex_unlock(&objs->lock);
    if (live)
        return FLIT_ERR_AGAIN;
    place_unlisten(objs);
    flit_status st = flit_rpc_destroy(objs->rpc);
    if (st != FLIT_OK) {
        place_listen(objs);
        return st;
    }
    flit_status st2 = flit_groups_destroy(objs->groups);
    (void)flit_handle_free(&fl_obj_sets, h);
    pthread_mutex_destroy(&objs->lock);
    free(objs);
    return st2;
}

flit_status flit_object_lookup(flit_objects_t *h, uint32_t id, flit_object_t **out)
{
    flit_objects_t *objs = objs_of(h);
    if (!objs || !out)
        return FLIT_ERR_INVALID_ARG;
    flit_object_t *o = object_lookup(objs, id);
    if (!o)
        return FLIT_ERR_INVALID_ARG;
    *out = o->self;
    return FLIT_OK;
}
