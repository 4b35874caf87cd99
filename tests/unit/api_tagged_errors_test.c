/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tagged messaging (<flit/tagged.h>) in a job of one rank: every bad
 * argument with its exact status, and messages to the rank itself (the self
 * transport): blocking and not, zero bytes, every size up to 1 MiB, sent
 * whole and gathered from pieces, received whole and scattered,
 * truncation posted and unexpected, matching with wildcards in arrival
 * order, probes, cancel, contexts that never see each other's messages,
 * what a handler may not do, destroy with requests outstanding and with
 * messages nobody received, and a context outliving flit_finalize.
 *
 * A failed call must have no effect: outputs stay as they were.
 */
#include <flit/tagged.h>

#include "unit.h"

enum { H_TAGGED = 5, H_OTHER = 6, H_AM = 7 };

static flit_ep_t *ep;
static flit_tagged_t *t;

/* Payload of message seq: a pattern, so that every byte is checked. */
static void fill(uint8_t *b, size_t n, uint64_t seq)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void check_bytes(const uint8_t *b, size_t n, uint64_t seq, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (uint8_t)(seq * 131 + i * 7 + (i >> 8)))
            FAIL("%s: byte %zu of %zu differs", what, i, n);
}

static void check_info(const flit_tagged_info_t *in, uint64_t tag, size_t len,
                       size_t received, flit_status st)
{
    if (in->source.idx != 0 || in->tag != tag || in->length != len ||
        in->received != received || in->status != st)
        FAIL(
            "info: rank %u, tag %llu, length %zu, received %zu, %s; expected rank 0, tag "
            "%llu, length %zu, received %zu, %s",
            in->source.idx, (unsigned long long)in->tag, in->length, in->received,
            flit_status_name(in->status), (unsigned long long)tag, len, received,
            flit_status_name(st));
}

static const flit_tagged_info_t poison = {.source = {12345},
                                          .tag = 777,
                                          .length = 999,
                                          .received = 888,
                                          .status = FLIT_ERR_BOOT};

static void check_untouched(const flit_tagged_info_t *in)
{
    /* Field by field: a struct copy need not copy the padding. */
    CHECK(in->source.idx == poison.source.idx && in->tag == poison.tag &&
          in->length == poison.length && in->received == poison.received &&
          in->status == poison.status);
}

/* ---------------------------------------------------------------- bad input */

static void test_before_init(void)
{
    flit_tagged_t *x = (flit_tagged_t *)&poison;
    CHECK_ST(flit_tagged_create(NULL, flit_handler(H_TAGGED), &x), FLIT_ERR_INVALID_ARG);
    CHECK(x == (flit_tagged_t *)&poison);
    CHECK_ST(flit_tagged_destroy(NULL), FLIT_ERR_INVALID_ARG);
}

