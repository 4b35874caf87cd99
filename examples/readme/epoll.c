/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wraps docs/am.md's event-loop fragment for docs_snippets: the loop of a
 * function that has an endpoint and an epoll set holding its fd, as in
 * examples/epoll_loop.c. check() is the README's complete program's.
 */
#include <errno.h>
#include <flit/flit.h>
#include <sys/epoll.h>

void check(flit_status st, const char *what);
void readme_epoll(flit_ep_t *ep, int epfd);

/* README: file scope */

void readme_epoll(flit_ep_t *ep, int epfd)
{
    struct epoll_event events[4];
    int n = 4;
    /* README: body */
}
