/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run-time placement of FLIT_OBJECT_AUTO objects, after Orca's: the rule,
 * the counts it reads, and the switch protocol (docs/objects.md has the
 * whole argument). Public API only.
 *
 * Every placement change is installed at a delivery of the object's group,
 * so every member installs it at the same place of the group's order, and
 * epoch (the number installed) names the placement everywhere alike:
 *  - replicated -> owned(k): decided by every member alike at the delivery
 *    of the report that closes a window (the window's counts are made of
 *    delivered reports alone). k keeps its copy; the others stop using
 *    theirs.
 *  - owned(k) -> anything: decided by k on what it served; k captures its
 *    state under the lock and from then serves nothing (moving), and
 *    multicasts OP_SWITCH with the state; at its delivery the members that
 *    hold the state from then on take it from the message.
 *  - flit_object_place: OP_PLACE pins (or unpins) at its delivery; the
 *    switch it needs follows as above.
 * An operation tagged with an older epoch (a replicated write delivered
 * after a switch, an RPC that reaches a member that no longer owns or is
 * moving, a local operation that finds the epoch moved) is applied nowhere
 * and answered REDIRECT: its caller waits for the epoch named and makes it
 * again.
 */
#include "object_int.h"

#include <stdlib.h>
#include <string.h>

#define REPORT_OPS 16u    /* a member reports its counts this often */
#define DECIDE_OPS 64u    /* operations in a window the rule looks at */
#define RETRY_US   50000u /* a redirected call tries again at least this often */

/* member[]: what a job rank is to the object */
#define MEMBER   1u /* a member */
#define DEPARTED 2u /* a member that left, as OP_LEFT told every member */

static void window_reset(flit_object_t *o)
{
    uint32_t n = flit_job_size();
    memset(o->cr, 0, sizeof *o->cr * n);
    memset(o->cw, 0, sizeof *o->cw * n);
    o->ctotal = 0;
}

/* Orca's rule, on one window's counts: true with *to set when the object
   should move. Replicated: writes outnumber reads -> owned by the member
   that wrote most. Owned: reads over twice the writes -> replicated; else a
   member that wrote over twice what the owner wrote -> owned by it. */
static bool rule(const flit_object_t *o, struct move *to)
{
    uint32_t n = flit_job_size(), top = UINT32_MAX;
    uint64_t r = 0, w = 0, topw = 0;
    for (uint32_t i = 0; i < n; i++) {
        r += o->cr[i];
        w += o->cw[i];
        if (o->cw[i] > topw) {
            topw = o->cw[i];
            top = i;
        }
    }
    if (o->strategy == FLIT_OBJECT_REPLICATED) {
        if (w <= r || top == UINT32_MAX)
            return false;
        *to = (struct move){FLIT_OBJECT_OWNED, top};
        return true;
    }
    if (r > 2 * w) {
        *to = (struct move){FLIT_OBJECT_REPLICATED, UINT32_MAX};
        return true;
    }
    if (top != UINT32_MAX && top != o->owner.idx && topw > 2 * o->cw[o->owner.idx]) {
        *to = (struct move){FLIT_OBJECT_OWNED, top};
        return true;
    }
    return false;
}

/* Under lock, at the owner: a switch for the owner to send. */
static void want(flit_object_t *o, struct move to)
{
    o->want = true;
    o->want_to = to;
    atomic_store(&o->wantf, 1);
    atomic_store(&o->objs->work, 1);
}

static bool placed_at(const flit_object_t *o, struct move m)
{
    return (uint32_t)o->strategy == m.strategy &&
           (m.strategy != FLIT_OBJECT_OWNED || o->owner.idx == m.owner);
}

/* Under lock, at a delivery (every member at the same place): installs
   the placement to. Writes waiting for their guard are redone by their
   writers; deferred replies go to *done, redirected. */