static void test_bad_args(void)
{
    uint8_t buf[16] = {0};
    flit_request_t *r = NULL;
    int found = 7, done = 7;
    flit_tagged_info_t info = poison;
    flit_tagged_t *x = NULL;

    /* create */
    CHECK_ST(flit_tagged_create(NULL, flit_handler(H_OTHER), &x), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_create(ep, flit_handler(H_OTHER), NULL), FLIT_ERR_INVALID_ARG);
    flit_status st = flit_tagged_create(ep, flit_handler(60000), &x);
    if (st == FLIT_OK)
        FAIL("a context on handler 60000 of a table of 256");
    CHECK(x == NULL);

    /* sends */
    CHECK_ST(flit_tagged_send(NULL, flit_rank(0), 1, buf, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_send(t, flit_rank(1), 1, buf, 1), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_send(t, flit_rank(FLIT_ANY_SOURCE), 1, buf, 1), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_send(t, flit_rank(0), FLIT_ANY_TAG, buf, 1),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_send(t, flit_rank(0), 1, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_send(t, flit_rank(0), 1, buf, SIZE_MAX), FLIT_ERR_TOO_LARGE);
    struct iovec bad[2] = {{.iov_base = buf, .iov_len = 1},
                           {.iov_base = NULL, .iov_len = 1}};
    struct iovec huge[2] = {{.iov_base = buf, .iov_len = SIZE_MAX},
                            {.iov_base = buf, .iov_len = 1}};
    CHECK_ST(flit_tagged_sendv(NULL, flit_rank(0), 1, bad, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_sendv(t, flit_rank(0), 1, bad, 2), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_sendv(t, flit_rank(0), 1, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_sendv(t, flit_rank(0), 1, bad, -1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_sendv(t, flit_rank(1), 1, bad, 1), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_sendv(t, flit_rank(0), FLIT_ANY_TAG, bad, 1),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_sendv(t, flit_rank(0), 1, huge, 2), FLIT_ERR_TOO_LARGE);
    CHECK_ST(flit_tagged_irecvv(NULL, flit_rank(0), 1, bad, 1, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecvv(t, flit_rank(0), 1, bad, 2, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecvv(t, flit_rank(0), 1, NULL, 1, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecvv(t, flit_rank(0), 1, bad, -1, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecvv(t, flit_rank(0), 1, bad, 1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecvv(t, flit_rank(3), 1, bad, 1, &r), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_irecvv(t, flit_rank(0), 1, huge, 2, &r), FLIT_ERR_TOO_LARGE);
    CHECK(r == NULL);
    CHECK_ST(flit_tagged_isend(t, flit_rank(0), 1, buf, 1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_isend(NULL, flit_rank(0), 1, buf, 1, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_isend(t, flit_rank(2), 1, buf, 1, &r), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_isend(t, flit_rank(0), FLIT_ANY_TAG, buf, 1, &r),
             FLIT_ERR_INVALID_ARG);
    CHECK(r == NULL);

    /* receives */
    CHECK_ST(flit_tagged_recv(NULL, flit_rank(0), 1, buf, 1, &info),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_recv(t, flit_rank(1), 1, buf, 1, &info), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_recv(t, flit_rank(FLIT_ANY_SOURCE - 1), 1, buf, 1, &info),
             FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_recv(t, flit_rank(0), 1, NULL, 1, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_recv_for(NULL, flit_rank(0), 1, buf, 1, 0, &info),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_recv_for(t, flit_rank(1), 1, buf, 1, 0, &info), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_recv_for(t, flit_rank(0), 1, NULL, 1, 0, &info),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecv(t, flit_rank(0), 1, buf, 1, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecv(NULL, flit_rank(0), 1, buf, 1, &r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_irecv(t, flit_rank(3), 1, buf, 1, &r), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_irecv(t, flit_rank(FLIT_ANY_SOURCE), 1, NULL, 16, &r),
             FLIT_ERR_INVALID_ARG);
    CHECK(r == NULL);
    check_untouched(&info);

    /* completion */
    CHECK_ST(flit_tagged_test(NULL, &done, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_test(&r, &done, &info), FLIT_ERR_INVALID_ARG); /* *req NULL */
    CHECK_ST(flit_tagged_wait(NULL, 0, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_wait(&r, 0, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_cancel(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_cancel(&r), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_waitall(1, NULL, 0, &info), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_tagged_waitall(0, NULL, 0, NULL));
    flit_request_t *none[3] = {NULL, NULL, NULL};
    CHECK_OK(flit_tagged_waitall(3, none, 0, NULL));
    /* A request that is no request: a pointer to something else. */
    uint64_t junk[32] = {0};
    flit_request_t *fake = (flit_request_t *)junk;
    CHECK_ST(flit_tagged_wait(&fake, 0, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_test(&fake, &done, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_cancel(&fake), FLIT_ERR_INVALID_ARG);
    flit_request_t *mixed[2] = {NULL, fake};
    CHECK_ST(flit_tagged_waitall(2, mixed, 0, NULL), FLIT_ERR_INVALID_ARG);
    CHECK(fake == (flit_request_t *)junk && done == 7);
    /* done NULL, with a real request */
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 1, buf, 1, &r));
    CHECK_ST(flit_tagged_test(&r, NULL, &info), FLIT_ERR_INVALID_ARG);
    CHECK(r != NULL);
    CHECK_OK(flit_tagged_cancel(&r));
    check_untouched(&info);

    /* probes */
    CHECK_ST(flit_tagged_iprobe(NULL, flit_rank(0), 1, &found, &info),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_iprobe(t, flit_rank(0), 1, NULL, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_iprobe(t, flit_rank(1), 1, &found, &info), FLIT_ERR_RANK);
    CHECK_ST(flit_tagged_probe(NULL, flit_rank(0), 1, 0, &info), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_probe(t, flit_rank(5), 1, 0, &info), FLIT_ERR_RANK);
    CHECK(found == 7);
    check_untouched(&info);
    CHECK_OK(
        flit_tagged_iprobe(t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &found, &info));
    CHECK(found == 0);
    check_untouched(&info);
    CHECK_ST(flit_tagged_probe(t, flit_rank(0), FLIT_ANY_TAG, 0, &info),
             FLIT_ERR_TIMEOUT);
    double t0 = unit_now();
    CHECK_ST(flit_tagged_probe(t, flit_rank(0), 3, 2000, &info), FLIT_ERR_TIMEOUT);
    CHECK(unit_now() - t0 >= 0.0019);
    check_untouched(&info);
}

/* ---------------------------------------------------------------- self */

static void test_self_sizes(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 100, 4096, 65536 + 3, (1u << 20) + 7};
    const size_t max = (1u << 20) + 7;
    uint8_t *s = malloc(max), *b = malloc(max + 16);
    CHECK(s && b);
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        flit_tagged_info_t info;
        /* Unexpected: sent to itself before the receive. */
        fill(s, n, i);
        CHECK_OK(flit_tagged_send(t, flit_rank(0), 40 + i, n ? s : NULL, n));
        memset(b, 0xee, max + 16);
        CHECK_OK(flit_tagged_recv(t, flit_rank(0), 40 + i, b, n, &info));
        check_info(&info, 40 + i, n, n, FLIT_OK);
        check_bytes(b, n, i, "self, unexpected");
        CHECK(b[n] == 0xee);
        /* Posted: the receive waits first. */
        flit_request_t *r, *sr;
        memset(b, 0xee, max + 16);
        CHECK_OK(flit_tagged_irecv(t, flit_rank(FLIT_ANY_SOURCE), 50 + i, b, n + 16, &r));
        int done = 1;
        CHECK_OK(flit_tagged_test(&r, &done, &info));
        CHECK(!done && r);
        CHECK_OK(flit_tagged_isend(t, flit_rank(0), 50 + i, n ? s : NULL, n, &sr));
        CHECK_OK(flit_tagged_wait(&sr, 0, &info)); /* complete at once */
        CHECK(sr == NULL);
        check_info(&info, 50 + i, n, n, FLIT_OK);
        CHECK_OK(flit_tagged_wait(&r, -1, &info));
        CHECK(r == NULL);
        check_info(&info, 50 + i, n, n, FLIT_OK);
        check_bytes(b, n, i, "self, posted");
        CHECK(b[n] == 0xee);
    }
    /* Zero bytes, no buffer on either side. */
    flit_tagged_info_t info = poison;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 9, NULL, 0));
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 9, NULL, 0, &info));
    check_info(&info, 9, 0, 0, FLIT_OK);
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 9, NULL, 0));
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 9, NULL, 0, NULL)); /* info NULL */
    free(s);
    free(b);
}

/* Gather sends to itself: each size cut into 1, 2, 3 and 40 pieces (more
   than the sender keeps on its stack), one of them empty with no base,
   received whole into one buffer, then scattered into pieces (unexpected,
   posted, and pieces one byte short of the message). */
/* A receive with a time limit: none matched, it is withdrawn (the next
   message is not lost into it, nor is a message of another tag taken);
   one that arrived is received whole, the time limit or none. */
static void test_self_recv_for(void)
{
    uint8_t s[64], b[80];
    flit_tagged_info_t info = poison;
    CHECK_ST(flit_tagged_recv_for(t, flit_rank(0), 70, b, sizeof b, 0, &info),
             FLIT_ERR_TIMEOUT);
    check_untouched(&info);
    fill(s, sizeof s, 7);
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 71, s, sizeof s)); /* another tag */
    CHECK_ST(flit_tagged_recv_for(t, flit_rank(0), 70, b, sizeof b, 2000, &info),
             FLIT_ERR_TIMEOUT);
    check_untouched(&info);
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 70, s, sizeof s));
    memset(b, 0xee, sizeof b);
    CHECK_OK(flit_tagged_recv_for(t, flit_rank(0), 70, b, sizeof b, 0, &info));
    check_info(&info, 70, sizeof s, sizeof s, FLIT_OK);
    check_bytes(b, sizeof s, 7, "recv_for");
    CHECK(b[sizeof s] == 0xee);
    memset(b, 0xee, sizeof b);
    CHECK_ST(flit_tagged_recv_for(t, flit_rank(FLIT_ANY_SOURCE), 71, b, 8, -1, &info),
             FLIT_ERR_TOO_LARGE);
    check_info(&info, 71, sizeof s, 8, FLIT_ERR_TOO_LARGE); /* truncated, not lost */
    check_bytes(b, 8, 7, "recv_for, truncated");
    CHECK_ST(flit_tagged_recv_for(t, flit_rank(0), 71, b, sizeof b, 0, &info),
             FLIT_ERR_TIMEOUT);
}

static void test_self_gather(void)
{
    static const size_t sizes[] = {0, 1, 100, 300, 4096, 65536 + 3, (1u << 20) + 7};
    static const int cuts[] = {1, 2, 3, 40};
    const size_t max = (1u << 20) + 7;
    uint8_t *s = malloc(max), *b = malloc(max + 16);
    struct iovec v[41];
    CHECK(s && b);
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (unsigned c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            size_t n = sizes[i], at = 0;
            int k = 0;
            fill(s, n, i + c);
            for (int p = 0; p < cuts[c]; p++) { /* uneven pieces, the last the rest */
                size_t piece = p + 1 == cuts[c] ? n - at : (n - at) / 3;
                v[k++] = (struct iovec){.iov_base = s + at, .iov_len = piece};
                at += piece;
                if (p == 0 && cuts[c] > 1) /* an empty piece, no base */
                    v[k++] = (struct iovec){.iov_base = NULL, .iov_len = 0};
            }
            flit_tagged_info_t info;
            CHECK_OK(flit_tagged_sendv(t, flit_rank(0), 70 + c, v, k));
            memset(b, 0xee, max + 16);
            CHECK_OK(flit_tagged_recv(t, flit_rank(0), 70 + c, b, n + 16, &info));
            check_info(&info, 70 + c, n, n, FLIT_OK);
            check_bytes(b, n, i + c, "self, gathered");
            CHECK(b[n] == 0xee);
            /* scattered into pieces of b cut the other way: unexpected
               (sent first), posted (received first), and one byte short */
            struct iovec rv[3] = {{.iov_base = b, .iov_len = n / 2},
                                  {.iov_base = NULL, .iov_len = 0},
                                  {.iov_base = b + n / 2, .iov_len = n - n / 2}};
            flit_request_t *r;
            for (int posted = 0; posted < 2; posted++) {
                memset(b, 0xee, max + 16);
                if (!posted)
                    CHECK_OK(flit_tagged_sendv(t, flit_rank(0), 80 + c, v, k));
                CHECK_OK(flit_tagged_irecvv(t, flit_rank(0), 80 + c, rv, 3, &r));
                if (posted)
                    CHECK_OK(flit_tagged_sendv(t, flit_rank(0), 80 + c, v, k));
                CHECK_OK(flit_tagged_wait(&r, -1, &info));
                check_info(&info, 80 + c, n, n, FLIT_OK);
                check_bytes(b, n, i + c,
                            posted ? "self, scattered, posted"
                                   : "self, scattered, unexpected");
                CHECK(b[n] == 0xee);
            }
            if (n == 0)
                continue;
            memset(b, 0xee, max + 16);
            rv[2].iov_len--;
            CHECK_OK(flit_tagged_sendv(t, flit_rank(0), 90 + c, v, k));
            CHECK_OK(flit_tagged_irecvv(t, flit_rank(0), 90 + c, rv, 3, &r));
            CHECK_ST(flit_tagged_wait(&r, -1, &info), FLIT_ERR_TOO_LARGE);
            check_info(&info, 90 + c, n, n - 1, FLIT_ERR_TOO_LARGE);
            check_bytes(b, n - 1, i + c, "self, scattered, truncated");
            CHECK(b[n - 1] == 0xee);
        }
    }
    free(s);
    free(b);
}

static void test_self_truncate(void)
{
    uint8_t s[1000], b[1000];
    flit_tagged_info_t info = poison;
    fill(s, sizeof s, 1);
    /* Unexpected, then a message after it that must be whole. */
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 20, s, 100));
    fill(s, sizeof s, 2);
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 20, s, 30));
    memset(b, 0xee, sizeof b);
    CHECK_ST(flit_tagged_recv(t, flit_rank(0), 20, b, 10, &info), FLIT_ERR_TOO_LARGE);
    check_info(&info, 20, 100, 10, FLIT_ERR_TOO_LARGE);
    check_bytes(b, 10, 1, "truncated");
    CHECK(b[10] == 0xee);
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 20, b, sizeof b, &info));
    check_info(&info, 20, 30, 30, FLIT_OK);
    check_bytes(b, 30, 2, "after the truncated one");
    /* Posted, into a buffer of nothing. */
    flit_request_t *r;
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 21, NULL, 0, &r));
    fill(s, sizeof s, 3);
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 21, s, sizeof s));
    CHECK_ST(flit_tagged_wait(&r, -1, &info), FLIT_ERR_TOO_LARGE);
    CHECK(r == NULL);
    check_info(&info, 21, sizeof s, 0, FLIT_ERR_TOO_LARGE);
    /* waitall reports it too, with the others' infos. */
    flit_request_t *rs[2];
    flit_tagged_info_t infos[2];
    memset(b, 0xee, sizeof b);
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 22, b, 500, &rs[0]));
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 23, b + 500, 5, &rs[1]));
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 23, s, 6));
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 22, s, 500));
    CHECK_ST(flit_tagged_waitall(2, rs, -1, infos), FLIT_ERR_TOO_LARGE);
    CHECK(rs[0] == NULL && rs[1] == NULL);
    check_info(&infos[0], 22, 500, 500, FLIT_OK);
    check_info(&infos[1], 23, 6, 5, FLIT_ERR_TOO_LARGE);
    check_bytes(b, 500, 3, "waitall");
    check_bytes(b + 500, 5, 3, "waitall, truncated");
    CHECK(b[505] == 0xee);
}

