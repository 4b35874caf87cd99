/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared objects (Orca's) on the public API alone: <flit/object.h> for the
 * contract. Nothing here includes a header of src/ outside this folder.
 *
 * Every object has a group of its own (id = the object's id) in the
 * objects' group set: a replicated object's writes travel through it, and
 * its collective create and destroy fence the object on every member for
 * both strategies. An owned object's operations are calls of procedure
 * PROC_INVOKE of the objects' RPC object, request [struct hdr][argument],
 * reply [uint32 status][result]. An AUTO object's group messages carry
 * its epoch after the header (placement.c).
 *
 * Locking: each object has a mutex, held while an operation's function or
 * guard runs (indivisibility), never across a flit call. The objects' table
 * has a mutex of its own, never held with an object's.
 *
 * Guards: an operation whose guard does not hold when it reaches the copy
 * it must run on (a replicated write on every member, anything at the
 * owner of an owned object) waits in the object's queue, and after each
 * write applied the queue is run again from its oldest entry. Replicas
 * apply the same writes in the same order, so their queues agree.
 */
#include "object_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

flit_handles_t *fl_obj_sets, *fl_obj_objects;

/* ---------------------------------------------------------------- helpers */

static size_t res_max_of(const flit_object_type_t *t)
{
    size_t m = 0;
    for (unsigned i = 0; i < t->nops; i++)
        if (t->ops[i].res_max > m)
            m = t->ops[i].res_max;
    return m;
}

static bool guard_holds(flit_object_t *o, unsigned op, const void *arg, size_t len)
{
    const flit_object_op_t *d = &o->type->ops[op];
    return !d->guard || d->guard(o->state, arg, len, o->type->user);
}

/* Under o->lock: runs op with its result into res (room for res_max), or
   into the scratch room when res is NULL. */
static size_t apply(flit_object_t *o, unsigned op, const void *arg, size_t len, void *res)
{
    const flit_object_op_t *d = &o->type->ops[op];
    atomic_fetch_add_explicit(&o->applied, 1, memory_order_relaxed);
    return d->fn(o->state, arg, len, res ? res : o->scratch, o->type->user);
}

/* Under o->lock: applies a replicated write for its writer's call c (or
   nobody's, c NULL), the result straight into the caller's buffer when it
   is one piece with room. */
static void apply_for(flit_object_t *o, unsigned op, const void *arg, size_t len,
                      struct call *c)
{
    if (!c) {
        apply(o, op, arg, len, NULL);
        return;
    }
    size_t cap = 0;
    for (int i = 0; i < c->nres; i++)
        cap += c->res[i].iov_len;
    size_t n;
    if (c->nres == 1 && c->res[0].iov_len >= o->type->ops[op].res_max) {
        n = apply(o, op, arg, len, c->res[0].iov_base);
    } else {
        n = apply(o, op, arg, len, NULL);
        flit_iov_scatter(c->res, c->nres, o->scratch, n);
    }
    c->res_len = n;
    /* A copy that missed a write has no result worth giving. */
    c->st = o->missed ? FLIT_ERR_NO_MEMORY : n > cap ? FLIT_ERR_TOO_LARGE : FLIT_OK;
    atomic_store_explicit(&c->done, 1, memory_order_release);
}

/* Under o->lock, after a write: runs the waiting operations whose guard
   holds, oldest first, again from the oldest after each. Owned objects'
   finished entries go to *done, to be answered once the lock is let go. */
static void run_queue(flit_object_t *o, struct pending **done)
{
    bool again = true;
    while (again) {
        again = false;
        for (struct pending **pp = &o->queue; *pp; pp = &(*pp)->next) {
            struct pending *p = *pp;
            if (!guard_holds(o, p->op, p->arg, p->len))
                continue;
            *pp = p->next;
            if (!*pp)
                o->tail = pp;
            if (p->reply) {
                p->res_len = apply(o, p->op, p->arg, p->len, p->res);
                p->st = FLIT_OK;
                p->next = *done;
                *done = p;
            } else {
                apply_for(o, p->op, p->arg, p->len, p->call);
                free(p->arg);
                free(p);
            }
            again = true; /* from the oldest again */
            break;
        }
    }
}

void object_pending_free(struct pending *p)
{
    free(p->arg);
    free(p->res);
    free(p);
}

/* Answers owned objects' finished waiting operations (no lock held), or
   sends them elsewhere (p->redirect). */
void object_answer(struct pending *done)
{
    while (done) {
        struct pending *p = done;
        done = p->next;
        uint32_t st = p->redirect ? p->redirect : (uint32_t)p->st;
        struct iovec v[2] = {{&st, sizeof st}, {p->res, p->res_len}};
        flit_rpc_reply_send(p->reply, v, st == FLIT_OK ? 2 : 1);
        object_pending_free(p);
    }
}

static void enqueue(flit_object_t *o, struct pending *p)
{
    p->next = NULL;
    *o->tail = p;
    o->tail = &p->next;
    atomic_fetch_add_explicit(&o->guard_waits, 1, memory_order_relaxed);
}

static flit_object_t *find(flit_objects_t *objs, uint32_t id)
{
    flit_object_t *o;
    for (o = objs->list; o && o->id != id; o = o->next)
        ;
    return o;
}

static flit_object_t *lookup(flit_objects_t *objs, uint32_t id)
{
    pthread_mutex_lock(&objs->lock);
    flit_object_t *o = find(objs, id);
    pthread_mutex_unlock(&objs->lock);
    return o;
}

/* Receives len bytes of a message into buf (SMALL bytes) or a malloc'ed
   block (*heap); NULL when that cannot be had. */
static void *room_for(size_t len, char *buf, void **heap)
{
    *heap = NULL;
    if (len <= SMALL)
        return buf;
    *heap = malloc(len);
    return *heap;
}

/* ---------------------------------------------------------------- wire */

size_t fl_obj_write_max(const flit_object_type_t *t)
{
    size_t m = 0;
    for (unsigned i = 0; i < t->nops; i++)
        if (t->ops[i].kind == FLIT_OBJECT_WRITE && t->ops[i].arg_max > m)
            m = t->ops[i].arg_max;
    return m;
}

size_t fl_obj_head_len(bool adaptive)
{
    return sizeof(struct hdr) + (adaptive ? sizeof(epoch_word) : 0);
}

/* The body of a placement message (AUTO objects) may be len bytes. */
static bool place_body_ok(uint32_t op, size_t len, const flit_object_type_t *t)
{
    switch (op) {
    case OP_REPORT:
        return len == 2 * sizeof(uint64_t);
    case OP_SWITCH:
        return len >= sizeof(struct move) &&
               (t->unpack || len - sizeof(struct move) == t->state_size);
    case OP_PLACE:
        return len == sizeof(struct move);
    case OP_LEFT:
        return len == sizeof(uint32_t);
    default:
        return false;
    }
}

flit_status fl_obj_decode_msg(const uint8_t *head, size_t total, uint32_t id,
                              bool adaptive, const flit_object_type_t *t,
                              struct fl_obj_msg *m)
{
    size_t hl = fl_obj_head_len(adaptive);
    if (!head || total < hl)
        return FLIT_ERR_BAD_PACKET;
    struct fl_obj_msg d = {.len = total - hl};
    memcpy(&d.h, head, sizeof d.h);
    epoch_word e = 0;
    if (adaptive)
        memcpy(&e, head + sizeof d.h, sizeof e);
    if (d.h.id != id || e > UINT32_MAX)
        return FLIT_ERR_BAD_PACKET;
    d.epoch = (uint32_t)e;
    bool ok;
    if (d.h.op < t->nops)
        ok = t->ops[d.h.op].kind == FLIT_OBJECT_WRITE && d.len <= t->ops[d.h.op].arg_max;
    else if (d.h.op == OP_PART)
        ok = d.len > sizeof(uint64_t);
    else
        ok = adaptive && place_body_ok(d.h.op, d.len, t);
    if (!ok)
        return FLIT_ERR_BAD_PACKET;
    *m = d;
    return FLIT_OK;
}

flit_status fl_obj_decode_part(const uint8_t *words, size_t len, size_t max,
                               size_t *total)
{
    uint64_t t;
    if (!words || len <= sizeof t)
        return FLIT_ERR_BAD_PACKET;
    memcpy(&t, words, sizeof t);
    if (t <= len - sizeof t || t > max)
        return FLIT_ERR_BAD_PACKET;
    *total = (size_t)t;
    return FLIT_OK;
}

flit_status fl_obj_decode_move(const uint8_t *b, bool place, uint32_t nranks,
                               struct move *mv)
{
    struct move d;
    memcpy(&d, b, sizeof d);
    bool ok = d.strategy == FLIT_OBJECT_REPLICATED ||
              (d.strategy == FLIT_OBJECT_OWNED && d.owner < nranks) ||
              (place && d.strategy == FLIT_OBJECT_AUTO);
    if (!ok)
        return FLIT_ERR_BAD_PACKET;
    *mv = d;
    return FLIT_OK;
}

flit_status fl_obj_decode_req(const uint8_t *b, size_t len, struct hdr *h)
{
    if (!b || len < sizeof *h)
        return FLIT_ERR_BAD_PACKET;
    memcpy(h, b, sizeof *h);
    return FLIT_OK;
}

flit_status fl_obj_decode_reply(uint32_t word, bool adaptive, flit_status *st,
                                uint32_t *target)
{
    if (adaptive && (word & REDIRECT_BIT)) {
        *st = REDIRECT;
        *target = word & ~REDIRECT_BIT;
        return FLIT_OK;
    }
    if (word >= (uint32_t)FLIT_STATUS_COUNT)
        return FLIT_ERR_BAD_PACKET;
    *st = (flit_status)word;
    return FLIT_OK;
}

/* Under o->lock: whether this is the object's first refusal or miss (the
   one that is logged). */
static bool first_word(flit_object_t *o)
{
    bool first = !o->logged;
    o->logged = true;
    return first;
}

void object_refuse(flit_object_t *o, const char *what, uint32_t from)
{
    o->refused++;
    if (first_word(o))
        flit_log(FLIT_LOG_WARN,
                 "object %u: a malformed %s from rank %u refused (further ones are only "
                 "counted)",
                 o->id, what, from);
}

void object_miss(flit_object_t *o, const char *what, size_t len)
{
    o->missed++;
    if (first_word(o))
        flit_log(FLIT_LOG_ERROR,
                 "object %u: no memory for %s of %zu bytes: the copy here missed a write "
                 "and answers FLIT_ERR_NO_MEMORY from now on",
                 o->id, what, len);
}

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

/* ---------------------------------------------------------------- owned */

static void reply_status(flit_rpc_req_t *req, flit_status st)
{
    uint32_t w = (uint32_t)st;
    struct iovec v = {&w, sizeof w};
    flit_rpc_reply(req, &v, 1);
}

/* At the owner: an operation of another member. */
static void serve(flit_rpc_req_t *req, size_t len, void *user)
{
    flit_objects_t *objs = user;
    struct hdr h;
    uint8_t b[sizeof h];
    if (len < sizeof b || flit_rpc_recv(req, b, sizeof b) != FLIT_OK ||
        fl_obj_decode_req(b, len, &h) != FLIT_OK) {
        reply_status(req, FLIT_ERR_BAD_PACKET);
        return;
    }
    flit_object_t *o = lookup(objs, h.id);
    len -= sizeof h;
    if (!o || (!o->adaptive && !o->holds) || h.op >= o->type->nops) {
        reply_status(req, FLIT_ERR_INVALID_ARG);
        return;
    }
    pthread_mutex_lock(&o->lock);
    bool missed = o->missed != 0;
    pthread_mutex_unlock(&o->lock);
    if (missed) { /* this copy missed a write: no answer from it is right */
        reply_status(req, FLIT_ERR_NO_MEMORY);
        return;
    }
    const flit_object_op_t *d = &o->type->ops[h.op];
    if (len > d->arg_max) {
        reply_status(req, FLIT_ERR_TOO_LARGE);
        return;
    }
    char abuf[SMALL], rbuf[SMALL];
    void *aheap, *rheap;
    void *arg = room_for(len, abuf, &aheap);
    void *res = room_for(d->res_max, rbuf, &rheap);
    if (!arg || !res) {
        free(aheap);
        free(rheap);
        reply_status(req, FLIT_ERR_NO_MEMORY);
        return;
    }
    flit_status st = flit_rpc_recv(req, arg, len);
    if (st != FLIT_OK) {
        free(aheap);
        free(rheap);
        reply_status(req, st);
        return;
    }
    struct pending *done = NULL, *p = NULL;
    size_t n = 0;
    pthread_mutex_lock(&o->lock);
    if (o->adaptive) {
        if (o->strategy != FLIT_OBJECT_OWNED || !o->holds || o->moving ||
            o->epoch != (uint32_t)h.token) {
            /* Not (or no longer) the owner, or not under the placement the
               caller is at: it tries again once it has installed the
               placement named (ours, or the next when moving). A caller
               ahead of us names its own: it pauses and tries again. */
            uint32_t at = o->epoch + (o->moving ? 1u : 0u);
            if ((int32_t)((uint32_t)h.token - at) > 0)
                at = (uint32_t)h.token;
            uint32_t w = REDIRECT_BIT | at;
            pthread_mutex_unlock(&o->lock);
            struct iovec v = {&w, sizeof w};
            flit_rpc_reply(req, &v, 1);
            free(aheap);
            free(rheap);
            return;
        }
        place_count(o, flit_rpc_caller(req).idx, d->kind == FLIT_OBJECT_WRITE);
    }
    if (!guard_holds(o, h.op, arg, len)) {
        p = calloc(1, sizeof *p);
        if (p && flit_rpc_defer(req, &p->reply) == FLIT_OK) {
            p->op = h.op;
            p->len = len;
            p->arg = aheap ? aheap : malloc(len ? len : 1);
            p->res = rheap ? rheap : malloc(d->res_max ? d->res_max : 1);
            if (!aheap && p->arg)
                memcpy(p->arg, arg, len);
            if (p->arg && p->res) {
                enqueue(o, p);
                pthread_mutex_unlock(&o->lock);
                return;
            }
            p->st = FLIT_ERR_NO_MEMORY;
            p->next = NULL;
            done = p;
        } else {
            free(p);
            p = NULL;
            st = FLIT_ERR_NO_MEMORY;
        }
    } else {
        n = apply(o, h.op, arg, len, res);
        if (d->kind == FLIT_OBJECT_WRITE)
            run_queue(o, &done);
    }
    pthread_mutex_unlock(&o->lock);
    if (!p) {
        uint32_t w = (uint32_t)st;
        struct iovec v[2] = {{&w, sizeof w}, {res, n}};
        flit_rpc_reply(req, v, st == FLIT_OK ? 2 : 1);
        free(aheap);
        free(rheap);
    }
    object_answer(done);
}

/* A member that is not the owner: the operation, by RPC. */
static flit_status invoke_remote(flit_object_t *o, flit_rank_t owner, uint32_t epoch,
                                 unsigned op, const struct iovec *arg, int narg,
                                 const struct iovec *res, int nres, size_t *res_len,
                                 uint32_t *target)
{
    struct hdr h = {o->id, op, epoch};
    struct iovec small[8], *req = small;
    if (narg + 1 > 8 && !(req = malloc(sizeof *req * (size_t)(narg + 1))))
        return FLIT_ERR_NO_MEMORY;
    req[0] = (struct iovec){&h, sizeof h};
    if (narg)
        memcpy(req + 1, arg, sizeof *req * (size_t)narg);
    struct iovec rsmall[8], *rep = rsmall;
    uint32_t st = FLIT_OK;
    if (nres + 1 > 8 && !(rep = malloc(sizeof *rep * (size_t)(nres + 1)))) {
        if (req != small)
            free(req);
        return FLIT_ERR_NO_MEMORY;
    }
    rep[0] = (struct iovec){&st, sizeof st};
    if (nres)
        memcpy(rep + 1, res, sizeof *rep * (size_t)nres);
    flit_rpc_result_t r;
    flit_status s = flit_rpc_call(o->objs->rpc, owner, PROC_INVOKE, req, narg + 1, rep,
                                  nres + 1, NULL, &r);
    if (req != small)
        free(req);
    if (rep != rsmall)
        free(rep);
    if ((s != FLIT_OK && s != FLIT_ERR_TOO_LARGE) || r.received < sizeof st)
        return s != FLIT_OK ? s : FLIT_ERR_BAD_PACKET;
    flit_status word;
    if (fl_obj_decode_reply(st, o->adaptive, &word, target) != FLIT_OK)
        return FLIT_ERR_BAD_PACKET; /* the owner's word names no status */
    if (word != FLIT_OK)
        return word;
    *res_len = r.length - sizeof st;
    return s;
}

/* ---------------------------------------------------------------- local */

/* Waits (making progress) until the guard of op holds, then applies it on
   the copy here; owned objects also run their queue after a write. */
static flit_status invoke_local(flit_object_t *o, uint32_t epoch, unsigned op,
                                const void *arg, size_t len, const struct iovec *res,
                                int nres, size_t cap, size_t *res_len, uint32_t *target)
{
    const flit_object_op_t *d = &o->type->ops[op];
    bool waited = false;
    for (;;) {
        struct pending *done = NULL;
        pthread_mutex_lock(&o->lock);
        if (o->missed) { /* this copy missed a write: nothing here is right */
            pthread_mutex_unlock(&o->lock);
            return FLIT_ERR_NO_MEMORY;
        }
        if (o->adaptive && (o->epoch != epoch || o->moving)) {
            /* A switch came (or is on its way) since this began. */
            *target = o->epoch + (o->moving ? 1u : 0u);
            pthread_mutex_unlock(&o->lock);
            return REDIRECT;
        }
        if (guard_holds(o, op, arg, len)) {
            if (o->adaptive && o->strategy == FLIT_OBJECT_OWNED)
                place_count(o, flit_job_rank().idx, d->kind == FLIT_OBJECT_WRITE);
            size_t n;
            if (nres == 1 && res[0].iov_len >= d->res_max) {
                n = apply(o, op, arg, len, res[0].iov_base);
            } else {
                n = apply(o, op, arg, len, NULL);
                flit_iov_scatter(res, nres, o->scratch, n);
            }
            if (d->kind == FLIT_OBJECT_WRITE)
                run_queue(o, &done);
            pthread_mutex_unlock(&o->lock);
            object_answer(done);
            *res_len = n;
            return n > cap ? FLIT_ERR_TOO_LARGE : FLIT_OK;
        }
        pthread_mutex_unlock(&o->lock);
        if (!waited)
            atomic_fetch_add_explicit(&o->guard_waits, 1, memory_order_relaxed);
        waited = true;
        flit_status st = flit_wait(o->objs->ep, WAIT_SLICE);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
    }
}

/* ---------------------------------------------------------------- replicated */

/* A buffer of at least len bytes for another member's write: the one the
   last write left, or a new one (*cap its size). Several writes of 1 MiB
   would otherwise each be a malloc above glibc's mmap threshold, in fresh
   pages faulted in one by one: 1.5 GB/s where 10 are to be had. */
static void *spare_take(flit_object_t *o, size_t len, size_t *cap)
{
    pthread_mutex_lock(&o->lock);
    void *p = NULL;
    if (o->spare && o->spare_cap >= len) {
        p = o->spare;
        *cap = o->spare_cap;
        o->spare = NULL;
    }
    pthread_mutex_unlock(&o->lock);
    if (!p) {
        p = malloc(len);
        *cap = len;
    }
    return p;
}

/* Keeps p (cap bytes) for the next write when there is none kept and it is
   not too large to keep; frees it otherwise. */
static void spare_give(flit_object_t *o, void *p, size_t cap)
{
    if (p && cap <= SPARE_MAX) {
        pthread_mutex_lock(&o->lock);
        if (!o->spare) {
            o->spare = p;
            o->spare_cap = cap;
            p = NULL;
        }
        pthread_mutex_unlock(&o->lock);
    }
    free(p);
}

/* Under the lock: sender's write token arriving in pieces, unlinked when
   take; NULL if none. */
static struct part *part_find(flit_object_t *o, uint32_t sender, uint64_t token,
                              bool take)
{
    struct part **pp = &o->parts;
    while (*pp && ((*pp)->sender != sender || (*pp)->token != token))
        pp = &(*pp)->next;
    struct part *p = *pp;
    if (p && take) {
        *pp = p->next;
        o->nparts--;
    }
    return p;
}

/* Under o->lock: ends this member's own write c (if any) with st. */
static void call_end(struct call *c, flit_status st)
{
    if (!c)
        return;
    c->st = st;
    atomic_store_explicit(&c->done, 1, memory_order_release);
}

/* Under o->lock: a new part of total bytes from sender's write token; its
   buffer NULL when there was no memory for it (its pieces are skipped, and
   the write is missed when it ends). NULL: no memory for the record. */
static struct part *part_new(flit_object_t *o, uint32_t sender, uint64_t token,
                             size_t total)
{
    struct part *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (!(p->buf = malloc(total)))
        object_miss(o, "a write", total);
    p->sender = sender;
    p->token = token;
    p->len = total;
    p->next = o->parts;
    o->parts = p;
    o->nparts++;
    return p;
}

/* A piece of another member's large write: into its place in the write.
   Refused when its words disagree with the format or the pieces before. */
static void part_deliver(flit_object_t *o, flit_group_msg_t *m, const struct hdr *h,
                         size_t len)
{
    uint32_t sender = flit_group_msg_sender(m).idx;
    uint8_t words[sizeof(uint64_t)];
    size_t total = 0;
    if (flit_group_recv(m, words, sizeof words) != FLIT_OK)
        return;
    flit_status st = fl_obj_decode_part(words, len, fl_obj_write_max(o->type), &total);
    len -= sizeof words;
    pthread_mutex_lock(&o->lock);
    struct part *p = st == FLIT_OK ? part_find(o, sender, h->token, false) : NULL;
    if (st != FLIT_OK || (p && (p->len != total || len > p->len - p->got))) {
        object_refuse(o, "piece of a write", sender);
        p = NULL;
    } else if (!p && !(p = part_new(o, sender, h->token, total))) {
        object_miss(o, "a write", total);
    }
    pthread_mutex_unlock(&o->lock);
    if (!p)
        return;
    if (p->buf)
        flit_group_recv(m, p->buf + p->got, len);
    p->got += len;
}

/* The argument of a write whose last piece is this message (len bytes, op):
   the pieces joined (*heap, to be freed); NULL when it is refused or was
   missed. Takes part. */
static void *part_last(flit_object_t *o, flit_group_msg_t *m, struct part *part,
                       unsigned op, size_t len)
{
    void *buf = part->buf;
    bool whole = len == part->len - part->got && part->len <= o->type->ops[op].arg_max;
    if (buf && whole)
        flit_group_recv(m, (char *)buf + part->got, len);
    pthread_mutex_lock(&o->lock);
    if (!whole)
        object_refuse(o, "last piece of a write", part->sender);
    else if (!buf)
        object_miss(o, "a write", part->len);
    pthread_mutex_unlock(&o->lock);
    free(part);
    if (buf && whole)
        return buf;
    free(buf);
    return NULL;
}

/* Under o->lock: a write that waits for its guard, queued; false when
   there is no memory for it (heap, if not NULL, is the argument's copy
   already, taken on success). */
static bool wait_guard(flit_object_t *o, unsigned op, const void *arg, size_t len,
                       void *heap, struct call *c)
{
    struct pending *p = calloc(1, sizeof *p);
    void *copy = heap ? heap : malloc(len ? len : 1);
    if (!p || !copy) {
        free(p);
        if (copy != heap)
            free(copy);
        return false;
    }
    if (!heap)
        memcpy(copy, arg, len);
    p->op = op;
    p->arg = copy;
    p->len = len;
    p->call = c;
    enqueue(o, p);
    return true;
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
    } else if (!guard_holds(o, op, arg, len)) {
        if (wait_guard(o, op, arg, len, heap, c))
            return !heap;
        object_miss(o, "a waiting write", len);
        call_end(c, FLIT_ERR_NO_MEMORY);
    } else {
        apply_for(o, op, arg, len, c);
        run_queue(o, done);
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
        pthread_mutex_lock(&o->lock);
        part = part_find(o, flit_group_msg_sender(m).idx, w->h.token, true);
        pthread_mutex_unlock(&o->lock);
    }
    if (c && c->arg) {
        arg = c->arg; /* the writer's own memory: no copy */
        len = c->len; /* all of it, when it came in pieces */
    } else if (part) { /* its last piece, after the others */
        len = part->len;
        if (!(arg = heap = part_last(o, m, part, w->h.op, w->len)))
            return;
        heap_cap = len;
    } else {
        void *room = len <= SMALL ? abuf : (heap = spare_take(o, len, &heap_cap));
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
    spare_give(o, heap, heap_cap);
    object_answer(done);
}

/* In the group's order, on every member: a write, a piece of one, or a
   placement message. Anything its format does not allow is refused. */
static void deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
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
            part_deliver(o, m, &w.h, w.len);
        return;
    }
    if (w.h.op >= o->type->nops) { /* AUTO objects only (decoded so) */
        place_deliver(o, m, &w.h, w.epoch, w.len);
        return;
    }
    deliver_write(o, m, &w, c);
}

