/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AM-2 bundles, endpoints, segments, tags, the translation table, handler
 * tables, events and polling, on flit endpoints (see amudp_internal.h).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amudp_internal.h"

int AMUDP_VerboseErrors = 0;
int AMUDP_SilentMode = 0;
int AMUDP_PoliteSync = 0;
int amx_initialized = 0;

static struct amudp_eb *bundles[AMUDP_MAX_BUNDLES];
flit_handles_t *amx_eps, *amx_ebs, *amx_tokens;

/* The tables made at once: a message never waits on memory for a token. */
static flit_status make_tables(void)
{
    flit_handles_t **tables[] = {&amx_eps, &amx_ebs, &amx_tokens};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        void *h;
        flit_status st = flit_handle_new(tables[i], tables, &h);
        if (st != FLIT_OK)
            return st;
        (void)flit_handle_free(tables[i], h);
    }
    return FLIT_OK;
}
static unsigned ep_serial; /* endpoints this process created so far */

void AMUDP_FatalErr(const char *msg, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "*** AMUDP FATAL ERROR: ");
    va_start(ap, msg);
    vfprintf(stderr, msg, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

static const char *err_name(int code)
{
    static const char *const names[] = {"AM_OK",           "AM_ERR_NOT_INIT",
                                        "AM_ERR_BAD_ARG",  "AM_ERR_RESOURCE",
                                        "AM_ERR_NOT_SENT", "AM_ERR_IN_USE"};
    return code >= 0 && code <= AM_ERR_IN_USE ? names[code] : "AM_ERR_?";
}

int amx_err(int code, const char *fn, const char *why)
{
    if (code != AM_OK && AMUDP_VerboseErrors)
        fprintf(stderr, "AMUDP %s returning %s: %s\n", fn, err_name(code), why);
    return code;
}

int amx_status_slow(flit_status st, const char *fn)
{
    switch (st) {
    case FLIT_OK:
        return AM_OK;
    case FLIT_ERR_NOT_INITIALIZED:
    case FLIT_ERR_FINALIZED:
        return amx_err(AM_ERR_NOT_INIT, fn, flit_strerror(st));
    case FLIT_ERR_INVALID_ARG:
    case FLIT_ERR_RANK:
    case FLIT_ERR_NARGS:
    case FLIT_ERR_TOO_LARGE:
    case FLIT_ERR_BOUNDS:
    case FLIT_ERR_IN_HANDLER:
    case FLIT_ERR_REPLY_IN_REPLY:
    case FLIT_ERR_ALREADY_REPLIED:
    case FLIT_ERR_BAD_TOKEN:
    case FLIT_ERR_BAD_HANDLER:
        return amx_err(AM_ERR_BAD_ARG, fn, flit_strerror(st));
    case FLIT_ERR_THREAD:
        return amx_err(AM_ERR_IN_USE, fn, flit_strerror(st));
    case FLIT_ERR_PEER_DOWN:
    case FLIT_ERR_UNREACHABLE:
    case FLIT_ERR_CLOSED:
        return amx_err(AM_ERR_NOT_SENT, fn, flit_strerror(st));
    default:
        return amx_err(AM_ERR_RESOURCE, fn, flit_strerror(st));
    }
}

/* An endpoint's name: the rank in the address, the creation order in the
   port. Only this library reads it back. */
en_t amx_name(uint32_t rank, unsigned serial)
{
    en_t en;
    memset(&en, 0, sizeof en);
    en.sin_family = AF_INET;
    en.sin_addr.s_addr = htonl(rank);
    en.sin_port = htons((uint16_t)serial);
    return en;
}

int AMUDP_enEqual(en_t en1, en_t en2)
{
    return en1.sin_family == en2.sin_family &&
           en1.sin_addr.s_addr == en2.sin_addr.s_addr && en1.sin_port == en2.sin_port;
}

/* The tag this endpoint sends rank, on flit and for the put path. */
flit_status amx_set_peer_tag(struct amudp_ep *ep, uint32_t rank, tag_t tag)
{
    flit_status st = flit_ep_set_peer_tag(ep->fep, flit_rank(rank), tag);
    struct amx_peer *p = st == FLIT_OK ? amx_peer_of(ep, rank) : NULL;
    if (p) {
        p->send_tag = tag;
        p->has_send_tag = 1;
    }
    return st;
}

/* ---------------------------------------------------------------- init */

int AM_Init(void)
{
    if (amx_initialized) {
        amx_initialized++;
        return AM_OK;
    }
    flit_status st = flit_init(NULL);
    if (st != FLIT_OK && st != FLIT_ERR_ALREADY_INITIALIZED)
        return amx_status(st, "AM_Init");
    amx_end_joined(st == FLIT_OK);
    if ((st = make_tables()) != FLIT_OK)
        return amx_status(st, "AM_Init");
    amx_initialized = 1;
    return AM_OK;
}

int AM_Terminate(void)
{
    if (!amx_initialized)
        return amx_err(AM_ERR_NOT_INIT, "AM_Terminate", "AM_Init was not called");
    if (--amx_initialized > 0)
        return AM_OK;
    int rc = AM_OK;
    for (int i = 0; i < AMUDP_MAX_BUNDLES; i++)
        if (bundles[i] && AM_FreeBundle(bundles[i]->self) != AM_OK)
            rc = AM_ERR_RESOURCE;
    amx_end_flit();
    return rc;
}

int AM_MaxSegLength(uintptr_t *nbytes)
{
    if (!nbytes)
        return amx_err(AM_ERR_BAD_ARG, "AM_MaxSegLength", "nbytes is NULL");
    *nbytes = AMUDP_MAX_SEGLENGTH;
    return AM_OK;
}

/* ---------------------------------------------------------------- bundles */

int AM_AllocateBundle(int type, eb_t *endb)
{
    if (!amx_initialized)
        return amx_err(AM_ERR_NOT_INIT, "AM_AllocateBundle", "AM_Init was not called");
    if ((type != AM_SEQ && type != AM_PAR) || !endb)
        return amx_err(AM_ERR_BAD_ARG, "AM_AllocateBundle", "type or endb");
    int slot = 0;
    while (slot < AMUDP_MAX_BUNDLES && bundles[slot])
        slot++;
    if (slot == AMUDP_MAX_BUNDLES)
        return amx_err(AM_ERR_RESOURCE, "AM_AllocateBundle", "too many bundles");
    struct amudp_eb *eb = calloc(1, sizeof *eb);
    void *h = NULL;
    if (!eb || flit_handle_new(&amx_ebs, eb, &h) != FLIT_OK) {
        free(eb);
        return amx_err(AM_ERR_RESOURCE, "AM_AllocateBundle", "out of memory");
    }
    eb->self = h;
    eb->type = type;
    eb->mask = AM_NOEVENTS;
    bundles[slot] = eb;
    *endb = h;
    return AM_OK;
}

static int bundle_add(struct amudp_eb *eb, struct amudp_ep *ep)
{
    if (eb->n == eb->cap) {
        int cap = eb->cap ? 2 * eb->cap : 4;
        struct amudp_ep **eps = realloc(eb->eps, (size_t)cap * sizeof *eps);
        if (!eps)
            return 0;
        eb->eps = eps;
        eb->cap = cap;
    }
    eb->eps[eb->n++] = ep;
    ep->eb = eb;
    return 1;
}

static void bundle_remove(struct amudp_eb *eb, struct amudp_ep *ep)
{
    for (int i = 0; i < eb->n; i++)
        if (eb->eps[i] == ep) {
            eb->eps[i] = eb->eps[--eb->n];
            break;
        }
    ep->eb = NULL;
}

int AM_FreeBundle(eb_t h)
{
    struct amudp_eb *bundle = amx_eb_of(h);
    if (!bundle)
        return amx_err(AM_ERR_BAD_ARG, "AM_FreeBundle", "not a bundle");
    int rc = AM_OK;
    while (bundle->n > 0)
        if (AM_FreeEndpoint(bundle->eps[bundle->n - 1]->self) != AM_OK)
            rc = AM_ERR_RESOURCE;
    for (int i = 0; i < AMUDP_MAX_BUNDLES; i++)
        if (bundles[i] == bundle)
            bundles[i] = NULL;
    (void)flit_handle_free(&amx_ebs, h);
    free(bundle->eps);
    free(bundle);
    return rc;
}

int AM_MoveEndpoint(ep_t h, eb_t from, eb_t to)
{
    struct amudp_ep *ea = amx_ep_of(h);
    struct amudp_eb *from_bundle = amx_eb_of(from), *to_bundle = amx_eb_of(to);
    if (!ea || !from_bundle || !to_bundle || ea->eb != from_bundle)
        return amx_err(AM_ERR_BAD_ARG, "AM_MoveEndpoint", "endpoint not in from_bundle");
    bundle_remove(from_bundle, ea);
    if (!bundle_add(to_bundle, ea)) {
        bundle_add(from_bundle, ea); /* had room a moment ago */
        return amx_err(AM_ERR_RESOURCE, "AM_MoveEndpoint", "out of memory");
    }
    return AM_OK;
}

/* ---------------------------------------------------------------- endpoints */

/* A peer gone: said on stderr (flit would say it for a handler-less
   endpoint), unless AMUDP_SPMDExit is ending the job, which ends the procs
   one by one. Its messages come back through handler 0 either way. */
static void peer_down(flit_ep_t *fep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)fep;
    struct amudp_ep *ep = (struct amudp_ep *)user;
    ep->peers_down++; /* a wait for it ends (amx_wait_until) */
    amx_auto_peer_down(ep, peer.idx);
    if (!amx_spmd_exiting())
        fprintf(stderr, "AMUDP: endpoint %u: proc %u is down: %s\n",
                ((struct amudp_ep *)user)->serial, peer.idx, flit_strerror(reason));
}