static void install(flit_object_t *o, struct move to, struct pending **done)
{
    uint32_t me = flit_job_rank().idx;
    o->strategy = (flit_object_strategy)to.strategy;
    o->owner =
        to.strategy == FLIT_OBJECT_OWNED ? flit_rank(to.owner) : flit_rank(UINT32_MAX);
    o->holds = to.strategy == FLIT_OBJECT_REPLICATED || to.owner == me;
    o->moving = false;
    o->want = false;
    atomic_store(&o->wantf, 0);
    o->owner_dead = false;
    o->epoch++;
    atomic_fetch_add(&o->switches, 1);
    window_reset(o);
    while (o->queue) {
        struct pending *p = o->queue;
        o->queue = p->next;
        if (p->reply) {
            p->redirect = REDIRECT_BIT | o->epoch;
            p->next = *done;
            *done = p;
            continue;
        }
        if (p->call) {
            p->call->target = o->epoch;
            p->call->st = REDIRECT;
            atomic_store_explicit(&p->call->done, 1, memory_order_release);
        }
        free(p->arg);
        free(p);
    }
    o->tail = &o->queue;
}

/* Under lock, after a pin or a switch: moves on toward the pin. From
   replicated that is a switch installed here and now (the same place on
   every member); from owned the owner sends it. */
static void settle(flit_object_t *o, struct pending **done)
{
    if (!o->pinned || placed_at(o, o->pin))
        return;
    if (o->strategy == FLIT_OBJECT_REPLICATED)
        install(o, o->pin, done);
    else if (o->holds && !o->moving)
        want(o, o->pin);
}

void place_count(flit_object_t *o, uint32_t rank, bool write)
{
    if (rank >= flit_job_size() || o->member[rank] != MEMBER)
        return;
    (write ? o->cw : o->cr)[rank]++;
    if (++o->ctotal < DECIDE_OPS)
        return;
    struct move to;
    if (!o->pinned && !o->want && !o->moving && !o->stuck && rule(o, &to))
        want(o, to);
    window_reset(o);
}

/* ---------------------------------------------------------------- sending */

/* Under the lock: the state as it travels, malloc'ed (*len bytes); NULL
   without memory. */
static void *state_bytes(flit_object_t *o, size_t *len)
{
    const flit_object_type_t *t = o->type;
    if (!t->pack) {
        void *copy = malloc(t->state_size ? t->state_size : 1);
        if (copy)
            memcpy(copy, o->state, t->state_size);
        *len = t->state_size;
        return copy;
    }
    size_t cap = 0;
    void *buf = NULL;
    for (;;) {
        size_t need = t->pack(o->state, buf, cap, t->user);
        if (need <= cap) {
            *len = need;
            return buf;
        }
        free(buf);
        if (!(buf = malloc(need)))
            return NULL;
        cap = need;
    }
}

/* Program code, at the owner: the switch it wants, with the state. */
static void send_switch(flit_object_t *o)
{
    struct pending *done = NULL;
    pthread_mutex_lock(&o->lock);
    struct move to = o->pinned ? o->pin : o->want_to;
    if (!o->want || o->moving || o->strategy != FLIT_OBJECT_OWNED || !o->holds ||
        placed_at(o, to)) {
        o->want = false;
        atomic_store(&o->wantf, 0);
        pthread_mutex_unlock(&o->lock);
        return;
    }
    size_t size;
    void *copy = state_bytes(o, &size);
    if (!copy) {
        pthread_mutex_unlock(&o->lock);
        return; /* wanted still: tried again at the next chance */
    }
    o->want = false;
    atomic_store(&o->wantf, 0);
    o->moving = true; /* nothing more is applied here until it is delivered */
    uint32_t epoch = o->epoch;
    while (o->queue) {
        struct pending *p = o->queue;
        o->queue = p->next;
        p->redirect = REDIRECT_BIT | (epoch + 1);
        p->next = done;
        done = p;
    }
    o->tail = &o->queue;
    pthread_mutex_unlock(&o->lock);
    object_answer(done);
    struct hdr h = {o->id, OP_SWITCH, 0};
    epoch_word e = epoch;
    struct iovec v[4] = {{&h, sizeof h}, {&e, sizeof e}, {&to, sizeof to}, {copy, size}};
    flit_status st = flit_group_sendv(o->group, v, 4);
    free(copy);
    if (st == FLIT_OK)
        return;
    /* Not sent: the owner serves on. A state too large for one message, or
       a group that stopped, keeps the object where it is. */
    pthread_mutex_lock(&o->lock);
    if (o->epoch == epoch) {
        o->moving = false;
        if (st == FLIT_ERR_TOO_LARGE || st == FLIT_ERR_PEER_DOWN)
            o->stuck = true;
        else
            want(o, to);
    }
    pthread_mutex_unlock(&o->lock);
}

