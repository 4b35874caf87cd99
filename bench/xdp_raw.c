/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-xdp-raw: the floor under flit over FLIT_TRANSPORT=xdp
 * (bench/xdp_bench.sh, make bench-xdp). The transport's own lowest layer
 * (its AF_XDP socket, xsk.h; its frames, frame.h; its next hops, neigh.h)
 * with nothing of flit's channel above: no sequence window, no resending,
 * no acknowledgements but this benchmark's own.
 *
 *     flit-xdp-raw server --addr IP --port P [--timeout S]
 *     flit-xdp-raw client --addr IP --port P --peer IP:PORT [--quick] [--timeout S]
 *
 * --timeout S (default 10): how long the server waits for a frame, and the
 * client for the server's first answer, before either gives up.
 *
 * One process on each of two hosts (network namespaces). Each opens an
 * AF_XDP socket on queue 0 of the interface holding its address, the
 * steering program sending it the frames to UDP port P. The server answers
 * whoever spoke first until that client says goodbye; the client first
 * says hello again every 10 ms until answered (the server may still be
 * starting), then measures, both sides busy-polling, and prints one line
 * a figure as flit-bench --csv does (name,size,value,unit,baseline,ratio,
 * note; no baseline: this is one):
 *
 *   raw_xdp_latency,8     one-way latency of an 8-byte message (us): half
 *                         the round trip of a ping-pong
 *   raw_xdp_rate,8        8-byte messages one way (Mmsg/s), a frame each
 *                         (flit packs short AMs several to a datagram)
 *   raw_xdp_bandwidth,S   S-byte messages one way (MB/s), S = 64 KiB and
 *                         1 MiB, cut into frames of the most one holds
 *
 * One way is windowed, as flit-bench streams: at most WINDOW frames not
 * yet acknowledged, the server acknowledging every ACK_EVERY-th and the
 * last. A frame carries as much of a message as the link's MTU lets it
 * (flit's datagrams are as large: the route's MTU) and a received frame
 * holds. The receive ring and the veth between the hosts hold that many,
 * so nothing overflows; a frame lost all the same (a gap in the server's
 * count, or no answer within LOST_NS) makes that figure's value empty,
 * with the note "lost", and the next one goes on: each run of frames has
 * a number of its own, so the server starts its count afresh. Figures
 * during which either side waited for a CPU more than BENCH_NOISY_SHARE
 * of the time are measured again, as flit-bench's are, and left empty
 * with the note "noisy" if they never came out clean.
 *
 * The transport's functions are hidden in libflit.so: this links libflit.a
 * (flit_internal), and bench_util.c is compiled in for the clock and the
 * measuring loop (flit_bench_util would bring libflit.so along).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "transport/xdp/frame.h"
#include "transport/xdp/neigh.h"
#include "transport/xdp/xsk.h"

#define PROG "flit-xdp-raw"
/* A received frame lies after the kernel's 256 bytes of headroom (copy
   mode), as in the transport (xdp.c's RX_ROOM). */
#define RX_ROOM    (FL_XSK_FRAME - 256u)
#define IP_UDP     28u        /* of the MTU: the IPv4 and UDP headers */
#define HDR        20u        /* ours, after the UDP header: see put_hdr */
#define MSG_MAX    (1u << 20) /* the largest message */
#define WINDOW     256u       /* frames unacknowledged, at most */
#define ACK_EVERY  128u
#define BATCH      64u
#define LOST_NS    1000000000ull /* no answer this long: lost */
#define HELLO_NS   10000000ull   /* hello again after this long */
#define RESOLVE_MS 1000          /* the peer's next hop answers ARP */
#define REPS       5             /* runs a figure's median is taken over */
#define LAT_MAX_N  (1ull << 24)
#define STREAM_MAX (1ull << 28) /* frames in one run */

enum kind {
    K_HELLO = 1, /* server: answer K_HELLO; seq: its CPU wait so far (ns) */
    K_PING,      /* server: K_PONG with the same bytes */
    K_PONG,
    K_DATA, /* server: count; off: where in the message; F_ACK: answer */
    K_ACK,  /* seq: the frames of run counted so far */
    K_LOST, /* seq: the frame of run the server was waiting for instead */
    K_BYE,  /* server: K_BYE, and end */
};
#define F_ACK 1u