/* Matching in arrival order, wildcards, probes, cancel, two contexts. */
static void test_self_matching(void)
{
    flit_tagged_t *t2;
    CHECK_OK(flit_tagged_create(ep, flit_handler(H_OTHER), &t2));
    uint64_t v, seq;
    flit_tagged_info_t info;
    int found;
    for (seq = 1; seq <= 3; seq++) /* tags 1, 2, 3 */
        CHECK_OK(flit_tagged_send(t, flit_rank(0), seq, &seq, sizeof seq));
    seq = 4;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 2, &seq, sizeof seq)); /* tag 2 again */
    seq = 5;
    CHECK_OK(flit_tagged_send(t2, flit_rank(0), 1, &seq, sizeof seq));

    /* The other context sees only its own. */
    CHECK_OK(
        flit_tagged_iprobe(t2, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &found, &info));
    CHECK(found);
    check_info(&info, 1, 8, 0, FLIT_OK);
    CHECK_OK(flit_tagged_recv(t2, flit_rank(0), FLIT_ANY_TAG, &v, sizeof v, &info));
    CHECK(v == 5);
    CHECK_OK(
        flit_tagged_iprobe(t2, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &found, NULL));
    CHECK(!found);

    /* Probes report without taking. */
    CHECK_OK(flit_tagged_probe(t, flit_rank(0), 2, 0, &info));
    check_info(&info, 2, 8, 0, FLIT_OK);
    CHECK_OK(
        flit_tagged_iprobe(t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &found, &info));
    CHECK(found);
    check_info(&info, 1, 8, 0, FLIT_OK);
    /* Tag 3 first, then any: 1, 2, then tag 2's second. */
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 3, &v, sizeof v, &info));
    CHECK(v == 3 && info.tag == 3);
    CHECK_OK(flit_tagged_recv(t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &v, sizeof v,
                              &info));
    CHECK(v == 1 && info.tag == 1);
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), FLIT_ANY_TAG, &v, sizeof v, &info));
    CHECK(v == 2 && info.tag == 2);
    CHECK_OK(flit_tagged_recv(t, flit_rank(FLIT_ANY_SOURCE), 2, &v, sizeof v, &info));
    CHECK(v == 4 && info.tag == 2);

    /* Posted receives match in posting order. */
    flit_request_t *r[3];
    uint64_t got[3] = {0, 0, 0};
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 8, &got[0], 8, &r[0]));
    CHECK_OK(flit_tagged_irecv(t, flit_rank(FLIT_ANY_SOURCE), FLIT_ANY_TAG, &got[1], 8,
                               &r[1]));
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 8, &got[2], 8, &r[2]));
    for (seq = 10; seq <= 12; seq++)
        CHECK_OK(flit_tagged_send(t, flit_rank(0), 8, &seq, sizeof seq));
    CHECK_OK(flit_tagged_waitall(3, r, -1, NULL));
    CHECK(got[0] == 10 && got[1] == 11 && got[2] == 12);

    /* Cancel: a posted one goes; a complete one and a send do not. */
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 30, &v, 8, &r[0]));
    CHECK_OK(flit_tagged_cancel(&r[0]));
    CHECK(r[0] == NULL);
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 31, &v, 8, &r[0]));
    seq = 31;
    CHECK_OK(flit_tagged_isend(t, flit_rank(0), 31, &seq, 8, &r[1]));
    CHECK_ST(flit_tagged_cancel(&r[1]), FLIT_ERR_AGAIN);
    CHECK(r[1] != NULL);
    CHECK_OK(flit_tagged_wait(&r[1], -1, NULL));
    CHECK_OK(flit_poll(ep)); /* runs the handler: the receive completes */
    CHECK_ST(flit_tagged_cancel(&r[0]), FLIT_ERR_AGAIN);
    CHECK_OK(flit_tagged_wait(&r[0], -1, &info));
    CHECK(v == 31);
    /* What the cancelled one would have taken is still there. */
    seq = 30;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 30, &seq, 8));
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 30, &v, 8, &info));
    CHECK(v == 30);

    /* A finished request's handle is dead. */
    flit_request_t *stale;
    CHECK_OK(flit_tagged_isend(t, flit_rank(0), 40, NULL, 0, &r[0]));
    stale = r[0];
    CHECK_OK(flit_tagged_wait(&r[0], 0, NULL));
    int done = 7;
    CHECK_ST(flit_tagged_test(&stale, &done, NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_tagged_cancel(&stale), FLIT_ERR_INVALID_ARG);
    CHECK(done == 7);
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 40, NULL, 0, NULL));

    /* wait with a timeout leaves the request; test does not complete it. */
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 50, &v, 8, &r[0]));
    double t0 = unit_now();
    CHECK_ST(flit_tagged_wait(&r[0], 3000, NULL), FLIT_ERR_TIMEOUT);
    CHECK(unit_now() - t0 >= 0.0029);
    CHECK(r[0] != NULL);
    CHECK_ST(flit_tagged_waitall(1, r, 1000, NULL), FLIT_ERR_TIMEOUT);
    CHECK(r[0] != NULL);
    /* waitall's timeout finishes what did complete, after the first that
       did not too, and leaves the rest. */
    flit_tagged_info_t infos[3] = {poison, poison, poison};
    seq = 51;
    CHECK_OK(flit_tagged_isend(t, flit_rank(0), 51, &seq, 8, &r[1]));
    r[2] = NULL;
    CHECK_ST(flit_tagged_waitall(3, r, 1000, infos), FLIT_ERR_TIMEOUT);
    CHECK(r[0] != NULL && r[1] == NULL);
    check_untouched(&infos[0]);
    check_info(&infos[1], 51, 8, 8, FLIT_OK);
    check_untouched(&infos[2]);
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 51, &v, 8, NULL));
    CHECK(v == 51);

    /* Destroy with a request outstanding: refused, nothing freed. */
    CHECK_ST(flit_tagged_destroy(t), FLIT_ERR_AGAIN);
    seq = 50;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 50, &seq, 8));
    CHECK_OK(flit_tagged_wait(&r[0], -1, NULL));
    CHECK(v == 50);

    /* Messages nobody received are dropped with the context, one of them
       perhaps still arriving (destroy lets its handler finish). */
    CHECK_OK(flit_tagged_send(t2, flit_rank(0), 1, &seq, 8));
    CHECK_OK(flit_tagged_send(t2, flit_rank(0), 2, NULL, 0));
    size_t big = (1u << 20) + 7;
    uint8_t *bb = calloc(1, big);
    CHECK(bb);
    CHECK_OK(flit_tagged_send(t2, flit_rank(0), 3, bb, big));
    CHECK_OK(flit_tagged_destroy(t2));
    free(bb);
}

