/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The toy transport (toy_transport.c, defined only in this folder) in a
 * build of the library whose list has it: with FLIT_TRANSPORT=toy every
 * other rank of this host is served by it (the peer info names it, and its
 * datagram size is its own setting, FLIT_TOY_MTU), messages of every size
 * arrive whole and in order from everyone, and its counters are read by
 * name ("toy.datagrams_sent"). A bad FLIT_TOY_MTU is refused by flit_init.
 */
#include <stdlib.h>
#include <string.h>

#include "mp.h"

#define ROUNDS 200
#define BIG    (40u << 10) /* larger than a datagram: cut into pieces */

static uint32_t got[64]; /* messages from each rank, in order */
static uint8_t payload[BIG];

static void on_msg(flit_token_t *tok, void *buf, size_t len, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)tok, (void)user;
    if (nargs != 2)
        FAIL("a message with %u arguments", nargs);
    uint32_t src = args[0], seq = args[1];
    if (src >= 64 || seq != got[src])
        FAIL("message %u from rank %u arrived as number %u", seq, src, got[src]);
    if (mp_pattern_check(buf, len, src * 1000003u + seq) != len)
        FAIL("message %u from rank %u: its %zu bytes differ", seq, src, len);
    got[src]++;
}

int main(void)
{
    const char *want = getenv("FLIT_TOY_EXPECT");
    if (want && strcmp(want, "refused") == 0) {
        CHECK_ST(flit_init(NULL), FLIT_ERR_CONFIG);
        return 0;
    }
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    flit_rank_t me = flit_job_rank();
    struct {
        uint32_t idx;
    } n = {flit_job_size()};
    CHECK(n.idx <= 64);
    CHECK_OK(flit_am_register(ep, flit_handler(1), on_msg, NULL));
    CHECK_OK(flit_barrier(ep));
    size_t mtu = (size_t)atoll(getenv("FLIT_TOY_MTU") ? getenv("FLIT_TOY_MTU") : "8192");
    for (uint32_t r = 0; r < n.idx; r++) {
        flit_peer_info_t info = {.struct_size = sizeof info};
        CHECK_OK(flit_ep_peer_info(ep, (flit_rank_t){r}, &info));
        const char *tp = r == me.idx ? "self" : "toy";
        if (strcmp(info.transport, tp) != 0)
            FAIL("rank %u is served by %s, expected %s", r, info.transport, tp);
        if (r != me.idx && info.datagram != mtu)
            FAIL("toy's datagram to rank %u is %zu bytes, FLIT_TOY_MTU %zu", r,
                 info.datagram, mtu);
    }
    for (uint32_t seq = 0; seq < ROUNDS; seq++)
        for (uint32_t r = 0; r < n.idx; r++) {
            size_t len = (seq * 7919u + r) % (BIG + 1);
            mp_pattern_fill(payload, len, me.idx * 1000003u + seq);
            uint32_t args[2] = {me.idx, seq};
            CHECK_OK(flit_am_medium(ep, (flit_rank_t){r}, flit_handler(1), payload, len,
                                    args, 2, 0));
        }
    for (uint32_t r = 0; r < n.idx; r++)
        MP_WAIT(ep, got[r] == ROUNDS);
    flit_counter_t c;
    CHECK_OK(flit_ep_counter(ep, "toy.datagrams_sent", &c));
    if (n.idx > 1 && c.value < ROUNDS)
        FAIL("toy.datagrams_sent is %llu after %u rounds", (unsigned long long)c.value,
             ROUNDS);
    CHECK_ST(flit_ep_counter(ep, "toy.no_such", &c), FLIT_ERR_NOT_FOUND);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    if (me.idx == 0)
        printf("toy: %u ranks, %u messages each way, %llu datagrams sent by rank 0\n",
               n.idx, ROUNDS, (unsigned long long)c.value);
    return 0;
}
