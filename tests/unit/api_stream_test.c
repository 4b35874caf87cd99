/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stream API in a job of one rank (messages to itself over the self
 * transport):
 *
 *  - bad input of every kind answers its status and sends nothing: NULL
 *    handles, unknown ranks and handler indices, unknown flags, more bytes
 *    than declared, ending early, a receive outside its handler or with a
 *    handle whose handler returned, asking for more than remains, extract
 *    with no budget;
 *  - inside a handler, opening a message is refused (FLIT_ERR_IN_HANDLER)
 *    rather than risking a wait on the handler itself;
 *  - messages to a stream handler that is not there, to an index beyond the
 *    table, or with the wrong tag come back once, kind FLIT_AM_STREAM, with
 *    their length, and their handler never runs; the next message is fine;
 *  - a message longer than the self ring is pipelined through it (the
 *    sender's blocked sends run the receiving handler, which waits on a
 *    fiber between packets); a non-blocking begin answers FLIT_ERR_AGAIN
 *    when the ring is full and a poll makes room;
 *  - streams and active messages to the same rank start their handlers in
 *    the order they were sent, even when a message is left open across
 *    the active message (the half-filled packet goes first);
 *  - flit_stream_sendmsg sends a whole message in one call: empty, one
 *    piece, a small header gathered before a large piece, and more than
 *    the ring holds (pipelined); in order with the messages around it; its
 *    bad input sends nothing; inside a handler it is refused; non-blocking
 *    it answers FLIT_ERR_AGAIN when the ring is full;
 *  - flit_stream_peek shows the bytes at hand where they are, without
 *    taking them: a small message whole, a large one a packet at a time
 *    (what it shows is what recv then takes, the pointer moving as bytes
 *    are taken), nothing once all is taken; its bad input answers its
 *    status, and a handle whose handler returned is a dead token;
 *  - a large piece lies at its source's offset in a line (a header gathered
 *    before the payload, a source off a line, begin/send/end): the copies
 *    in and out move whole lines; a small header before a piece-sized
 *    payload does not cost a packet of its own.
 */
#include <flit/stream.h>
#include <stdbool.h>

#include "unit.h"

#define NH 16u
enum { H_ECHO = 1, H_NESTED = 2, H_AM = 3, H_PEEK = 4, H_MISSING = 9 };

static flit_stream_t *kept; /* a handle kept past its handler */
static uint8_t got[1 << 22];
static size_t got_len, runs;
static int order[64], norder;

static void on_echo(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    CHECK(flit_stream_rank(s).idx == 0);
    CHECK(flit_stream_remaining(s) == total);
    CHECK(total <= sizeof got);
    /* Odd pieces, so that packet boundaries fall inside them. */
    size_t off = 0;
    while (off < total) {
        size_t k = total - off < 777 ? total - off : 777;
        CHECK_OK(flit_stream_recv(s, got + off, k));
        off += k;
    }
    uint8_t x;
    CHECK_ST(flit_stream_recv(s, &x, 1), FLIT_ERR_TOO_LARGE);
    CHECK_ST(flit_stream_recv(s, NULL, 0), FLIT_OK);
    got_len = total;
    runs++;
    order[norder++ % 64] = (int)total;
    kept = s;
}

static void on_nested(flit_stream_t *s, size_t total, void *user)
{
    (void)total;
    flit_ep_t *ep = user;
    CHECK(flit_stream_ep(s) == ep);
    flit_stream_out_t *o;
    CHECK_ST(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 1, 0, &o),
             FLIT_ERR_IN_HANDLER);
    struct iovec one = {&o, 1};
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), flit_handler(H_ECHO), &one, 1, 0),
             FLIT_ERR_IN_HANDLER);
    CHECK_ST(flit_extract(ep, 100), FLIT_ERR_IN_HANDLER);
    runs++;
}

static void on_am(flit_token_t *t, void *buf, size_t n, const uint32_t *args,
                  unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)n, (void)user;
    CHECK(nargs == 1);
    order[norder++ % 64] = -(int)args[0];
}

static flit_returned_t last_ret;
static int nret;

