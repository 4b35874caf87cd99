/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The object layer's decoders (src/object/object_int.h) on any bytes: a
 * group message's words, a piece of a large write, a placement's move,
 * and an owned object's reply word. What another member's objects send.
 *
 *   byte 0   bits 0-1: which decoder (message, piece, move, reply word);
 *            bit 2: an AUTO object; bit 3: a place request (move); bit 4:
 *            the type packs its state
 *   message: u32 (little-endian) the message's total, then the words the
 *            object reads first (header, and an AUTO object's epoch)
 *   piece:   u32 the body's length, then its first 8 bytes
 *   move:    byte the job's size, then 8 bytes
 *   reply:   4 bytes, the word
 *
 * The object is id 9 of a type with a write (arg_max 100), a read (50)
 * and a write (10), a state of 24 bytes. A model written from the
 * header's description gives each verdict; what is accepted decodes to
 * its own bytes.
 */
#include "fuzz.h"
#include "object/object_int.h"

#define ID 9u

static size_t op_fn(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)state, (void)arg, (void)len, (void)res, (void)user;
    return 0;
}

static size_t pack(const void *state, void *buf, size_t cap, void *user)
{
    (void)state, (void)buf, (void)cap, (void)user;
    return 0;
}

static void unpack(void *state, const void *buf, size_t len, void *user)
{
    (void)state, (void)buf, (void)len, (void)user;
}

static const flit_object_op_t ops[3] = {
    {.kind = FLIT_OBJECT_WRITE, .fn = op_fn, .arg_max = 100},
    {.kind = FLIT_OBJECT_READ, .fn = op_fn, .arg_max = 50},
    {.kind = FLIT_OBJECT_WRITE, .fn = op_fn, .arg_max = 10},
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static int model_msg(const uint8_t *head, size_t total, int autoo, int packs)
{
    size_t hl = 16 + (autoo ? 8 : 0);
    if (total < hl)
        return 0;
    struct hdr h;
    memcpy(&h, head, sizeof h);
    uint64_t e = 0;
    if (autoo)
        memcpy(&e, head + 16, 8);
    size_t len = total - hl;
    if (h.id != ID || e > UINT32_MAX)
        return 0;
    if (h.op < 3)
        return h.op != 1 && len <= ops[h.op].arg_max;
    if (h.op == 0xfffffff3u) /* a piece */
        return len > 8;
    if (!autoo)
        return 0;
    switch (h.op) {
    case 0xfffffff0u: /* report */
        return len == 16;
    case 0xfffffff1u: /* switch */
        return len >= 8 && (packs || len == 8 + 24);
    case 0xfffffff2u: /* place */
        return len == 8;
    case 0xfffffff4u: /* left */
        return len == 4;
    default:
        return 0;
    }
}

static void check_msg(const flit_object_type_t *t, const uint8_t *d, size_t n, int autoo)
{
    size_t hl = fl_obj_head_len(autoo != 0);
    if (n < 4 || n - 4 < hl)
        return;
    size_t total = le32(d);
    uint8_t *head = malloc(hl); /* exactly its words to ASan */
    FUZZ_CHECK(head != NULL);
    memcpy(head, d + 4, hl);
    struct fl_obj_msg m = {.len = 77};
    flit_status st =
        fl_obj_decode_msg(total >= hl ? head : NULL, total, ID, autoo != 0, t, &m);
    FUZZ_CHECK((st == FLIT_OK) == model_msg(head, total, autoo, t->pack != NULL));
    if (st == FLIT_OK) {
        FUZZ_CHECK(memcmp(&m.h, head, sizeof m.h) == 0 && m.len == total - hl);
        uint64_t e = 0;
        if (autoo)
            memcpy(&e, head + 16, 8);
        FUZZ_CHECK(m.epoch == e);
        struct fl_obj_msg x;
        FUZZ_CHECK(fl_obj_decode_msg(head, total, ID + 1, autoo != 0, t, &x) ==
                   FLIT_ERR_BAD_PACKET);
    } else {
        FUZZ_CHECK(m.len == 77); /* untouched */
    }
    free(head);
}

static void check_part(const uint8_t *d, size_t n, size_t max)
{
    if (n < 12)
        return;
    size_t len = le32(d), total = 3;
    uint64_t t;
    memcpy(&t, d + 4, 8);
    flit_status st = fl_obj_decode_part(d + 4, len, max, &total);
    int want = len > 8 && t > len - 8 && t <= max;
    FUZZ_CHECK((st == FLIT_OK) == want);
    FUZZ_CHECK(st == FLIT_OK ? total == t : total == 3);
}

static void check_move(const uint8_t *d, size_t n, int place)
{
    if (n < 9)
        return;
    uint32_t nranks = d[0];
    struct move mv = {7, 7}, in;
    memcpy(&in, d + 1, sizeof in);
    flit_status st = fl_obj_decode_move(d + 1, place != 0, nranks, &mv);
    int want = in.strategy == FLIT_OBJECT_REPLICATED ||
               (in.strategy == FLIT_OBJECT_OWNED && in.owner < nranks) ||
               (place && in.strategy == FLIT_OBJECT_AUTO);
    FUZZ_CHECK((st == FLIT_OK) == want);
    if (st == FLIT_OK)
        FUZZ_CHECK(mv.strategy == in.strategy && mv.owner == in.owner);
    else
        FUZZ_CHECK(mv.strategy == 7 && mv.owner == 7);
}

static void check_reply(const uint8_t *d, size_t n, int autoo)
{
    if (n < 4)
        return;
    uint32_t w;
    memcpy(&w, d, 4);
    flit_status st = FLIT_ERR_AGAIN, got = FLIT_ERR_AGAIN;
    uint32_t target = 5;
    st = fl_obj_decode_reply(w, autoo != 0, &got, &target);
    if (autoo && (w & REDIRECT_BIT)) {
        FUZZ_CHECK(st == FLIT_OK && got == REDIRECT && target == (w & ~REDIRECT_BIT));
    } else if (w < (uint32_t)FLIT_STATUS_COUNT) {
        FUZZ_CHECK(st == FLIT_OK && got == (flit_status)w && target == 5);
    } else {
        FUZZ_CHECK(st == FLIT_ERR_BAD_PACKET && got == FLIT_ERR_AGAIN && target == 5);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t how = data[0];
    flit_object_type_t t = {.state_size = 24, .ops = ops, .nops = 3};
    if (how & 16) {
        t.pack = pack;
        t.unpack = unpack;
    }
    FUZZ_CHECK(fl_obj_write_max(&t) == 100);
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    switch (how & 3) {
    case 0:
        check_msg(&t, d, n, how & 4);
        break;
    case 1:
        check_part(d, n, fl_obj_write_max(&t));
        break;
    case 2:
        check_move(d, n, how & 8);
        break;
    default:
        check_reply(d, n, how & 4);
        break;
    }
    return 0;
}