struct hdr {
    uint8_t kind, flags;
    uint32_t run, off;
    uint64_t seq;
};

/* One side: its socket, its end and the other's. */
struct side {
    struct fl_xsk *xsk;
    struct fl_xdp_end self, peer;
    char ifname[IF_NAMESIZE];
    bool met; /* peer known (the server learns it from the first frame) */
    uint16_t ip_id;
    size_t payload; /* message bytes a frame carries, at most */
    uint8_t *msg;   /* MSG_MAX bytes: the client's to send, the server's sink */
};

/* ---- the wire: our header, little-endian ---- */

static void put_hdr(uint8_t *p, const struct hdr *h)
{
    uint32_t run = htole32(h->run), off = htole32(h->off);
    uint64_t seq = htole64(h->seq);
    p[0] = h->kind;
    p[1] = h->flags;
    p[2] = p[3] = 0;
    memcpy(p + 4, &run, 4);
    memcpy(p + 8, &off, 4);
    memcpy(p + 12, &seq, 8);
}

static void get_hdr(const uint8_t *p, struct hdr *h)
{
    uint32_t run, off;
    uint64_t seq;
    memcpy(&run, p + 4, 4);
    memcpy(&off, p + 8, 4);
    memcpy(&seq, p + 12, 8);
    *h = (struct hdr){.kind = p[0],
                      .flags = p[1],
                      .run = le32toh(run),
                      .off = le32toh(off),
                      .seq = le64toh(seq)};
}

/* ---- sending and receiving frames ---- */

/* Queues a frame of h and len bytes of data to the peer; the caller
   kicks. Waits for a free frame (the kernel sends them back as it sends)
   for at most LOST_NS; false if none came. */
static bool send_frame(struct side *s, const struct hdr *h, const void *data, size_t len)
{
    uint8_t *frame = fl_xsk_tx_frame(s->xsk);
    for (uint64_t t0 = 0; !frame; frame = fl_xsk_tx_frame(s->xsk)) {
        if (!t0)
            t0 = bench_now_ns();
        else if (bench_now_ns() - t0 > LOST_NS)
            return false;
        fl_xsk_tx_kick(s->xsk);
    }
    uint8_t head[HDR];
    put_hdr(head, h);
    struct iovec iov[2] = {{head, HDR}, {(void *)(uintptr_t)data, len}};
    size_t n = fl_xdp_frame_build(frame, FL_XSK_FRAME, &s->self, &s->peer, s->ip_id++,
                                  iov, len ? 2 : 1);
    if (n)
        fl_xsk_tx_queue(s->xsk, n);
    return n != 0;
}

static bool send_now(struct side *s, const struct hdr *h, const void *data, size_t len)
{
    bool ok = send_frame(s, h, data, len);
    fl_xsk_tx_kick(s->xsk);
    return ok;
}

/* The server's peer: whoever sent the first frame, its next hop resolved. */
static bool learn_peer(struct side *s, const struct fl_xdp_rx *rx)
{
    s->peer.ip = rx->src_ip;
    s->peer.port = rx->src_port;
    if (!fl_xdp_next_hop_mac(s->ifname, s->self.ip, s->peer.ip, RESOLVE_MS,
                             s->peer.mac)) {
        fprintf(stderr, PROG ": the client's next hop did not answer ARP on %s\n",
                s->ifname);
        return false;
    }
    s->met = true;
    return true;
}

typedef void (*on_frame_fn)(void *ctx, const struct hdr *h, const uint8_t *data,
                            size_t len);

/* Hands each frame waiting on queue q from the peer to fn; how many
   waited (ours or not), or -1 when the server could not reach the sender
   of its first. */
