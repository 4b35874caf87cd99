/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit_ep_peer_info: how an endpoint reaches a peer. In a job of one, the
 * only peer is the rank itself, through the self transport; the call checks
 * its arguments like every other.
 */
#include <string.h>

#include "unit.h"

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));

    flit_peer_info_t info;
    memset(&info, 0x5a, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(flit_ep_peer_info(ep, flit_rank(0), &info));
    CHECK(strcmp(info.transport, "self") == 0);
    CHECK(info.address[0] == '\0');
    CHECK(info.max_packet >= FLIT_AM_MAX_MEDIUM);
    CHECK(info.datagram == 0); /* not a datagram transport */
    CHECK(info.down == 0);

    /* Bad input, and nothing written. */
    flit_peer_info_t untouched;
    memset(&untouched, 0x77, sizeof untouched);
    untouched.struct_size = sizeof untouched;
    CHECK_ST(flit_ep_peer_info(ep, flit_rank(1), &untouched), FLIT_ERR_RANK);
    CHECK(untouched.address[0] == 0x77);
    CHECK_ST(flit_ep_peer_info(NULL, flit_rank(0), &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_ep_peer_info(ep, flit_rank(0), NULL), FLIT_ERR_INVALID_ARG);
    untouched.struct_size = 1;
    CHECK_ST(flit_ep_peer_info(ep, flit_rank(0), &untouched), FLIT_ERR_INVALID_ARG);

    CHECK_OK(flit_finalize());
    CHECK_ST(flit_ep_peer_info(ep, flit_rank(0), &info), FLIT_ERR_FINALIZED);
    return 0;
}
