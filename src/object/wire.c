/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The objects' messages: one validating decoder per format (object_int.h
 * says each), and the scatter/gather lists that put a header before an
 * argument.
 */
#include "object_int.h"

#include <stdlib.h>
#include <string.h>

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

struct iovec *object_iov_after(struct iovec *small, const struct iovec *head, int k,
                               const struct iovec *v, int n)
{
    struct iovec *all = small;
    if (k + n > 8 && !(all = malloc(sizeof *all * (size_t)(k + n))))
        return NULL;
    memcpy(all, head, sizeof *all * (size_t)k);
    if (n)
        memcpy(all + k, v, sizeof *all * (size_t)n);
    return all;
}