/* Program code: this member's counts since its last report, multicast. */
static void report(flit_object_t *o)
{
    uint64_t c[2] = {atomic_exchange(&o->rep_r, 0), atomic_exchange(&o->rep_w, 0)};
    if (!c[0] && !c[1])
        return;
    pthread_mutex_lock(&o->lock);
    struct hdr h = {o->id, OP_REPORT, 0};
    epoch_word e = o->epoch;
    pthread_mutex_unlock(&o->lock);
    struct iovec v[3] = {{&h, sizeof h}, {&e, sizeof e}, {c, sizeof c}};
    if (flit_group_sendv(o->group, v, 3) != FLIT_OK) {
        /* In a handler, say: sent with the next. */
        atomic_fetch_add(&o->rep_r, c[0]);
        atomic_fetch_add(&o->rep_w, c[1]);
    }
}

/* Program code: the members this one saw leave, each multicast once. The
   first OP_LEFT of a member delivered is where every member stops counting
   it (place_deliver). */
static void send_left(flit_object_t *o)
{
    uint32_t n = flit_job_size();
    atomic_store(&o->leftf, 0);
    for (uint32_t r = 0; r < n; r++) {
        pthread_mutex_lock(&o->lock);
        bool todo = o->left[r];
        o->left[r] = 0;
        epoch_word e = o->epoch;
        pthread_mutex_unlock(&o->lock);
        if (!todo)
            continue;
        struct hdr h = {o->id, OP_LEFT, 0};
        struct iovec v[3] = {{&h, sizeof h}, {&e, sizeof e}, {&r, sizeof r}};
        flit_status st = flit_group_sendv(o->group, v, 3);
        if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN) {
            /* In a handler, say: again at the next chance. */
            pthread_mutex_lock(&o->lock);
            o->left[r] = 1;
            pthread_mutex_unlock(&o->lock);
            atomic_store(&o->leftf, 1);
            atomic_store(&o->objs->work, 1);
        }
    }
}

void place_after(flit_object_t *o, bool write, flit_object_strategy was)
{
    if (was == FLIT_OBJECT_REPLICATED) {
        atomic_fetch_add_explicit(write ? &o->rep_w : &o->rep_r, 1, memory_order_relaxed);
        if (atomic_load_explicit(&o->rep_r, memory_order_relaxed) +
                atomic_load_explicit(&o->rep_w, memory_order_relaxed) >=
            REPORT_OPS)
            report(o);
    }
    if (atomic_load_explicit(&o->leftf, memory_order_relaxed))
        send_left(o);
    if (atomic_load_explicit(&o->wantf, memory_order_relaxed))
        send_switch(o);
}

/* An endpoint's progress listener: the switches owners want, and the
   members seen leaving, sent from program code even when nothing is
   invoked here. */
static void on_progress(flit_ep_t *ep, void *user)
{
    (void)ep;
    flit_objects_t *objs = user;
    if (!atomic_load_explicit(&objs->work, memory_order_relaxed))
        return;
    atomic_store(&objs->work, 0);
    flit_object_t *todo[16];
    unsigned n = 0;
    pthread_mutex_lock(&objs->lock);
    for (flit_object_t *o = objs->list; o; o = o->next) {
        if (!atomic_load(&o->wantf) && !atomic_load(&o->leftf))
            continue;
        if (n == sizeof todo / sizeof *todo) {
            atomic_store(&objs->work, 1); /* the rest on the next pass */
            break;
        }
        atomic_fetch_add(&o->busy, 1);
        todo[n++] = o;
    }
    pthread_mutex_unlock(&objs->lock);
    for (unsigned i = 0; i < n; i++) {
        if (atomic_load(&todo[i]->leftf))
            send_left(todo[i]);
        if (atomic_load(&todo[i]->wantf))
            send_switch(todo[i]);
        atomic_fetch_sub(&todo[i]->busy, 1);
    }
}

