/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wraps docs/tagged.md's tagged fragment for docs_snippets: a function that
 * has an endpoint, data to send and a buffer to receive into. check() is
 * the README's complete program's.
 */
#include <flit/tagged.h>

enum { H_TAGGED = 4 };
void check(flit_status st, const char *what);
void readme_tagged(flit_ep_t *ep, const void *data, size_t len);

/* README: file scope */

void readme_tagged(flit_ep_t *ep, const void *data, size_t len)
{
    char buf[256];
    /* README: body */
}