static int take_queue(struct side *s, unsigned q, on_frame_fn fn, void *ctx)
{
    uint32_t idx = 0;
    unsigned got = fl_xsk_rx_peek(s->xsk, q, BATCH, &idx);
    bool ok = true;
    for (unsigned i = 0; i < got && ok; i++) {
        size_t len;
        const uint8_t *frame = fl_xsk_rx_frame(s->xsk, q, idx + i, &len);
        struct fl_xdp_rx rx;
        if (fl_xdp_frame_parse(frame, len, s->self.ip, s->self.port, &rx) != FL_XDP_OK ||
            rx.len < HDR)
            continue;
        if (!s->met)
            ok = learn_peer(s, &rx);
        if (!ok || rx.src_ip != s->peer.ip || rx.src_port != s->peer.port)
            continue;
        struct hdr h;
        get_hdr(frame + rx.off, &h);
        fn(ctx, &h, frame + rx.off + HDR, rx.len - HDR);
    }
    if (got)
        fl_xsk_rx_release(s->xsk, q, idx, got);
    return ok ? (int)got : -1;
}

/* take_queue on every queue of the interface (the peer's flow may land
   on any); how many waited, or -1. */
static int take(struct side *s, on_frame_fn fn, void *ctx)
{
    int all = 0;
    for (unsigned q = 0; q < fl_xsk_queues(s->xsk); q++) {
        int got = take_queue(s, q, fn, ctx);
        if (got < 0)
            return -1;
        all += got;
    }
    return all;
}

/* ---- opening ---- */

static bool parse_ip(const char *text, uint32_t *ip)
{
    struct in_addr a;
    if (inet_pton(AF_INET, text, &a) != 1)
        return false;
    *ip = a.s_addr;
    return true;
}

/* Message bytes in a frame on ifname: as many as its MTU and a received
   frame hold, less our header; 0 if the MTU is unknown or too small. */
static size_t frame_payload(const char *ifname)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = {0};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    bool ok = fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok || ifr.ifr_mtu < (int)(IP_UDP + HDR + 8))
        return 0;
    size_t room = (size_t)ifr.ifr_mtu - IP_UDP;
    return (room < RX_ROOM - FL_XDP_HDR ? room : RX_ROOM - FL_XDP_HDR) - HDR;
}

/* The socket on the interface holding ip, for port (host order). */
static bool open_side(struct side *s, uint32_t ip, uint16_t port)
{
    char why[256];
    s->self.ip = ip;
    s->self.port = htons(port);
    if (!fl_xdp_iface_of(ip, s->ifname, s->self.mac)) {
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &ip, text, sizeof text);
        fprintf(stderr, PROG ": no Ethernet interface that is up holds %s\n", text);
        return false;
    }
    if (!(s->payload = frame_payload(s->ifname))) {
        fprintf(stderr, PROG ": the MTU of %s is unknown or too small\n", s->ifname);
        return false;
    }
    if (fl_xsk_open(s->ifname, s->self.port, &s->xsk, why, sizeof why) != FLIT_OK) {
        fprintf(stderr, PROG ": %s\n", why);
        return false;
    }
    s->msg = malloc(MSG_MAX);
    if (!s->msg) {
        fprintf(stderr, PROG ": out of memory\n");
        fl_xsk_close(s->xsk);
        return false;
    }
    memset(s->msg, 0x5a, MSG_MAX);
    fprintf(stderr, PROG ": AF_XDP on %s queue 0, %s, %zu-byte frames\n", s->ifname,
            fl_xsk_mode(s->xsk), s->payload + HDR + FL_XDP_HDR);
    return true;
}

static void close_side(struct side *s)
{
    fl_xsk_close(s->xsk);
    free(s->msg);
}

/* ---- the server ---- */

struct server {
    struct side *s;
    uint32_t run;     /* the run being counted */
    uint64_t expect;  /* its next frame */
    bool broken, bye; /* a frame of run missing; the client said goodbye */
};

static void reply(struct server *v, uint8_t kind, uint32_t run, uint64_t seq)
{
    struct hdr h = {.kind = kind, .run = run, .seq = seq};
    send_frame(v->s, &h, NULL, 0);
}

/* A frame of the client's flood: counted, its bytes where the message has
   them (as a receiver delivers them), acknowledged when asked. */
static void sink(struct server *v, const struct hdr *h, const uint8_t *data, size_t len)
{
    if (h->run != v->run) {
        v->run = h->run;
        v->expect = 0;
        v->broken = false;
    }
    if (v->broken)
        return;
    if (h->seq != v->expect || h->off > MSG_MAX || len > MSG_MAX - h->off) {
        v->broken = true;
        reply(v, K_LOST, h->run, v->expect);
        return;
    }
    memcpy(v->s->msg + h->off, data, len);
    v->expect++;
    if (h->flags & F_ACK)
        reply(v, K_ACK, h->run, v->expect);
}

