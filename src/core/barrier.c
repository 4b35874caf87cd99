/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The barrier (dissemination: ceil(log2 N) rounds of one packet each) and
 * the quiesce, on the core's control packets (barrier.h).
 */
#include "core/barrier.h"

#include "core/packet.h"
#include "platform/le.h"
#include "util/log.h"

#define PARITY (1u << 31)

static void ctrl_encode(uint8_t *b, const struct fl_ctrl *c)
{
    b[0] = FL_WIRE_VERSION;
    b[1] = FL_OP_CTRL;
    b[2] = (uint8_t)c->kind;
    b[3] = 0;
    fl_put32(b + 4, c->arg);
    fl_put64(b + 8, c->value);
}

bool fl_ctrl_decode(const void *pkt, size_t len, struct fl_ctrl *c)
{
    const uint8_t *b = pkt;
    if (len != FL_CTRL_LEN || b[0] != FL_WIRE_VERSION || b[1] != FL_OP_CTRL || b[3] != 0)
        return false;
    c->kind = b[2];
    c->arg = fl_get32(b + 4);
    c->value = fl_get64(b + 8);
    switch (c->kind) {
    case FL_CTRL_BARRIER:
        return c->arg < 32 && c->value <= 1;
    case FL_CTRL_FIN:
        return c->arg == 0 && c->value == 0;
    case FL_CTRL_MAX:
        return (c->arg & ~PARITY) < 32;
    default:
        return false;
    }
}

static flit_status ctrl_send(struct flit_ep *ep, uint32_t dst, unsigned lane,
                             unsigned kind, uint32_t arg, uint64_t value)
{
    void *pkt;
    flit_status st = fl_ep_reserve(ep, dst, lane, FL_CTRL_LEN, 0, &pkt);
    if (st != FLIT_OK)
        return st;
    struct fl_ctrl c = {kind, arg, value};
    ctrl_encode(pkt, &c);
    fl_ep_commit(ep, dst, lane, pkt, FL_CTRL_LEN, 0);
    return FLIT_OK;
}

static void ctrl_recv(struct flit_ep *ep, uint32_t src, unsigned lane, void *pkt,
                      size_t len)
{
    struct fl_ctrl c;
    if (!fl_ctrl_decode(pkt, len, &c)) {
        FL_COUNT(ep->stats.refused_packets, 1);
        fl_warn("refused a malformed control packet from rank %u (%zu bytes)", src, len);
        return;
    }
    if (c.kind == FL_CTRL_BARRIER) {
        ep->barrier_rounds[c.arg]++;
        ep->barrier_taint |= (uint32_t)c.value << c.arg;
    } else if (c.kind == FL_CTRL_FIN) {
        ep->peers[src].fin[lane] = true;
        ep->peers[src].paired = true; /* it says goodbye: it hears ours */
    } else {
        struct fl_max_slot *m = &ep->max_rounds[c.arg & ~PARITY][c.arg >> 31];
        if (m->full) { /* the same round twice: not a rank of ours */
            FL_COUNT(ep->stats.refused_packets, 1);
            return;
        }
        m->full = true;
        m->value = c.value;
    }
}

/* Control packets carry nothing the program sent: a reclaimed one needs
   no word, a returned one is malformed (nobody refuses them). */
static bool ctrl_back(struct flit_ep *ep, uint32_t peer, void *pkt, size_t len,
                      flit_status reason, bool reclaimed)
{
    (void)ep, (void)peer, (void)pkt, (void)len, (void)reason;
    return reclaimed;
}

void fl_ctrl_init(void)
{
    fl_op_register(FL_OP_CTRL, ctrl_recv, ctrl_back);
}

/* ---- the barrier ---- */

struct round_wait {
    uint32_t round, from;
};

static bool round_done(struct flit_ep *ep, void *arg)
{
    struct round_wait *w = arg;
    return ep->barrier_rounds[w->round] > 0 || fl_peer_is_down(&ep->peers[w->from]);
}

