/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replicated objects' writes: sent through the object's group (in pieces
 * when larger than one group message), delivered on every member in the
 * group's order, applied there or queued behind their guard. The writer
 * applies its own from its own memory, found by its call's token.
 */
#include "object_int.h"

#include <stdlib.h>
#include <string.h>

struct call *object_call(flit_object_t *o, uint64_t token)
{
    struct call *c = o->calls;
    while (c && (uint64_t)(uintptr_t)c != token)
        c = c->next;
    return c;
}

void object_call_in(flit_object_t *o, struct call *c)
{
    pthread_mutex_lock(&o->lock);
    c->next = o->calls;
    o->calls = c;
    pthread_mutex_unlock(&o->lock);
}

void object_call_out(flit_object_t *o, struct call *c)
{
    pthread_mutex_lock(&o->lock);
    struct call **pp = &o->calls;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    /* A write still waiting for its guard is applied for nobody. */
    for (struct pending *p = o->queue; p; p = p->next)
        if (p->call == c)
            p->call = NULL;
    pthread_mutex_unlock(&o->lock);
}

/* Under o->lock: ends this member's own write c (if any) with st. */
static void call_end(struct call *c, flit_status st)
{
    if (!c)
        return;
    c->st = st;
    atomic_store_explicit(&c->done, 1, memory_order_release);
}

/* Under o->lock: the write op (arg, len) applied here for c (NULL: another
   member's), or queued behind its guard. False when it was queued with
   the argument's copy heap (no longer the caller's). */
static bool take_write(flit_object_t *o, unsigned op, uint32_t epoch, const void *arg,
                       size_t len, void *heap, struct call *c, struct pending **done)
{
    if (o->adaptive && (epoch != o->epoch || o->strategy != FLIT_OBJECT_REPLICATED)) {
        /* Sent before a switch ordered ahead of it: applied by no member,
           its writer makes it again under the new placement. */
        if (c) {
            c->target = o->epoch;
            call_end(c, REDIRECT);
        }
    } else if (!object_guard_holds(o, op, arg, len)) {
        if (object_wait_guard(o, op, arg, len, heap, c))
            return !heap;
        object_miss(o, "a waiting write", len);
        call_end(c, FLIT_ERR_NO_MEMORY);
    } else {
        object_apply_for(o, op, arg, len, c);
        object_run_queue(o, done);
    }
    return true;
}

/* A write of the type (w), delivered: its argument from the writer's own
   memory (c), its pieces, or the message; then applied, or queued. */
static void deliver_write(flit_object_t *o, flit_group_msg_t *m,
                          const struct fl_obj_msg *w, struct call *c)
{
    char abuf[SMALL];
    void *heap = NULL;
    size_t heap_cap = 0, len = w->len;
    const void *arg;
    struct part *part = NULL;
    if (!c) {
        part = object_part_take(o, flit_group_msg_sender(m).idx, w->h.token);
    }
    if (c && c->arg) {
        arg = c->arg;  /* the writer's own memory: no copy */
        len = c->len;  /* all of it, when it came in pieces */
    } else if (part) { /* its last piece, after the others */
        len = part->len;
        if (!(arg = heap = object_part_last(o, m, part, w->h.op, w->len)))
            return;
        heap_cap = len;
    } else {
        void *room = len <= SMALL ? abuf : (heap = object_spare_take(o, len, &heap_cap));
        if (!room) {
            pthread_mutex_lock(&o->lock);
            object_miss(o, "a write", len);
            call_end(c, FLIT_ERR_NO_MEMORY);
            pthread_mutex_unlock(&o->lock);
            return;
        }
        flit_group_recv(m, room, len);
        arg = room;
    }
    struct pending *done = NULL;
    pthread_mutex_lock(&o->lock);
    if (!take_write(o, w->h.op, w->epoch, arg, len, heap, c, &done))
        heap = NULL; /* queued with the write */
    pthread_mutex_unlock(&o->lock);
    object_spare_give(o, heap, heap_cap);
    object_answer(done);
}

/* In the group's order, on every member: a write, a piece of one, or a
   placement message. Anything its format does not allow is refused. */