static flit_status ep_open(struct amudp_ep *ep, int par)
{
    flit_ep_params_t p;
    memset(&p, 0, sizeof p);
    p.field_mask = FLIT_EP_PARAM_HANDLER_COUNT | FLIT_EP_PARAM_THREAD_MODE;
    p.handler_count = AMX_H_COUNT;
    p.thread_mode = par ? FLIT_THREAD_SAFE : FLIT_THREAD_SINGLE;
    flit_status st = flit_ep_create(&p, &ep->fep);
    if (st != FLIT_OK)
        return st;
    for (unsigned i = 0; i < AMX_H_COUNT; i++) {
        ep->slot[i].ep = ep;
        ep->slot[i].index = (uint16_t)i;
    }
    if ((st = flit_ep_tag(ep->fep, &ep->tag)) == FLIT_OK &&
        (st = flit_am_set_returned_handler(ep->fep, amx_returned, ep)) == FLIT_OK &&
        (st = flit_ep_set_peer_down_handler(ep->fep, peer_down, ep)) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_REFUSED), amx_refused,
                               &ep->slot[AMX_H_REFUSED])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_SEGQ), amx_seg_question,
                               &ep->slot[AMX_H_SEGQ])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_SEGA), amx_seg_answer,
                               &ep->slot[AMX_H_SEGA])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_GATHER), amx_gather_part,
                               &ep->slot[AMX_H_GATHER])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_AUTO), amx_auto_told,
                               &ep->slot[AMX_H_AUTO])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_AUTO_ACK), amx_auto_acked,
                               &ep->slot[AMX_H_AUTO_ACK])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_ARRIVE), amx_barrier_arrive,
                               &ep->slot[AMX_H_ARRIVE])) == FLIT_OK &&
        (st = flit_am_register(ep->fep, flit_handler(AMX_H_RELEASE), amx_barrier_release,
                               &ep->slot[AMX_H_RELEASE])) == FLIT_OK)
        st = flit_am_register(ep->fep, flit_handler(AMX_H_SCATTER), amx_gather_whole,
                              &ep->slot[AMX_H_SCATTER]);
    if (st != FLIT_OK)
        flit_ep_destroy(ep->fep);
    return st;
}

