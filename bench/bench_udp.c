/*
 * Raw UDP baselines: plain sendto/recvfrom, see bench_udp.h.
 *
 * Every datagram starts with a 32-bit sequence number, counted per
 * direction across calls; an acknowledgement (streaming) is a datagram of
 * its own: the sequence number, then how many data datagrams arrived so
 * far. A datagram out of sequence means one was lost: the baseline gives
 * up for good (every later call returns UINT64_MAX at once), since after a
 * loss the two sides no longer agree on what comes next.
 */
#include "bench_udp.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"

#define BUF_BYTES  (8 << 20)
#define MAX_DGRAM  65507u
#define SILENCE_NS 2000000000ull /* a peer silent this long is gone */
#define GAVE_UP    UINT64_MAX

struct bench_udp {
    int fd;
    struct sockaddr_in peer;
    uint32_t tx_seq, rx_seq; /* the next datagram sent, and expected */
    size_t rcvbuf;           /* bytes the socket holds, as the kernel says */
    bool broken;             /* lost a datagram or the peer: no more figures */
    uint8_t buf[MAX_DGRAM];
};

static void buffers(int fd, int opt_force, int opt)
{
    int v = BUF_BYTES;
    if (setsockopt(fd, SOL_SOCKET, opt_force, &v, sizeof v) != 0)
        setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v);
}

bench_udp_t *bench_udp_open(void)
{
    bench_udp_t *u = calloc(1, sizeof *u);
    if (!u) {
        fprintf(stderr, "raw UDP baseline: out of memory\n");
        return NULL;
    }
    u->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (u->fd < 0 || bind(u->fd, (struct sockaddr *)&any, sizeof any) != 0) {
        fprintf(stderr, "raw UDP baseline: socket: %s\n", strerror(errno));
        bench_udp_close(u);
        return NULL;
    }
    buffers(u->fd, SO_RCVBUFFORCE, SO_RCVBUF);
    buffers(u->fd, SO_SNDBUFFORCE, SO_SNDBUF);
    int got = 0;
    socklen_t len = sizeof got;
    getsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &got, &len);
    u->rcvbuf = got > 0 ? (size_t)got : 212992u;
    /* A blocking receive gives up after the silence a lost peer makes. */
    struct timeval tv = {.tv_sec = SILENCE_NS / 1000000000ull};
    setsockopt(u->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return u;
}

void bench_udp_close(bench_udp_t *u)
{
    if (!u)
        return;
    if (u->fd >= 0)
        close(u->fd);
    free(u);
}

uint16_t bench_udp_port(const bench_udp_t *u)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    if (getsockname(u->fd, (struct sockaddr *)&sa, &len) != 0)
        return 0;
    return ntohs(sa.sin_port);
}

void bench_udp_set_peer(bench_udp_t *u, uint32_t ip, uint16_t port)
{
    u->peer = (struct sockaddr_in){
        .sin_family = AF_INET, .sin_addr.s_addr = htonl(ip), .sin_port = htons(port)};
}

unsigned bench_udp_window(const bench_udp_t *u, const struct bench_udp_shape *s,
                          unsigned messages)
{
    size_t per_msg = s->size ? (s->size + s->dgram - 1) / s->dgram : 1;
    /* Half of what the receiving socket holds (the kernel counts each
       datagram's buffer too, hence the margin). */
    size_t cap = u->rcvbuf / 2 / (s->dgram + 512);
    size_t w = per_msg * messages;
    if (w > cap)
        w = cap;
    return w < 2 ? 2 : (unsigned)w;
}

/* ---- one datagram ---- */

static bool send_dgram(bench_udp_t *u, size_t len)
{
    if (len < 4)
        len = 4;
    memcpy(u->buf, &u->tx_seq, 4);
    u->tx_seq++;
    for (;;) {
        ssize_t r = sendto(u->fd, u->buf, len, 0, (struct sockaddr *)&u->peer,
                           sizeof u->peer);
        if (r == (ssize_t)len)
            return true;
        if (r < 0 && (errno == EINTR || errno == ENOBUFS))
            continue;
        fprintf(stderr, "raw UDP baseline: sendto: %s\n", strerror(errno));
        u->broken = true;
        return false;
    }
}