static const flit_ep_listener_t listener = {NULL, on_progress, NULL};

flit_status place_listen(flit_objects_t *objs)
{
    flit_status st = flit_ep_listen(objs->ep, &listener, objs);
    objs->listening = st == FLIT_OK;
    return st;
}

void place_unlisten(flit_objects_t *objs)
{
    if (objs->listening)
        flit_ep_unlisten(objs->ep, &listener, objs);
    objs->listening = false;
}

/* ---------------------------------------------------------------- delivery */

/* Under the lock: this copy becomes the state the switch m carries (len
   bytes). */
static void take_state(flit_object_t *o, flit_group_msg_t *m, size_t len)
{
    const flit_object_type_t *t = o->type;
    if (!t->unpack) {
        flit_group_recv(m, o->state, len);
        return;
    }
    void *buf = malloc(len ? len : 1);
    if (!buf) { /* a holder without the state: it answers no operation */
        object_miss(o, "the state", len);
        return;
    }
    flit_group_recv(m, buf, len);
    t->unpack(o->state, buf, len, t->user);
    free(buf);
}

/* A struct move of m (OP_SWITCH, or OP_PLACE: place) into *mv; false, the
   message refused, when its format does not allow it. */
static bool take_move(flit_object_t *o, flit_group_msg_t *m, bool place, uint32_t from,
                      struct move *mv)
{
    uint8_t b[sizeof *mv];
    if (flit_group_recv(m, b, sizeof b) != FLIT_OK)
        return false;
    if (fl_obj_decode_move(b, place, flit_job_size(), mv) == FLIT_OK)
        return true;
    pthread_mutex_lock(&o->lock);
    object_refuse(o, place ? "place request" : "switch", from);
    pthread_mutex_unlock(&o->lock);
    return false;
}

/* OP_REPORT: a member's counts for the window; the rule runs once the
   window is full. */
static void on_report(flit_object_t *o, flit_group_msg_t *m, uint32_t epoch, size_t len,
                      uint32_t from, struct pending **done)
{
    uint64_t c[2];
    struct move mv;
    if (len != sizeof c || flit_group_recv(m, c, sizeof c) != FLIT_OK ||
        from >= flit_job_size())
        return;
    pthread_mutex_lock(&o->lock);
    if (epoch == o->epoch && o->strategy == FLIT_OBJECT_REPLICATED &&
        o->member[from] == MEMBER) {
        o->cr[from] += c[0];
        o->cw[from] += c[1];
        o->ctotal += c[0] + c[1];
        if (o->ctotal >= DECIDE_OPS) {
            if (!o->pinned && rule(o, &mv))
                install(o, mv, done);
            window_reset(o);
        }
    }
    pthread_mutex_unlock(&o->lock);
}

/* OP_SWITCH, from the owner (its length: fl_obj_decode_msg). */
static void on_switch(flit_object_t *o, flit_group_msg_t *m, uint32_t epoch, size_t len,
                      uint32_t from, struct pending **done)
{
    uint32_t me = flit_job_rank().idx;
    struct move mv;
    if (!take_move(o, m, false, from, &mv))
        return;
    pthread_mutex_lock(&o->lock);
    if (epoch == o->epoch && o->strategy == FLIT_OBJECT_OWNED && o->owner.idx == from) {
        /* The old owner's copy is the state; a new holder takes it. */
        if (from != me && (mv.strategy == FLIT_OBJECT_REPLICATED || mv.owner == me))
            take_state(o, m, len - sizeof mv);
        install(o, mv, done);
        settle(o, done);
    }
    pthread_mutex_unlock(&o->lock);
}

