/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Returned messages across processes (2 ranks), for each kind: short,
 * medium, long. Every refusal must come back to the sender's
 * returned-message handler with the reason and the message as sent (peer,
 * handler, kind, request or reply, arguments, medium payload, long length
 * and offset), and must not run any handler on the destination.
 *
 *  A  handler not registered on the destination      FLIT_ERR_NO_HANDLER
 *  B  handler index 100 (and 65535) on a destination
 *     whose table has 64 entries                     FLIT_ERR_BAD_HANDLER
 *  C  the sender holds a wrong tag for the destination
 *     (flit_ep_set_peer_tag)                         FLIT_ERR_BAD_TAG;
 *     with the tag restored, the same messages are delivered
 *  D  the destination changes its own tag (flit_ep_set_tag): messages from
 *     the other rank, and from itself, come back     FLIT_ERR_BAD_TAG;
 *     with the new tag set for it, they are delivered
 *  E  a request handler replies to a handler the requester has not
 *     registered: the reply comes back to the replier with is_reply = 1
 *  F  the same with a reply to handler 100               FLIT_ERR_BAD_HANDLER
 *
 * A, B, E and F also go to the sending rank itself (the loopback path). Phases are
 * separated with flit_barrier; in the end the endpoint's returned counters
 * match. Run it with FLIT_SHM_BULK=copy too: long payloads in pieces are
 * refused on their last piece.
 */
#include "mp.h"

enum {
    H_OK = 1,     /* +kind: counts and checks what is delivered */
    H_BOUNCE = 4, /* +kind: replies with that kind to the handler in args[0] */
    H_TAGINFO = 7,
    H_UNREG = 8,       /* never registered */
    H_UNREG_REPLY = 9, /* never registered */
    H_BAD = 100,       /* outside the 64-entry tables */
};

#define NHANDLERS  64u
#define MEDIUM_LEN 1000u
#define LONG_LEN   5000u
#define SEG_SIZE   (1u << 20)
#define MAX_REC    32

struct rec {
    flit_returned_t r;
    uint32_t args[FLIT_AM_MAX_ARGS];
    uint8_t payload[MEDIUM_LEN];
};

static struct {
    flit_ep_t *ep;
    uint8_t *seg;
    uint32_t me, other;
    uint64_t my_tag, other_tag;
    int have_other_tag;
    struct rec recs[MAX_REC];
    unsigned nrec;
    unsigned delivered;                      /* H_OK requests run here this phase */
    uint64_t returned_to_us, returned_by_us; /* what the counters must say */
    int phase;
} g;

static const unsigned kind_nargs[3] = {5, 3, 16};
static const size_t kind_len[3] = {0, MEDIUM_LEN, LONG_LEN};

/* Arguments and payloads are functions of (phase, sender, kind, reply). */
static uint32_t arg_of(uint32_t src, flit_am_kind kind, int reply, unsigned i)
{
    return (uint32_t)mp_mix((uint64_t)g.phase, src, (uint64_t)kind * 2 + (uint64_t)reply,
                            i);
}

static uint64_t seed_of(uint32_t src, flit_am_kind kind, int reply)
{
    return mp_mix((uint64_t)g.phase, src, (uint64_t)kind * 2 + (uint64_t)reply, 99);
}

/* Where src's long lands: apart from every other sender's. */
static uint64_t long_offset_of(uint32_t src, flit_am_kind kind, int reply)
{
    return ((uint64_t)(g.phase * 8 + (int)kind * 2 + reply) * 2 + src) * 8192u;
}

static uint64_t long_offset(flit_am_kind kind, int reply)
{
    return long_offset_of(g.me, kind, reply);
}

static void fill(uint32_t *a, uint8_t *pay, flit_am_kind kind, int reply)
{
    for (unsigned i = 0; i < kind_nargs[kind]; i++)
        a[i] = arg_of(g.me, kind, reply, i);
    mp_pattern_fill(pay, kind_len[kind], seed_of(g.me, kind, reply));
}

static const char *phase_name(void)
{
    static const char *const names[] = {
        "A", "B", "C", "D (rank 0's own tag)", "D (rank 1's own tag)", "E", "F"};
    return g.phase < 7 ? names[g.phase] : "?";
}

/* ---- handlers ---- */

static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)user;
    CHECK(ep == g.ep);
    if (g.nrec >= MAX_REC)
        FAIL("phase %s: more than %d returned messages", phase_name(), MAX_REC);
    struct rec *c = &g.recs[g.nrec++];
    c->r = *r;
    CHECK(r->nargs <= FLIT_AM_MAX_ARGS);
    if (r->nargs)
        memcpy(c->args, r->args, r->nargs * sizeof *r->args);
    c->r.args = c->args;
    if (r->payload) {
        CHECK(r->nbytes <= MEDIUM_LEN);
        memcpy(c->payload, r->payload, r->nbytes);
        c->r.payload = c->payload;
    }
    /* Returned-message handlers may not send. */
    CHECK_ST(flit_am_short(ep, flit_rank(g.me), flit_handler(H_OK), NULL, 0, 0),
             FLIT_ERR_IN_HANDLER);
}

