/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Matching (internal.h): the posted receives and the unexpected messages,
 * two FIFO queues under the context's mutex, and the rule that pairs them
 * (source or any, tag or any; the first in order wins).
 */
#include "internal.h"

static inline bool matches(uint32_t want_src, uint64_t want_tag, uint32_t src,
                           uint64_t tag)
{
    return (want_src == FLIT_ANY_SOURCE || want_src == src) &&
           (want_tag == FLIT_ANY_TAG || want_tag == tag);
}

static void posted_append(struct flit_tagged *t, struct flit_request *r)
{
    r->next = NULL;
    r->prev = t->posted_tail;
    if (t->posted_tail)
        t->posted_tail->next = r;
    else
        t->posted_head = r;
    t->posted_tail = r;
    r->posted = true;
}

void fl_tagged_posted_unlink(struct flit_tagged *t, struct flit_request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        t->posted_head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        t->posted_tail = r->prev;
    r->posted = false;
    r->prev = r->next = NULL;
}

struct flit_request *fl_tagged_posted_take(struct flit_tagged *t, uint32_t src,
                                           uint64_t tag)
{
    struct flit_request *r;
    for (r = t->posted_head; r; r = r->next)
        if (matches(r->source, r->tag, src, tag))
            break;
    if (r)
        fl_tagged_posted_unlink(t, r);
    return r;
}

void fl_tagged_unexp_append(struct flit_tagged *t, struct entry *e)
{
    e->next = NULL;
    e->prev = t->unexp_tail;
    if (t->unexp_tail)
        t->unexp_tail->next = e;
    else
        t->unexp_head = e;
    t->unexp_tail = e;
}

void fl_tagged_unexp_unlink(struct flit_tagged *t, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        t->unexp_head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        t->unexp_tail = e->prev;
    e->prev = e->next = NULL;
}

struct entry *fl_tagged_unexp_find(struct flit_tagged *t, uint32_t src, uint64_t tag)
{
    for (struct entry *e = t->unexp_head; e; e = e->next)
        if (!e->req && matches(src, tag, e->source, e->tag))
            return e;
    return NULL;
}

bool fl_tagged_post_locked(struct flit_tagged *t, struct flit_request *r,
                           struct entry **large)
{
    *large = NULL;
    struct entry *e = t->unexp_head ? fl_tagged_unexp_find(t, r->source, r->tag) : NULL;
    if (!e) {
        posted_append(t, r);
        return false;
    }
    if (!e->arrived) {
        e->req = r; /* its handler hands it over when it is in */
        r->claimed = e;
        return false;
    }
    fl_tagged_unexp_unlink(t, e);
    if (e->cls == ENTRY_MALLOC) {
        *large = e;
        return false;
    }
    fl_tagged_take_entry(r, e);
    fl_tagged_entry_put(t, e);
    return true;
}
