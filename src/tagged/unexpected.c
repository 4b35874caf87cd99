/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unexpected messages (internal.h): entries for messages that arrived
 * before their receive was posted. Small and medium payloads live in
 * pooled entries of a fixed room, filled and emptied under the context's
 * mutex (no malloc for the common small message); larger ones are
 * malloc'ed to their size and handled outside the mutex. With no memory
 * for the payload the entry alone records the message (FLIT_ERR_NO_MEMORY
 * for its receive); with none at all the message is lost and counted.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const size_t class_room[ENTRY_CLASSES] = {0, SMALL_LEN, MEDIUM_LEN};
static const unsigned class_keep[ENTRY_CLASSES] = {0, KEEP_SMALL, KEEP_MEDIUM};

static uint8_t class_of(size_t len)
{
    return len <= SMALL_LEN    ? ENTRY_SMALL
           : len <= MEDIUM_LEN ? ENTRY_MEDIUM
                               : ENTRY_MALLOC;
}

/* An entry of class cls with room for len bytes: from the pool, or new. */
static struct entry *entry_alloc(struct flit_tagged *t, uint8_t cls, size_t len)
{
    struct entry_pool *p = &t->pool[cls];
    if (cls == ENTRY_MALLOC)
        return len <= SIZE_MAX - sizeof(struct entry) ? malloc(sizeof(struct entry) + len)
                                                      : NULL;
    if (!p->head)
        return malloc(sizeof(struct entry) + class_room[cls]);
    struct entry *e = p->head;
    p->head = e->next;
    p->count--;
    return e;
}

/* Under the mutex: an entry with room for len bytes, its class and data set;
   data NULL (status NO_MEMORY) when there is memory for the entry alone. */
static struct entry *entry_get(struct flit_tagged *t, size_t len)
{
    uint8_t cls = class_of(len);
    struct entry *e = entry_alloc(t, cls, len);
    if (e) {
        e->cls = cls;
        e->data = (uint8_t *)(e + 1);
        e->status = FLIT_OK;
    } else if ((e = malloc(sizeof *e))) {
        e->cls = ENTRY_MALLOC;
        e->data = NULL;
        e->status = FLIT_ERR_NO_MEMORY;
    }
    return e;
}

void fl_tagged_entry_put(struct flit_tagged *t, struct entry *e)
{
    struct entry_pool *p = &t->pool[e->cls];
    if (e->cls == ENTRY_MALLOC || p->count >= class_keep[e->cls]) {
        free(e);
        return;
    }
    e->next = p->head;
    p->head = e;
    p->count++;
}

void fl_tagged_take_entry(struct flit_request *r, const struct entry *e)
{
    size_t n = min_size(e->got, r->size);
    req_copy(r, e->data, n);
    flit_status st = e->status;
    if (st == FLIT_OK && e->len > r->size)
        st = FLIT_ERR_TOO_LARGE;
    r->info = (flit_tagged_info_t){.source = flit_rank(e->source),
                                   .tag = e->tag,
                                   .length = e->len,
                                   .received = n,
                                   .status = st};
}

void fl_tagged_take_large(struct flit_request *r, struct entry *e)
{
    fl_tagged_take_entry(r, e);
    free(e);
}

struct entry *fl_tagged_unexp_new(struct flit_tagged *t, uint32_t src, uint64_t tag,
                                  size_t len, const uint8_t *whole)
{
    struct entry *e = entry_get(t, len);
    if (!e) {
        fl_tagged_count(&t->ctr->lost);
        return NULL;
    }
    fl_tagged_count(&t->ctr->unexpected);
    e->source = src;
    e->tag = tag;
    e->len = len;
    e->got = 0;
    e->req = NULL;
    e->arrived = whole != NULL;
    if (whole && e->data) {
        if (len)
            memcpy(e->data, whole, len);
        e->got = len;
    }
    fl_tagged_unexp_append(t, e);
    return e;
}

static void free_entries(struct entry *e)
{
    for (struct entry *next; e; e = next) {
        next = e->next;
        free(e);
    }
}

void fl_tagged_entries_free_all(struct flit_tagged *t, uint64_t *dropped, uint64_t *bytes)
{
    *dropped = *bytes = 0;
    for (const struct entry *e = t->unexp_head; e; e = e->next) {
        (*dropped)++;
        *bytes += e->len;
    }
    free_entries(t->unexp_head);
    t->unexp_head = t->unexp_tail = NULL;
    for (int c = 0; c < ENTRY_CLASSES; c++) {
        free_entries(t->pool[c].head);
        t->pool[c] = (struct entry_pool){0};
    }
}