int AM_AllocateEndpoint(eb_t h, ep_t *endp, en_t *endpoint_name)
{
    if (!amx_initialized)
        return amx_err(AM_ERR_NOT_INIT, "AM_AllocateEndpoint", "AM_Init was not called");
    struct amudp_eb *bundle = amx_eb_of(h);
    if (!bundle || !endp || !endpoint_name)
        return amx_err(AM_ERR_BAD_ARG, "AM_AllocateEndpoint", "bundle, endp or name");
    struct amudp_ep *ep = calloc(1, sizeof *ep);
    struct amx_xlat *xl = calloc(AMUDP_INIT_NUMTRANSLATIONS, sizeof *xl);
    if (!ep || !xl) {
        free(ep);
        free(xl);
        return amx_err(AM_ERR_RESOURCE, "AM_AllocateEndpoint", "out of memory");
    }
    flit_status st = ep_open(ep, bundle->type == AM_PAR);
    if (st == FLIT_OK &&
        (st = flit_handle_new(&amx_eps, ep, (void **)&ep->self)) != FLIT_OK)
        flit_ep_destroy(ep->fep);
    if (st != FLIT_OK) {
        free(ep);
        free(xl);
        return amx_status(st, "AM_AllocateEndpoint");
    }
    ep->xl = xl;
    ep->nxl = AMUDP_INIT_NUMTRANSLATIONS;
    ep->serial = ep_serial++;
    ep->name = amx_name(flit_job_rank().idx, ep->serial);
    ep->stats = AMUDP_initial_stats;
    ep->owed_head = AMX_NONE;
    if (!bundle_add(bundle, ep)) {
        AM_FreeEndpoint(ep->self);
        return amx_err(AM_ERR_RESOURCE, "AM_AllocateEndpoint", "out of memory");
    }
    *endp = ep->self;
    *endpoint_name = ep->name;
    return AM_OK;
}