static void on_server_frame(void *ctx, const struct hdr *h, const uint8_t *data,
                            size_t len)
{
    struct server *v = ctx;
    struct hdr r = *h;
    switch (h->kind) {
    case K_HELLO:
        reply(v, K_HELLO, h->run, bench_runq_wait_ns());
        break;
    case K_PING:
        r.kind = K_PONG;
        send_frame(v->s, &r, data, len);
        break;
    case K_DATA:
        sink(v, h, data, len);
        break;
    case K_BYE:
        reply(v, K_BYE, h->run, 0);
        v->bye = true;
        break;
    default:
        break;
    }
}

/* Answers until goodbye; fails when nothing came for timeout_ns. */
static int serve(struct side *s, uint64_t timeout_ns)
{
    struct server v = {.s = s};
    uint64_t last = bench_now_ns();
    while (!v.bye) {
        int n = take(s, on_server_frame, &v);
        if (n < 0)
            return 1;
        fl_xsk_tx_kick(s->xsk);
        if (n) {
            last = bench_now_ns();
            continue;
        }
        bench_cpu_relax();
        if (bench_now_ns() - last > timeout_ns) {
            fprintf(stderr, PROG ": %s for %.0f s\n",
                    s->met ? "the client went quiet" : "no client spoke",
                    (double)timeout_ns / 1e9);
            return 1;
        }
    }
    return 0;
}

/* ---- the client ---- */

struct client {
    struct side *s;
    uint32_t run;   /* this run's number: answers to others are stale */
    uint64_t acked; /* frames of run the server has counted */
    bool answered, lost;
    uint64_t seq; /* the answer's */
    uint64_t target_ns;
    int retries;
};

static void on_client_frame(void *ctx, const struct hdr *h, const uint8_t *data,
                            size_t len)
{
    (void)data;
    (void)len;
    struct client *c = ctx;
    if (h->run != c->run)
        return;
    if (h->kind == K_ACK && h->seq > c->acked)
        c->acked = h->seq;
    else if (h->kind == K_LOST)
        c->lost = true;
    else if (h->kind == K_PONG || h->kind == K_HELLO || h->kind == K_BYE)
        c->answered = true;
    c->seq = h->seq;
}

/* Waits for the answer to the run's frame; false after LOST_NS. */
static bool answer(struct client *c)
{
    uint64_t t0 = bench_now_ns();
    c->answered = false;
    while (!c->answered && !c->lost) {
        if (take(c->s, on_client_frame, c) == 0)
            bench_cpu_relax(); /* kinder to a hyperthread sibling */
        if (!c->answered && bench_now_ns() - t0 > LOST_NS)
            return false;
    }
    return !c->lost;
}

/* kind (K_HELLO, K_BYE) until answered, again every HELLO_NS, for at most
   limit_ns; the answer's seq in c->seq. */
static bool exchange(struct client *c, uint8_t kind, uint64_t limit_ns)
{
    struct hdr h = {.kind = kind, .run = ++c->run};
    uint64_t t0 = bench_now_ns(), sent = 0;
    c->answered = false;
    while (!c->answered) {
        uint64_t now = bench_now_ns();
        if (now - t0 > limit_ns)
            return false;
        if (now - sent > HELLO_NS) {
            send_now(c->s, &h, NULL, 0);
            sent = now;
        }
        take(c->s, on_client_frame, c);
    }
    return true;
}

/* Both sides' time waiting for a CPU so far; false if the server is gone. */
static bool cpu_wait(struct client *c, uint64_t *ns)
{
    if (!exchange(c, K_HELLO, LOST_NS))
        return false;
    *ns = bench_runq_wait_ns() + c->seq;
    return true;
}

/* n round trips of 8 bytes; UINT64_MAX when one was lost. */
static uint64_t run_ping(void *ctx, uint64_t n)
{
    struct client *c = ctx;
    struct hdr h = {.kind = K_PING, .run = ++c->run};
    c->lost = false;
    uint64_t t0 = bench_now_ns();
    for (h.seq = 0; h.seq < n; h.seq++)
        if (!send_now(c->s, &h, c->s->msg, 8) || !answer(c) || c->seq != h.seq)
            return UINT64_MAX;
    return bench_now_ns() - t0;
}