static void on_ok(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user)
{
    flit_am_kind kind = (flit_am_kind)(intptr_t)user;
    uint32_t src = flit_token_rank(t).idx;
    CHECK(nargs == kind_nargs[kind]);
    for (unsigned i = 0; i < nargs; i++)
        if (args[i] != arg_of(src, kind, 0, i))
            FAIL("phase %s: %s from rank %u: arg %u differs", phase_name(),
                 flit_am_kind_name(kind, 0), src, i);
    CHECK(nbytes == kind_len[kind]);
    if (kind == FLIT_AM_LONG)
        CHECK((uint8_t *)buf == g.seg + long_offset_of(src, kind, 0));
    if (mp_pattern_check(buf, nbytes, seed_of(src, kind, 0)) != nbytes)
        FAIL("phase %s: %s from rank %u: payload differs", phase_name(),
             flit_am_kind_name(kind, 0), src);
    g.delivered++;
}

static void on_taginfo(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                       unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(nargs == 2);
    g.other_tag = (uint64_t)args[0] << 32 | args[1];
    g.have_other_tag = 1;
}

/* Replies with its kind to the handler named in args[0]. */
static void on_bounce(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    flit_am_kind kind = (flit_am_kind)(intptr_t)user;
    CHECK(nargs == 1);
    flit_handler_t h = flit_handler((uint16_t)args[0]);
    uint32_t a[FLIT_AM_MAX_ARGS];
    static uint8_t pay[LONG_LEN];
    fill(a, pay, kind, 1);
    unsigned n = kind_nargs[kind];
    if (kind == FLIT_AM_SHORT)
        CHECK_OK(flit_am_reply_short(t, h, a, n));
    else if (kind == FLIT_AM_MEDIUM)
        CHECK_OK(flit_am_reply_medium(t, h, pay, MEDIUM_LEN, a, n));
    else
        CHECK_OK(flit_am_reply_long(t, h, pay, LONG_LEN, long_offset(kind, 1), a, n));
}

/* ---- sending and checking ---- */

static void send_kind(uint32_t dst, flit_handler_t h, flit_am_kind kind)
{
    uint32_t a[FLIT_AM_MAX_ARGS];
    uint8_t pay[LONG_LEN];
    fill(a, pay, kind, 0);
    flit_rank_t d = flit_rank(dst);
    unsigned n = kind_nargs[kind];
    if (kind == FLIT_AM_SHORT)
        CHECK_OK(flit_am_short(g.ep, d, h, a, n, 0));
    else if (kind == FLIT_AM_MEDIUM)
        CHECK_OK(flit_am_medium(g.ep, d, h, pay, MEDIUM_LEN, a, n, 0));
    else
        CHECK_OK(flit_am_long(g.ep, d, h, pay, LONG_LEN, long_offset(kind, 0), a, n, 0));
}

/* One message of each kind to handler h (h + kind when per_kind). */
static void send_all(uint32_t dst, uint16_t h, int per_kind)
{
    for (int k = 0; k < 3; k++)
        send_kind(dst, flit_handler((uint16_t)(h + (per_kind ? k : 0))), (flit_am_kind)k);
}

/* Requests to dst's bouncers, whose replies go to handler reply_to here. */
static void send_bounces(uint32_t dst, uint16_t reply_to)
{
    uint32_t a[1] = {reply_to};
    for (int k = 0; k < 3; k++)
        CHECK_OK(flit_am_short(g.ep, flit_rank(dst),
                               flit_handler((uint16_t)(H_BOUNCE + k)), a, 1, 0));
}