/*
 * Dissemination: round k sends to me + 2^k and waits for me - 2^k. A call
 * that fails part-way (a send meeting this process's own shortage at first
 * contact: FLIT_ERR_SYSTEM, FLIT_ERR_NO_MEMORY) keeps its place, and the
 * next call goes on from there: the peers of the rounds done already have
 * their messages, and would count a second one towards the next barrier.
 */
flit_status flit_barrier(flit_ep_t *ep)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    uint32_t n = ep->size, me = ep->rank;
    struct round_wait w = {ep->barrier_resume, 0};
    bool sent = ep->barrier_resume_sent;
    for (uint32_t dist = 1u << w.round; dist < n; dist <<= 1, w.round++) {
        if (!sent)
            st = ctrl_send(ep, (me + dist) % n, FL_LANE_REQ, FL_CTRL_BARRIER, w.round, 0);
        sent = st == FLIT_OK;
        w.from = (me + n - dist) % n;
        if (st == FLIT_OK)
            st = fl_progress_until(ep, round_done, &w, -1);
        if (st == FLIT_OK && ep->barrier_rounds[w.round] == 0)
            st = FLIT_ERR_PEER_DOWN;
        if (st == FLIT_OK)
            ep->barrier_rounds[w.round]--;
        if (st != FLIT_OK)
            break;
        sent = false;
    }
    ep->barrier_resume = st == FLIT_OK ? 0 : w.round;
    ep->barrier_resume_sent = st == FLIT_OK ? false : sent;
    fl_ep_leave(ep);
    return st;
}

/* ---- the maximum over every rank ---- */

struct max_wait {
    struct fl_max_slot *slot;
    uint32_t from;
};

static bool max_heard(struct flit_ep *ep, void *arg)
{
    struct max_wait *w = arg;
    return w->slot->full || fl_peer_is_down(&ep->peers[w->from]);
}

/* Resumable as flit_barrier is: a call that failed part-way is taken up
   by the next (the caller's value joins the maximum gathered so far). */
flit_status fl_ep_allmax(struct flit_ep *ep, uint64_t *max)
{
    uint32_t n = ep->size, me = ep->rank;
    bool resume = ep->max_resume.active, sent = resume && ep->max_resume.sent;
    unsigned parity = (resume ? ep->max_seq - 1 : ep->max_seq++) & 1;
    uint32_t round = resume ? ep->max_resume.round : 0;
    if (resume && ep->max_resume.value > *max)
        *max = ep->max_resume.value;
    flit_status st = FLIT_OK;
    for (uint32_t dist = 1u << round; dist < n; dist <<= 1, round++) {
        if (!sent)
            st = ctrl_send(ep, (me + dist) % n, FL_LANE_REQ, FL_CTRL_MAX,
                           round | (uint32_t)parity << 31, *max);
        sent = st == FLIT_OK;
        struct max_wait w = {&ep->max_rounds[round][parity], (me + n - dist) % n};
        if (st == FLIT_OK)
            st = fl_progress_until(ep, max_heard, &w, -1);
        if (st == FLIT_OK && !w.slot->full)
            st = FLIT_ERR_PEER_DOWN;
        if (st != FLIT_OK)
            break;
        if (w.slot->value > *max)
            *max = w.slot->value;
        w.slot->full = false;
        sent = false;
    }
    ep->max_resume.active = st != FLIT_OK;
    ep->max_resume.sent = sent;
    ep->max_resume.round = round;
    ep->max_resume.value = *max;
    return st;
}

/* ---- the end of traffic ---- */

/*
 * The quiesce's barrier: the user's, except that a rank that died on the way
 * does not stop it. A round whose sender is down is passed, and from then
 * on this rank's packets say so (value 1), as do those of every rank that
 * hears it: whoever ends untainted heard, through live ranks only, that
 * every rank got here. Returns whether this rank did.
 */