int AM_FreeEndpoint(ep_t h)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea)
        return amx_err(AM_ERR_BAD_ARG, "AM_FreeEndpoint", "not an endpoint");
    (void)flit_handle_free(&amx_eps, h);
    if (ea->eb)
        bundle_remove(ea->eb, ea);
    flit_status st = flit_ep_destroy(ea->fep);
    free(ea->xl);
    free(ea->peers); /* their imports died with the flit endpoint */
    free(ea);
    return amx_status(st, "AM_FreeEndpoint");
}

/* ---------------------------------------------------------------- segment, tag */

int AM_GetSeg(ep_t h, void **addr, uintptr_t *nbytes)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || !addr || !nbytes)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetSeg", "endpoint, addr or nbytes");
    *addr = ea->seg;
    *nbytes = ea->seglen;
    return AM_OK;
}

int AM_SetSeg(ep_t h, void *addr, uintptr_t nbytes)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || (!addr && nbytes) || (uintptr_t)addr + nbytes < (uintptr_t)addr)
        return amx_err(AM_ERR_BAD_ARG, "AM_SetSeg", "endpoint, or a segment that wraps");
    ea->seg = addr;
    ea->seglen = nbytes;
    amx_seg_export(ea);
    return AM_OK;
}

int AM_GetTag(ep_t h, tag_t *tag)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || !tag)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetTag", "endpoint or tag");
    *tag = ea->tag;
    return AM_OK;
}

