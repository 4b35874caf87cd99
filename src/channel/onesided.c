/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided operations through the channel: a datagram transport whose
 * network moves memory itself (its struct fl_dgram_rma, dgram.h) offers
 * them to the RMA layer as the channel's struct fl_tp_onesided
 * (transport.h). The channel adds one thing: a peer it gave up is not
 * reached, so that every path agrees on who is down.
 */
#include "channel/channel.h"
#include "channel/state.h"

static bool os_reaches(struct fl_tp_ep *t, uint32_t peer)
{
    const struct fl_dgram_rma *r = t->ops->rma;
    return r && peer < t->size && !t->peers[peer].down && r->reaches(t->d, peer);
}

/* Why peer is not reached, or FLIT_OK. */
static flit_status reachable(struct fl_tp_ep *t, uint32_t peer)
{
    if (peer < t->size && t->peers[peer].down)
        return FLIT_ERR_PEER_DOWN;
    return os_reaches(t, peer) ? FLIT_OK : FLIT_ERR_NOT_SUPPORTED;
}

static flit_status os_expose(struct fl_tp_ep *t, void *addr, size_t len, unsigned access,
                             uint64_t *key_out, uint64_t *raddr_out)
{
    if (!t->ops->rma)
        return FLIT_ERR_NOT_SUPPORTED;
    return t->ops->rma->expose(t->d, addr, len, access, key_out, raddr_out);
}

static void os_unexpose(struct fl_tp_ep *t, uint64_t key)
{
    if (t->ops->rma)
        t->ops->rma->unexpose(t->d, key);
}

static flit_status os_put(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t raddr,
                          const void *src, size_t len)
{
    flit_status st = reachable(t, peer);
    return st != FLIT_OK ? st : t->ops->rma->put(t->d, peer, key, raddr, src, len);
}

static flit_status os_get(struct fl_tp_ep *t, uint32_t peer, uint64_t key, uint64_t raddr,
                          void *dst, size_t len)
{
    flit_status st = reachable(t, peer);
    return st != FLIT_OK ? st : t->ops->rma->get(t->d, peer, key, raddr, dst, len);
}

static flit_status os_put_early(struct fl_tp_ep *t, uint32_t peer, uint64_t key,
                                uint64_t raddr, const void *src, size_t len)
{
    const struct fl_dgram_rma *r = t->ops->rma;
    flit_status st = reachable(t, peer);
    if (st != FLIT_OK)
        return st;
    return r->put_early ? r->put_early(t->d, peer, key, raddr, src, len)
                        : r->put(t->d, peer, key, raddr, src, len);
}

/* A peer the channel gave up: its puts are not waited for. */
static flit_status os_settle(struct fl_tp_ep *t, uint32_t peer)
{
    const struct fl_dgram_rma *r = t->ops->rma;
    if (peer < t->size && t->peers[peer].down)
        return FLIT_ERR_PEER_DOWN;
    return r && r->settle ? r->settle(t->d, peer) : FLIT_OK;
}

/* Pulled messages where the network reads memory itself: from the size
   its transport says, never to a peer given up. */
static size_t os_pull_min(struct fl_tp_ep *t, uint32_t peer, bool *measure)
{
    const struct fl_dgram_rma *r = t->ops->rma;
    *measure = false;
    return r && r->pull_min && os_reaches(t, peer) ? r->pull_min(t->d, peer) : 0;
}

const struct fl_tp_onesided fl_chan_onesided = {
    .reaches = os_reaches,
    .expose = os_expose,
    .unexpose = os_unexpose,
    .put = os_put,
    .get = os_get,
    .put_early = os_put_early,
    .settle = os_settle,
    .pull_min = os_pull_min,
};