/* ---------------------------------------------------------------- handlers */

static int am_runs;
static flit_request_t *handler_req;

/* An active-message handler tries every tagged call. */
static void am_handler(flit_token_t *tok, void *buf, size_t nbytes, const uint32_t *args,
                       unsigned nargs, void *user)
{
    (void)tok, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
    uint64_t v = 0;
    flit_tagged_info_t info = poison;
    flit_tagged_t *x = NULL;
    int found = 7, done = 7;
    CHECK_ST(flit_tagged_send(t, flit_rank(0), 1, &v, 8), FLIT_ERR_IN_HANDLER);
    flit_request_t *r = NULL;
    CHECK_ST(flit_tagged_isend(t, flit_rank(0), 1, &v, 8, &r), FLIT_ERR_IN_HANDLER);
    CHECK(r == NULL);
    /* Not arrived: cannot wait for it here, and nothing stays posted. */
    CHECK_ST(flit_tagged_recv(t, flit_rank(0), 61, &v, 8, &info), FLIT_ERR_IN_HANDLER);
    check_untouched(&info);
    /* Arrived before the handler ran: taken. */
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 60, &v, 8, &info));
    CHECK(v == 60);
    /* A request: test only looks, wait cannot wait. */
    CHECK_OK(flit_tagged_test(&handler_req, &done, NULL));
    CHECK(done == 0 && handler_req);
    CHECK_ST(flit_tagged_wait(&handler_req, -1, NULL), FLIT_ERR_IN_HANDLER);
    CHECK(handler_req);
    CHECK_ST(flit_tagged_waitall(1, &handler_req, -1, NULL), FLIT_ERR_IN_HANDLER);
    CHECK(handler_req);
    CHECK_OK(flit_tagged_iprobe(t, flit_rank(0), 61, &found, NULL));
    CHECK(found == 0);
    CHECK_ST(flit_tagged_probe(t, flit_rank(0), 61, -1, NULL), FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_tagged_create(ep, flit_handler(H_OTHER), &x), FLIT_ERR_IN_HANDLER);
    CHECK(x == NULL);
    CHECK_ST(flit_tagged_destroy(t), FLIT_ERR_IN_HANDLER);
    am_runs++;
}

