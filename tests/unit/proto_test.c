/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flitrun <-> rank framing (src/boot/proto.c) over socketpairs: frames
 * of 0 .. 1 MiB bodies, many frames in one read, one frame delivered byte by
 * byte on a nonblocking socket, garbage lengths (-EPROTO), a bound on what
 * a frame may declare (-EMSGSIZE, nothing allocated), oversized sends
 * (-EMSGSIZE), a closed peer (-EPIPE, no SIGPIPE), EOF, the versioned HELLO
 * body, the "unix:@name" and "tcp:a.b.c.d:port" address parsers, and
 * fl_proto_connect over both.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "boot/proto.h"
#include "unit.h"

#define CHECK_EQ_INT(expr, want)                                                         \
    do {                                                                                 \
        long v_ = (long)(expr);                                                          \
        if (v_ != (long)(want))                                                          \
            FAIL("%s = %ld, expected %ld", #expr, v_, (long)(want));                     \
    } while (0)

static uint8_t body_byte(uint32_t frame, size_t i)
{
    return (uint8_t)(frame * 29u + i * 3u + (i >> 10));
}

static void pair(int sv[2])
{
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

/* Writes all of buf (blocking fd). */
static void write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* The encoding proto.h specifies: u32 LE length of type + body, type, body. */
static size_t encode(uint8_t *out, uint8_t type, const uint8_t *body, size_t len)
{
    uint32_t l = (uint32_t)(len + 1);
    out[0] = (uint8_t)l;
    out[1] = (uint8_t)(l >> 8);
    out[2] = (uint8_t)(l >> 16);
    out[3] = (uint8_t)(l >> 24);
    out[4] = type;
    if (len)
        memcpy(out + 5, body, len);
    return len + 5;
}

/* Takes the next frame, filling from fd (blocking) as needed. 1 with a
   frame, 0 on EOF before one was complete. */
static int next_frame(struct fl_proto_rx *rx, int fd, uint8_t *type, const uint8_t **body,
                      size_t *len)
{
    for (int guard = 0; guard < 1000000; guard++) {
        int r = fl_proto_rx_next(rx, type, body, len);
        if (r != 0)
            return r;
        r = fl_proto_rx_fill(rx, fd);
        if (r <= 0)
            return r;
    }
    FAIL("no frame after a million reads");
}

/* ---------------------------------------------------------------- sizes */

static const size_t frame_sizes[] = {
    0,        1,
    2,        3,
    4,        5,
    7,        8,
    63,       64,
    4090,     4091,
    4095,     4096,
    4097,     8187,
    8192,     12345,
    65535,    65536,
    65537,    200000,
    1u << 20, 0,
    1,        (1u << 20) - 1,
    7,
};
#define NSIZES (sizeof frame_sizes / sizeof frame_sizes[0])

struct writer {
    int fd;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    uint8_t *body = malloc(1u << 20);
    CHECK(body != NULL);
    for (uint32_t f = 0; f < NSIZES; f++) {
        size_t len = frame_sizes[f];
        for (size_t i = 0; i < len; i++)
            body[i] = body_byte(f, i);
        CHECK_EQ_INT(fl_proto_send(w->fd, (uint8_t)(f + 1), len ? body : NULL, len), 0);
    }
    free(body);
    CHECK(close(w->fd) == 0);
    return NULL;
}

static void test_sizes(void)
{
    int sv[2];
    pair(sv);
    struct writer w = {sv[0]};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, writer_main, &w) == 0);
    struct fl_proto_rx rx = {0};
    for (uint32_t f = 0; f < NSIZES; f++) {
        uint8_t type = 0;
        const uint8_t *body = NULL;
        size_t len = 0;
        int r = next_frame(&rx, sv[1], &type, &body, &len);
        if (r != 1)
            FAIL("frame %u (%zu bytes): next_frame answered %d", f, frame_sizes[f], r);
        CHECK(type == (uint8_t)(f + 1));
        if (len != frame_sizes[f])
            FAIL("frame %u: %zu bytes, expected %zu", f, len, frame_sizes[f]);
        for (size_t i = 0; i < len; i++)
            if (body[i] != body_byte(f, i))
                FAIL("frame %u: byte %zu differs", f, i);
    }
    /* The writer closed: EOF, and no frame out of nothing. */
    uint8_t type;
    const uint8_t *body;
    size_t len;
    CHECK_EQ_INT(next_frame(&rx, sv[1], &type, &body, &len), 0);
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), 0);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &body, &len), 0);
    CHECK(pthread_join(t, NULL) == 0);
    fl_proto_rx_free(&rx);
    CHECK(rx.buf == NULL && rx.len == 0 && rx.cap == 0);
    close(sv[1]);
}

