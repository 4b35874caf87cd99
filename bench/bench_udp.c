/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw UDP baselines: plain socket calls, see bench_udp.h.
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
#define BATCH      16u           /* datagrams per sendmmsg / recvmmsg, as flit's */
#define SILENCE_NS 2000000000ull /* a peer silent this long is gone */
#define GAVE_UP    UINT64_MAX

struct bench_udp {
    int fd;
    struct sockaddr_in peer;
    uint32_t tx_seq, rx_seq; /* the next datagram sent, and expected */
    size_t rcvbuf;           /* bytes the socket holds, as the kernel says */
    bool broken;             /* lost a datagram or the peer: no more figures */
    uint8_t buf[MAX_DGRAM];  /* one datagram; what every datagram sends */
    /* batches: each datagram's sequence number, then the payload from buf
       (sending); BATCH buffers of MAX_DGRAM, allocated at first use */
    uint8_t *rx;
    uint32_t seqs[BATCH];
    struct iovec tx_iov[BATCH][2], rx_iov[BATCH];
    struct mmsghdr tx_msgs[BATCH], rx_msgs[BATCH];
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
    struct sockaddr_in any = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_ANY)};
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
    free(u->rx);
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
        ssize_t r =
            sendto(u->fd, u->buf, len, 0, (struct sockaddr *)&u->peer, sizeof u->peer);
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
        ssize_t r =
            recvfrom(u->fd, u->buf, sizeof u->buf, busy ? MSG_DONTWAIT : 0, NULL, NULL);
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

/*
 * Several datagrams at once: flit sends and receives in batches (sendmmsg,
 * recvmmsg), one system call for up to BATCH datagrams, and so does the
 * baseline wherever more than one datagram is due. Where the path's MTU
 * keeps datagrams small (1472 bytes across veth or Ethernet) the system
 * call, not the bytes, is most of a datagram's cost: a baseline making one
 * call per datagram measures that, not what UDP can carry.
 */

/* n (1..BATCH) datagrams of len bytes each; false when it gave up. */
static bool send_batch(bench_udp_t *u, size_t len, unsigned n)
{
    if (len < 4)
        len = 4;
    for (unsigned i = 0; i < n; i++) {
        u->seqs[i] = u->tx_seq++;
        u->tx_iov[i][0] = (struct iovec){&u->seqs[i], 4};
        u->tx_iov[i][1] = (struct iovec){u->buf + 4, len - 4};
        u->tx_msgs[i].msg_hdr = (struct msghdr){.msg_name = &u->peer,
                                                .msg_namelen = sizeof u->peer,
                                                .msg_iov = u->tx_iov[i],
                                                .msg_iovlen = 2};
    }
    unsigned done = 0;
    while (done < n) {
        int k = sendmmsg(u->fd, u->tx_msgs + done, n - done, 0);
        if (k > 0) {
            done += (unsigned)k;
            continue;
        }
        if (k < 0 && (errno == EINTR || errno == ENOBUFS))
            continue;
        fprintf(stderr, "raw UDP baseline: sendmmsg: %s\n",
                k < 0 ? strerror(errno) : "sent none");
        u->broken = true;
        return false;
    }
    return true;
}

/*
 * The next datagrams, at least one and at most max (1..BATCH), spinning
 * (busy) or sleeping until the first is there; how many, or -1 when the
 * baseline gave up. Their lengths: u->rx_msgs[i].msg_len; their bytes are
 * not looked at beyond the sequence number.
 */
