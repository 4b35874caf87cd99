/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The list of layers built on the public API (pub_layer.h), and their
 * seat on each endpoint: state allocated and freed with it, open, quiesce,
 * close and peer_down called at its moments.
 */
#include "core/pub_layer.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/barrier.h"
#include "core/ep.h"
#include "core/job.h"
#include "core/pub_settings.h"
#include "core/stats.h"
#include "util/config.h"
#include "util/log.h"

/* Append-only: an entry below count never changes, so readers take count
   (acquire) and read without the lock. */
static const flit_layer_t *reg[FLIT_LAYER_MAX];
/* reg[i]'s counters as the core describes a plug-in's (NULL name last). */
static struct fl_counter_desc *descs[FLIT_LAYER_MAX];
static _Atomic unsigned count;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned fl_pub_count(void)
{
    /* Acquire: pairs with add()'s release; the entries below are in. */
    return atomic_load_explicit(&count, memory_order_acquire);
}

const flit_layer_t *fl_pub_at(unsigned i)
{
    return reg[i];
}

static bool name_ok(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static int find(const char *name, size_t len)
{
    unsigned n = fl_pub_count();
    for (unsigned i = 0; i < n; i++)
        if (strlen(reg[i]->name) == len && strncmp(reg[i]->name, name, len) == 0)
            return (int)i;
    return -1;
}

static flit_status check(const flit_layer_t *l)
{
    if (!l || l->version != FLIT_LAYER_VERSION || !name_ok(l->name) || !l->open ||
        (l->nsettings && !l->settings) || (l->ncounters && !l->counters) ||
        (l->flags & ~FLIT_LAYER_ON_REQUEST))
        return FLIT_ERR_INVALID_ARG;
    for (unsigned i = 0; i < l->ncounters; i++)
        if (!name_ok(l->counters[i].name) ||
            l->counters[i].offset + sizeof(uint64_t) > l->state_size ||
            l->counters[i].offset % _Alignof(uint64_t))
            return FLIT_ERR_INVALID_ARG;
    return find(l->name, strlen(l->name)) >= 0 ? FLIT_ERR_INVALID_ARG : FLIT_OK;
}

/* The layer's counter table in the form of every plug-in's (stats.h), so
   that one path reads, finds and reports them all. NULL: no memory. */
static struct fl_counter_desc *convert(const flit_layer_t *l)
{
    struct fl_counter_desc *d = calloc(l->ncounters + 1u, sizeof *d);
    for (unsigned k = 0; d && k < l->ncounters; k++) {
        const flit_layer_counter_t *c = &l->counters[k];
        d[k] = (struct fl_counter_desc){
            .name = c->name, .doc = c->doc, .kind = c->kind, .offset = c->offset};
    }
    return d;
}

/* Under reg_lock. */
static flit_status add(const flit_layer_t *l)
{
    flit_status st = check(l);
    unsigned n = atomic_load_explicit(&count, memory_order_relaxed);
    if (st == FLIT_OK && n == FLIT_LAYER_MAX)
        st = FLIT_ERR_EXHAUSTED;
    if (st == FLIT_OK)
        st = fl_pub_settings_read(l, n);
    struct fl_counter_desc *d = st == FLIT_OK ? convert(l) : NULL;
    if (st == FLIT_OK && !d)
        st = FLIT_ERR_NO_MEMORY;
    if (st != FLIT_OK)
        return st;
    reg[n] = l;
    descs[n] = d;
    /* Release: the entry is in before a reader sees the new count. */
    atomic_store_explicit(&count, n + 1, memory_order_release);
    return FLIT_OK;
}

static bool any_endpoint(void)
{
    pthread_mutex_lock(&fl_job.lock);
    bool any = fl_job.eps != NULL;
    pthread_mutex_unlock(&fl_job.lock);
    return any;
}

flit_status flit_layer_register(const flit_layer_t *layer)
{
    if (any_endpoint())
        return FLIT_ERR_AGAIN;
    pthread_mutex_lock(&reg_lock);
    flit_status st = add(layer);
    pthread_mutex_unlock(&reg_lock);
    return st;
}

flit_status fl_pub_builtin(const flit_layer_t *const *list)
{
    flit_status st = FLIT_OK;
    fl_config_known_above = fl_pub_knows_setting;
    pthread_mutex_lock(&reg_lock);
    for (unsigned i = 0; list[i] && st == FLIT_OK; i++) {
        int at = find(list[i]->name, strlen(list[i]->name));
        if (at < 0 || reg[at] != list[i]) /* a flit_init after a failed one */
            st = add(list[i]);
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

/* Whether the list names (may be NULL) holds name. */
static bool named(const char *names, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = names; p && *p;) {
        size_t k = strcspn(p, ",");
        if (k == len && strncmp(p, name, len) == 0)
            return true;
        p += k + (p[k] == ',');
    }
    return false;
}

bool fl_pub_names_ok(const char *names)
{
    if (!names || !*names)
        return true;
    for (const char *p = names;; p++) { /* an empty name (",", "a,") is none */
        size_t k = strcspn(p, ",");
        int at = find(p, k);
        if (at < 0 || !(reg[at]->flags & FLIT_LAYER_ON_REQUEST))
            return false;
        p += k;
        if (!*p)
            return true;
    }
}

/* ---- per endpoint ---- */

static bool is_open(const struct flit_ep *ep, unsigned i)
{
    return atomic_load_explicit(&ep->pub_live, memory_order_acquire) & (1u << i);
}

static flit_status open_one(struct flit_ep *ep, unsigned i)
{
    const flit_layer_t *l = reg[i];
    void *state = calloc(1, l->state_size ? l->state_size : 1);
    if (!state)
        return FLIT_ERR_NO_MEMORY;
    ep->pub_state[i] = state;
    /* Release: the pointer is in before a dump sees the bit. */
    atomic_fetch_or_explicit(&ep->pub_made, 1u << i, memory_order_release);
    flit_status st = l->open(ep, state);
    if (st == FLIT_OK) /* release: its state is ready for flit_layer_state */
        atomic_fetch_or_explicit(&ep->pub_live, 1u << i, memory_order_release);
    else
        fl_error("endpoint %u: layer %s did not open: %s", ep->index, l->name,
                 flit_strerror(st));
    return st;
}

/* Every rank learns the worst status (FLIT_OK is 0, the smallest). */
static flit_status agree(struct flit_ep *ep, flit_status mine)
{
    uint64_t worst = (uint64_t)mine;
    flit_status st = fl_ep_enter(ep);
    if (st == FLIT_OK) {
        st = fl_ep_allmax(ep, &worst);
        fl_ep_leave(ep);
    }
    return st != FLIT_OK ? st : (flit_status)worst;
}

flit_status fl_pub_ep_open(struct flit_ep *ep, const char *names)
{
    unsigned n = fl_pub_count();
    ep->npub = n;
    flit_status st = FLIT_OK;
    bool any = false;
    for (unsigned i = 0; i < n && st == FLIT_OK; i++) {
        if ((reg[i]->flags & FLIT_LAYER_ON_REQUEST) && !named(names, reg[i]->name))
            continue;
        any = true;
        st = open_one(ep, i);
    }
    if (any) /* the same layers open on every rank: they agree, or none is open */
        st = agree(ep, st);
    if (st != FLIT_OK)
        fl_pub_ep_close(ep);
    return st;
}

void fl_pub_ep_close(struct flit_ep *ep)
{
    for (unsigned i = 0; i < ep->npub; i++)
        if (is_open(ep, i) && reg[i]->quiesce)
            reg[i]->quiesce(ep, ep->pub_state[i]);
    for (unsigned i = ep->npub; i-- > 0;) {
        if (!is_open(ep, i))
            continue;
        atomic_fetch_and_explicit(&ep->pub_live, ~(1u << i), memory_order_relaxed);
        if (reg[i]->close)
            reg[i]->close(ep, ep->pub_state[i]);
    }
}

void fl_pub_ep_free(struct flit_ep *ep)
{
    atomic_store_explicit(&ep->pub_made, 0, memory_order_relaxed);
    for (unsigned i = 0; i < ep->npub; i++) {
        free(ep->pub_state[i]);
        ep->pub_state[i] = NULL;
    }
}

bool fl_pub_counter_src(struct flit_ep *ep, unsigned i, struct fl_counter_src *out)
{
    /* Acquire: pairs with open_one's release; the state is in (and with
       add's, through the bit: the entry is). */
    uint32_t bits = atomic_load_explicit(&ep->pub_made, memory_order_acquire);
    if (i >= FLIT_LAYER_MAX || !(bits & (1u << i)))
        return false;
    *out = (struct fl_counter_src){
        .plugin = reg[i]->name, .desc = descs[i], .state = ep->pub_state[i]};
    return true;
}

void fl_pub_peer_down(struct flit_ep *ep, uint32_t rank, flit_status reason)
{
    for (unsigned i = 0; i < FLIT_LAYER_MAX; i++) /* not npub: any thread */
        if (is_open(ep, i) && reg[i]->peer_down)
            reg[i]->peer_down(ep, ep->pub_state[i], flit_rank(rank), reason);
}

flit_status flit_layer_state(flit_ep_t *ep, const flit_layer_t *layer, void **out)
{
    flit_status st = fl_ep_check(ep);
    if (st != FLIT_OK)
        return st;
    if (!layer || !out || !layer->name)
        return FLIT_ERR_INVALID_ARG;
    int at = find(layer->name, strlen(layer->name));
    if (at < 0 || reg[at] != layer)
        return FLIT_ERR_INVALID_ARG;
    if (!is_open(ep, (unsigned)at))
        return FLIT_ERR_CLOSED;
    *out = ep->pub_state[at];
    return FLIT_OK;
}
