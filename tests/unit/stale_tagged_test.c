/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stale tagged handles (<flit/tagged.h>), each used again after it ended
 * and after a new one of its type took its memory (made right after the
 * end: malloc, or the context's free list of requests, hands the same block
 * back): a context destroyed twice, a completed receive's and send's
 * request tested, waited on and cancelled. Each answers
 * FLIT_ERR_INVALID_ARG and leaves the new one as it was; under ASan nothing
 * reads freed memory. argv[1], when given, names the one case to run.
 */
#include <flit/tagged.h>

#include "unit.h"

enum { H_TAGGED = 5 };

static flit_ep_t *ep;

/* t works: a message to this rank, received whole. */
static void loop(flit_tagged_t *t, uint64_t tag)
{
    uint64_t v = tag * 3, back = 0;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), tag, &v, sizeof v));
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), tag, &back, sizeof back, NULL));
    CHECK(back == v);
}

static void stale_context(void)
{
    flit_tagged_t *old, *fresh;
    CHECK_OK(flit_tagged_create(ep, flit_handler(H_TAGGED), &old));
    CHECK_OK(flit_tagged_destroy(old));
    CHECK_OK(flit_tagged_create(ep, flit_handler(H_TAGGED), &fresh));
    CHECK_ST(flit_tagged_destroy(old), FLIT_ERR_INVALID_ARG);
    uint64_t v = 1;
    CHECK_ST(flit_tagged_send(old, flit_rank(0), 1, &v, sizeof v), FLIT_ERR_INVALID_ARG);
    int found = 7;
    CHECK_ST(flit_tagged_iprobe(old, flit_rank(0), 1, &found, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK(found == 7);
    loop(fresh, 2); /* untouched: its handler still in place */
    CHECK_OK(flit_tagged_destroy(fresh));
}

static void stale_requests(void)
{
    flit_tagged_t *t;
    CHECK_OK(flit_tagged_create(ep, flit_handler(H_TAGGED), &t));
    uint64_t v = 5, back = 0;
    flit_request_t *r, *stale;
    /* A receive that completed. */
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 5, &back, sizeof back, &r));
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 5, &v, sizeof v));
    stale = r;
    CHECK_OK(flit_tagged_wait(&r, -1, NULL));
    CHECK(r == NULL && back == 5);
    /* A new receive, most likely in the same block, posted and waiting. */
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 6, &back, sizeof back, &r));
    flit_request_t *s = stale;
    CHECK_ST(flit_tagged_cancel(&s), FLIT_ERR_INVALID_ARG);
    int done = 3;
    CHECK_ST(flit_tagged_test(&s, &done, NULL), FLIT_ERR_INVALID_ARG);
    CHECK(done == 3 && s == stale);
    CHECK_ST(flit_tagged_wait(&s, 0, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_waitall(1, &s, 0, NULL), FLIT_ERR_INVALID_ARG);
    /* The new receive is still posted: it takes the next message. */
    v = 6;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 6, &v, sizeof v));
    flit_tagged_info_t in;
    CHECK_OK(flit_tagged_wait(&r, -1, &in));
    CHECK(back == 6 && in.tag == 6);
    /* A send's request, ended, then a new one. */
    CHECK_OK(flit_tagged_isend(t, flit_rank(0), 7, &v, sizeof v, &r));
    stale = r;
    CHECK_OK(flit_tagged_wait(&r, -1, NULL));
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 7, &back, sizeof back, &r));
    s = stale;
    CHECK_ST(flit_tagged_cancel(&s), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_tagged_wait(&r, -1, NULL)); /* the message isend sent */
    CHECK(back == 6);
    CHECK_OK(flit_tagged_destroy(t));
    CHECK_ST(flit_tagged_cancel(&s), FLIT_ERR_INVALID_ARG); /* context gone */
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"context", stale_context}, {"request", stale_requests}};
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    CHECK_OK(flit_ep_create(NULL, &ep));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].run();
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