/* OP_LEFT: a member left the group. */
static void on_left(flit_object_t *o, flit_group_msg_t *m, size_t len, uint32_t from)
{
    uint32_t r;
    if (len != sizeof r || flit_group_recv(m, &r, sizeof r) != FLIT_OK)
        return;
    pthread_mutex_lock(&o->lock);
    if (r >= flit_job_size()) {
        object_refuse(o, "member's departure", from);
    } else if (o->member[r] == MEMBER) {
        /* Here, the same place on every member: r is no member from now
           on, so no window counts it and no rule or pin picks it. */
        o->member[r] = DEPARTED;
        o->departed++;
        o->ctotal -= o->cr[r] + o->cw[r];
        o->cr[r] = o->cw[r] = 0;
    }
    pthread_mutex_unlock(&o->lock);
}

/* OP_PLACE: flit_object_place's pin (or unpin), at its place in the order. */
static void on_place(flit_object_t *o, flit_group_msg_t *m, const struct hdr *h,
                     size_t len, uint32_t from, struct pending **done)
{
    struct move mv;
    if (len != sizeof mv || !take_move(o, m, true, from, &mv))
        return;
    pthread_mutex_lock(&o->lock);
    /* Only a token of this member's own requests is taken. */
    struct call *call = from == flit_job_rank().idx ? object_call(o, h->token) : NULL;
    if (mv.strategy == FLIT_OBJECT_OWNED &&
        (mv.owner >= flit_job_size() || o->member[mv.owner] != MEMBER)) {
        /* A pin to a member that left before it: refused everywhere. */
        if (call)
            call->st = FLIT_ERR_PEER_DOWN;
    } else {
        o->pin_seq++;
        o->pinned = mv.strategy != FLIT_OBJECT_AUTO;
        o->pin = mv;
        settle(o, done);
        if (call)
            call->target = o->pin_seq;
    }
    if (call)
        atomic_store_explicit(&call->done, 1, memory_order_release);
    pthread_mutex_unlock(&o->lock);
}

void place_deliver(flit_object_t *o, flit_group_msg_t *m, const struct hdr *h,
                   uint32_t epoch, size_t len)
{
    uint32_t from = flit_group_msg_sender(m).idx;
    struct pending *done = NULL;
    switch (h->op) {
    case OP_REPORT:
        on_report(o, m, epoch, len, from, &done);
        break;
    case OP_SWITCH:
        on_switch(o, m, epoch, len, from, &done);
        break;
    case OP_LEFT:
        on_left(o, m, len, from);
        break;
    case OP_PLACE:
        on_place(o, m, h, len, from, &done);
        break;
    default:
        return;
    }
    object_answer(done);
}

void place_view(flit_group_t *g, flit_rank_t left, void *user)
{
    (void)g;
    flit_object_t *o = user;
    pthread_mutex_lock(&o->lock);
    if (o->strategy == FLIT_OBJECT_OWNED && o->owner.idx == left.idx)
        o->owner_dead = true;
    /* Seen here, at no agreed place: multicast, so that every member
       stops counting it at the same one. */
    if (left.idx < flit_job_size() && o->member[left.idx] == MEMBER) {
        o->left[left.idx] = 1;
        atomic_store(&o->leftf, 1);
        atomic_store(&o->objs->work, 1);
    }
    pthread_mutex_unlock(&o->lock);
}

/* ---------------------------------------------------------------- waiting */

/* Under lock: the owner is gone and the state with it. */
static bool lost(const flit_object_t *o)
{
    return o->strategy == FLIT_OBJECT_OWNED && !o->holds && o->owner_dead;
}