/* The frames a message of size bytes is cut into. */
static uint64_t frames_of(const struct side *s, size_t size)
{
    return (size + s->payload - 1) / s->payload;
}

struct flood {
    struct client *c;
    size_t size; /* of a message */
};

/* Frame k of a flood of messages of size bytes into the window. */
static bool send_data(struct client *c, size_t size, uint64_t k, uint64_t total)
{
    size_t most = c->s->payload;
    size_t off = (size_t)(k % frames_of(c->s, size)) * most;
    size_t len = size - off < most ? size - off : most;
    bool ack = (k + 1) % ACK_EVERY == 0 || k + 1 == total;
    struct hdr h = {.kind = K_DATA,
                    .flags = ack ? F_ACK : 0,
                    .run = c->run,
                    .off = (uint32_t)off,
                    .seq = k};
    return send_frame(c->s, &h, c->s->msg + off, len);
}

/* n messages one way, the last acknowledged; UINT64_MAX when a frame was
   lost or the server stopped answering. */
static uint64_t run_flood(void *ctx, uint64_t n)
{
    struct flood *f = ctx;
    struct client *c = f->c;
    uint64_t total = n * frames_of(c->s, f->size), sent = 0;
    c->run++;
    c->acked = 0;
    c->lost = false;
    uint64_t t0 = bench_now_ns(), progress = t0;
    while (c->acked < total && !c->lost) {
        uint64_t acked = c->acked;
        while (sent < total && sent < c->acked + WINDOW)
            if (!send_data(c, f->size, sent++, total))
                return UINT64_MAX;
        fl_xsk_tx_kick(c->s->xsk);
        take(c->s, on_client_frame, c);
        uint64_t now = bench_now_ns();
        if (c->acked != acked)
            progress = now;
        else if (now - progress > LOST_NS)
            return UINT64_MAX;
    }
    return c->lost ? UINT64_MAX : bench_now_ns() - t0;
}

/* Waits up to max_ms for the CPUs beyond the server's spinning one to go
   quiet, before a figure is measured again (as flit-bench does). */
static void wait_quiet(unsigned max_ms)
{
    for (unsigned waited = 0; waited < max_ms; waited += 100)
        if (bench_cpus_busy(100) - 1 < 0.25)
            return;
}

static void emit(const char *name, size_t size, double value, const char *unit,
                 const char *note)
{
    printf("%s,%zu,", name, size);
    if (!isnan(value))
        printf("%.4f", value);
    printf(",%s,,,%s\n", unit, note);
    fflush(stdout);
}

/* One figure: ns per iteration of fn, measured again while noisy; NAN with
   a note when lost or noisy. false when the server is gone. */
static bool figure(struct client *c, bench_run_fn fn, void *ctx, uint64_t max_n,
                   double *ns, char *note, size_t len)
{
    for (int attempt = 0;; attempt++) {
        uint64_t w0, w1, t0 = bench_now_ns();
        if (!cpu_wait(c, &w0))
            return false;
        *ns = bench_measure(fn, ctx, c->target_ns, REPS, 1, max_n);
        uint64_t elapsed = bench_now_ns() - t0;
        note[0] = '\0';
        if (isnan(*ns)) {
            snprintf(note, len, "lost: a frame of run %u never arrived",
                     (unsigned)c->run);
            return true;
        }
        if (!cpu_wait(c, &w1))
            return false;
        double share;
        if (!bench_noisy(w1 - w0, elapsed, &share))
            return true;
        if (attempt == c->retries) {
            snprintf(
                note, len,
                "noisy: the two sides waited for a CPU %.0f%% of the time (%d attempts)",
                share * 100, attempt + 1);
            *ns = NAN;
            return true;
        }
        wait_quiet(c->retries > 1 ? 3000 : 300);
    }
}