static void test_in_handler(void)
{
    CHECK_OK(flit_am_register(ep, flit_handler(H_AM), am_handler, NULL));
    uint64_t v = 60;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 60, &v, 8));
    uint64_t w = 0;
    CHECK_OK(flit_tagged_irecv(t, flit_rank(0), 62, &w, 8, &handler_req));
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_AM), NULL, 0, 0));
    for (int i = 0; i < 100000 && !am_runs; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(am_runs == 1);
    /* The recv the handler gave up on took nothing. */
    v = 61;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 61, &v, 8));
    CHECK_OK(flit_tagged_recv(t, flit_rank(0), 61, &v, 8, NULL));
    CHECK(v == 61);
    v = 62;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 62, &v, 8));
    CHECK_OK(flit_tagged_wait(&handler_req, -1, NULL));
    CHECK(w == 62);
}

int main(void)
{
    unit_clean_env();
    test_before_init();
    CHECK_OK(flit_init(NULL));
    CHECK(flit_job_size() == 1);
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_tagged_create(ep, flit_handler(H_TAGGED), &t));
    test_bad_args();
    test_self_sizes();
    test_self_recv_for();
    test_self_gather();
    test_self_truncate();
    test_self_matching();
    test_in_handler();
    CHECK_OK(flit_tagged_destroy(t));

    /* A context left when the job ends: destroyed afterwards, no leak. */
    CHECK_OK(flit_tagged_create(ep, flit_handler(H_TAGGED), &t));
    uint64_t v = 1;
    CHECK_OK(flit_tagged_send(t, flit_rank(0), 1, &v, 8));
    CHECK_OK(flit_finalize());
    CHECK_OK(flit_tagged_destroy(t));
    return 0;
}