flit_status place_await(flit_object_t *o, uint32_t from, uint32_t target)
{
    /* A target at or behind this member's epoch (the member that
       redirected has not installed what this one has) is only a pause. */
    bool ahead = (int32_t)(target - from) > 0;
    int64_t until = flit_clock_ns() + (int64_t)RETRY_US * 1000;
    for (;;) {
        pthread_mutex_lock(&o->lock);
        bool there = (int32_t)(o->epoch - target) >= 0, gone = lost(o);
        pthread_mutex_unlock(&o->lock);
        if (ahead && there)
            return FLIT_OK;
        if (gone)
            return FLIT_ERR_PEER_DOWN;
        /* An owner whose switch could not go out serves on: try again. */
        if (flit_clock_ns() >= until)
            return FLIT_OK;
        flit_status st = flit_wait(o->objs->ep, ahead ? WAIT_SLICE : 1000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
        if (!ahead)
            return FLIT_OK;
    }
}

/* ---------------------------------------------------------------- program */

flit_status place_init(flit_object_t *o, const flit_rank_t *members, unsigned n)
{
    uint32_t size = flit_job_size();
    o->member = calloc(size, 1);
    o->cr = calloc(size, sizeof *o->cr);
    o->cw = calloc(size, sizeof *o->cw);
    o->left = calloc(size, 1);
    if (!o->member || !o->cr || !o->cw || !o->left)
        return FLIT_ERR_NO_MEMORY;
    if (!members)
        memset(o->member, MEMBER, size);
    for (unsigned i = 0; i < n; i++)
        if (members[i].idx < size)
            o->member[members[i].idx] = MEMBER;
    return FLIT_OK;
}

void place_fini(flit_object_t *o)
{
    free(o->member);
    free(o->cr);
    free(o->cw);
    free(o->left);
}

flit_status flit_object_place(flit_object_t *handle, flit_object_strategy strategy,
                              flit_rank_t owner)
{
    flit_object_t *obj = obj_of(handle);
    if (!obj || (strategy != FLIT_OBJECT_REPLICATED && strategy != FLIT_OBJECT_OWNED &&
                 strategy != FLIT_OBJECT_AUTO))
        return FLIT_ERR_INVALID_ARG;
    if (!obj->adaptive)
        return FLIT_ERR_NOT_SUPPORTED;
    if (strategy == FLIT_OBJECT_OWNED) {
        if (owner.idx >= flit_job_size())
            return FLIT_ERR_RANK;
        pthread_mutex_lock(&obj->lock);
        uint8_t m = obj->member[owner.idx];
        pthread_mutex_unlock(&obj->lock);
        if (m == 0)
            return FLIT_ERR_INVALID_ARG;
        if (m == DEPARTED)
            return FLIT_ERR_PEER_DOWN;
    }
    flit_ep_t *ep = obj->objs->ep;
    flit_status st = flit_poll(ep); /* FLIT_ERR_IN_HANDLER before sending */
    if (st != FLIT_OK)
        return st;
    struct move mv = {strategy, strategy == FLIT_OBJECT_OWNED ? owner.idx : UINT32_MAX};
    struct call c = {0};
    atomic_init(&c.done, 0);
    struct hdr h = {obj->id, OP_PLACE, (uint64_t)(uintptr_t)&c};
    epoch_word e = 0; /* (not looked at) */
    struct iovec v[3] = {{&h, sizeof h}, {&e, sizeof e}, {&mv, sizeof mv}};
    object_call_in(obj, &c);
    st = flit_group_sendv(obj->group, v, 3);
    while (st == FLIT_OK && !atomic_load_explicit(&c.done, memory_order_acquire))
        if ((st = flit_wait(ep, WAIT_SLICE)) == FLIT_ERR_TIMEOUT)
            st = FLIT_OK;
    object_call_out(obj, &c); /* its token is refused from now on */
    if (st != FLIT_OK)
        return st;
    if (c.st == FLIT_ERR_PEER_DOWN) /* the owner left before the request */
        return FLIT_ERR_PEER_DOWN;
    if (strategy == FLIT_OBJECT_AUTO)
        return FLIT_OK;
    for (;;) {
        pthread_mutex_lock(&obj->lock);
        bool done = placed_at(obj, mv) || obj->pin_seq != c.target, gone = lost(obj);
        pthread_mutex_unlock(&obj->lock);
        if (done)
            return FLIT_OK;
        if (gone)
            return FLIT_ERR_PEER_DOWN;
        if ((st = flit_wait(ep, WAIT_SLICE)) != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return st;
    }
}
