/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_engine.h. */
#include "bench_engine.h"
#include "bench_rma.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    H_PING_SHORT = BENCH_HANDLER_FIRST, /* request: echo the same short */
    H_PING_MEDIUM,                      /* request: echo the same medium */
    H_PING_LONG,                        /* request: echo the same long */
    H_SINK,                             /* request: count, ack every ack_every */
    H_CTRL,                             /* request: a command for rank 1 */
    H_PONG,                             /* reply: an echo came back */
    H_ACK,                              /* reply: ack_every more were sunk */
    H_CTRL_ACK,                         /* reply: the command is done */
    H_PING_LOOP,                        /* request: echo it from the loop */
};

/* Stream handlers (their own table: the same indices may be reused). */
enum {
    H_S_PING = BENCH_HANDLER_FIRST, /* rank 1: echo it from the loop */
    H_S_PONG,                       /* rank 0: the echo */
    H_S_SINK,                       /* rank 1: count, ack every ack_every */
    H_TAGGED,                       /* the tagged context */
};
#define TAG_BENCH 7

enum cmd {
    CMD_MODE = 1,    /* arg: 1 flit_wait, 0 flit_poll */
    CMD_ACK_EVERY,   /* arg: ack every arg sunk messages */
    CMD_RAW_ATTACH,  /* arg: key of the file */
    CMD_RAW_ECHO,    /* arg: round trips */
    CMD_RAW_LINE,    /* arg: round trips, on the single line */
    CMD_RAW_CONSUME, /* arg: messages */
    CMD_RAW_PIPE,    /* arg: messages of pipe_size bytes through the pipe */
    CMD_SCHED_WAIT,  /* answers its runqueue wait, in us */
    CMD_UDP_OPEN,    /* arg: rank 0's raw UDP port; answers rank 1's */
    CMD_UDP_SHAPE,   /* arg: the shape, packed (pack_shape) */
    CMD_UDP_ECHO,    /* arg: round trips */
    CMD_UDP_CONSUME, /* arg: messages */
    CMD_TAGGED_SIZE, /* arg: the tagged figure's message size */
    CMD_TAGGED_ECHO, /* arg: round trips */
    CMD_TAGGED_SINK, /* arg: messages (acknowledged every ack_every) */
    CMD_QUIT,
    CMD_RMA,        /* arg: for bench_rma_ctrl (bench_rma.c) */
    CMD_PIPE_SIZE,  /* arg: the raw pipe's message size */
    CMD_STREAM_DST, /* arg: 0 streams into rbuf, else into the segment when
                       it holds arg bytes (answers whether it does) */
    CMD_RESENT,     /* answers its endpoint's retransmissions (low 32 bits) */
};

#define PEER         flit_rank(1) /* rank 0's peer; rank 1 only replies */
#define LAT_MAX_N    (1ull << 24)
#define STREAM_MAX_N (1ull << 28)

void bench_check(const bench_t *b, flit_status st, const char *what)
{
    if (st == FLIT_OK)
        return;
    fprintf(stderr, "%s: rank %u: %s: %s (%s)\n", b->prog, b->rank, what,
            flit_strerror(st), flit_status_name(st));
    exit(1);
}

static void progress(bench_t *b, bool wait)
{
    flit_status st = wait ? flit_wait(b->ep, -1) : flit_poll(b->ep);
    bench_check(b, st, wait ? "flit_wait" : "flit_poll");
}

/* ---- the raw UDP baseline's socket and shape ---- */

/* The IPv4 address (host order) at which rank `peer` is reached over UDP;
   0 when it is not. */
static uint32_t udp_ip_of(const bench_t *b, uint32_t peer)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    if (flit_ep_peer_info(b->ep, flit_rank(peer), &info) != FLIT_OK ||
        strcmp(info.transport, "udp") != 0)
        return 0;
    char ip[64];
    snprintf(ip, sizeof ip, "%s", info.address);
    char *colon = strrchr(ip, ':');
    if (colon)
        *colon = '\0';
    struct in_addr a;
    return inet_pton(AF_INET, ip, &a) == 1 ? ntohl(a.s_addr) : 0;
}

