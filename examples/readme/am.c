/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wraps docs/am.md's fragment for the snippet tests: the three kinds of
 * request, sent from a function that has an endpoint, a destination, a
 * payload and an offset in the destination's segment. check() is the
 * README's complete program's.
 */
#include <flit/flit.h>

enum { H_ECHO = 5 };
void check(flit_status st, const char *what);
void docs_am(flit_ep_t *ep, flit_rank_t dest, const void *buf, size_t n, uint64_t offset);

/* README: file scope */

void docs_am(flit_ep_t *ep, flit_rank_t dest, const void *buf, size_t n, uint64_t offset)
{
    /* README: body */
}