void object_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g;
    flit_object_t *o = user;
    uint32_t sender = flit_group_msg_sender(m).idx;
    uint8_t head[sizeof(struct hdr) + sizeof(epoch_word)];
    size_t hl = fl_obj_head_len(o->adaptive);
    struct fl_obj_msg w;
    if (total >= hl && flit_group_recv(m, head, hl) != FLIT_OK)
        return;
    flit_status st = fl_obj_decode_msg(total >= hl ? head : NULL, total, o->id,
                                       o->adaptive, o->type, &w);
    struct call *c = NULL;
    pthread_mutex_lock(&o->lock);
    if (st != FLIT_OK)
        object_refuse(o, "group message", sender);
    else if (sender == flit_job_rank().idx)
        c = object_call(o, w.h.token);
    pthread_mutex_unlock(&o->lock);
    if (st != FLIT_OK)
        return;
    if (w.h.op == OP_PART) {
        if (!c) /* the writer applies its own from its own memory */
            object_part_deliver(o, m, &w.h, w.len);
        return;
    }
    if (w.h.op >= o->type->nops) { /* AUTO objects only (decoded so) */
        place_deliver(o, m, &w.h, w.epoch, w.len);
        return;
    }
    deliver_write(o, m, &w, c);
}

/* The first pieces of write cp, too large for one group message, as
   OP_PART messages in the writer's order; *rest gets what is left for the
   write's own message, whose place in the order is the write's. */
static flit_status send_parts(flit_object_t *o, epoch_word *e, const void *flat,
                              size_t len, struct call *cp, struct iovec *rest)
{
    int k = o->adaptive ? 2 : 1; /* the header, and an AUTO object's epoch */
    struct hdr ph = {o->id, OP_PART, (uint64_t)(uintptr_t)cp};
    uint64_t total = len;
    const char *p = flat;
    while (len > o->part_max) {
        struct iovec pv[4] = {{&ph, sizeof ph}, {e, sizeof *e}};
        pv[k] = (struct iovec){&total, sizeof total};
        pv[k + 1] = (struct iovec){(void *)p, o->part_max};
        flit_status st = flit_group_sendv(o->group, pv, k + 2);
        if (st != FLIT_OK)
            return st;
        p += o->part_max;
        len -= o->part_max;
    }
    *rest = (struct iovec){(void *)p, len};
    return FLIT_OK;
}

/* The messages of write c: its pieces first when it is larger than one
   group message. */
static flit_status send_write(flit_object_t *o, uint32_t epoch, unsigned op,
                              const struct iovec *arg, int narg, const void *flat,
                              size_t len, struct call *cp)
{
    epoch_word e = epoch;
    struct iovec rest;
    if (len > o->part_max) {
        flit_status st = send_parts(o, &e, flat, len, cp, &rest);
        if (st != FLIT_OK)
            return st;
        arg = &rest;
        narg = 1;
    }
    struct hdr h = {o->id, op, (uint64_t)(uintptr_t)cp};
    struct iovec head[2] = {{&h, sizeof h}, {&e, sizeof e}}, small[8];
    int k = o->adaptive ? 2 : 1;
    struct iovec *v = object_iov_after(small, head, k, arg, narg);
    if (!v)
        return FLIT_ERR_NO_MEMORY;
    flit_status st = flit_group_sendv(o->group, v, narg + k);
    if (v != small)
        free(v);
    return st;
}

flit_status object_invoke_write(flit_object_t *o, uint32_t epoch, unsigned op,
                                const struct iovec *arg, int narg, const void *flat,
                                size_t len, const struct iovec *res, int nres,
                                size_t *res_len, uint32_t *target)
{
    /* Inside a handler the wait below could not be made, and the message
       would name a call that is gone: refuse before sending. */
    if (flit_in_handler())
        return FLIT_ERR_IN_HANDLER;
    struct call c = {.arg = flat, .len = len, .res = res, .nres = nres};
    atomic_init(&c.done, 0);
    object_call_in(o, &c);
    flit_status st = send_write(o, epoch, op, arg, narg, flat, len, &c);
    /* Polls first: a write comes back in a few passes, and each flit_wait
       costs more than a pass (its clock, its spin set-up); then waits. */
    for (unsigned pass = 0;
         st == FLIT_OK && !atomic_load_explicit(&c.done, memory_order_acquire); pass++) {
        st = pass < POLL_PASSES ? flit_poll(o->objs->ep)
                                : flit_wait(o->objs->ep, WAIT_SLICE);
        if (st == FLIT_ERR_TIMEOUT)
            st = FLIT_OK;
    }
    object_call_out(o, &c); /* its token is refused from now on */
    if (st != FLIT_OK)
        return st;
    *res_len = c.res_len;
    *target = c.target;
    return c.st;
}