static flit_status quiesce_barrier(struct flit_ep *ep, bool *whole)
{
    uint32_t n = ep->size, me = ep->rank;
    bool tainted = false;
    struct round_wait w = {0, 0};
    for (uint32_t dist = 1; dist < n; dist <<= 1, w.round++) {
        flit_status st = ctrl_send(ep, (me + dist) % n, FL_LANE_REQ, FL_CTRL_BARRIER,
                                   w.round, tainted);
        if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
            return st;
        w.from = (me + n - dist) % n;
        st = fl_progress_until(ep, round_done, &w, -1);
        if (st != FLIT_OK)
            return st;
        if (ep->barrier_rounds[w.round] == 0) {
            tainted = true; /* its sender is down */
        } else {
            ep->barrier_rounds[w.round]--;
            tainted |= (ep->barrier_taint >> w.round) & 1;
        }
    }
    ep->barrier_taint = 0;
    *whole = !tainted;
    return FLIT_OK;
}

/* Our goodbyes on lanes up to `lane` to each peer paired: a peer paired
   late (its goodbye came first) gets those of the lanes already done too. */
static flit_status send_fins(struct flit_ep *ep, unsigned lane)
{
    for (uint32_t r = 0; r < ep->size; r++) {
        struct fl_peer *p = &ep->peers[r];
        for (unsigned l = FL_LANE_REQ; p->paired && l <= lane; l++) {
            if (p->fin_sent[l])
                continue;
            flit_status st = ctrl_send(ep, r, l, FL_CTRL_FIN, 0, 0);
            if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
                return st;
            p->fin_sent[l] = true;
        }
    }
    return FLIT_OK;
}

static bool fins_owed(const struct flit_ep *ep, unsigned lane)
{
    for (uint32_t r = 0; r < ep->size; r++) {
        const struct fl_peer *p = &ep->peers[r];
        if (p->paired && !p->fin_sent[lane] && !fl_peer_is_down(p))
            return true;
    }
    return false;
}

/* Each peer we say goodbye to has said it on the lane (or is down), or one
   more was paired since our goodbyes went (ctrl_recv). */
static bool lane_done(struct flit_ep *ep, void *arg)
{
    unsigned lane = *(unsigned *)arg;
    if (fins_owed(ep, lane))
        return true;
    for (uint32_t r = 0; r < ep->size; r++) {
        const struct fl_peer *p = &ep->peers[r];
        if (p->paired && !p->fin[lane] && !fl_peer_is_down(p))
            return false;
    }
    return true;
}

/*
 * Goodbyes only where a pair carried something: a rank of a large job talks
 * to few, and a FIN to every rank set every pair up at the end (rings mapped,
 * channel windows made, N^2 in all). Both sides of a pair must agree whether
 * it carried anything, and they do once
 *   1. every packet a rank sent has reached its receiver's transport
 *      (->settled: acknowledged; on shared memory a commit is there), and
 *   2. every rank knows every rank got that far (the barrier after it):
 * then ->in_contact gives the same answer on both sides, and keeps it:
 * after the barrier only FINs and replies go out, to pairs in contact.
 * Where the barrier met a dead rank, 2 cannot be known, and a rank that
 * heard it says goodbye to every rank and waits for every rank alive, as
 * before; one whose goodbye reaches a rank that did not pair with it pairs
 * it there (ctrl_recv), so the two still meet.
 *
 * From step 1 on (ep->quiescing), a rank we never had a packet with that
 * goes away is not reported down (fl_ep_peer_down): it owed us nothing,
 * and a clean exit of it is no longer announced to us by its FIN.
 */
flit_status fl_ep_quiesce(struct flit_ep *ep)
{
    ep->quiescing = true;
    flit_status st = fl_progress_until(ep, fl_ep_settled, NULL, -1);
    bool whole = false;
    if (st == FLIT_OK)
        st = quiesce_barrier(ep, &whole);
    if (st != FLIT_OK)
        return st;
    for (uint32_t r = 0; r < ep->size; r++) {
        struct fl_peer *p = &ep->peers[r];
        p->paired = p->paired || !whole || p->tp->in_contact(p->tpe, r);
    }
    for (unsigned lane = FL_LANE_REQ; lane < FL_LANES; lane++) {
        do {
            st = send_fins(ep, lane);
            if (st == FLIT_OK)
                st = fl_progress_until(ep, lane_done, &lane, -1);
            if (st != FLIT_OK)
                return st;
        } while (fins_owed(ep, lane));
    }
    return FLIT_OK;
}
