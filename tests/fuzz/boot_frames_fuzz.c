/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The boot protocol's frames (src/boot/proto.h) as flitrun and the ranks
 * read them off a stream socket: over TCP anyone may connect to flitrun
 * and send anything. Byte 0 of the input says how the rest arrives (the
 * seed of the sizes of the pieces it is written in); the rest is the byte
 * stream, written piece by piece into a socket that fl_proto_rx_fill reads,
 * with fl_proto_rx_next taking frames out after each piece.
 *
 * The frames that come out must be exactly those of the stream, however it
 * was cut: a model walks it (u32 length, type, body) and says, after each
 * piece, which frames are whole, where the stream turns out to be garbage
 * (a length of 0 or above FL_PROTO_MAX_FRAME: -EPROTO, then nothing more
 * is read, as flitrun closes such a connection), and that a frame cut
 * short is waited for. Every frame's body goes through the HELLO decoder,
 * which accepts exactly a FL_PROTO_HELLO_LEN-byte body of this version,
 * calls one of another version by that name, and round-trips what it
 * accepts (the key included); and the key compare, which must say equal
 * exactly when the bytes are.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/proto.h"
#include "fuzz.h"
#include "platform/le.h"

struct stream {
    const uint8_t *data;
    size_t written; /* bytes of data in the socket so far */
    size_t pos;     /* where the next frame starts */
    bool garbage;   /* the reader said -EPROTO */
};

static void check_hello(const uint8_t *body, size_t len)
{
    struct fl_proto_hello h;
    int r = fl_proto_hello_decode(body, len, &h);
    if (len < 4) {
        FUZZ_CHECK(r == -EPROTO);
        return;
    }
    uint32_t version = fl_get32(body);
    if (version != FL_PROTO_VERSION) {
        FUZZ_CHECK(r == -EPROTONOSUPPORT && h.version == version);
        return;
    }
    FUZZ_CHECK(r == (len == FL_PROTO_HELLO_LEN ? 0 : -EPROTO));
    if (r == 0) {
        uint8_t again[FL_PROTO_HELLO_LEN], other[FL_PROTO_KEY_LEN];
        fl_proto_hello_encode(again, h.job_id, h.rank, h.pid, h.key);
        FUZZ_CHECK(h.version == FL_PROTO_VERSION && memcmp(again, body, len) == 0);
        /* the key against the first FL_PROTO_KEY_LEN bytes of the HELLO */
        memcpy(other, body, sizeof other);
        FUZZ_CHECK(fl_proto_key_equal(h.key, other) ==
                   (memcmp(h.key, other, sizeof other) == 0));
        FUZZ_CHECK(fl_proto_key_equal(h.key, h.key));
    }
}

/* What the model expects next of the bytes written so far: 1 a whole frame
   at s->pos, 0 none yet, -EPROTO garbage. */
static int model_next(const struct stream *s, uint32_t *flen)
{
    size_t left = s->written - s->pos;
    if (left < 4)
        return 0;
    *flen = fl_get32(s->data + s->pos);
    if (*flen == 0 || *flen > FL_PROTO_MAX_FRAME)
        return -EPROTO;
    return left >= 4 + (size_t)*flen ? 1 : 0;
}

/* Takes every frame the reader has; each must be the model's. */
static void take_frames(struct fl_proto_rx *rx, struct stream *s)
{
    while (!s->garbage) {
        uint8_t type;
        const uint8_t *body;
        size_t len;
        uint32_t flen = 0;
        int want = model_next(s, &flen);
        int r = fl_proto_rx_next(rx, &type, &body, &len);
        FUZZ_CHECK(r == want);
        if (r <= 0) {
            s->garbage = r < 0;
            return;
        }
        FUZZ_CHECK(type == s->data[s->pos + 4] && len == flen - 1u);
        FUZZ_CHECK(memcmp(body, s->data + s->pos + 5, len) == 0);
        check_hello(body, len);
        s->pos += 4 + (size_t)flen;
    }
}

/* Reads everything the socket has into rx; false at EOF. */
static bool fill_all(struct fl_proto_rx *rx, int fd)
{
    for (;;) {
        int r = fl_proto_rx_fill(rx, fd);
        if (r == -EAGAIN)
            return true;
        FUZZ_CHECK(r >= 0);
        if (r == 0)
            return false;
    }
}

/* Writes n bytes into the socket, whole (the pieces fit its buffer). */
static void put(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        FUZZ_CHECK(k > 0);
        p += k;
        n -= (size_t)k;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) ==
               0);
    struct fl_proto_rx rx = {0};
    struct stream s = {.data = data + 1};
    uint32_t lcg = data[0] * 2654435761u + 1;
    size_t total = size - 1;
    while (s.written < total && !s.garbage) {
        lcg = lcg * 1103515245u + 12345u;
        size_t piece = 1 + (lcg >> 8) % (data[0] & 0x80 ? 4096 : 16);
        if (piece > total - s.written)
            piece = total - s.written;
        put(sv[1], s.data + s.written, piece);
        s.written += piece;
        FUZZ_CHECK(fill_all(&rx, sv[0]));
        take_frames(&rx, &s);
    }
    close(sv[1]);
    if (!s.garbage) {
        FUZZ_CHECK(!fill_all(&rx, sv[0])); /* EOF, after the last byte */
        take_frames(&rx, &s);              /* a frame cut short stays waited for */
    }
    close(sv[0]);
    fl_proto_rx_free(&rx);
    return 0;
}