/* What fl_proto_send writes is exactly the documented encoding. */
static void test_encoding(void)
{
    int sv[2];
    pair(sv);
    uint8_t body[300], want[400], got[400];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)i;
    CHECK_EQ_INT(fl_proto_send(sv[0], FL_PROTO_GATHER, body, sizeof body), 0);
    CHECK_EQ_INT(fl_proto_send(sv[0], FL_PROTO_BYE, NULL, 0), 0);
    size_t n = encode(want, FL_PROTO_GATHER, body, sizeof body);
    n += encode(want + n, FL_PROTO_BYE, NULL, 0);
    CHECK(n == 310);
    size_t have = 0;
    while (have < n) {
        ssize_t r = read(sv[1], got + have, sizeof got - have);
        CHECK(r > 0);
        have += (size_t)r;
    }
    CHECK(have == n && memcmp(got, want, n) == 0);
    close(sv[0]);
    close(sv[1]);
}

/* ---------------------------------------------------------------- batching */

static void test_many_in_one_read(void)
{
    int sv[2];
    pair(sv);
    uint8_t body[32];
    for (uint32_t f = 0; f < 100; f++) {
        size_t len = f % 30;
        for (size_t i = 0; i < len; i++)
            body[i] = body_byte(f, i);
        CHECK_EQ_INT(fl_proto_send(sv[0], (uint8_t)f, body, len), 0);
    }
    /* All 100 frames (< 3 KiB) are in the socket: one fill reads them all,
       and they come out without another read. */
    struct fl_proto_rx rx = {0};
    set_nonblock(sv[1]);
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), 1);
    for (uint32_t f = 0; f < 100; f++) {
        uint8_t type;
        const uint8_t *b;
        size_t len;
        CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 1);
        CHECK(type == (uint8_t)f && len == f % 30);
        for (size_t i = 0; i < len; i++)
            CHECK(b[i] == body_byte(f, i));
    }
    uint8_t type;
    const uint8_t *b;
    size_t len;
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 0);
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), -EAGAIN);
    fl_proto_rx_free(&rx);
    close(sv[0]);
    close(sv[1]);
}

/* ---------------------------------------------------------------- trickle */

static void test_byte_by_byte(void)
{
    int sv[2];
    pair(sv);
    set_nonblock(sv[1]);
    /* Three frames back to back, one of them bigger than the reader's
       first buffer. */
    static uint8_t stream[20000 + 64];
    static const size_t lens[] = {10, 0, 20000};
    size_t ends[3], n = 0;
    static uint8_t body[20000];
    for (int f = 0; f < 3; f++) {
        for (size_t i = 0; i < lens[f]; i++)
            body[i] = body_byte((uint32_t)f + 7, i);
        n += encode(stream + n, (uint8_t)(0x40 + f), body, lens[f]);
        ends[f] = n;
    }
    struct fl_proto_rx rx = {0};
    uint8_t type;
    const uint8_t *b;
    size_t len;
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), -EAGAIN);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 0);
    int f = 0;
    for (size_t at = 0; at < n; at++) {
        CHECK(write(sv[0], stream + at, 1) == 1);
        CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), 1);
        CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), -EAGAIN);
        int r = fl_proto_rx_next(&rx, &type, &b, &len);
        if (at + 1 < ends[f]) {
            if (r != 0)
                FAIL("frame %d complete after %zu of %zu bytes (r=%d)", f, at + 1,
                     ends[f], r);
            continue;
        }
        CHECK_EQ_INT(r, 1);
        CHECK(type == 0x40 + f && len == lens[f]);
        for (size_t i = 0; i < len; i++)
            CHECK(b[i] == body_byte((uint32_t)f + 7, i));
        /* Nothing more until more bytes come. */
        CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 0);
        f++;
    }
    CHECK(f == 3);
    /* EOF in the middle of a frame: fill says EOF, no frame appears. */
    uint8_t part[5];
    CHECK(encode(part, 9, NULL, 0) == 5);
    CHECK(write(sv[0], part, 3) == 3);
    close(sv[0]);
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), 1);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 0);
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), 0);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 0);
    fl_proto_rx_free(&rx);
    close(sv[1]);
}