int AM_SetTag(ep_t h, tag_t tag)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea)
        return amx_err(AM_ERR_BAD_ARG, "AM_SetTag", "not an endpoint");
    flit_status st = flit_ep_set_tag(ea->fep, tag);
    if (st == FLIT_OK && ea->tag != tag) {
        ea->tag = tag;
        if (ea->seg_region)
            amx_seg_export(ea); /* senders learn the new tag when they ask again */
    }
    return amx_status(st, "AM_SetTag");
}

/* ---------------------------------------------------------------- translations */

static int xl_index_ok(const struct amudp_ep *ep, int i)
{
    return ep && i >= 0 && i < ep->nxl;
}

int AM_Map(ep_t h, int index, en_t name, tag_t tag)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!xl_index_ok(ea, index))
        return amx_err(AM_ERR_BAD_ARG, "AM_Map", "endpoint or index");
    if (ea->xl[index].inuse)
        return amx_err(AM_ERR_RESOURCE, "AM_Map", "index already in use");
    uint32_t rank = ntohl(name.sin_addr.s_addr);
    if (name.sin_family != AF_INET || rank >= flit_job_size() ||
        ntohs(name.sin_port) != ea->serial)
        return amx_err(AM_ERR_BAD_ARG, "AM_Map", "not the name of a peer endpoint");
    flit_status st = amx_set_peer_tag(ea, rank, tag);
    if (st != FLIT_OK)
        return amx_status(st, "AM_Map");
    ea->xl[index].inuse = 1;
    ea->xl[index].name = name;
    ea->xl[index].tag = tag;
    ea->xl[index].rank = rank;
    return AM_OK;
}

int AM_MapAny(ep_t h, int *index, en_t name, tag_t tag)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || !index)
        return amx_err(AM_ERR_BAD_ARG, "AM_MapAny", "endpoint or index");
    for (int i = 0; i < ea->nxl; i++)
        if (!ea->xl[i].inuse) {
            int rc = AM_Map(h, i, name, tag);
            if (rc == AM_OK)
                *index = i;
            return rc;
        }
    return amx_err(AM_ERR_RESOURCE, "AM_MapAny", "translation table full");
}

int AM_UnMap(ep_t h, int index)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!xl_index_ok(ea, index) || !ea->xl[index].inuse)
        return amx_err(AM_ERR_BAD_ARG, "AM_UnMap", "index not in use");
    ea->xl[index].inuse = 0;
    return AM_OK;
}

int AM_GetTranslationInuse(ep_t h, int i)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!xl_index_ok(ea, i))
        return amx_err(AM_ERR_BAD_ARG, "AM_GetTranslationInuse", "endpoint or index");
    return ea->xl[i].inuse ? AM_OK : AM_ERR_RESOURCE;
}

int AM_GetTranslationTag(ep_t h, int i, tag_t *tag)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!xl_index_ok(ea, i) || !tag)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetTranslationTag", "endpoint, index or tag");
    if (!ea->xl[i].inuse)
        return amx_err(AM_ERR_RESOURCE, "AM_GetTranslationTag", "index not in use");
    *tag = ea->xl[i].tag;
    return AM_OK;
}

int AM_GetTranslationName(ep_t h, int i, en_t *gan)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!xl_index_ok(ea, i) || !gan)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetTranslationName",
                       "endpoint, index or name");
    if (!ea->xl[i].inuse)
        return amx_err(AM_ERR_RESOURCE, "AM_GetTranslationName", "index not in use");
    *gan = ea->xl[i].name;
    return AM_OK;
}

int AMUDP_SetTranslationTag(ep_t h, int index, tag_t tag)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!xl_index_ok(ea, index) || !ea->xl[index].inuse)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_SetTranslationTag", "index not in use");
    flit_status st = amx_set_peer_tag(ea, ea->xl[index].rank, tag);
    if (st == FLIT_OK)
        ea->xl[index].tag = tag;
    return amx_status(st, "AMUDP_SetTranslationTag");
}

int AM_GetNumTranslations(ep_t h, int *pntrans)
{
    struct amudp_ep *ep = amx_ep_of(h);
    if (!ep || !pntrans)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetNumTranslations", "endpoint or pntrans");
    *pntrans = ep->nxl;
    return AM_OK;
}