/* The record for (peer, kind, reply) must say exactly this. */
static void expect(flit_status reason, uint32_t peer, uint16_t h, flit_am_kind kind,
                   int reply)
{
    const struct rec *c = NULL;
    for (unsigned i = 0; i < g.nrec && !c; i++)
        if (g.recs[i].r.peer.idx == peer && g.recs[i].r.kind == kind &&
            g.recs[i].r.is_reply == reply && g.recs[i].r.handler.idx == h)
            c = &g.recs[i];
    char what[120];
    snprintf(what, sizeof what, "phase %s: %s to rank %u, handler %u", phase_name(),
             flit_am_kind_name(kind, reply), peer, h);
    if (!c)
        FAIL("%s: not returned (or returned naming another peer, handler or kind)", what);
    const flit_returned_t *r = &c->r;
    if (r->reason != reason)
        FAIL("%s: returned with %s, expected %s", what, flit_status_name(r->reason),
             flit_status_name(reason));
    if (r->nargs != kind_nargs[kind])
        FAIL("%s: returned with %u args, sent %u", what, r->nargs, kind_nargs[kind]);
    for (unsigned i = 0; i < r->nargs; i++)
        if (r->args[i] != arg_of(g.me, kind, reply, i))
            FAIL("%s: returned arg %u is %#x, sent %#x", what, i, r->args[i],
                 arg_of(g.me, kind, reply, i));
    switch (kind) {
    case FLIT_AM_SHORT:
        if (r->payload || r->nbytes)
            FAIL("%s: returned with a payload (%zu bytes)", what, r->nbytes);
        break;
    case FLIT_AM_MEDIUM:
        if (!r->payload || r->nbytes != MEDIUM_LEN)
            FAIL("%s: returned payload %p, %zu bytes; sent %u", what, r->payload,
                 r->nbytes, MEDIUM_LEN);
        if (mp_pattern_check(r->payload, r->nbytes, seed_of(g.me, kind, reply)) !=
            r->nbytes)
            FAIL("%s: returned payload differs from what was sent", what);
        break;
    default:
        if (r->payload || r->nbytes != LONG_LEN || r->offset != long_offset(kind, reply))
            FAIL("%s: returned payload %p, %zu bytes at offset %llu; sent %u at %llu",
                 what, r->payload, r->nbytes, (unsigned long long)r->offset, LONG_LEN,
                 (unsigned long long)long_offset(kind, reply));
    }
}

static void expect_all(flit_status reason, uint32_t peer, uint16_t h, int per_kind,
                       int reply)
{
    for (int k = 0; k < 3; k++)
        expect(reason, peer, (uint16_t)(h + (per_kind ? k : 0)), (flit_am_kind)k, reply);
}

/* Waits for nrec returns and ndeliv deliveries here. */
static void wait_for(unsigned nrec, unsigned ndeliv)
{
    MP_WAIT(g.ep, g.nrec >= nrec && g.delivered >= ndeliv);
}

/* Ends a phase in which this rank refused nrefused messages. */
static void end_phase(unsigned nrec, unsigned ndeliv, unsigned nrefused)
{
    wait_for(nrec, ndeliv);
    CHECK_OK(flit_barrier(g.ep));
    if (g.nrec != nrec || g.delivered != ndeliv)
        FAIL("phase %s: %u returned, %u delivered; expected %u and %u", phase_name(),
             g.nrec, g.delivered, nrec, ndeliv);
    g.returned_to_us += nrec;
    g.returned_by_us += nrefused;
    flit_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_ep_stats(g.ep, &s));
    if (s.returned_to_us != g.returned_to_us || s.returned_by_us != g.returned_by_us)
        FAIL("after phase %s: counters say %llu returned to us, %llu by us; "
             "expected %llu and %llu",
             phase_name(), (unsigned long long)s.returned_to_us,
             (unsigned long long)s.returned_by_us, (unsigned long long)g.returned_to_us,
             (unsigned long long)g.returned_by_us);
    printf("returned: rank %u phase %s OK\n", g.me, phase_name());
    g.nrec = 0;
    g.delivered = 0;
    g.phase++;
    CHECK_OK(flit_barrier(g.ep));
}