/* Opens this rank's raw socket, aimed at the other rank's address and the
   port it said; the socket's own port, 0 on failure. */
static uint32_t udp_open(bench_t *b, uint16_t peer_port)
{
    bench_udp_close(b->udp);
    b->udp = NULL;
    uint32_t ip = udp_ip_of(b, 1 - b->rank);
    if (!ip)
        return 0;
    b->udp = bench_udp_open();
    if (!b->udp)
        return 0;
    if (peer_port)
        bench_udp_set_peer(b->udp, ip, peer_port);
    return bench_udp_port(b->udp);
}

/* size: 32 bits, datagram: 17, window: 14, blocking: 1. */
static uint64_t pack_shape(const struct bench_udp_shape *s)
{
    return (uint64_t)s->size | (uint64_t)s->dgram << 32 | (uint64_t)s->window << 49 |
           (uint64_t)s->blocking << 63;
}

static struct bench_udp_shape unpack_shape(uint64_t v)
{
    return (struct bench_udp_shape){.size = (uint32_t)v,
                                    .dgram = (size_t)(v >> 32) & 0x1ffff,
                                    .window = (unsigned)(v >> 49) & 0x3fff,
                                    .blocking = (v >> 63) != 0};
}

/* ---- handlers ---- */

static void on_ping_short(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                          unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    bench_check(user, flit_am_reply_short(t, flit_handler(H_PONG), args, nargs),
                "reply short");
}

static void on_ping_medium(flit_token_t *t, void *buf, size_t nbytes,
                           const uint32_t *args, unsigned nargs, void *user)
{
    bench_check(user,
                flit_am_reply_medium(t, flit_handler(H_PONG), buf, nbytes, args, nargs),
                "reply medium");
}

static void on_ping_long(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                         unsigned nargs, void *user)
{
    /* From where it landed in our segment to the start of the sender's. */
    bench_check(user,
                flit_am_reply_long(t, flit_handler(H_PONG), buf, nbytes, 0, args, nargs),
                "reply long");
}

static void on_ping_loop(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                         unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args;
    bench_t *b = user;
    b->echo_size = nargs;
    b->echo_am = true;
}

static void on_sink(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)args;
    (void)nargs;
    bench_t *b = user;
    if (++b->sunk < b->ack_every)
        return;
    b->sunk = 0;
    bench_check(b, flit_am_reply_short(t, flit_handler(H_ACK), NULL, 0), "ack");
}

/* This rank's endpoint's retransmissions: chunks sent again. */
static uint64_t bench_own_resent(const bench_t *b)
{
    flit_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    return flit_ep_stats(b->ep, &s) == FLIT_OK ? s.retransmits : 0;
}