/* ---------------------------------------------------------------- garbage */

/* A stream that starts with a frame length of `flen`. */
static int next_after_length(uint32_t flen)
{
    int sv[2];
    pair(sv);
    uint8_t head[5] = {(uint8_t)flen, (uint8_t)(flen >> 8), (uint8_t)(flen >> 16),
                       (uint8_t)(flen >> 24), 1};
    write_all(sv[0], head, sizeof head);
    struct fl_proto_rx rx = {0};
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, sv[1]), 1);
    uint8_t type;
    const uint8_t *b;
    size_t len;
    int r = fl_proto_rx_next(&rx, &type, &b, &len);
    fl_proto_rx_free(&rx);
    close(sv[0]);
    close(sv[1]);
    return r;
}

static void test_garbage(void)
{
    CHECK_EQ_INT(next_after_length(0), -EPROTO);
    CHECK_EQ_INT(next_after_length(FL_PROTO_MAX_FRAME + 1), -EPROTO);
    CHECK_EQ_INT(next_after_length(0x80000000u), -EPROTO);
    CHECK_EQ_INT(next_after_length(UINT32_MAX), -EPROTO);
    /* The largest legal frame is only incomplete, not garbage. */
    CHECK_EQ_INT(next_after_length(FL_PROTO_MAX_FRAME), 0);
    CHECK_EQ_INT(next_after_length(1), 1);

    /* A good frame, then garbage: the good one comes out first. */
    int sv[2];
    pair(sv);
    uint8_t buf[16];
    size_t n = encode(buf, 3, (const uint8_t *)"abc", 3);
    memset(buf + n, 0, 4);
    write_all(sv[0], buf, n + 4);
    struct fl_proto_rx rx = {0};
    uint8_t type;
    const uint8_t *b;
    size_t len;
    CHECK_EQ_INT(next_frame(&rx, sv[1], &type, &b, &len), 1);
    CHECK(type == 3 && len == 3 && memcmp(b, "abc", 3) == 0);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), -EPROTO);
    fl_proto_rx_free(&rx);
    close(sv[0]);
    close(sv[1]);
}

/*
 * A reader with max_frame set refuses a longer declared frame with -EMSGSIZE
 * and allocates nothing for it; a frame at the bound still comes out; the
 * bound lifted (0), the same large declaration is only incomplete.
 */
static void test_max_frame(void)
{
    const uint32_t bound = 1 + FL_PROTO_HELLO_LEN;
    int sv[2];
    pair(sv);
    uint8_t buf[64], body[FL_PROTO_HELLO_LEN] = {0};
    size_t n = encode(buf, FL_PROTO_HELLO, body, sizeof body); /* exactly the bound */
    fl_put32(buf + n, FL_PROTO_MAX_FRAME); /* then a huge declaration */
    write_all(sv[0], buf, n + 4);
    struct fl_proto_rx rx = {.max_frame = bound};
    uint8_t type;
    const uint8_t *b;
    size_t len;
    CHECK_EQ_INT(next_frame(&rx, sv[1], &type, &b, &len), 1);
    CHECK(type == FL_PROTO_HELLO && len == FL_PROTO_HELLO_LEN);
    size_t cap = rx.cap;
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), -EMSGSIZE);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), -EMSGSIZE); /* stays refused */
    if (rx.cap != cap || rx.cap >= 65536)
        FAIL("the refused frame grew the buffer from %zu to %zu bytes", cap, rx.cap);
    /* One byte over the bound is refused too; garbage stays -EPROTO. */
    CHECK_EQ_INT(rx.max_frame, bound);
    fl_put32(rx.buf, bound + 1);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), -EMSGSIZE);
    fl_put32(rx.buf, FL_PROTO_MAX_FRAME + 1);
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), -EPROTO);
    fl_put32(rx.buf, FL_PROTO_MAX_FRAME);
    rx.max_frame = 0;
    CHECK_EQ_INT(fl_proto_rx_next(&rx, &type, &b, &len), 0);
    CHECK(rx.cap >= 4 + (size_t)FL_PROTO_MAX_FRAME);
    fl_proto_rx_free(&rx);
    close(sv[0]);
    close(sv[1]);
}