static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep, (void)user;
    last_ret = *r;
    nret++;
}

/* Sends n bytes of pattern seed to H_ECHO in pieces of piece bytes. */
static void send_msg(flit_ep_t *ep, uint16_t h, const uint8_t *data, size_t n,
                     size_t piece)
{
    flit_stream_out_t *o;
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(h), n, 0, &o));
    for (size_t off = 0; off < n; off += piece)
        CHECK_OK(flit_stream_send(o, data + off, n - off < piece ? n - off : piece));
    CHECK_OK(flit_stream_end(o));
}

static void test_bad_args(flit_ep_t *ep)
{
    flit_stream_out_t *o;
    uint8_t b[8] = {0};
    CHECK_ST(flit_stream_begin(NULL, flit_rank(0), flit_handler(H_ECHO), 1, 0, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 1, 0, NULL),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_begin(ep, flit_rank(1), flit_handler(H_ECHO), 1, 0, &o),
             FLIT_ERR_RANK);
    CHECK_ST(flit_stream_begin(ep, flit_rank(0), flit_handler(NH), 1, 0, &o),
             FLIT_ERR_BAD_HANDLER);
    CHECK_ST(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 1, 1u << 7, &o),
             FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_send(NULL, b, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_end(NULL), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_register(ep, flit_handler(NH), on_echo, NULL),
             FLIT_ERR_BAD_HANDLER);
    CHECK_ST(flit_extract(ep, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_extract(NULL, 10), FLIT_ERR_INVALID_ARG);

    /* More than declared, NULL with bytes, ending early: the message stays
       open and usable. */
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 5, 0, &o));
    CHECK_ST(flit_stream_send(o, b, 6), FLIT_ERR_TOO_LARGE);
    CHECK_ST(flit_stream_send(o, NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_OK(flit_stream_send(o, b, 3));
    CHECK_ST(flit_stream_end(o), FLIT_ERR_INVALID_ARG);
    struct iovec bad[2] = {{b, 1}, {NULL, 1}};
    CHECK_ST(flit_stream_sendv(o, bad, 2), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_sendv(o, bad, -1), FLIT_ERR_INVALID_ARG);
    struct iovec two[2] = {{b, 1}, {b + 1, 1}};
    CHECK_OK(flit_stream_sendv(o, two, 2));
    CHECK_OK(flit_stream_end(o));
    CHECK_ST(flit_stream_send(o, b, 0), FLIT_ERR_INVALID_ARG); /* ended */
    size_t before = runs;
    while (runs == before)
        CHECK_OK(flit_poll(ep));
    CHECK(got_len == 5);

    /* The handle of a handler that returned is dead. */
    CHECK_ST(flit_stream_recv(kept, b, 1), FLIT_ERR_BAD_TOKEN);
    CHECK_ST(flit_stream_skip(kept, 0), FLIT_ERR_BAD_TOKEN);
    CHECK(flit_stream_remaining(kept) == 0);
    CHECK(flit_stream_rank(kept).idx == UINT32_MAX);
    CHECK(flit_stream_ep(kept) == NULL);
    /* No handle at all is a bad argument, not a dead token. */
    struct iovec one = {b, 1};
    CHECK_ST(flit_stream_recv(NULL, b, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_recv(NULL, b, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_recvv(NULL, &one, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_skip(NULL, 1), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_recvv(kept, &one, 1), FLIT_ERR_BAD_TOKEN);
}

static void test_in_handler(flit_ep_t *ep)
{
    size_t before = runs;
    send_msg(ep, H_NESTED, (const uint8_t *)"x", 1, 1);
    while (runs == before)
        CHECK_OK(flit_poll(ep));
}

static void test_returned(flit_ep_t *ep)
{
    uint8_t data[100000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 13);
    size_t before = runs;
    send_msg(ep, H_MISSING, data, sizeof data, 4096);
    while (nret == 0)
        CHECK_OK(flit_poll(ep));
    CHECK(nret == 1);
    CHECK(last_ret.reason == FLIT_ERR_NO_HANDLER);
    CHECK(last_ret.kind == FLIT_AM_STREAM);
    CHECK(last_ret.handler.idx == H_MISSING);
    CHECK(last_ret.nbytes == sizeof data);
    CHECK(last_ret.peer.idx == 0);

    /* A wrong tag: refused, then accepted once the tag is right again. */
    uint64_t tag;
    CHECK_OK(flit_ep_tag(ep, &tag));
    CHECK_OK(flit_ep_set_peer_tag(ep, flit_rank(0), tag + 1));
    send_msg(ep, H_ECHO, data, 10, 10);
    while (nret == 1)
        CHECK_OK(flit_poll(ep));
    CHECK(last_ret.reason == FLIT_ERR_BAD_TAG && last_ret.nbytes == 10);
    CHECK_OK(flit_ep_set_peer_tag(ep, flit_rank(0), tag));
    send_msg(ep, H_ECHO, data, 0, 1);
    while (runs == before)
        CHECK_OK(flit_poll(ep));
    CHECK(got_len == 0);
    for (int i = 0; i < 100; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(nret == 2 && runs == before + 1);
}

static void test_pipelined(flit_ep_t *ep)
{
    static uint8_t data[3 << 20];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 31 + (i >> 12));
    flit_stats_t s0 = {.struct_size = sizeof s0}, s1 = {.struct_size = sizeof s1};
    CHECK_OK(flit_ep_stats(ep, &s0));
    size_t before = runs;
    /* The self ring is far smaller: the blocked sends run the handler. */
    send_msg(ep, H_ECHO, data, sizeof data, 100003);
    while (runs == before)
        CHECK_OK(flit_poll(ep));
    CHECK(got_len == sizeof data && memcmp(got, data, sizeof data) == 0);
    CHECK_OK(flit_ep_stats(ep, &s1));
    CHECK(s1.stream_fibers == s0.stream_fibers + 1);
    CHECK(s1.credit_stalls > s0.credit_stalls);

    /* Non-blocking begin: AGAIN once the ring is full, then room again. */
    flit_stream_out_t *o;
    flit_status st;
    int opened = 0;
    while ((st = flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 8192,
                                   FLIT_STREAM_NONBLOCK, &o)) == FLIT_OK) {
        CHECK_OK(flit_stream_send(o, data, 8192));
        CHECK_OK(flit_stream_end(o));
        CHECK(++opened < 100000);
    }
    CHECK(st == FLIT_ERR_AGAIN && opened > 0);
    before = runs;
    while (runs < before + (size_t)opened)
        CHECK_OK(flit_poll(ep));
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 1,
                               FLIT_STREAM_NONBLOCK, &o));
    CHECK_OK(flit_stream_send(o, data, 1));
    CHECK_OK(flit_stream_end(o));
    while (runs < before + (size_t)opened + 1)
        CHECK_OK(flit_poll(ep));
}

/* Stream, AM, stream left open across an AM: handlers in send order. */
static void test_order(flit_ep_t *ep)
{
    norder = 0;
    uint8_t b[64] = {0};
    flit_stream_out_t *a, *c;
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 11, 0, &a));
    CHECK_OK(flit_stream_send(a, b, 4));
    uint32_t arg = 1;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_AM), &arg, 1, 0));
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), flit_handler(H_ECHO), 22, 0, &c));
    CHECK_OK(flit_stream_send(c, b, 22));
    CHECK_OK(flit_stream_end(c));
    arg = 2;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_AM), &arg, 1, 0));
    CHECK_OK(flit_stream_send(a, b, 7));
    CHECK_OK(flit_stream_end(a));
    while (norder < 4)
        CHECK_OK(flit_poll(ep));
    /* a started first (it waits for its last 7 bytes on a fiber), then the
       AM, then c, then the second AM; a finishes last. */
    CHECK(order[0] == -1 && order[1] == 22 && order[2] == -2 && order[3] == 11);
}