int AM_SetNumTranslations(ep_t h, int ntrans)
{
    struct amudp_ep *ep = amx_ep_of(h);
    if (!ep || ntrans < 1 || (unsigned)ntrans > AMUDP_MAX_NUMTRANSLATIONS)
        return amx_err(AM_ERR_BAD_ARG, "AM_SetNumTranslations", "endpoint or count");
    for (int i = ntrans; i < ep->nxl; i++)
        if (ep->xl[i].inuse)
            return amx_err(AM_ERR_RESOURCE, "AM_SetNumTranslations",
                           "an entry past the new size is in use");
    if (ep->depth && ntrans < ep->nxl)
        return amx_err(AM_ERR_RESOURCE, "AM_SetNumTranslations",
                       "resources already set for more endpoints");
    struct amx_xlat *xl = realloc(ep->xl, (size_t)ntrans * sizeof *xl);
    if (!xl)
        return amx_err(AM_ERR_RESOURCE, "AM_SetNumTranslations", "out of memory");
    if (ntrans > ep->nxl)
        memset(xl + ep->nxl, 0, (size_t)(ntrans - ep->nxl) * sizeof *xl);
    ep->xl = xl;
    ep->nxl = ntrans;
    return AM_OK;
}

int AM_SetExpectedResources(ep_t h, int n_endpoints, int n_outstanding_requests)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || n_endpoints < 1 || n_endpoints > ea->nxl || n_outstanding_requests < 1 ||
        n_outstanding_requests > AMUDP_MAX_NETWORKDEPTH)
        return amx_err(AM_ERR_BAD_ARG, "AM_SetExpectedResources", "counts out of range");
    if (ea->depth)
        return amx_err(AM_ERR_RESOURCE, "AM_SetExpectedResources", "already called");
    /* flit sizes its credits itself; the depth is kept for the record. */
    ea->depth = n_outstanding_requests;
    return AM_OK;
}

/* ---------------------------------------------------------------- handlers */

static flit_status install(struct amudp_ep *ep, unsigned h, flit_am_handler_fn fn)
{
    flit_status st = FLIT_OK;
    for (unsigned r = 0; r < 2 && st == FLIT_OK; r++)
        for (unsigned k = AMX_SHORT; k < AMX_KINDS && st == FLIT_OK; k++) {
            unsigned i = AMX_H_INDEX(k, r, h);
            st = flit_am_register(ep->fep, flit_handler((uint16_t)i), fn, &ep->slot[i]);
        }
    return st;
}

int _AM_SetHandler(ep_t h, handler_t handler, amudp_handler_fn_t function)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || !function)
        return amx_err(AM_ERR_BAD_ARG, "AM_SetHandler", "endpoint or function");
    if (handler != 0) {
        flit_status st = install(ea, handler, amx_dispatch);
        if (st != FLIT_OK)
            return amx_status(st, "AM_SetHandler");
    }
    ea->handler[handler] = function;
    return AM_OK;
}

int _AM_SetHandlerAny(ep_t h, handler_t *handler, amudp_handler_fn_t function)
{
    struct amudp_ep *ea = amx_ep_of(h);
    if (!ea || !handler || !function)
        return amx_err(AM_ERR_BAD_ARG, "AM_SetHandlerAny",
                       "endpoint, handler or function");
    for (unsigned i = 1; i < AMUDP_MAX_NUMHANDLERS; i++)
        if (!ea->handler[i]) {
            int rc = _AM_SetHandler(ea->self, (handler_t)i, function);
            if (rc == AM_OK)
                *handler = (handler_t)i;
            return rc;
        }
    return amx_err(AM_ERR_RESOURCE, "AM_SetHandlerAny", "handler table full");
}