static void on_ctrl(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    bench_t *b = user;
    uint32_t result = 1;
    uint64_t arg = nargs == 3 ? args[1] | (uint64_t)args[2] << 32 : 0;
    switch (nargs == 3 ? args[0] : 0) {
    case CMD_MODE:
        b->wait_mode = arg != 0;
        break;
    case CMD_ACK_EVERY:
        b->ack_every = arg ? arg : 1;
        b->sunk = 0;
        break;
    case CMD_RAW_ATTACH:
        bench_raw_close(b->raw);
        b->raw = bench_raw_attach((uint32_t)arg);
        result = b->raw != NULL;
        break;
    case CMD_RAW_ECHO:
    case CMD_RAW_LINE:
    case CMD_RAW_CONSUME:
    case CMD_RAW_PIPE:
    case CMD_UDP_ECHO:
    case CMD_UDP_CONSUME:
    case CMD_TAGGED_ECHO:
    case CMD_TAGGED_SINK:
        /* Runs outside the handler, once bench_serve has it back. */
        b->pending = args[0];
        b->pending_n = arg;
        result = args[0] >= CMD_TAGGED_ECHO ? 1
                 : args[0] >= CMD_UDP_ECHO  ? b->udp != NULL
                                            : b->raw != NULL;
        break;
    case CMD_TAGGED_SIZE:
        b->tagged_size = (size_t)arg;
        break;
    case CMD_PIPE_SIZE:
        b->pipe_size = (size_t)arg;
        result = b->pipe_size <= b->max_size;
        break;
    case CMD_STREAM_DST:
        b->stream_seg = arg && b->seg && arg <= b->seg_size;
        result = b->stream_seg || !arg;
        break;
    case CMD_UDP_OPEN:
        result = udp_open(b, (uint16_t)arg);
        break;
    case CMD_UDP_SHAPE:
        b->udp_shape = unpack_shape(arg);
        break;
    case CMD_SCHED_WAIT:
        result = (uint32_t)(bench_runq_wait_ns() / 1000);
        break;
    case CMD_RESENT:
        result = (uint32_t)bench_own_resent(b);
        break;
    case CMD_QUIT:
        b->quit = true;
        break;
    case CMD_RMA: {
        bool defer;
        result = bench_rma_ctrl(b, arg, &defer);
        if (defer) { /* RMA calls are refused in handlers: after it */
            b->pending = CMD_RMA;
            b->pending_n = arg;
        }
        break;
    }
    default:
        fprintf(stderr, "%s: rank %u: unknown command\n", b->prog, b->rank);
        result = 0;
    }
    bench_check(b, flit_am_reply_short(t, flit_handler(H_CTRL_ACK), &result, 1),
                "reply to a command");
}

static void on_pong(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)args;
    (void)nargs;
    ((bench_t *)user)->pongs++;
}

static void on_ack(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    (void)args;
    (void)nargs;
    ((bench_t *)user)->acks++;
}

static void on_ctrl_ack(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)t;
    (void)buf;
    (void)nbytes;
    bench_t *b = user;
    b->ctrl_result = nargs ? args[0] : 0;
    b->ctrl_acks++;
}

/* Stream handlers take the whole message into rbuf (or the segment). */
static size_t take_whole(bench_t *b, flit_stream_t *s, size_t total)
{
    bench_check(b, flit_stream_recv(s, b->stream_seg ? b->seg : b->rbuf, total),
                "flit_stream_recv");
    return total;
}

static void on_s_ping(flit_stream_t *s, size_t total, void *user)
{
    bench_t *b = user;
    b->echo_size = take_whole(b, s, total);
    b->echo_due = true;
}

static void on_s_pong(flit_stream_t *s, size_t total, void *user)
{
    bench_t *b = user;
    take_whole(b, s, total);
    b->pongs++;
}

static void on_s_sink(flit_stream_t *s, size_t total, void *user)
{
    bench_t *b = user;
    take_whole(b, s, total);
    if (++b->sunk < b->ack_every)
        return;
    b->sunk = 0;
    b->acks_due++;
}

/* ---- setup ---- */