/* The next datagram, in u->buf; its length, or -1 when the baseline gave up. */
static ssize_t recv_dgram(bench_udp_t *u, bool busy)
{
    uint64_t since = 0;
    for (uint32_t spins = 0;; spins++) {
        ssize_t r = recvfrom(u->fd, u->buf, sizeof u->buf, busy ? MSG_DONTWAIT : 0, NULL,
                             NULL);
        if (r >= 4) {
            uint32_t seq;
            memcpy(&seq, u->buf, 4);
            if (seq != u->rx_seq) {
                fprintf(stderr,
                        "raw UDP baseline: datagram %u arrived where %u was due: "
                        "the path or a socket lost datagrams; no raw UDP figures "
                        "from here\n",
                        seq, u->rx_seq);
                u->broken = true;
                return -1;
            }
            u->rx_seq++;
            return r;
        }
        if (r >= 0 || errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            fprintf(stderr, "raw UDP baseline: recvfrom: %s\n", strerror(errno));
            u->broken = true;
            return -1;
        }
        /* Nothing there: a blocking receive waited out the silence; a busy
           one looks at the clock now and then. */
        if (!busy || (spins & 1023) == 0) {
            uint64_t now = bench_now_ns();
            if (!busy || (since && now - since > SILENCE_NS)) {
                fprintf(stderr, "raw UDP baseline: the peer is silent; no raw UDP "
                                "figures from here\n");
                u->broken = true;
                return -1;
            }
            if (!since)
                since = now;
        }
    }
}

/* ---- a message: size bytes in datagrams of at most dgram ---- */

static bool send_msg(bench_udp_t *u, const struct bench_udp_shape *s)
{
    size_t left = s->size;
    do {
        size_t len = left < s->dgram ? left : s->dgram;
        if (!send_dgram(u, len))
            return false;
        left -= len;
    } while (left > 0);
    return true;
}

static bool recv_msg(bench_udp_t *u, const struct bench_udp_shape *s)
{
    size_t left = s->size;
    do {
        ssize_t r = recv_dgram(u, !s->blocking);
        if (r < 0)
            return false;
        size_t len = left < s->dgram ? left : s->dgram;
        left -= len;
    } while (left > 0);
    return true;
}

uint64_t bench_udp_ping(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n)
{
    if (u->broken)
        return GAVE_UP;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (!send_msg(u, s) || !recv_msg(u, s))
            return GAVE_UP;
    return bench_now_ns() - t0;
}

uint64_t bench_udp_echo(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n)
{
    if (u->broken)
        return GAVE_UP;
    for (uint64_t i = 0; i < n; i++)
        if (!recv_msg(u, s) || !send_msg(u, s))
            return GAVE_UP;
    return 0;
}

/* ---- streaming, flow-controlled per datagram ---- */

static uint64_t dgrams_of(const struct bench_udp_shape *s, uint64_t n)
{
    uint64_t per_msg = s->size ? (s->size + s->dgram - 1) / s->dgram : 1;
    return per_msg * n;
}

static unsigned ack_every(const struct bench_udp_shape *s)
{
    return s->window / 2 ? s->window / 2 : 1;
}

uint64_t bench_udp_produce(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n)
{
    if (u->broken)
        return GAVE_UP;
    uint64_t total = dgrams_of(s, n), sent = 0, acked = 0;
    uint64_t t0 = bench_now_ns();
    for (uint64_t m = 0; m < n; m++) {
        size_t left = s->size;
        do {
            while (sent - acked >= s->window) {
                if (recv_dgram(u, false) < 12)
                    return GAVE_UP;
                memcpy(&acked, u->buf + 4, 8);
            }
            size_t len = left < s->dgram ? left : s->dgram;
            if (!send_dgram(u, len))
                return GAVE_UP;
            sent++;
            left -= len;
        } while (left > 0);
    }
    while (acked < total) {
        if (recv_dgram(u, false) < 12)
            return GAVE_UP;
        memcpy(&acked, u->buf + 4, 8);
    }
    return bench_now_ns() - t0;
}

uint64_t bench_udp_consume(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n)
{
    if (u->broken)
        return GAVE_UP;
    uint64_t total = dgrams_of(s, n);
    unsigned every = ack_every(s);
    for (uint64_t got = 1; got <= total; got++) {
        if (recv_dgram(u, false) < 0)
            return GAVE_UP;
        if (got % every == 0 || got == total) {
            memcpy(u->buf + 4, &got, 8);
            if (!send_dgram(u, 12))
                return GAVE_UP;
        }
    }
    return 0;
}
