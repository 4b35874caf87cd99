/*
 * Collectives the library needs on an endpoint: the barrier (dissemination,
 * ceil(log2 N) rounds of one message each) and the quiesce that destroy
 * runs, which makes sure nothing sent on the endpoint is still in flight.
 */
#include "am/am.h"

struct round_wait {
    uint32_t round, from;
};

static bool round_done(struct flit_ep *ep, void *arg)
{
    struct round_wait *w = arg;
    return ep->barrier_rounds[w->round] > 0 || fl_peer_is_down(&ep->peers[w->from]);
}

flit_status flit_barrier(flit_ep_t *ep)
{
    flit_status st = fl_ep_enter(ep);
    if (st != FLIT_OK)
        return st;
    uint32_t n = ep->size, me = ep->rank;
    struct round_wait w = {0, 0};
    for (uint32_t dist = 1; dist < n && st == FLIT_OK; dist <<= 1, w.round++) {
        st = fl_am_send_ctrl(ep, (me + dist) % n, FL_LANE_REQ, FL_CTRL_BARRIER,
                             w.round);
        w.from = (me + n - dist) % n;
        if (st == FLIT_OK)
            st = fl_progress_until(ep, round_done, &w, -1);
        if (st == FLIT_OK && ep->barrier_rounds[w.round] == 0)
            st = FLIT_ERR_PEER_DOWN;
        if (st == FLIT_OK)
            ep->barrier_rounds[w.round]--;
    }
    fl_ep_leave(ep);
    return st;
}

struct fin_wait {
    unsigned lane;
};

static bool all_fin(struct flit_ep *ep, void *arg)
{
    unsigned lane = ((struct fin_wait *)arg)->lane;
    for (uint32_t r = 0; r < ep->size; r++)
        if (!ep->peers[r].fin[lane] && !fl_peer_is_down(&ep->peers[r]))
            return false;
    return true;
}

/*
 * Every rank says "that was my last request" to every rank (itself too),
 * then waits to hear it from all: by then every request sent on the
 * endpoint has been handled and its reply sent. The same on the reply lane
 * drains the replies. Peers that died are not waited for.
 */
flit_status fl_am_quiesce(struct flit_ep *ep)
{
    for (unsigned lane = FL_LANE_REQ; lane < FL_LANES; lane++) {
        for (uint32_t r = 0; r < ep->size; r++) {
            flit_status st = fl_am_send_ctrl(ep, r, lane, FL_CTRL_FIN, 0);
            if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
                return st;
        }
        struct fin_wait w = {lane};
        flit_status st = fl_progress_until(ep, all_fin, &w, -1);
        if (st != FLIT_OK)
            return st;
    }
    return FLIT_OK;
}