/* Polls until the echo handler has run n more times. */
static void await_runs(flit_ep_t *ep, size_t n)
{
    size_t until = runs + n;
    while (runs < until)
        CHECK_OK(flit_poll(ep));
}

static void test_sendmsg(flit_ep_t *ep)
{
    static uint8_t data[3 << 20];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7 + (i >> 10));
    flit_handler_t h = flit_handler(H_ECHO);
    uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    /* Bad input: nothing sent, nothing run. */
    size_t before = runs;
    struct iovec bad[2] = {{b, 1}, {NULL, 1}}, ok = {b, 8};
    CHECK_ST(flit_stream_sendmsg(NULL, flit_rank(0), h, &ok, 1, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), h, bad, 2, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), h, &ok, -1, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), h, NULL, 1, 0), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(1), h, &ok, 1, 0), FLIT_ERR_RANK);
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), flit_handler(NH), &ok, 1, 0),
             FLIT_ERR_BAD_HANDLER);
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), h, &ok, 1, 1u << 7),
             FLIT_ERR_INVALID_ARG);
    struct iovec huge[2] = {{b, SIZE_MAX}, {b, 2}};
    CHECK_ST(flit_stream_sendmsg(ep, flit_rank(0), h, huge, 2, 0), FLIT_ERR_TOO_LARGE);
    for (int i = 0; i < 100; i++)
        CHECK_OK(flit_poll(ep));
    CHECK(runs == before);

    /* Empty (no pieces at all), one piece, header + payload, pipelined. */
    CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, NULL, 0, 0));
    await_runs(ep, 1);
    CHECK(got_len == 0);
    CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, &ok, 1, 0));
    await_runs(ep, 1);
    CHECK(got_len == 8 && memcmp(got, b, 8) == 0);
    size_t sizes[] = {1, 100, 4096, 70000, sizeof data - 8};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        struct iovec two[2] = {{b, 8}, {data, sizes[k]}};
        CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, two, 2, 0));
        await_runs(ep, 1);
        CHECK(got_len == 8 + sizes[k]);
        CHECK(memcmp(got, b, 8) == 0 && memcmp(got + 8, data, sizes[k]) == 0);
    }

    /* In order with an AM and with a message left open around it. */
    norder = 0;
    flit_stream_out_t *a;
    CHECK_OK(flit_stream_begin(ep, flit_rank(0), h, 11, 0, &a));
    CHECK_OK(flit_stream_send(a, b, 4));
    uint32_t arg = 1;
    CHECK_OK(flit_am_short(ep, flit_rank(0), flit_handler(H_AM), &arg, 1, 0));
    struct iovec three = {data, 33};
    CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, &three, 1, 0));
    CHECK_OK(flit_stream_send(a, b, 7));
    CHECK_OK(flit_stream_end(a));
    while (norder < 3)
        CHECK_OK(flit_poll(ep));
    CHECK(order[0] == -1 && order[1] == 33 && order[2] == 11);

    /* Non-blocking: AGAIN once the ring is full, then room again. */
    struct iovec piece = {data, 8192};
    flit_status st;
    int sent = 0;
    while ((st = flit_stream_sendmsg(ep, flit_rank(0), h, &piece, 1,
                                     FLIT_STREAM_NONBLOCK)) == FLIT_OK)
        CHECK(++sent < 100000);
    CHECK(st == FLIT_ERR_AGAIN && sent > 0);
    await_runs(ep, (size_t)sent);
    CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, &piece, 1, FLIT_STREAM_NONBLOCK));
    await_runs(ep, 1);
    CHECK(got_len == 8192 && memcmp(got, data, 8192) == 0);
}

