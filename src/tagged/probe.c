/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Probing (<flit/tagged.h>): whether an unexpected message matches, without
 * receiving it; it stays first in line for the receive that follows.
 */
#include "internal.h"

struct probe {
    struct flit_tagged *t;
    uint32_t source;
    uint64_t tag;
    flit_tagged_info_t info;
};

static bool probe_look(void *arg)
{
    struct probe *p = arg;
    struct flit_tagged *t = p->t;
    lock(t);
    struct entry *e = t->unexp_head ? fl_tagged_unexp_find(t, p->source, p->tag) : NULL;
    if (e)
        p->info = (flit_tagged_info_t){.source = flit_rank(e->source),
                                       .tag = e->tag,
                                       .length = e->len,
                                       .received = 0,
                                       .status = FLIT_OK};
    unlock(t);
    return e != NULL;
}

static flit_status check_probe(const struct flit_tagged *t, flit_rank_t source)
{
    if (!t)
        return FLIT_ERR_INVALID_ARG;
    if (source.idx >= t->size && source.idx != FLIT_ANY_SOURCE)
        return FLIT_ERR_RANK;
    return FLIT_OK;
}

flit_status flit_tagged_iprobe(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                               int *found, flit_tagged_info_t *info)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    flit_status st = check_probe(t, source);
    if (st != FLIT_OK)
        return st;
    if (!found)
        return FLIT_ERR_INVALID_ARG;
    struct probe p = {.t = t, .source = source.idx, .tag = tag};
    bool hit = probe_look(&p);
    if (!hit) {
        st = flit_poll(t->ep);
        if (st != FLIT_OK && st != FLIT_ERR_IN_HANDLER)
            return st;
        hit = probe_look(&p);
    }
    *found = hit;
    if (hit && info)
        *info = p.info;
    return FLIT_OK;
}

flit_status flit_tagged_probe(flit_tagged_t *h, flit_rank_t source, uint64_t tag,
                              int64_t timeout_us, flit_tagged_info_t *info)
{
    struct flit_tagged *t = fl_tagged_ctx_of(h);
    flit_status st = check_probe(t, source);
    if (st != FLIT_OK)
        return st;
    struct probe p = {.t = t, .source = source.idx, .tag = tag};
    if (!probe_look(&p)) {
        st = fl_tagged_progress_until(t->ep, probe_look, &p, timeout_us);
        if (st != FLIT_OK)
            return st;
    }
    if (info)
        *info = p.info;
    return FLIT_OK;
}
