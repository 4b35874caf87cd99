/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Owned objects: every operation of another member is a call of procedure
 * PROC_INVOKE of the objects' RPC object, request [struct hdr][argument],
 * reply [uint32 status][result]; the owner serves it, at once or once its
 * guard holds (its reply deferred meanwhile).
 */
#include "object_int.h"

#include <stdlib.h>
#include <string.h>

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

/* One operation being served at the owner (serve). */
struct serving {
    flit_rpc_req_t *req;
    struct hdr h;
    const flit_object_op_t *d;
    void *arg, *res;      /* its argument; room for its result */
    size_t len, n;        /* argument bytes; result bytes */
    void *aheap, *rheap;  /* arg, res when not on the stack: freed after */
    uint32_t word;        /* the reply's status word */
    bool deferred;        /* the reply went with a queued operation */
    struct pending *done; /* waiting operations this one finished */
};

static flit_object_t *refused(struct serving *s, flit_status st)
{
    s->word = (uint32_t)st;
    return NULL;
}

/* The object and operation the request names, or NULL with the status to
   answer in s->word. */
static flit_object_t *serve_find(flit_objects_t *objs, struct serving *s, size_t len)
{
    uint8_t b[sizeof s->h];
    if (len < sizeof b || flit_rpc_recv(s->req, b, sizeof b) != FLIT_OK ||
        fl_obj_decode_req(b, len, &s->h) != FLIT_OK)
        return refused(s, FLIT_ERR_BAD_PACKET);
    flit_object_t *o = object_lookup(objs, s->h.id);
    s->len = len - sizeof s->h;
    if (!o || (!o->adaptive && !o->holds) || s->h.op >= o->type->nops)
        return refused(s, FLIT_ERR_INVALID_ARG);
    pthread_mutex_lock(&o->lock);
    bool missed = o->missed != 0;
    pthread_mutex_unlock(&o->lock);
    if (missed) /* this copy missed a write: no answer from it is right */
        return refused(s, FLIT_ERR_NO_MEMORY);
    s->d = &o->type->ops[s->h.op];
    if (s->len > s->d->arg_max)
        return refused(s, FLIT_ERR_TOO_LARGE);
    return o;
}

/*
 * Under o->lock, for an AUTO object: 0 when this copy serves the caller,
 * else the redirect word. Not (or no longer) the owner, or not under the
 * placement the caller is at: it tries again once it has installed the
 * placement named (ours, or the next when moving). A caller ahead of us
 * names its own: it pauses and tries again.
 */
static uint32_t redirect_word(const flit_object_t *o, uint32_t caller_epoch)
{
    if (o->strategy == FLIT_OBJECT_OWNED && o->holds && !o->moving &&
        o->epoch == caller_epoch)
        return 0;
    uint32_t at = o->epoch + (o->moving ? 1u : 0u);
    if ((int32_t)(caller_epoch - at) > 0)
        at = caller_epoch;
    return REDIRECT_BIT | at;
}

/* Under o->lock: the operation waits for its guard, its reply deferred
   and its buffers with it; answered FLIT_ERR_NO_MEMORY (through s->done
   once deferred) when there is no memory for that. */
static void park(flit_object_t *o, struct serving *s)
{
    struct pending *p = calloc(1, sizeof *p);
    if (!p || flit_rpc_defer(s->req, &p->reply) != FLIT_OK) {
        free(p);
        s->word = FLIT_ERR_NO_MEMORY;
        return;
    }
    s->deferred = true;
    p->op = s->h.op;
    p->len = s->len;
    p->arg = s->aheap ? s->aheap : malloc(s->len ? s->len : 1);
    p->res = s->rheap ? s->rheap : malloc(s->d->res_max ? s->d->res_max : 1);
    if (p->arg && !s->aheap)
        memcpy(p->arg, s->arg, s->len);
    s->aheap = s->rheap = NULL; /* the entry's from now on */
    if (p->arg && p->res) {
        object_enqueue(o, p);
        return;
    }
    p->st = FLIT_ERR_NO_MEMORY;
    p->next = s->done;
    s->done = p;
}