/* Takes the message a piece at a time, each piece first seen in place.
   line_src, when set: where message byte 0 would be in the sender's memory
   (the source of byte k is line_src + k); each large piece is checked to
   sit at its source's offset in a line. */
static size_t peeks, peek_bytes;
static bool peek_ok = true;
static uintptr_t line_src;
static size_t line_checked, line_off;

static void on_peek(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    size_t off = 0;
    while (off < total) {
        const void *here;
        size_t n;
        CHECK_OK(flit_stream_peek(s, &here, &n));
        if (n == 0) { /* the next packet is still to come: wait for one byte */
            CHECK_OK(flit_stream_recv(s, got + off, 1));
            off++;
            continue;
        }
        peeks++;
        peek_bytes += n;
        if (line_src && n >= 4096) {
            line_checked++;
            line_off += (((uintptr_t)here - (line_src + off)) & 63) != 0;
        }
        CHECK(n <= total - off && flit_stream_remaining(s) == total - off);
        size_t half = n / 2;
        CHECK_OK(flit_stream_recv(s, got + off, half));
        peek_ok &= memcmp(got + off, here, half) == 0;
        const void *later;
        size_t left;
        CHECK_OK(flit_stream_peek(s, &later, &left)); /* moved by what was taken */
        CHECK(later == (const uint8_t *)here + half && left == n - half);
        CHECK_OK(flit_stream_recv(s, got + off + half, n - half));
        peek_ok &= memcmp(got + off + half, (const uint8_t *)here + half, n - half) == 0;
        off += n;
    }
    const void *here;
    size_t n = 1;
    CHECK_OK(flit_stream_peek(s, &here, &n));
    CHECK(n == 0);
    CHECK_ST(flit_stream_peek(NULL, &here, &n), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_peek(s, NULL, &n), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_stream_peek(s, &here, NULL), FLIT_ERR_INVALID_ARG);
    got_len = total;
    kept = s;
    runs++;
}