static int recv_batch(bench_udp_t *u, bool busy, unsigned max)
{
    if (!u->rx) {
        u->rx = malloc((size_t)BATCH * MAX_DGRAM);
        if (!u->rx) {
            fprintf(stderr, "raw UDP baseline: out of memory\n");
            u->broken = true;
            return -1;
        }
        for (unsigned i = 0; i < BATCH; i++)
            u->rx_iov[i] = (struct iovec){u->rx + (size_t)i * MAX_DGRAM, MAX_DGRAM};
    }
    uint64_t since = 0;
    for (uint32_t spins = 0;; spins++) {
        for (unsigned i = 0; i < max; i++)
            u->rx_msgs[i].msg_hdr =
                (struct msghdr){.msg_iov = &u->rx_iov[i], .msg_iovlen = 1};
        int k =
            recvmmsg(u->fd, u->rx_msgs, max, busy ? MSG_DONTWAIT : MSG_WAITFORONE, NULL);
        if (k > 0) {
            for (int i = 0; i < k; i++) {
                uint32_t seq;
                memcpy(&seq, u->rx + (size_t)i * MAX_DGRAM, 4);
                if (u->rx_msgs[i].msg_len < 4 || seq != u->rx_seq) {
                    fprintf(stderr,
                            "raw UDP baseline: datagram %u arrived where %u was due: "
                            "the path or a socket lost datagrams; no raw UDP figures "
                            "from here\n",
                            seq, u->rx_seq);
                    u->broken = true;
                    return -1;
                }
                u->rx_seq++;
            }
            return k;
        }
        if (k == 0 || errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            fprintf(stderr, "raw UDP baseline: recvmmsg: %s\n", strerror(errno));
            u->broken = true;
            return -1;
        }
        /* as recv_dgram: a blocking receive timed out, a busy one looks at
           the clock now and then */
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

static uint64_t dgrams_of(const struct bench_udp_shape *s, uint64_t n)
{
    uint64_t per_msg = s->size ? (s->size + s->dgram - 1) / s->dgram : 1;
    return per_msg * n;
}

/* The length of datagram j of a stream of size-byte messages. */
static size_t dgram_len(const struct bench_udp_shape *s, uint64_t per_msg, uint64_t j)
{
    if (j % per_msg < per_msg - 1)
        return s->dgram;
    return s->size - (size_t)(per_msg - 1) * s->dgram; /* a message's last */
}

/*
 * Datagrams j .. j+k-1 of the stream, at most BATCH and at most `end`: the
 * longest run of one length from j (a message's short last datagram ends
 * a run).
 */
static unsigned batch_from(const struct bench_udp_shape *s, uint64_t per_msg, uint64_t j,
                           uint64_t end)
{
    size_t len = dgram_len(s, per_msg, j);
    unsigned k = 1;
    while (k < BATCH && j + k < end && dgram_len(s, per_msg, j + k) == len)
        k++;
    return k;
}

/* One datagram: sendto and recvfrom, the cheapest calls; more: batches. */
static bool send_msg(bench_udp_t *u, const struct bench_udp_shape *s)
{
    if (s->size <= s->dgram)
        return send_dgram(u, s->size);
    uint64_t per_msg = dgrams_of(s, 1);
    for (uint64_t j = 0; j < per_msg;) {
        unsigned k = batch_from(s, per_msg, j, per_msg);
        if (!send_batch(u, dgram_len(s, per_msg, j), k))
            return false;
        j += k;
    }
    return true;
}

static bool recv_msg(bench_udp_t *u, const struct bench_udp_shape *s)
{
    if (s->size <= s->dgram)
        return recv_dgram(u, !s->blocking) >= 0;
    uint64_t left = dgrams_of(s, 1);
    while (left > 0) {
        int k = recv_batch(u, !s->blocking, left < BATCH ? (unsigned)left : BATCH);
        if (k < 0)
            return false;
        left -= (uint64_t)k;
    }
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

static unsigned ack_every(const struct bench_udp_shape *s)
{
    return s->window / 2 ? s->window / 2 : 1;
}

/* The acknowledgements that came, waiting for one (spinning, as flit's
   streams poll); false when it gave up. */
static bool recv_acks(bench_udp_t *u, uint64_t *acked)
{
    int k = recv_batch(u, true, BATCH);
    if (k < 0)
        return false;
    for (int i = 0; i < k; i++) {
        uint64_t a;
        if (u->rx_msgs[i].msg_len < 12)
            continue;
        memcpy(&a, u->rx + (size_t)i * MAX_DGRAM + 4, 8);
        *acked = a > *acked ? a : *acked;
    }
    return true;
}

/*
 * The producer sends its datagrams in batches of up to BATCH of one length
 * (a message's short last datagram ends a batch), as far as the window
 * allows.
 */
uint64_t bench_udp_produce(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n)
{
    if (u->broken)
        return GAVE_UP;
    uint64_t total = dgrams_of(s, n), per_msg = dgrams_of(s, 1), sent = 0, acked = 0;
    uint64_t t0 = bench_now_ns();
    while (sent < total) {
        while (sent - acked >= s->window)
            if (!recv_acks(u, &acked))
                return GAVE_UP;
        uint64_t room = s->window - (sent - acked);
        unsigned k = batch_from(s, per_msg, sent, total);
        k = k < room ? k : (unsigned)room;
        if (!send_batch(u, dgram_len(s, per_msg, sent), k))
            return GAVE_UP;
        sent += k;
    }
    while (acked < total)
        if (!recv_acks(u, &acked))
            return GAVE_UP;
    return bench_now_ns() - t0;
}

uint64_t bench_udp_consume(bench_udp_t *u, const struct bench_udp_shape *s, uint64_t n)
{
    if (u->broken)
        return GAVE_UP;
    uint64_t total = dgrams_of(s, n), got = 0;
    unsigned every = ack_every(s);
    while (got < total) {
        uint64_t want = total - got;
        int k = recv_batch(u, !s->blocking, want < BATCH ? (unsigned)want : BATCH);
        if (k < 0)
            return GAVE_UP;
        uint64_t before = got;
        got += (uint64_t)k;
        /* one acknowledgement for every multiple of every crossed (or the end) */
        if (got / every != before / every || got == total) {
            memcpy(u->buf + 4, &got, 8);
            if (!send_dgram(u, 12))
                return GAVE_UP;
        }
    }
    return 0;
}