static void test_send_errors(void)
{
    int sv[2];
    pair(sv);
    /* Too big: refused before a byte is read or written. */
    static const uint8_t dummy[1];
    CHECK_EQ_INT(fl_proto_send(sv[0], 1, dummy, FL_PROTO_MAX_FRAME), -EMSGSIZE);
    CHECK_EQ_INT(fl_proto_send(sv[0], 1, dummy, SIZE_MAX), -EMSGSIZE);
    set_nonblock(sv[1]);
    uint8_t c;
    CHECK(read(sv[1], &c, 1) == -1 && errno == EAGAIN);
    /* A closed peer: -EPIPE, and no SIGPIPE kills us. */
    close(sv[1]);
    CHECK_EQ_INT(fl_proto_send(sv[0], 1, "x", 1), -EPIPE);
    close(sv[0]);
    /* Not a socket / not open. */
    CHECK_EQ_INT(fl_proto_send(-1, 1, NULL, 0), -EBADF);
    struct fl_proto_rx rx = {0};
    CHECK_EQ_INT(fl_proto_rx_fill(&rx, -1), -EBADF);
    fl_proto_rx_free(&rx);
}

/* ---------------------------------------------------------------- hello */

static int decode_exact(const uint8_t *b, size_t len, struct fl_proto_hello *h)
{
    uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    CHECK(copy != NULL);
    if (len)
        memcpy(copy, b, len);
    int r = fl_proto_hello_decode(copy, len, h);
    free(copy);
    return r;
}