static void test_peek(flit_ep_t *ep)
{
    static uint8_t data[1 << 20];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 13 + (i >> 9));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_PEEK), on_peek, NULL));
    size_t sizes[] = {0, 1, 136, 5000, sizeof data};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        peeks = peek_bytes = 0;
        struct iovec one = {data, sizes[k]};
        CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), flit_handler(H_PEEK), &one, 1, 0));
        await_runs(ep, 1);
        CHECK(got_len == sizes[k] && memcmp(got, data, sizes[k]) == 0 && peek_ok);
        if (sizes[k] && sizes[k] <= 5000) /* one packet: seen whole, at once */
            CHECK(peeks == 1 && peek_bytes == sizes[k]);
        if (sizes[k] == sizeof data) /* several packets, most seen in place */
            CHECK(peeks > 1 && peek_bytes > sizes[k] / 2);
    }
    const void *here;
    size_t n;
    CHECK_ST(flit_stream_peek(kept, &here, &n), FLIT_ERR_BAD_TOKEN);
}

/*
 * A large piece lies in the ring at its source's offset in a line, so that
 * both copies move whole lines: after a small header gathered before the
 * payload (tagged messaging's tag) in every packet, not only the first
 * (the later ones lay 8 bytes off their source's lines), and for a source
 * that does not start a line; and so does the payload sent after its
 * header in a send of its own (stream.h's idiom): the header waits for it
 * (before, the packet was placed by the header's own address, and its
 * piece lay off its source's line).
 */
static void test_lines(flit_ep_t *ep)
{
    static _Alignas(64) uint8_t data[300000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 11 + (i >> 8));
    uint8_t hdr[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    const size_t n = 200000;
    const size_t at[] = {0, 8, 24, 40};
    flit_handler_t h = flit_handler(H_PEEK);
    for (int how = 0; how < 4; how++) {
        for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
            const uint8_t *src = data + at[k];
            size_t lead = how == 0 || how == 3 ? sizeof hdr : 0;
            line_checked = line_off = 0;
            line_src = (uintptr_t)src - lead;
            if (how == 0) { /* header + payload */
                struct iovec two[2] = {{hdr, sizeof hdr}, {(void *)src, n}};
                CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, two, 2, 0));
            } else if (how == 1) { /* the payload alone, one call */
                struct iovec one = {(void *)src, n};
                CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, &one, 1, 0));
            } else { /* begin, send (header, then payload), end */
                flit_stream_out_t *o;
                CHECK_OK(flit_stream_begin(ep, flit_rank(0), h, lead + n, 0, &o));
                if (lead)
                    CHECK_OK(flit_stream_send(o, hdr, lead));
                CHECK_OK(flit_stream_send(o, src, n));
                CHECK_OK(flit_stream_end(o));
            }
            await_runs(ep, 1);
            CHECK(got_len == lead + n && memcmp(got + lead, src, n) == 0 && peek_ok);
            CHECK(lead == 0 || memcmp(got, hdr, lead) == 0);
            CHECK(line_checked >= 4);
            if (line_off)
                fprintf(stderr,
                        "way %d, source at %zu: %zu of %zu pieces off their line\n", how,
                        at[k], line_off, line_checked);
            CHECK(line_off == 0);
        }
    }
    line_src = 0;

    /* A header before a piece-sized payload (32 KiB by default) stays one
       packet; a tail longer than a layer's header gets a packet of its own. */
    for (int tail = 0; tail < 2; tail++) {
        size_t len = (32u << 10) + (tail ? 300 : 0);
        peeks = peek_bytes = 0;
        struct iovec two[2] = {{hdr, sizeof hdr}, {data, len}};
        CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, two, 2, 0));
        await_runs(ep, 1);
        CHECK(got_len == sizeof hdr + len && memcmp(got + sizeof hdr, data, len) == 0);
        CHECK(tail ? peeks == 2 : peeks == 1 && peek_bytes == got_len);
    }
}