/* The four figures, as CSV lines; 1 when the server went away. */
static int measure(struct client *c)
{
    static const size_t sizes[] = {65536, MSG_MAX};
    char note[128];
    double ns;
    if (!figure(c, run_ping, c, LAT_MAX_N, &ns, note, sizeof note))
        return 1;
    emit("raw_xdp_latency", 8, ns / 2 / 1e3, "us", note);
    struct flood f = {.c = c, .size = 8};
    if (!figure(c, run_flood, &f, STREAM_MAX, &ns, note, sizeof note))
        return 1;
    emit("raw_xdp_rate", 8, 1e3 / ns, "Mmsg/s", note);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        f.size = sizes[i];
        uint64_t max = STREAM_MAX / frames_of(c->s, f.size);
        if (!figure(c, run_flood, &f, max, &ns, note, sizeof note))
            return 1;
        emit("raw_xdp_bandwidth", f.size, (double)f.size / ns * 1e3, "MB/s", note);
    }
    return 0;
}

static int drive(struct side *s, bool quick, uint64_t timeout_ns)
{
    struct client c = {
        .s = s, .target_ns = quick ? 25000000u : 150000000u, .retries = quick ? 1 : 3};
    if (!fl_xdp_next_hop_mac(s->ifname, s->self.ip, s->peer.ip, RESOLVE_MS,
                             s->peer.mac)) {
        fprintf(stderr,
                PROG ": the server's next hop is not on %s or did not answer ARP\n",
                s->ifname);
        return 1;
    }
    s->met = true;
    if (!exchange(&c, K_HELLO, timeout_ns)) {
        fprintf(stderr, PROG ": no answer from the server for %.0f s\n",
                (double)timeout_ns / 1e9);
        return 1;
    }
    int rc = measure(&c);
    if (rc)
        fprintf(stderr, PROG ": the server stopped answering\n");
    else if (!exchange(&c, K_BYE, LOST_NS))
        fprintf(stderr,
                PROG ": the server did not answer goodbye (it ends on its own)\n");
    return rc;
}

/* ---- command line ---- */

static int usage(void)
{
    fprintf(stderr, "usage: " PROG " server --addr IP --port P [--timeout S]\n"
                    "       " PROG " client --addr IP --port P --peer IP:PORT [--quick] "
                    "[--timeout S]\n");
    return 2;
}

struct options {
    bool server, quick;
    uint32_t ip, peer_ip;
    unsigned port, peer_port, timeout_s;
};

static bool parse_port(const char *text, unsigned *port)
{
    char *end;
    unsigned long v = strtoul(text, &end, 10);
    *port = (unsigned)v;
    return *text && !*end && v > 0 && v < 65536;
}

static bool parse_peer(const char *text, struct options *o)
{
    char host[INET_ADDRSTRLEN];
    const char *colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host)
        return false;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    return parse_ip(host, &o->peer_ip) && parse_port(colon + 1, &o->peer_port);
}

static bool parse(int argc, char **argv, struct options *o)
{
    if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
        return false;
    *o = (struct options){.server = !strcmp(argv[1], "server"), .timeout_s = 10};
    bool addr = false;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            o->quick = true;
            continue;
        }
        if (!v)
            return false;
        i++;
        if (!strcmp(a, "--addr"))
            addr = parse_ip(v, &o->ip);
        else if (!strcmp(a, "--port") && !parse_port(v, &o->port))
            return false;
        else if (!strcmp(a, "--peer") && !parse_peer(v, o))
            return false;
        else if (!strcmp(a, "--timeout") && !parse_port(v, &o->timeout_s))
            return false;
        else if (strcmp(a, "--addr") && strcmp(a, "--port") && strcmp(a, "--peer") &&
                 strcmp(a, "--timeout"))
            return false;
    }
    return addr && o->port && (o->server || o->peer_port);
}

int main(int argc, char **argv)
{
    struct options o;
    if (!parse(argc, argv, &o))
        return usage();
    struct side s = {0};
    if (!open_side(&s, o.ip, (uint16_t)o.port))
        return 1;
    uint64_t timeout_ns = (uint64_t)o.timeout_s * 1000000000ull;
    int rc;
    if (o.server) {
        rc = serve(&s, timeout_ns);
    } else {
        s.peer.ip = o.peer_ip;
        s.peer.port = htons((uint16_t)o.peer_port);
        rc = drive(&s, o.quick, timeout_ns);
    }
    close_side(&s);
    return rc;
}