static void test_hello(void)
{
    uint8_t b[FL_PROTO_HELLO_LEN + 8], key[FL_PROTO_KEY_LEN];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(0xa0 + i);
    memset(b, 0xcc, sizeof b);
    fl_proto_hello_encode(b, 0x0807060504030201ull, 0x0c0b0a09, 0x100f0e0d, key);
    static const uint8_t want[20] = {
        FL_PROTO_VERSION, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    CHECK(memcmp(b, want, sizeof want) == 0);
    CHECK(memcmp(b + 20, key, sizeof key) == 0); /* the key last */
    CHECK(b[FL_PROTO_HELLO_LEN] == 0xcc);        /* nothing written past it */
    struct fl_proto_hello h;
    memset(&h, 0, sizeof h);
    CHECK_EQ_INT(decode_exact(b, FL_PROTO_HELLO_LEN, &h), 0);
    CHECK(h.version == FL_PROTO_VERSION && h.job_id == 0x0807060504030201ull);
    CHECK(h.rank == 0x0c0b0a09 && h.pid == 0x100f0e0d);
    CHECK(memcmp(h.key, key, sizeof key) == 0);

    /* Too short to say its version, or the wrong length for this one (a
       version-2 HELLO cut to version 1's 20 bytes included). */
    for (size_t len = 0; len < 4; len++)
        CHECK_EQ_INT(decode_exact(b, len, &h), -EPROTO);
    for (size_t len = 4; len <= FL_PROTO_HELLO_LEN + 8; len++)
        if (len != FL_PROTO_HELLO_LEN)
            CHECK_EQ_INT(decode_exact(b, len, &h), -EPROTO);
    /* Another version of flit, whatever its HELLO looks like: version 1's
       HELLO had no key, and says so by its version. */
    static const uint32_t versions[] = {0, 1, FL_PROTO_VERSION + 1, 0xffffffffu};
    for (size_t i = 0; i < 4; i++) {
        uint8_t v[FL_PROTO_HELLO_LEN + 8];
        memcpy(v, b, sizeof v);
        fl_put32(v, versions[i]);
        CHECK_EQ_INT(decode_exact(v, FL_PROTO_HELLO_LEN, &h), -EPROTONOSUPPORT);
        CHECK(h.version == versions[i]);
        CHECK_EQ_INT(decode_exact(v, 4, &h), -EPROTONOSUPPORT);
        CHECK_EQ_INT(decode_exact(v, 20, &h), -EPROTONOSUPPORT);
        CHECK_EQ_INT(decode_exact(v, FL_PROTO_HELLO_LEN + 8, &h), -EPROTONOSUPPORT);
    }
}

/* The job's key: equal only when every byte is, wherever they differ; its
   text exactly 64 lowercase hex digits, round-tripped. */
static void test_key(void)
{
    uint8_t a[FL_PROTO_KEY_LEN], b[FL_PROTO_KEY_LEN], back[FL_PROTO_KEY_LEN];
    char hex[2 * FL_PROTO_KEY_LEN + 1];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (uint8_t)(i * 29 + 7);
    memcpy(b, a, sizeof b);
    CHECK(fl_proto_key_equal(a, b));
    for (size_t i = 0; i < sizeof a; i++)
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            CHECK(!fl_proto_key_equal(a, b));
            b[i] ^= (uint8_t)(1u << bit);
        }
    fl_proto_key_format(a, hex);
    CHECK(strlen(hex) == 2 * FL_PROTO_KEY_LEN && strspn(hex, "0123456789abcdef") == 64);
    CHECK_EQ_INT(fl_proto_key_parse(hex, back), 0);
    CHECK(memcmp(a, back, sizeof a) == 0);
    /* refused, and back untouched: short, long, upper case, not hex, NULL */
    memset(back, 0x5a, sizeof back);
    char bad[2 * FL_PROTO_KEY_LEN + 2];
    snprintf(bad, sizeof bad, "%.63s", hex);
    CHECK_EQ_INT(fl_proto_key_parse(bad, back), -EINVAL);
    snprintf(bad, sizeof bad, "%s0", hex);
    CHECK_EQ_INT(fl_proto_key_parse(bad, back), -EINVAL);
    static const char swaps[] = {'A', 'g', ' ', '-'};
    for (size_t i = 0; i < sizeof swaps; i++) {
        snprintf(bad, sizeof bad, "%s", hex);
        bad[17] = swaps[i];
        CHECK_EQ_INT(fl_proto_key_parse(bad, back), -EINVAL);
    }
    CHECK_EQ_INT(fl_proto_key_parse(NULL, back), -EINVAL);
    CHECK_EQ_INT(fl_proto_key_parse("", back), -EINVAL);
    for (size_t i = 0; i < sizeof back; i++)
        CHECK(back[i] == 0x5a);
}

/* ---------------------------------------------------------------- address */

static void expect_addr_bad(const char *spec)
{
    struct sockaddr_un sa;
    memset(&sa, 0x77, sizeof sa);
    unsigned salen = 12345;
    int r = fl_proto_parse_addr(spec, &sa, &salen);
    if (r != -EINVAL)
        FAIL("parse_addr(\"%.40s\") answered %d, expected -EINVAL",
             spec ? spec : "(null)", r);
    /* Outputs untouched on failure. */
    CHECK(salen == 12345);
    CHECK(((uint8_t *)&sa)[0] == 0x77 && ((uint8_t *)&sa)[sizeof sa - 1] == 0x77);
}

