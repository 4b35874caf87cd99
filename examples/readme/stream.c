/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wraps docs/streams.md's stream fragment for docs_snippets: the receiver's
 * handler at file scope, then registering it and sending a message from a
 * function that has an endpoint, a destination and a payload. The table
 * the handler files messages in is the reader's own. check() is the
 * README's complete program's.
 */
#include <flit/flit.h>

enum { H_PUT = 3 };
struct table {
    char *slots;
};
void *table_slot(struct table *tab, uint32_t key, uint32_t len);
void table_drop(struct table *tab, uint32_t key);
void check(flit_status st, const char *what);
void readme_stream(flit_ep_t *ep, flit_rank_t dest, const void *payload, uint32_t n);

static struct table tab;

/* README: file scope */

void readme_stream(flit_ep_t *ep, flit_rank_t dest, const void *payload, uint32_t n)
{
    /* README: body */
}