/* D, with role changing its own tag. */
static void phase_own_tag(uint32_t role)
{
    uint64_t x = g.my_tag ^ 0x5a5a5a5a00000000ull ^ (role + 1);
    if (g.me == role)
        CHECK_OK(flit_ep_set_tag(g.ep, x));
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == role) {
        uint64_t t;
        CHECK_OK(flit_ep_tag(g.ep, &t));
        CHECK(t == x);
        send_all(g.me, H_OK, 1); /* our own old tag for ourselves */
        wait_for(3, 0);
        expect_all(FLIT_ERR_BAD_TAG, g.me, H_OK, 1, 0);
        g.nrec = 0;
        g.returned_to_us += 3;
        CHECK_OK(flit_ep_set_peer_tag(g.ep, flit_rank(g.me), x));
        send_all(g.me, H_OK, 1);
        end_phase(0, 6, 6); /* 3 from ourselves, 3 from the other */
        CHECK_OK(flit_ep_set_tag(g.ep, g.my_tag));
        CHECK_OK(flit_ep_set_peer_tag(g.ep, flit_rank(g.me), g.my_tag));
    } else {
        send_all(role, H_OK, 1);
        wait_for(3, 0);
        expect_all(FLIT_ERR_BAD_TAG, role, H_OK, 1, 0);
        CHECK_OK(flit_ep_set_peer_tag(g.ep, flit_rank(role), x));
        send_all(role, H_OK, 1);
        end_phase(3, 0, 0);
        CHECK_OK(flit_ep_set_peer_tag(g.ep, flit_rank(role), g.other_tag));
    }
    CHECK_OK(flit_barrier(g.ep));
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    if (flit_job_size() != 2) {
        fprintf(stderr, "returned runs with 2 ranks\n");
        return TEST_SKIP;
    }
    g.other = 1 - g.me;
    flit_ep_params_t p = {.field_mask =
                              FLIT_EP_PARAM_HANDLER_COUNT | FLIT_EP_PARAM_SEGMENT,
                          .handler_count = NHANDLERS,
                          .segment_size = SEG_SIZE};
    CHECK_OK(flit_ep_create(&p, &g.ep));
    void *seg;
    size_t seg_size;
    CHECK_OK(flit_ep_segment(g.ep, &seg, &seg_size));
    CHECK(seg_size == SEG_SIZE);
    g.seg = seg;
    CHECK_OK(flit_am_set_returned_handler(g.ep, on_returned, NULL));
    for (int k = 0; k < 3; k++) {
        CHECK_OK(flit_am_register(g.ep, flit_handler((uint16_t)(H_OK + k)), on_ok,
                                  (void *)(intptr_t)k));
        CHECK_OK(flit_am_register(g.ep, flit_handler((uint16_t)(H_BOUNCE + k)), on_bounce,
                                  (void *)(intptr_t)k));
    }
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_TAGINFO), on_taginfo, NULL));
    CHECK_ST(flit_am_register(g.ep, flit_handler(H_BAD), on_ok, NULL),
             FLIT_ERR_BAD_HANDLER);
    CHECK_OK(flit_ep_tag(g.ep, &g.my_tag));
    CHECK_OK(flit_barrier(g.ep));
    uint32_t ta[2] = {(uint32_t)(g.my_tag >> 32), (uint32_t)g.my_tag};
    CHECK_OK(flit_am_short(g.ep, flit_rank(g.other), flit_handler(H_TAGINFO), ta, 2, 0));
    MP_WAIT(g.ep, g.have_other_tag);
    g.delivered = 0;
    CHECK_OK(flit_barrier(g.ep));

    /* A: not registered; to the other rank and to ourselves. */
    send_all(g.other, H_UNREG, 0);
    send_all(g.me, H_UNREG, 0);
    wait_for(6, 0);
    expect_all(FLIT_ERR_NO_HANDLER, g.other, H_UNREG, 0, 0);
    expect_all(FLIT_ERR_NO_HANDLER, g.me, H_UNREG, 0, 0);
    end_phase(6, 0, 6);

    /* B: outside the 64-entry table. */
    send_all(g.other, H_BAD, 0);
    send_all(g.me, H_BAD, 0);
    send_kind(g.other, flit_handler(65535), FLIT_AM_SHORT);
    wait_for(7, 0);
    expect_all(FLIT_ERR_BAD_HANDLER, g.other, H_BAD, 0, 0);
    expect_all(FLIT_ERR_BAD_HANDLER, g.me, H_BAD, 0, 0);
    expect(FLIT_ERR_BAD_HANDLER, g.other, 65535, FLIT_AM_SHORT, 0);
    end_phase(7, 0, 7);

    /* C: a wrong tag held for the other rank, then the right one again. */
    CHECK_OK(flit_ep_set_peer_tag(g.ep, flit_rank(g.other), ~g.other_tag));
    send_all(g.other, H_OK, 1);
    wait_for(3, 0);
    expect_all(FLIT_ERR_BAD_TAG, g.other, H_OK, 1, 0);
    CHECK_OK(flit_ep_set_peer_tag(g.ep, flit_rank(g.other), g.other_tag));
    send_all(g.other, H_OK, 1);
    end_phase(3, 3, 3);

    /* D: the destination changes its own tag; each rank in turn. */
    phase_own_tag(0);
    phase_own_tag(1);

    /* E: replies to a handler the requester has not registered. */
    send_bounces(g.other, H_UNREG_REPLY);
    send_bounces(g.me, H_UNREG_REPLY);
    wait_for(6, 0);
    expect_all(FLIT_ERR_NO_HANDLER, g.other, H_UNREG_REPLY, 0, 1);
    expect_all(FLIT_ERR_NO_HANDLER, g.me, H_UNREG_REPLY, 0, 1);
    end_phase(6, 0, 6);

    /* F: replies to a handler outside the requester's table. */
    send_bounces(g.other, H_BAD);
    send_bounces(g.me, H_BAD);
    wait_for(6, 0);
    expect_all(FLIT_ERR_BAD_HANDLER, g.other, H_BAD, 0, 1);
    expect_all(FLIT_ERR_BAD_HANDLER, g.me, H_BAD, 0, 1);
    end_phase(6, 0, 6);

    CHECK_OK(flit_finalize());
    printf("returned: rank %u OK\n", g.me);
    return 0;
}