static void test_addr(void)
{
    struct sockaddr_un sa;
    unsigned salen = 0;
    CHECK_EQ_INT(fl_proto_parse_addr("unix:@name", &sa, &salen), 0);
    CHECK(sa.sun_family == AF_UNIX);
    CHECK(sa.sun_path[0] == '\0' && memcmp(sa.sun_path + 1, "name", 4) == 0);
    CHECK(salen == offsetof(struct sockaddr_un, sun_path) + 1 + 4);

    expect_addr_bad(NULL);
    expect_addr_bad("");
    expect_addr_bad("unix:");
    expect_addr_bad("unix:@");
    expect_addr_bad("unix");
    expect_addr_bad("tcp:127.0.0.1:5000");
    expect_addr_bad("tcp:..");
    expect_addr_bad("unix:/tmp/sock");
    expect_addr_bad("UNIX:@name");
    expect_addr_bad(" unix:@name");

    /* The abstract name fills sun_path after its leading NUL: 107 bytes fit,
       108 do not. */
    char spec[300] = "unix:@";
    size_t max = sizeof sa.sun_path - 1;
    memset(spec + 6, 'n', max);
    spec[6 + max] = '\0';
    CHECK_EQ_INT(fl_proto_parse_addr(spec, &sa, &salen), 0);
    CHECK(salen == sizeof sa);
    CHECK(sa.sun_path[0] == '\0' && sa.sun_path[max] == 'n');
    spec[6 + max] = 'n';
    spec[7 + max] = '\0';
    expect_addr_bad(spec);
    memset(spec + 6, 'n', 250);
    spec[256] = '\0';
    expect_addr_bad(spec);

    /* The parsed address is one a socket can bind and another reach. */
    char name[64];
    snprintf(name, sizeof name, "unix:@flit-proto-test-%d", (int)getpid());
    CHECK_EQ_INT(fl_proto_parse_addr(name, &sa, &salen), 0);
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(ls >= 0);
    CHECK(bind(ls, (struct sockaddr *)&sa, salen) == 0);
    CHECK(listen(ls, 1) == 0);
    int cs = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(cs >= 0);
    CHECK(connect(cs, (struct sockaddr *)&sa, salen) == 0);
    int as = accept(ls, NULL, NULL);
    CHECK(as >= 0);
    CHECK_EQ_INT(fl_proto_send(cs, FL_PROTO_HELLO, "hi", 2), 0);
    struct fl_proto_rx rx = {0};
    uint8_t type;
    const uint8_t *b;
    size_t len;
    CHECK_EQ_INT(next_frame(&rx, as, &type, &b, &len), 1);
    CHECK(type == FL_PROTO_HELLO && len == 2 && memcmp(b, "hi", 2) == 0);
    fl_proto_rx_free(&rx);
    close(as);
    close(cs);
    close(ls);
}

static void expect_tcp_bad(const char *spec)
{
    struct sockaddr_in sa;
    memset(&sa, 0x77, sizeof sa);
    int r = fl_proto_parse_tcp(spec, &sa);
    if (r != -EINVAL)
        FAIL("parse_tcp(\"%s\") answered %d, expected -EINVAL", spec ? spec : "(null)",
             r);
    CHECK(((uint8_t *)&sa)[0] == 0x77 && ((uint8_t *)&sa)[sizeof sa - 1] == 0x77);
}