int AMUDP_SetHandlerCallbacks(ep_t h, AMUDP_preHandlerCallback_t preHandlerCallback,
                              AMUDP_postHandlerCallback_t postHandlerCallback)
{
    struct amudp_ep *ep = amx_ep_of(h);
    if (!ep)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_SetHandlerCallbacks", "not an endpoint");
    ep->pre = preHandlerCallback;
    ep->post = postHandlerCallback;
    return AM_OK;
}

/* ---------------------------------------------------------------- events, poll */

int AM_GetEventMask(eb_t h, int *mask)
{
    struct amudp_eb *eb = amx_eb_of(h);
    if (!eb || !mask)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetEventMask", "bundle or mask");
    *mask = eb->mask;
    return AM_OK;
}

int AM_SetEventMask(eb_t h, int mask)
{
    struct amudp_eb *eb = amx_eb_of(h);
    if (!eb || (mask != AM_NOEVENTS && mask != AM_NOTEMPTY))
        return amx_err(AM_ERR_BAD_ARG, "AM_SetEventMask", "bundle or mask");
    eb->mask = mask;
    return AM_OK;
}

int AM_Poll(eb_t h)
{
    struct amudp_eb *bundle = amx_eb_of(h);
    if (!bundle)
        return amx_err(AM_ERR_BAD_ARG, "AM_Poll", "not a bundle");
    for (int i = 0; i < bundle->n; i++) {
        flit_status st = flit_poll(bundle->eps[i]->fep);
        if (st != FLIT_OK)
            return amx_status(st, "AM_Poll");
        amx_auto_flush(bundle->eps[i]);
    }
    return AM_OK;
}

static uint64_t handled(const struct amudp_eb *eb)
{
    uint64_t n = 0;
    for (int i = 0; i < eb->n; i++)
        n += eb->eps[i]->handled;
    return n;
}

/* Sleeps on every endpoint's descriptor; 1 when there is work already. */
static int sleep_on(struct amudp_eb *eb)
{
    struct pollfd fds[64];
    int n = eb->n < 64 ? eb->n : 64;
    for (int i = 0; i < n; i++) {
        flit_status st = flit_ep_arm(eb->eps[i]->fep);
        if (st == FLIT_ERR_AGAIN)
            return 1;
        if (st != FLIT_OK || flit_ep_fd(eb->eps[i]->fep, &fds[i].fd) != FLIT_OK)
            return -1;
        fds[i].events = POLLIN;
    }
    poll(fds, (nfds_t)n, eb->n > 64 ? 1 : -1); /* EINTR: the caller loops */
    return 0;
}

/* ---------------------------------------------------------------- waits */

int amx_polite_sleep(struct amudp_ep *ep)
{
    struct pollfd fd = {.events = POLLIN};
    flit_status st = flit_ep_arm(ep->fep);
    if (st == FLIT_ERR_AGAIN)
        return 1;
    if (st != FLIT_OK || flit_ep_fd(ep->fep, &fd.fd) != FLIT_OK)
        return -1;
    poll(&fd, 1, -1); /* EINTR: the caller looks again */
    return 0;
}

flit_status amx_send_own(struct amudp_ep *ep, flit_rank_t to, unsigned h, const void *buf,
                         size_t len, const uint32_t *args, unsigned nargs)
{
    unsigned flags = AMUDP_PoliteSync && !flit_in_handler() ? FLIT_AM_NONBLOCK : 0;
    for (;;) {
        flit_status st = buf ? flit_am_medium(ep->fep, to, flit_handler((uint16_t)h), buf,
                                              len, args, nargs, flags)
                             : flit_am_short(ep->fep, to, flit_handler((uint16_t)h), args,
                                             nargs, flags);
        if (st != FLIT_ERR_AGAIN || !flags)
            return st;
        if (amx_polite_sleep(ep) < 0)
            return FLIT_ERR_SYSTEM;
        if ((st = flit_poll(ep->fep)) != FLIT_OK) /* the room comes back here */
            return st;
    }
}