/*
 * Small first sends of a packet are held until the packet closes (send.c,
 * put_bytes). What they hold arrives in order whatever comes next: more
 * small sends, a large one, the packet flushed alone by progress between
 * two sends, or the message's end; at every size around a line.
 */
static void test_held(flit_ep_t *ep)
{
    static uint8_t data[70000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7 + (i >> 7) + 1);
    flit_handler_t h = flit_handler(H_PEEK);
    /* The sizes of the sends, 0-terminated. */
    static const size_t ways[][8] = {
        {8, 1000, 0},
        {8, 8, 8, 8, 8, 8, 8, 0},
        {10, 10, 10, 10, 10, 20, 5000, 0},
        {63, 1, 64, 0},
        {1, 62, 1, 40000, 0},
        {8, 60000, 8, 0},
        {24, 24, 24, 0},
        {8, 32768, 0},
        {5, 0},
    };
    for (int poll = 0; poll < 2; poll++) {
        for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
            size_t total = 0;
            for (size_t i = 0; ways[w][i]; i++)
                total += ways[w][i];
            flit_stream_out_t *o;
            size_t before = runs; /* the polls may run the handler */
            CHECK_OK(flit_stream_begin(ep, flit_rank(0), h, total, 0, &o));
            size_t off = 0;
            for (size_t i = 0; ways[w][i]; i++) {
                CHECK_OK(flit_stream_send(o, data + off, ways[w][i]));
                off += ways[w][i];
                if (poll) /* flushes the open packet, held bytes and all */
                    CHECK_OK(flit_poll(ep));
            }
            CHECK_OK(flit_stream_end(o));
            await_runs(ep, before + 1 - runs);
            if (got_len != total || memcmp(got, data, total) != 0)
                fprintf(stderr, "held: way %zu, poll %d: bytes differ\n", w, poll);
            CHECK(got_len == total && memcmp(got, data, total) == 0 && peek_ok);
        }
    }
    /* Gathered whole, with an empty part, and a first part of a line. */
    struct iovec three[3] = {{data, 8}, {data + 8, 0}, {data + 8, 3000}};
    CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, three, 3, 0));
    await_runs(ep, 1);
    CHECK(got_len == 3008 && memcmp(got, data, 3008) == 0);
    struct iovec two[2] = {{data, 64}, {data + 64, 2000}};
    CHECK_OK(flit_stream_sendmsg(ep, flit_rank(0), h, two, 2, 0));
    await_runs(ep, 1);
    CHECK(got_len == 2064 && memcmp(got, data, 2064) == 0);
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(flit_init(NULL));
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_HANDLER_COUNT, .handler_count = NH};
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_ECHO), on_echo, NULL));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_NESTED), on_nested, ep));
    CHECK_OK(flit_am_register(ep, flit_handler(H_AM), on_am, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, on_returned, NULL));
    test_bad_args(ep);
    test_in_handler(ep);
    test_returned(ep);
    test_pipelined(ep);
    test_order(ep);
    test_sendmsg(ep);
    test_peek(ep);
    test_lines(ep);
    test_held(ep);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    printf("api_stream_test: OK\n");
    return 0;
}