static void test_tcp_addr(void)
{
    struct sockaddr_in sa;
    CHECK_EQ_INT(fl_proto_parse_tcp("tcp:10.1.2.3:4567", &sa), 0);
    CHECK(sa.sin_family == AF_INET && ntohs(sa.sin_port) == 4567);
    CHECK(ntohl(sa.sin_addr.s_addr) == 0x0a010203u);
    CHECK_EQ_INT(fl_proto_parse_tcp("tcp:255.255.255.255:65535", &sa), 0);
    CHECK(fl_proto_is_tcp("tcp:x") && !fl_proto_is_tcp("unix:@x") &&
          !fl_proto_is_tcp(NULL));
    static const char *const bad[] = {
        NULL,
        "",
        "tcp:",
        "tcp::1",
        "tcp:1.2.3.4",
        "tcp:1.2.3.4:",
        "tcp:1.2.3.4:0",
        "tcp:1.2.3.4:65536",
        "tcp:1.2.3.4:099",
        "tcp:1.2.3.4:+80",
        "tcp:1.2.3.4: 80",
        "tcp:1.2.3.4:80 ",
        "tcp:1.2.3.4:80x",
        "tcp:1.2.3:80",
        "tcp:1.2.3.4.5:80",
        "tcp:256.1.1.1:80",
        "tcp:host:80",
        "tcp:[::1]:80",
        "TCP:1.2.3.4:80",
        " tcp:1.2.3.4:80",
        "unix:@name",
        "tcp:1.2.3.4:123456",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_tcp_bad(bad[i]);
}

/* fl_proto_connect reaches a listener of either kind and tells the TCP
   socket's own address. */
static void test_connect(void)
{
    uint32_t local = 99;
    CHECK_EQ_INT(fl_proto_connect("nonsense", &local), -EINVAL);
    CHECK(local == 99);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    CHECK(ls >= 0 && bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0 &&
          listen(ls, 1) == 0 && getsockname(ls, (struct sockaddr *)&sa, &len) == 0);
    char spec[64];
    snprintf(spec, sizeof spec, "tcp:127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    int cs = fl_proto_connect(spec, &local);
    CHECK(cs >= 0);
    CHECK(local == INADDR_LOOPBACK);
    int one = 0;
    len = sizeof one;
    CHECK(getsockopt(cs, IPPROTO_TCP, TCP_NODELAY, &one, &len) == 0 && one);
    int as = accept(ls, NULL, NULL);
    CHECK(as >= 0);
    CHECK_EQ_INT(fl_proto_send(cs, FL_PROTO_BYE, NULL, 0), 0);
    struct fl_proto_rx rx = {0};
    uint8_t type;
    const uint8_t *b;
    size_t blen;
    CHECK_EQ_INT(next_frame(&rx, as, &type, &b, &blen), 1);
    CHECK(type == FL_PROTO_BYE && blen == 0);
    fl_proto_rx_free(&rx);
    close(as);
    close(cs);
    close(ls);
    /* nobody listens there any more */
    CHECK_EQ_INT(fl_proto_connect(spec, &local), -ECONNREFUSED);

    char name[64];
    snprintf(name, sizeof name, "unix:@flit-proto-connect-%d", (int)getpid());
    struct sockaddr_un un;
    unsigned unlen;
    CHECK_EQ_INT(fl_proto_parse_addr(name, &un, &unlen), 0);
    ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(ls >= 0 && bind(ls, (struct sockaddr *)&un, unlen) == 0 && listen(ls, 1) == 0);
    local = 99;
    cs = fl_proto_connect(name, &local);
    CHECK(cs >= 0 && local == 0);
    close(cs);
    close(ls);
}

static int sockopt(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof v;
    CHECK(getsockopt(fd, level, name, &v, &len) == 0);
    return v;
}

/* fl_proto_keepalive: probes after half the timeout, a verdict within it;
   0 leaves the socket as it was; a unix socket answers an error. */
static void test_keepalive(void)
{
    static const struct {
        int64_t ms;
        int idle, intvl, cnt, user;
    } cases[] = {
        {30000, 15, 3, 5, 30000}, /* FLIT_PEER_TIMEOUT's default */
        {2000, 1, 1, 1, 2000},    /* the tests' */
        {100, 1, 1, 1, 100},      /* the least FLIT_PEER_TIMEOUT takes */
        {10000, 5, 1, 5, 10000},
        {86400000, 32767, 10800, 4, 86400000}, /* the most it takes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        CHECK_EQ_INT(fl_proto_keepalive(fd, cases[i].ms), 0);
        CHECK_EQ_INT(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
        CHECK_EQ_INT(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), cases[i].idle);
        CHECK_EQ_INT(sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), cases[i].intvl);
        CHECK_EQ_INT(sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT), cases[i].cnt);
        CHECK_EQ_INT(sockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), cases[i].user);
        close(fd);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    CHECK_EQ_INT(fl_proto_keepalive(fd, 0), 0);
    CHECK_EQ_INT(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
    close(fd);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(fd >= 0);
    CHECK(fl_proto_keepalive(fd, 2000) < 0);
    close(fd);
}

int main(void)
{
    test_encoding();
    test_sizes();
    test_many_in_one_read();
    test_byte_by_byte();
    test_garbage();
    test_max_frame();
    test_send_errors();
    test_hello();
    test_key();
    test_addr();
    test_tcp_addr();
    test_connect();
    test_keepalive();
    return 0;
}