int amx_wait_until(struct amudp_ep *ep, int (*done)(void *), void *arg, const char *fn)
{
    uint64_t down = ep->peers_down;
    for (;;) {
        flit_status st = flit_poll(ep->fep);
        if (st != FLIT_OK)
            return amx_status(st, fn);
        if (done(arg))
            return AM_OK;
        if (ep->peers_down != down)
            return amx_err(AM_ERR_RESOURCE, fn, "a proc went down while waiting");
        if (!AMUDP_PoliteSync)
            st = flit_wait(ep->fep, 100000); /* polls FLIT_SPIN_US, then sleeps */
        else if (amx_polite_sleep(ep) < 0)
            return amx_err(AM_ERR_RESOURCE, fn, "cannot sleep on the endpoint");
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            return amx_status(st, fn);
    }
}

/*
 * AM-2's event: a message handled. Runs the handlers of what is waiting;
 * when nothing was, sleeps until something arrives (the arm protocol of
 * flit_ep_fd closes the window between looking and sleeping).
 */
int AM_WaitSema(eb_t h)
{
    struct amudp_eb *eb = amx_eb_of(h);
    if (!eb || eb->n == 0)
        return amx_err(AM_ERR_BAD_ARG, "AM_WaitSema", "bundle without endpoints");
    if (eb->mask == AM_NOEVENTS)
        return amx_err(AM_ERR_BAD_ARG, "AM_WaitSema", "event mask AM_NOEVENTS: no event");
    for (;;) {
        uint64_t before = handled(eb);
        int rc = AM_Poll(h);
        if (rc != AM_OK)
            return rc;
        if (handled(eb) != before)
            return AM_OK;
        if (sleep_on(eb) < 0)
            return amx_err(AM_ERR_RESOURCE, "AM_WaitSema",
                           "cannot sleep on the endpoint");
    }
}

/* ---------------------------------------------------------------- tokens */

int AM_GetSourceEndpoint(void *token, en_t *gan)
{
    struct amx_token *t = amx_token_of(token);
    if (!t || !gan)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetSourceEndpoint", "token or gan");
    *gan = amx_name(amx_token_peer(t).idx, t->ep->serial);
    return AM_OK;
}

int AM_GetDestEndpoint(void *token, ep_t *endp)
{
    struct amx_token *t = amx_token_of(token);
    if (!t || !endp)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetDestEndpoint", "token or endp");
    *endp = t->ep->self;
    return AM_OK;
}

static int index_of_rank(const struct amudp_ep *ep, uint32_t rank)
{
    if (rank < (uint32_t)ep->nxl && ep->xl[rank].inuse && ep->xl[rank].rank == rank)
        return (int)rank; /* the SPMD layout */
    for (int i = 0; i < ep->nxl; i++)
        if (ep->xl[i].inuse && ep->xl[i].rank == rank)
            return i;
    return -1;
}

int AM_GetMsgTag(void *token, tag_t *tagp)
{
    struct amx_token *t = amx_token_of(token);
    if (!t || !tagp)
        return amx_err(AM_ERR_BAD_ARG, "AM_GetMsgTag", "token or tagp");
    if (t->ft) { /* delivered: it carried the receiver's tag */
        *tagp = t->ep->tag;
        return AM_OK;
    }
    int i = index_of_rank(t->ep, amx_token_peer(t).idx); /* returned: the tag we sent */
    *tagp = i >= 0 ? t->ep->xl[i].tag : t->ep->tag;
    return AM_OK;
}

int AMUDP_GetSourceId(void *token, int *srcid)
{
    struct amx_token *t = amx_token_of(token);
    if (!t || !srcid)
        return amx_err(AM_ERR_BAD_ARG, "AMUDP_GetSourceId", "token or srcid");
    int i = index_of_rank(t->ep, amx_token_peer(t).idx);
    if (i < 0)
        return amx_err(AM_ERR_RESOURCE, "AMUDP_GetSourceId", "sender not mapped");
    *srcid = i;
    return AM_OK;
}