void bench_init(bench_t *b, flit_ep_t *ep, size_t max_size, const char *prog)
{
    memset(b, 0, sizeof *b);
    b->ep = ep;
    b->rank = flit_job_rank().idx;
    b->prog = prog;
    b->max_size = max_size;
    b->ack_every = 1;
    size_t alloc = (max_size + 4095) / 4096 * 4096;
    if (!alloc)
        alloc = 4096;
    if (b->rank == 0) {
        b->buf = aligned_alloc(4096, alloc);
        if (!b->buf)
            bench_check(b, FLIT_ERR_NO_MEMORY, "allocating the send buffer");
        memset(b->buf, 0xa5, alloc);
    }
    b->rbuf = aligned_alloc(4096, alloc);
    if (!b->rbuf)
        bench_check(b, FLIT_ERR_NO_MEMORY, "allocating the receive buffer");
    memset(b->rbuf, 0, alloc);
    void *seg;
    bench_check(b, flit_ep_segment(ep, &seg, &b->seg_size), "flit_ep_segment");
    b->seg = seg;
    static const struct {
        unsigned h;
        flit_am_handler_fn fn;
    } table[] = {
        {H_PING_SHORT, on_ping_short},
        {H_PING_MEDIUM, on_ping_medium},
        {H_PING_LONG, on_ping_long},
        {H_SINK, on_sink},
        {H_CTRL, on_ctrl},
        {H_PONG, on_pong},
        {H_ACK, on_ack},
        {H_CTRL_ACK, on_ctrl_ack},
        {H_PING_LOOP, on_ping_loop},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        bench_check(
            b, flit_am_register(ep, flit_handler((uint16_t)table[i].h), table[i].fn, b),
            "flit_am_register");
    bench_check(b, flit_stream_register(ep, flit_handler(H_S_PING), on_s_ping, b),
                "flit_stream_register");
    bench_check(b, flit_stream_register(ep, flit_handler(H_S_PONG), on_s_pong, b),
                "flit_stream_register");
    bench_check(b, flit_stream_register(ep, flit_handler(H_S_SINK), on_s_sink, b),
                "flit_stream_register");
    bench_check(b, flit_tagged_create(ep, flit_handler(H_TAGGED), &b->tagged),
                "flit_tagged_create");
}

void bench_fini(bench_t *b)
{
    bench_raw_close(b->raw);
    bench_udp_close(b->udp);
    b->udp = NULL;
    if (b->tagged)
        bench_check(b, flit_tagged_destroy(b->tagged), "flit_tagged_destroy");
    b->tagged = NULL;
    free(b->buf);
    free(b->rbuf);
    b->raw = NULL;
    b->buf = b->rbuf = NULL;
}

/* Sends rank 1 a command and waits until it is done; its result. */
static uint32_t command(bench_t *b, enum cmd cmd, uint64_t arg)
{
    uint32_t args[3] = {cmd, (uint32_t)arg, (uint32_t)(arg >> 32)};
    uint64_t want = b->ctrl_acks + 1;
    bench_check(b, flit_am_short(b->ep, PEER, flit_handler(H_CTRL), args, 3, 0),
                "sending a command");
    while (b->ctrl_acks != want)
        progress(b, false);
    return b->ctrl_result;
}

/* One stream message of size bytes from buf, in one piece. */
static void stream_send(bench_t *b, flit_rank_t to, unsigned h, const void *buf,
                        size_t size)
{
    flit_stream_out_t *s;
    bench_check(b, flit_stream_begin(b->ep, to, flit_handler((uint16_t)h), size, 0, &s),
                "flit_stream_begin");
    bench_check(b, flit_stream_send(s, buf, size), "flit_stream_send");
    bench_check(b, flit_stream_end(s), "flit_stream_end");
}

/* Rank 1: n tagged round trips, then as many received as rank 0 sends. */
static void tagged_echo(bench_t *b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        bench_check(b,
                    flit_tagged_recv(b->tagged, flit_rank(0), TAG_BENCH, b->rbuf,
                                     b->tagged_size, NULL),
                    "flit_tagged_recv");
        bench_check(
            b,
            flit_tagged_send(b->tagged, flit_rank(0), TAG_BENCH, b->rbuf, b->tagged_size),
            "flit_tagged_send");
    }
}

/*
 * Rank 1: receives n tagged messages into receives posted ahead (a window
 * of them, each reposted as it completes, in order), acknowledging every
 * ack_every with a short AM.
 */
