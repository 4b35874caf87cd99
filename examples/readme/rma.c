/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wraps docs/rma.md's one-sided fragment for docs_snippets: the owner's
 * notification handler at file scope, then exporting a region and putting
 * into it from a function that has an endpoint and a message. The inbox the
 * handler notes puts in is the reader's own. check() is the README's
 * complete program's.
 */
#include <flit/flit.h>

struct inbox {
    void *base;
};
void inbox_note(struct inbox *in, uint32_t from, const void *data, size_t len);
void check(flit_status st, const char *what);
void readme_rma(flit_ep_t *ep, const void *msg, size_t len);

static struct inbox inbox;

/* README: file scope */

void readme_rma(flit_ep_t *ep, const void *msg, size_t len)
{
    /* README: body */
}
