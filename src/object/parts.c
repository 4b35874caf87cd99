/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Other members' replicated writes as they arrive: the buffer a write is
 * received into (the last one's kept for the next), and writes larger than
 * one group message, gathered from their pieces (OP_PART) until their own
 * message, in the group's order, ends them.
 */
#include "object_int.h"

#include <stdlib.h>

/* A buffer of at least len bytes for another member's write: the one the
   last write left, or a new one (*cap its size). Several writes of 1 MiB
   would otherwise each be a malloc above glibc's mmap threshold, in fresh
   pages faulted in one by one: 1.5 GB/s where 10 are to be had. */
void *object_spare_take(flit_object_t *o, size_t len, size_t *cap)
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
void object_spare_give(flit_object_t *o, void *p, size_t cap)
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
void object_part_deliver(flit_object_t *o, flit_group_msg_t *m, const struct hdr *h,
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
void *object_part_last(flit_object_t *o, flit_group_msg_t *m, struct part *part,
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

struct part *object_part_take(flit_object_t *o, uint32_t sender, uint64_t token)
{
    pthread_mutex_lock(&o->lock);
    struct part *p = part_find(o, sender, token, true);
    pthread_mutex_unlock(&o->lock);
    return p;
}

void object_parts_forget(flit_object_t *o, uint32_t sender)
{
    pthread_mutex_lock(&o->lock);
    for (struct part **pp = &o->parts; *pp;) {
        struct part *p = *pp;
        if (p->sender != sender) {
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
}