static void tagged_sink(bench_t *b, uint64_t n)
{
    enum { POSTED = 64 };
    flit_request_t *req[POSTED] = {0};
    uint64_t posted = 0, done = 0;
    for (; posted < n && posted < POSTED; posted++)
        bench_check(b,
                    flit_tagged_irecv(b->tagged, flit_rank(0), TAG_BENCH, b->rbuf,
                                      b->tagged_size, &req[posted % POSTED]),
                    "flit_tagged_irecv");
    while (done < n) {
        bench_check(b, flit_tagged_wait(&req[done % POSTED], -1, NULL),
                    "flit_tagged_wait");
        done++;
        if (posted < n) {
            bench_check(b,
                        flit_tagged_irecv(b->tagged, flit_rank(0), TAG_BENCH, b->rbuf,
                                          b->tagged_size, &req[posted % POSTED]),
                        "flit_tagged_irecv");
            posted++;
        }
        if (done % b->ack_every == 0)
            bench_check(
                b, flit_am_short(b->ep, flit_rank(0), flit_handler(H_ACK), NULL, 0, 0),
                "ack");
    }
}

static void run_pending(bench_t *b)
{
    uint32_t cmd = b->pending;
    b->pending = 0;
    if (cmd == CMD_RMA) {
        bench_rma_serve(b, b->pending_n);
        return;
    }
    if (cmd == CMD_TAGGED_ECHO || cmd == CMD_TAGGED_SINK) {
        if (cmd == CMD_TAGGED_ECHO)
            tagged_echo(b, b->pending_n);
        else
            tagged_sink(b, b->pending_n);
        return;
    }
    if (cmd == CMD_UDP_ECHO || cmd == CMD_UDP_CONSUME) {
        /* A raw UDP baseline that gives up says so and is missing; no exit */
        if (!b->udp)
            return;
        if (cmd == CMD_UDP_ECHO)
            bench_udp_echo(b->udp, &b->udp_shape, b->pending_n);
        else
            bench_udp_consume(b->udp, &b->udp_shape, b->pending_n);
        return;
    }
    if (!b->raw)
        return;
    uint64_t r = cmd == CMD_RAW_ECHO || cmd == CMD_RAW_LINE
                     ? bench_raw_echo(b->raw, b->pending_n, cmd == CMD_RAW_LINE)
                 : cmd == CMD_RAW_PIPE
                     ? bench_raw_pipe_recv(b->raw, b->rbuf, b->pipe_size, b->pending_n)
                     : bench_raw_consume(b->raw, b->pending_n);
    if (r == UINT64_MAX) {
        fprintf(stderr, "%s: rank 1: raw baseline: rank 0 stopped answering\n", b->prog);
        exit(1);
    }
}

void bench_serve(bench_t *b)
{
    while (!b->quit) {
        flit_status st = b->wait_mode ? flit_wait(b->ep, 100000) : flit_poll(b->ep);
        if (st != FLIT_ERR_TIMEOUT)
            bench_check(b, st, b->wait_mode ? "flit_wait" : "flit_poll");
        if (b->pending)
            run_pending(b);
        if (b->echo_due) {
            b->echo_due = false;
            stream_send(b, flit_rank(0), H_S_PONG, b->rbuf, b->echo_size);
        }
        if (b->echo_am) {
            static const uint32_t args[4] = {1, 2, 3, 4};
            b->echo_am = false;
            bench_check(b,
                        flit_am_short(b->ep, flit_rank(0), flit_handler(H_PONG), args,
                                      (unsigned)b->echo_size, 0),
                        "echo");
        }
        for (; b->acks_due; b->acks_due--)
            bench_check(
                b, flit_am_short(b->ep, flit_rank(0), flit_handler(H_ACK), NULL, 0, 0),
                "ack");
    }
}

uint32_t bench_rma_command(bench_t *b, uint64_t arg)
{
    return command(b, CMD_RMA, arg);
}

void bench_quit(bench_t *b)
{
    command(b, CMD_QUIT, 0);
}