/* Under o->lock: applied now, or parked behind its guard. */
static void serve_locked(flit_object_t *o, struct serving *s)
{
    if (o->adaptive && (s->word = redirect_word(o, (uint32_t)s->h.token)) != 0)
        return;
    bool write = s->d->kind == FLIT_OBJECT_WRITE;
    if (o->adaptive)
        place_count(o, flit_rpc_caller(s->req).idx, write);
    if (!object_guard_holds(o, s->h.op, s->arg, s->len)) {
        park(o, s);
        return;
    }
    s->n = object_apply(o, s->h.op, s->arg, s->len, s->res);
    if (write)
        object_run_queue(o, &s->done);
}

/* At the owner: an operation of another member. */
static void serve(flit_rpc_req_t *req, size_t len, void *user)
{
    struct serving s = {.req = req};
    char abuf[SMALL], rbuf[SMALL];
    flit_object_t *o = serve_find(user, &s, len);
    if (o) {
        s.arg = room_for(s.len, abuf, &s.aheap);
        s.res = room_for(s.d->res_max, rbuf, &s.rheap);
        flit_status st =
            s.arg && s.res ? flit_rpc_recv(req, s.arg, s.len) : FLIT_ERR_NO_MEMORY;
        s.word = (uint32_t)st;
        if (st == FLIT_OK) {
            pthread_mutex_lock(&o->lock);
            serve_locked(o, &s);
            pthread_mutex_unlock(&o->lock);
        }
    }
    if (!s.deferred) {
        struct iovec v[2] = {{&s.word, sizeof s.word}, {s.res, s.n}};
        flit_rpc_reply(req, v, s.word == FLIT_OK ? 2 : 1);
    }
    free(s.aheap);
    free(s.rheap);
    object_answer(s.done);
}

flit_status object_serve_register(flit_objects_t *objs)
{
    /* never waits (a guard that fails defers): inline */
    return flit_rpc_register_flags(objs->rpc, PROC_INVOKE, serve, objs,
                                   FLIT_RPC_PROC_INLINE);
}

/* The owner's answer (s the call's status, word its first word). */
static flit_status remote_result(flit_object_t *o, flit_status s,
                                 const flit_rpc_result_t *r, uint32_t word,
                                 size_t *res_len, uint32_t *target)
{
    if ((s != FLIT_OK && s != FLIT_ERR_TOO_LARGE) || r->received < sizeof word)
        return s != FLIT_OK ? s : FLIT_ERR_BAD_PACKET;
    flit_status st;
    if (fl_obj_decode_reply(word, o->adaptive, &st, target) != FLIT_OK)
        return FLIT_ERR_BAD_PACKET; /* the owner's word names no status */
    if (st != FLIT_OK)
        return st;
    *res_len = r->length - sizeof word;
    return s;
}

flit_status object_invoke_remote(flit_object_t *o, flit_rank_t owner, uint32_t epoch,
                                 unsigned op, const struct iovec *arg, int narg,
                                 const struct iovec *res, int nres, size_t *res_len,
                                 uint32_t *target)
{
    struct hdr h = {o->id, op, epoch};
    uint32_t word = FLIT_OK;
    struct iovec qhead = {&h, sizeof h}, rhead = {&word, sizeof word};
    struct iovec qsmall[8], rsmall[8];
    struct iovec *req = object_iov_after(qsmall, &qhead, 1, arg, narg);
    struct iovec *rep = object_iov_after(rsmall, &rhead, 1, res, nres);
    flit_status s = FLIT_ERR_NO_MEMORY;
    flit_rpc_result_t r = {0};
    if (req && rep)
        s = flit_rpc_call(o->objs->rpc, owner, PROC_INVOKE, req, narg + 1, rep, nres + 1,
                          NULL, &r);
    if (req != qsmall)
        free(req);
    if (rep != rsmall)
        free(rep);
    if (!req || !rep)
        return FLIT_ERR_NO_MEMORY;
    return remote_result(o, s, &r, word, res_len, target);
}