static flit_status send_write(flit_object_t *o, uint32_t epoch, unsigned op,
                              const struct iovec *arg, int narg, const void *flat,
                              size_t len, struct call *cp);

static flit_status invoke_write(flit_object_t *o, uint32_t epoch, unsigned op,
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

/* The messages of write c: its pieces first when it is larger than one
   group message. */
static flit_status send_write(flit_object_t *o, uint32_t epoch, unsigned op,
                              const struct iovec *arg, int narg, const void *flat,
                              size_t len, struct call *cp)
{
    flit_status st;
    epoch_word e = epoch;
    int k = o->adaptive ? 2 : 1; /* the header, and an AUTO object's epoch */
    struct iovec rest;
    if (len > o->part_max) {
        /* Too large for one group message: its first pieces as OP_PART
           messages, in the writer's order; the write's own message below
           carries the rest, and its place in the order is the write's. */
        struct hdr ph = {o->id, OP_PART, (uint64_t)(uintptr_t)cp};
        uint64_t total = len;
        const char *p = flat;
        while (len > o->part_max) {
            struct iovec pv[4] = {{&ph, sizeof ph}, {&e, sizeof e}};
            pv[k] = (struct iovec){&total, sizeof total};
            pv[k + 1] = (struct iovec){(void *)p, o->part_max};
            if ((st = flit_group_sendv(o->group, pv, k + 2)) != FLIT_OK)
                return st;
            p += o->part_max;
            len -= o->part_max;
        }
        rest = (struct iovec){(void *)p, len};
        arg = &rest;
        narg = 1;
    }
    struct hdr h = {o->id, op, (uint64_t)(uintptr_t)cp};
    struct iovec small[8], *v = small;
    if (narg + k > 8 && !(v = malloc(sizeof *v * (size_t)(narg + k))))
        return FLIT_ERR_NO_MEMORY;
    v[0] = (struct iovec){&h, sizeof h};
    v[1] = (struct iovec){&e, sizeof e};
    if (narg)
        memcpy(v + k, arg, sizeof *v * (size_t)narg);
    st = flit_group_sendv(o->group, v, narg + k);
    if (v != small)
        free(v);
    return st;
}

/* ---------------------------------------------------------------- invoke */

/* The argument flat in *flat: its one piece, or the pieces joined once in
 *joined (to be freed). False when that cannot be had. */
static bool join(const struct iovec *arg, int narg, size_t len, const void **flat,
                 void **joined)
{
    *flat = NULL;
    *joined = NULL;
    if (narg == 1) {
        *flat = arg[0].iov_base;
    } else if (narg > 1) {
        if (!(*joined = malloc(len ? len : 1)))
            return false;
        flit_iov_gather(*joined, arg, narg);
        *flat = *joined;
    }
    return true;
}

/* An AUTO object: the operation under the placement seen when it starts,
   made again under the next one when a switch overtook it (the attempt
   that met the switch was applied nowhere). */
static flit_status invoke_auto(flit_object_t *o, unsigned op, bool write,
                               const struct iovec *arg, int narg, size_t len,
                               const struct iovec *res, int nres, size_t cap,
                               size_t *res_len)
{
    const void *flat;
    void *joined;
    if (!join(arg, narg, len, &flat, &joined))
        return FLIT_ERR_NO_MEMORY;
    flit_status st;
    flit_object_strategy was;
    for (;;) {
        pthread_mutex_lock(&o->lock);
        uint32_t epoch = o->epoch, target = epoch;
        was = o->strategy;
        flit_rank_t owner = o->owner;
        bool holds = o->holds, dead = o->owner_dead;
        pthread_mutex_unlock(&o->lock);
        if (was == FLIT_OBJECT_OWNED && !holds && dead) {
            st = FLIT_ERR_PEER_DOWN;
            break;
        }
        if (was == FLIT_OBJECT_REPLICATED ? !write : holds) {
            atomic_fetch_add_explicit(&o->local, 1, memory_order_relaxed);
            st = invoke_local(o, epoch, op, flat, len, res, nres, cap, res_len, &target);
        } else if (was == FLIT_OBJECT_OWNED) {
            st = invoke_remote(o, owner, epoch, op, arg, narg, res, nres, res_len,
                               &target);
        } else {
            st = invoke_write(o, epoch, op, arg, narg, flat, len, res, nres, res_len,
                              &target);
        }
        if (st != REDIRECT)
            break;
        atomic_fetch_add_explicit(&o->retries, 1, memory_order_relaxed);
        if ((st = place_await(o, epoch, target)) != FLIT_OK)
            break;
    }
    free(joined);
    if (st == FLIT_OK || st == FLIT_ERR_TOO_LARGE)
        place_after(o, write, was);
    return st;
}

flit_status flit_object_invokev(flit_object_t *h, unsigned op, const struct iovec *arg,
                                int narg, const struct iovec *res, int nres,
                                size_t *res_len)
{
    flit_object_t *obj = obj_of(h);
    if (!obj)
        return FLIT_ERR_INVALID_ARG;
    if (op >= obj->type->nops)
        return FLIT_ERR_BAD_HANDLER;
    size_t len, cap;
    flit_status st = flit_iov_total(arg, narg, &len);
    if (st == FLIT_OK)
        st = flit_iov_total(res, nres, &cap);
    if (st != FLIT_OK)
        return st;
    const flit_object_op_t *d = &obj->type->ops[op];
    if (len > d->arg_max)
        return FLIT_ERR_TOO_LARGE;
    size_t rl = 0;
    if (!res_len)
        res_len = &rl;
    bool write = d->kind == FLIT_OBJECT_WRITE;
    atomic_fetch_add_explicit(write ? &obj->writes : &obj->reads, 1,
                              memory_order_relaxed);
    if (obj->adaptive)
        return invoke_auto(obj, op, write, arg, narg, len, res, nres, cap, res_len);
    /* Pinned: the placement never changes, no epoch to heed. */
    uint32_t target;
    bool local = obj->strategy == FLIT_OBJECT_REPLICATED ? !write : obj->holds;
    if (!local && obj->strategy == FLIT_OBJECT_OWNED)
        return invoke_remote(obj, obj->owner, 0, op, arg, narg, res, nres, res_len,
                             &target);
    /* Flat, or joined once when gathered from several pieces. */
    const void *flat;
    void *joined;
    if (!join(arg, narg, len, &flat, &joined))
        return FLIT_ERR_NO_MEMORY;
    if (local) {
        atomic_fetch_add_explicit(&obj->local, 1, memory_order_relaxed);
        st = invoke_local(obj, 0, op, flat, len, res, nres, cap, res_len, &target);
    } else {
        st = invoke_write(obj, 0, op, arg, narg, flat, len, res, nres, res_len, &target);
    }
    free(joined);
    return st;
}

flit_status flit_object_invoke(flit_object_t *obj, unsigned op, const void *arg,
                               size_t len, void *res, size_t cap, size_t *res_len)
{
    if ((!arg && len) || (!res && cap))
        return FLIT_ERR_INVALID_ARG;
    struct iovec a = {(void *)arg, len}, r = {res, cap};
    return flit_object_invokev(obj, op, &a, len ? 1 : 0, &r, 1, res_len);
}

/* ---------------------------------------------------------------- objects */

flit_status flit_objects_create(flit_ep_t *ep, flit_objects_t **out)
{
    if (!ep || !out)
        return FLIT_ERR_INVALID_ARG;
    flit_objects_t *objs = calloc(1, sizeof *objs);
    if (!objs || flit_handle_new(&fl_obj_sets, objs, &objs->self) != FLIT_OK) {
        free(objs);
        return FLIT_ERR_NO_MEMORY;
    }
    objs->ep = ep;
    pthread_mutex_init(&objs->lock, NULL);
    flit_rpc_params_t rp = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = 1};
    flit_status st = flit_rpc_create(ep, &rp, &objs->rpc);
    if (st == FLIT_OK) {
        st = flit_groups_create(ep, &objs->groups);
        if (st != FLIT_OK)
            flit_rpc_destroy(objs->rpc);
    }
    if (st == FLIT_OK) /* never waits (a guard that fails defers): inline */
        st = flit_rpc_register_flags(objs->rpc, PROC_INVOKE, serve, objs,
                                     FLIT_RPC_PROC_INLINE);
    if (st == FLIT_OK && (st = place_listen(objs)) != FLIT_OK) {
        flit_groups_destroy(objs->groups);
        flit_rpc_destroy(objs->rpc);
    }
    if (st != FLIT_OK) {
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
    pthread_mutex_lock(&o->lock);
    for (struct part **pp = &o->parts; *pp;) {
        struct part *p = *pp;
        if (p->sender != left.idx) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        o->nparts--;
        o->parts_dropped++;
        free(p->buf);
        free(p);
    }
    pthread_mutex_unlock(&o->lock);
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
    if (*pp)
        *pp = o->next;
    pthread_mutex_unlock(&objs->lock);
}

flit_status flit_object_create(flit_objects_t *h, uint32_t id,
                               const flit_object_type_t *type, const flit_rank_t *members,
                               unsigned n, flit_object_strategy strategy,
                               flit_rank_t owner, const void *init_arg, size_t init_len,
                               flit_object_t **out)
{
    flit_objects_t *objs = objs_of(h);
    if (!objs || !type || !out || (!init_arg && init_len) || (!members && n))
        return FLIT_ERR_INVALID_ARG;
    if (strategy != FLIT_OBJECT_REPLICATED && strategy != FLIT_OBJECT_OWNED &&
        strategy != FLIT_OBJECT_AUTO)
        return FLIT_ERR_INVALID_ARG;
    flit_status st = check_type(type);
    if (st != FLIT_OK)
        return st;
    flit_rank_t me = flit_job_rank();
    if (strategy == FLIT_OBJECT_OWNED) {
        if (owner.idx >= flit_job_size())
            return FLIT_ERR_RANK;
        bool found = n == 0;
        for (unsigned i = 0; i < n; i++)
            found = found || members[i].idx == owner.idx;
        if (!found)
            return FLIT_ERR_INVALID_ARG;
    }
    flit_object_t *o = calloc(1, sizeof *o);
    if (!o)
        return FLIT_ERR_NO_MEMORY;
    o->id = id;
    o->objs = objs;
    o->type = type;
    /* AUTO starts replicated: every member makes a copy. */
    o->adaptive = strategy == FLIT_OBJECT_AUTO;
    o->strategy = o->adaptive ? FLIT_OBJECT_REPLICATED : strategy;
    o->owner = strategy == FLIT_OBJECT_OWNED ? owner : flit_rank(UINT32_MAX);
    o->holds = strategy != FLIT_OBJECT_OWNED || owner.idx == me.idx;
    o->tail = &o->queue;
    pthread_mutex_init(&o->lock, NULL);
    if (flit_handle_new(&fl_obj_objects, o, &o->self) != FLIT_OK) {
        object_free(o);
        return FLIT_ERR_NO_MEMORY;
    }
    if (o->adaptive && (st = place_init(o, members, n)) != FLIT_OK) {
        object_free(o);
        return st;
    }
    size_t rmax = res_max_of(type);
    if (o->holds) {
        o->state = calloc(1, type->state_size ? type->state_size : 1);
        o->scratch = malloc(rmax ? rmax : 1);
        if (!o->state || !o->scratch) {
            object_free(o); /* fini is not called on a state never made */
            return FLIT_ERR_NO_MEMORY;
        }
        if (type->init)
            type->init(o->state, init_arg, init_len, type->user);
    }
    /* In the table before the group forms: once any member's create has
       returned, the owner serves the object. */
    pthread_mutex_lock(&objs->lock);
    if (find(objs, id)) {
        pthread_mutex_unlock(&objs->lock);
        object_free(o);
        return FLIT_ERR_INVALID_ARG;
    }
    o->next = objs->list;
    objs->list = o;
    pthread_mutex_unlock(&objs->lock);
    flit_group_params_t gp = {
        .field_mask = FLIT_GROUP_PARAM_VIEW_FN, .view_fn = object_view, .view_user = o};
    st = flit_group_create(objs->groups, id, members, n, &gp, deliver, o, &o->group);
    flit_group_stats_t gs = {.struct_size = sizeof gs};
    if (st == FLIT_OK && (st = flit_group_stats(o->group, &gs)) != FLIT_OK)
        (void)flit_group_destroy(o->group);
    if (st != FLIT_OK) {
        unlink_object(objs, o);
        object_free(o);
        return st;
    }
    /* The group's largest message is half its window (the default one),
       less this layer's words before the bytes. */
    o->part_max = FLIT_GROUP_WINDOW_DEFAULT / 2 * gs.frag - PART_SLACK;
    *out = o->self;
    return FLIT_OK;
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

flit_status flit_object_lookup(flit_objects_t *h, uint32_t id, flit_object_t **out)
{
    flit_objects_t *objs = objs_of(h);
    if (!objs || !out)
        return FLIT_ERR_INVALID_ARG;
    flit_object_t *o = lookup(objs, id);
    if (!o)
        return FLIT_ERR_INVALID_ARG;
    *out = o->self;
    return FLIT_OK;
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