bool bench_raw_setup(bench_t *b)
{
    uint32_t key = (uint32_t)getpid();
    b->raw = bench_raw_create(key);
    if (!b->raw)
        return false;
    uint32_t ok = command(b, CMD_RAW_ATTACH, key);
    bench_raw_unlink(key); /* both have it mapped, or one never will */
    if (!ok) {
        fprintf(stderr, "%s: rank 1 could not map the raw baseline's file\n", b->prog);
        bench_raw_close(b->raw);
        b->raw = NULL;
    }
    return b->raw != NULL;
}

uint64_t bench_sched_wait_ns(bench_t *b)
{
    uint32_t us = command(b, CMD_SCHED_WAIT, 0);
    /* 32-bit microseconds wrap after 71 minutes: accumulate differences */
    b->peer_wait_ns += (uint64_t)(uint32_t)(us - b->peer_wait_us) * 1000;
    b->peer_wait_us = us;
    return bench_runq_wait_ns() + b->peer_wait_ns;
}

uint64_t bench_resent(bench_t *b)
{
    uint32_t n = command(b, CMD_RESENT, 0);
    b->peer_resent += (uint32_t)(n - b->peer_resent_low); /* across a wrap */
    b->peer_resent_low = n;
    return bench_own_resent(b) + b->peer_resent;
}

/* ---- flit figures ---- */

struct point {
    bench_t *b;
    enum bench_kind kind;
    size_t size;
    bool wait;
    unsigned window, ack_every;
};

/* flags: FLIT_AM_MORE while a stream has more to send right away (a UDP
   transport packs those messages into shared datagrams; shared memory
   sends each at once anyway). */
static void send_one(bench_t *b, unsigned h, enum bench_kind kind, size_t size,
                     unsigned flags)
{
    static const uint32_t args[4] = {1, 2, 3, 4};
    flit_status st;
    if (kind == BENCH_STREAM || kind == BENCH_STREAM_SEG) {
        stream_send(b, PEER, h == H_SINK ? H_S_SINK : H_S_PING, b->buf, size);
        return;
    }
    if (kind == BENCH_TAGGED) {
        bench_check(b, flit_tagged_send(b->tagged, PEER, TAG_BENCH, b->buf, size),
                    "flit_tagged_send");
        return;
    }
    if (kind == BENCH_SHORT || kind == BENCH_SHORT_LOOP)
        st = flit_am_short(b->ep, PEER, flit_handler((uint16_t)h), args,
                           (unsigned)(size / 4), flags);
    else if (kind == BENCH_MEDIUM)
        st = flit_am_medium(b->ep, PEER, flit_handler((uint16_t)h), b->buf, size, NULL, 0,
                            flags);
    else
        st = flit_am_long(b->ep, PEER, flit_handler((uint16_t)h), b->buf, size, 0, NULL,
                          0, flags);
    bench_check(b, st, "sending");
}

static uint64_t run_pingpong(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    bench_t *b = p->b;
    static const unsigned ping[] = {H_PING_SHORT, H_PING_MEDIUM, H_PING_LONG, H_S_PING, 0,
                                    H_PING_LOOP,  H_S_PING};
    if (p->kind == BENCH_TAGGED) {
        command(b, CMD_TAGGED_ECHO, n);
        uint64_t t0 = bench_now_ns();
        for (uint64_t i = 0; i < n; i++) {
            send_one(b, 0, BENCH_TAGGED, p->size, 0);
            bench_check(
                b, flit_tagged_recv(b->tagged, PEER, TAG_BENCH, b->rbuf, p->size, NULL),
                "flit_tagged_recv");
        }
        return bench_now_ns() - t0;
    }
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t want = b->pongs + 1;
        send_one(b, ping[p->kind], p->kind, p->size, 0);
        while (b->pongs != want)
            progress(b, p->wait);
    }
    return bench_now_ns() - t0;
}

double bench_latency_ns(bench_t *b, enum bench_kind kind, size_t size, bool wait,
                        uint64_t target_ns, int reps)
{
    struct point p = {.b = b, .kind = kind, .size = size, .wait = wait};
    if (kind == BENCH_TAGGED)
        command(b, CMD_TAGGED_SIZE, size);
    if (wait)
        command(b, CMD_MODE, 1);
    double rtt = bench_measure(run_pingpong, &p, target_ns, reps, 1, LAT_MAX_N);
    if (wait)
        command(b, CMD_MODE, 0);
    return rtt / 2;
}

int bench_latency_samples(bench_t *b, enum bench_kind kind, size_t size,
                          uint64_t target_ns, int min_n, uint64_t cap_ns, int max_n,
                          double *out)
{
    struct point p = {.b = b, .kind = kind, .size = size};
    run_pingpong(&p, 16); /* the warm-up */
    uint64_t t0 = bench_now_ns(), now = t0;
    int n = 0;
    while (n < max_n && now - t0 < cap_ns && (n < min_n || now - t0 < target_ns)) {
        uint64_t t = run_pingpong(&p, 1);
        out[n++] = (double)t / 2;
        now = bench_now_ns();
    }
    return n;
}

static uint64_t run_stream(void *ctx, uint64_t n)
{
    struct point *p = ctx;
    bench_t *b = p->b;
    uint64_t acks0 = b->acks, sent = 0, k = p->ack_every;
    if (p->kind == BENCH_TAGGED)
        command(b, CMD_TAGGED_SINK, n);
    uint64_t t0 = bench_now_ns();
    while (sent < n) {
        while (sent - (b->acks - acks0) * k >= p->window)
            progress(b, false);
        /* More follow unless the window is about to fill (or this is the
           last): then the held messages go out. */
        bool more = sent + 1 < n && sent + 1 - (b->acks - acks0) * k < p->window;
        send_one(b, H_SINK, p->kind, p->size, more ? FLIT_AM_MORE : 0);
        sent++;
    }
    while ((b->acks - acks0) * k < n)
        progress(b, false);
    return bench_now_ns() - t0;
}

double bench_stream_ns(bench_t *b, enum bench_kind kind, size_t size, unsigned window,
                       uint64_t target_ns, int reps)
{
    if (window < 2)
        window = 2;
    struct point p = {
        .b = b, .kind = kind, .size = size, .window = window, .ack_every = window / 2};
    command(b, CMD_ACK_EVERY, p.ack_every);
    if (kind == BENCH_TAGGED)
        command(b, CMD_TAGGED_SIZE, size);
    if (kind == BENCH_STREAM_SEG && !command(b, CMD_STREAM_DST, size))
        return -1;
    double ns = bench_measure(run_stream, &p, target_ns, reps, p.ack_every, STREAM_MAX_N);
    if (kind == BENCH_STREAM_SEG)
        command(b, CMD_STREAM_DST, 0);
    return ns;
}

/* ---- raw baselines ---- */

static void raw_failed(bench_t *b)
{
    fprintf(stderr, "%s: rank 0: raw baseline: rank 1 stopped answering\n", b->prog);
    exit(1);
}

static uint64_t raw_ping(bench_t *b, uint64_t n, bool one_line)
{
    command(b, one_line ? CMD_RAW_LINE : CMD_RAW_ECHO, n);
    uint64_t t = bench_raw_ping(b->raw, n, one_line);
    if (t == UINT64_MAX)
        raw_failed(b);
    return t;
}

static uint64_t run_raw_ping(void *ctx, uint64_t n)
{
    return raw_ping(ctx, n, false);
}

static uint64_t run_raw_line(void *ctx, uint64_t n)
{
    return raw_ping(ctx, n, true);
}

static uint64_t run_raw_produce(void *ctx, uint64_t n)
{
    bench_t *b = ctx;
    command(b, CMD_RAW_CONSUME, n);
    uint64_t t = bench_raw_produce(b->raw, n);
    if (t == UINT64_MAX)
        raw_failed(b);
    return t;
}

double bench_raw_latency_ns(bench_t *b, bool one_line, uint64_t target_ns, int reps)
{
    if (!b->raw)
        return -1;
    return bench_measure(one_line ? run_raw_line : run_raw_ping, b, target_ns, reps, 1,
                         LAT_MAX_N) /
           2;
}

double bench_raw_stream_ns(bench_t *b, uint64_t target_ns, int reps)
{
    if (!b->raw)
        return -1;
    return bench_measure(run_raw_produce, b, target_ns, reps, 1, STREAM_MAX_N);
}

static uint64_t run_raw_pipe(void *ctx, uint64_t n)
{
    bench_t *b = ctx;
    command(b, CMD_RAW_PIPE, n);
    uint64_t t = bench_raw_pipe_send(b->raw, b->buf, b->pipe_size, n);
    if (t == UINT64_MAX)
        raw_failed(b);
    return t;
}

double bench_raw_pipe_ns(bench_t *b, size_t size, uint64_t target_ns, int reps)
{
    if (!b->raw || size > b->max_size || !command(b, CMD_PIPE_SIZE, size))
        return -1;
    b->pipe_size = size;
    return bench_measure(run_raw_pipe, b, target_ns, reps, 1, STREAM_MAX_N);
}

/* ---- raw UDP baselines ---- */

bool bench_udp_setup(bench_t *b)
{
    if (!udp_ip_of(b, 1))
        return false;
    uint32_t mine = udp_open(b, 0);
    uint32_t theirs = mine ? command(b, CMD_UDP_OPEN, mine) : 0;
    if (!theirs) {
        bench_udp_close(b->udp);
        b->udp = NULL;
        return false;
    }
    bench_udp_set_peer(b->udp, udp_ip_of(b, 1), (uint16_t)theirs);
    return true;
}

size_t bench_udp_dgram(bench_t *b)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    bench_check(b, flit_ep_peer_info(b->ep, PEER, &info), "flit_ep_peer_info");
    return info.datagram;
}

struct udp_point {
    bench_t *b;
    struct bench_udp_shape s;
};

static void udp_shape(bench_t *b, const struct bench_udp_shape *s)
{
    command(b, CMD_UDP_SHAPE, pack_shape(s));
}

static uint64_t run_udp_ping(void *ctx, uint64_t n)
{
    struct udp_point *p = ctx;
    command(p->b, CMD_UDP_ECHO, n);
    return bench_udp_ping(p->b->udp, &p->s, n);
}

static uint64_t run_udp_produce(void *ctx, uint64_t n)
{
    struct udp_point *p = ctx;
    command(p->b, CMD_UDP_CONSUME, n);
    return bench_udp_produce(p->b->udp, &p->s, n);
}

double bench_udp_latency_ns(bench_t *b, size_t size, size_t dgram, bool blocking,
                            uint64_t target_ns, int reps)
{
    if (!b->udp)
        return NAN;
    struct udp_point p = {
        .b = b, .s = {.size = size, .dgram = dgram, .blocking = blocking, .window = 2}};
    udp_shape(b, &p.s);
    return bench_measure(run_udp_ping, &p, target_ns, reps, 1, LAT_MAX_N) / 2;
}

double bench_udp_stream_ns(bench_t *b, size_t size, size_t dgram, unsigned window,
                           uint64_t target_ns, int reps)
{
    if (!b->udp)
        return NAN;
    struct udp_point p = {.b = b, .s = {.size = size, .dgram = dgram}};
    p.s.window = bench_udp_window(b->udp, &p.s, window);
    udp_shape(b, &p.s);
    return bench_measure(run_udp_produce, &p, target_ns, reps, 1, STREAM_MAX_N);
}
