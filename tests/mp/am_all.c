/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every kind of Active Message from every rank to every rank, itself
 * included, each answered by a reply of the same kind:
 *
 *   short   0 .. 16 arguments
 *   medium  0, 1, 100, 4096, 65536 bytes
 *   long    0, 8, 64 KiB, 1 MiB, 16 MiB (capped by --max-long) into the
 *           destination's library-allocated segment, each at its own offset
 *
 * Proves: every argument and payload byte arrives as sent, in both
 * directions; requests from one sender start their handlers in the order
 * sent, and so do replies (each handler checks the message is the next one
 * in the schedule); every handler runs exactly once (exact counts, and the
 * endpoint's counters agree); long payloads land at the offset asked for.
 * Also: flit_ep_peer_info describes every peer as its transport reaches it
 * (FLIT_TRANSPORT=udp: every other rank over UDP, with its datagram size).
 *
 * --closed: rank 1 makes itself not dumpable and every rank gives up
 * CAP_SYS_PTRACE, so no peer may open rank 1's files through /proc/PID/fd
 * (root otherwise may): its peers must hold them by name from creation,
 * every one of them, not only those that happened to look at rank 1 first.
 *
 *     flitrun -n 4 mp_am_all [--max-long BYTES] [--closed]
 */
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "mp.h"

enum { H_REQ = 1, H_REP = 2 };

#define NSHORT    (FLIT_AM_MAX_ARGS + 1)
#define NMEDIUM   5
#define MAX_LONGS 5
#define SLACK     4096u

static const size_t medium_sizes[NMEDIUM] = {0, 1, 100, 4096, 65536};
static const size_t long_sizes_all[MAX_LONGS] = {0, 8, 64u << 10, 1u << 20, 16u << 20};

struct msg {
    flit_am_kind kind;
    unsigned nargs;
    size_t nbytes;
    uint64_t offset; /* long: offset inside the sender's region */
};

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    struct msg sched[NSHORT + NMEDIUM + MAX_LONGS];
    unsigned nmsg, nlong;
    size_t region; /* bytes per source rank in a segment */
    uint8_t *seg;
    uint64_t *req_seen; /* [n]: requests handled from each source */
    uint64_t *rep_seen; /* [n]: replies handled from each destination */
    uint64_t req_total, rep_total;
    uint8_t *reply_buf; /* handlers' source buffer */
} g;

static uint32_t arg_value(uint32_t src, uint32_t dst, unsigned k, unsigned i, int reply)
{
    return (uint32_t)mp_mix(src, dst, (uint64_t)k * 64 + i, (uint64_t)reply);
}

static uint64_t payload_seed(uint32_t src, uint32_t dst, unsigned k, int reply)
{
    return mp_mix(src, dst, k, 100 + (uint64_t)reply);
}

/* Where message k from src lands in a segment: requests in the first n
   regions (by sender), replies in the next n (by replier). */
static uint64_t land_offset(uint32_t src, unsigned k, int reply)
{
    return ((uint64_t)(reply ? g.n : 0) + src) * g.region + g.sched[k].offset;
}

static void build_schedule(size_t max_long)
{
    unsigned k = 0;
    for (unsigned a = 0; a < NSHORT; a++)
        g.sched[k++] = (struct msg){FLIT_AM_SHORT, a, 0, 0};
    for (unsigned i = 0; i < NMEDIUM; i++)
        g.sched[k++] = (struct msg){FLIT_AM_MEDIUM, (i * 7) % NSHORT, medium_sizes[i], 0};
    uint64_t off = 0;
    g.nlong = 0;
    for (unsigned i = 0; i < MAX_LONGS; i++) {
        size_t sz = long_sizes_all[i];
        if (sz > max_long)
            sz = max_long;
        if (i > 0 && sz == g.sched[k - 1].nbytes && g.sched[k - 1].kind == FLIT_AM_LONG)
            continue; /* capped into a size already sent */
        g.sched[k++] = (struct msg){FLIT_AM_LONG, (i * 5 + 3) % NSHORT, sz, off};
        g.nlong++;
        off += (sz + SLACK - 1) / SLACK * SLACK + SLACK;
    }
    g.nmsg = k;
    g.region = off;
}

/* Checks message k of the schedule from peer against what arrived. */
static void verify(const char *what, uint32_t src, uint32_t dst, unsigned k, int reply,
                   void *buf, size_t nbytes, const uint32_t *args, unsigned nargs)
{
    const struct msg *m = &g.sched[k];
    if (nargs != m->nargs)
        FAIL("%s %u from rank %u: %u args, expected %u", what, k, src, nargs, m->nargs);
    for (unsigned i = 0; i < nargs; i++)
        if (args[i] != arg_value(src, dst, k, i, reply))
            FAIL("%s %u from rank %u: arg %u is %#x, expected %#x", what, k, src, i,
                 args[i], arg_value(src, dst, k, i, reply));
    if (nbytes != m->nbytes)
        FAIL("%s %u from rank %u: %zu bytes, expected %zu", what, k, src, nbytes,
             m->nbytes);
    if (m->kind == FLIT_AM_SHORT) {
        CHECK(buf == NULL);
        return;
    }
    if (m->kind == FLIT_AM_LONG) {
        uint8_t *want = g.seg + land_offset(src, k, reply);
        if (buf != want)
            FAIL("%s %u from rank %u: landed at segment offset %td, expected %td", what,
                 k, src, (uint8_t *)buf - g.seg, want - g.seg);
    } else if (nbytes) {
        CHECK(buf != NULL);
        CHECK(((uintptr_t)buf & 7) == 0); /* the header promises 8-byte alignment */
    }
    size_t bad = mp_pattern_check(buf, nbytes, payload_seed(src, dst, k, reply));
    if (bad != nbytes)
        FAIL("%s %u from rank %u (%s, %zu bytes): byte %zu differs", what, k, src,
             flit_am_kind_name(m->kind, reply), nbytes, bad);
}

static flit_status send_reply(flit_token_t *token, uint32_t src, unsigned k)
{
    const struct msg *m = &g.sched[k];
    uint32_t args[FLIT_AM_MAX_ARGS];
    for (unsigned i = 0; i < m->nargs; i++)
        args[i] = arg_value(g.me, src, k, i, 1);
    mp_pattern_fill(g.reply_buf, m->nbytes, payload_seed(g.me, src, k, 1));
    switch (m->kind) {
    case FLIT_AM_SHORT:
        return flit_am_reply_short(token, flit_handler(H_REP), args, m->nargs);
    case FLIT_AM_MEDIUM:
        return flit_am_reply_medium(token, flit_handler(H_REP), g.reply_buf, m->nbytes,
                                    args, m->nargs);
    default:
        return flit_am_reply_long(token, flit_handler(H_REP), g.reply_buf, m->nbytes,
                                  land_offset(g.me, k, 1), args, m->nargs);
    }
}

static void on_request(flit_token_t *token, void *buf, size_t nbytes,
                       const uint32_t *args, unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n);
    CHECK(flit_token_ep(token) == g.ep);
    uint64_t k = g.req_seen[src]++;
    if (k >= g.nmsg)
        FAIL("request %llu from rank %u: only %u were sent", (unsigned long long)k, src,
             g.nmsg);
    verify("request", src, g.me, (unsigned)k, 0, buf, nbytes, args, nargs);
    g.req_total++;
    CHECK_OK(send_reply(token, src, (unsigned)k));
}

static void on_reply(flit_token_t *token, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)user;
    uint32_t src = flit_token_rank(token).idx;
    CHECK(src < g.n);
    uint64_t k = g.rep_seen[src]++;
    if (k >= g.nmsg)
        FAIL("reply %llu from rank %u: only %u requests were sent", (unsigned long long)k,
             src, g.nmsg);
    verify("reply", src, g.me, (unsigned)k, 1, buf, nbytes, args, nargs);
    /* A reply handler may not send. */
    CHECK_ST(flit_am_reply_short(token, flit_handler(H_REP), NULL, 0),
             FLIT_ERR_REPLY_IN_REPLY);
    g.rep_total++;
}

static void send_request(uint8_t *sbuf, uint32_t dst, unsigned k)
{
    const struct msg *m = &g.sched[k];
    uint32_t args[FLIT_AM_MAX_ARGS];
    for (unsigned i = 0; i < m->nargs; i++)
        args[i] = arg_value(g.me, dst, k, i, 0);
    mp_pattern_fill(sbuf, m->nbytes, payload_seed(g.me, dst, k, 0));
    flit_rank_t d = flit_rank(dst);
    switch (m->kind) {
    case FLIT_AM_SHORT:
        CHECK_OK(flit_am_short(g.ep, d, flit_handler(H_REQ), args, m->nargs, 0));
        break;
    case FLIT_AM_MEDIUM:
        CHECK_OK(flit_am_medium(g.ep, d, flit_handler(H_REQ), sbuf, m->nbytes, args,
                                m->nargs, 0));
        break;
    default:
        CHECK_OK(flit_am_long(g.ep, d, flit_handler(H_REQ), sbuf, m->nbytes,
                              land_offset(g.me, k, 0), args, m->nargs, 0));
        break;
    }
}

static void check_counters(void)
{
    flit_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_OK(flit_ep_stats(g.ep, &s));
    uint64_t per_kind[3] = {NSHORT, NMEDIUM, g.nlong};
    uint64_t bytes[3] = {0, 0, 0};
    for (unsigned k = 0; k < g.nmsg; k++)
        bytes[g.sched[k].kind] += g.sched[k].nbytes;
    for (int reply = 0; reply < 2; reply++)
        for (int kind = 0; kind < 3; kind++) {
            int i = reply * 3 + kind;
            if (s.sent_msgs[i] != per_kind[kind] * g.n ||
                s.recv_msgs[i] != per_kind[kind] * g.n ||
                s.sent_bytes[i] != bytes[kind] * g.n ||
                s.recv_bytes[i] != bytes[kind] * g.n)
                FAIL("counters for %s: sent %llu msgs %llu B, received %llu "
                     "msgs %llu B; expected %llu msgs %llu B each way",
                     flit_am_kind_name((flit_am_kind)kind, reply),
                     (unsigned long long)s.sent_msgs[i],
                     (unsigned long long)s.sent_bytes[i],
                     (unsigned long long)s.recv_msgs[i],
                     (unsigned long long)s.recv_bytes[i],
                     (unsigned long long)(per_kind[kind] * g.n),
                     (unsigned long long)(bytes[kind] * g.n));
        }
    CHECK(s.returned_to_us == 0);
    CHECK(s.returned_by_us == 0);
    CHECK(s.refused_packets == 0);
    CHECK(s.peers_down == 0);
}

/* What flit_ep_peer_info says of each rank, against the transport chosen. */
static void check_peer_info(void)
{
    const char *forced = getenv("FLIT_TRANSPORT");
    bool udp_only = forced && strcmp(forced, "udp") == 0;
    for (uint32_t r = 0; r < g.n; r++) {
        flit_peer_info_t info = {.struct_size = sizeof info};
        CHECK_OK(flit_ep_peer_info(g.ep, flit_rank(r), &info));
        CHECK(info.max_packet >= FLIT_AM_MAX_MEDIUM && !info.down);
        if (r == g.me) {
            CHECK(strcmp(info.transport, "self") == 0 && info.datagram == 0);
        } else if (strcmp(info.transport, "udp") == 0 ||
                   strcmp(info.transport, "xdp") == 0) {
            /* "a.b.c.d:port" (xdp: then " (xdp)" or " (udp)"), datagrams
               no larger than UDP carries */
            CHECK(strchr(info.address, ':') != NULL);
            CHECK(info.datagram >= 64 && info.datagram <= 65507);
        } else if (strcmp(info.transport, "ofi") == 0) {
            /* only when asked; the provider's address, ofi's datagrams */
            CHECK(forced && strcmp(forced, "ofi") == 0 && info.address[0] != '\0');
            CHECK(info.datagram >= 64 && info.datagram <= 65536);
        } else {
            CHECK(!udp_only);
            CHECK(strcmp(info.transport, "shm") == 0 && info.datagram == 0);
        }
    }
}

/* Gives up CAP_SYS_PTRACE for good (glibc has no wrapper). From the
   permitted set too: /proc/PID/fd also wants the opener's effective set to
   cover the owner's permitted one. */
static void drop_ptrace_cap(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct data[2];
    CHECK(syscall(SYS_capget, &hdr, data) == 0);
    uint32_t bit = 1u << (CAP_SYS_PTRACE % 32);
    data[CAP_SYS_PTRACE / 32].effective &= ~bit;
    data[CAP_SYS_PTRACE / 32].permitted &= ~bit;
    data[CAP_SYS_PTRACE / 32].inheritable &= ~bit;
    CHECK(syscall(SYS_capset, &hdr, data) == 0);
}

int main(int argc, char **argv)
{
    size_t max_long = (size_t)mp_arg_u64(argc, argv, "--max-long", 16u << 20);
    CHECK(max_long >= 8);
    double t0 = mp_now();
    if (mp_arg_flag(argc, argv, "--closed")) {
        drop_ptrace_cap();
        const char *rank = getenv("FLIT_RANK");
        if (rank && strcmp(rank, "1") == 0)
            CHECK(prctl(PR_SET_DUMPABLE, 0) == 0);
    }
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    build_schedule(max_long);

    size_t seg_size = 2 * (size_t)g.n * g.region + SLACK;
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_SEGMENT,
                          .segment_addr = NULL,
                          .segment_size = seg_size};
    CHECK_OK(flit_ep_create(&p, &g.ep));
    void *seg;
    size_t got;
    CHECK_OK(flit_ep_segment(g.ep, &seg, &got));
    CHECK(seg != NULL && got == seg_size);
    g.seg = seg;
    for (uint32_t r = 0; r < g.n; r++) {
        CHECK_OK(flit_ep_peer_segment_size(g.ep, flit_rank(r), &got));
        CHECK(got == seg_size);
    }

    g.req_seen = calloc(g.n, sizeof *g.req_seen);
    g.rep_seen = calloc(g.n, sizeof *g.rep_seen);
    g.reply_buf = malloc(max_long > 65536 ? max_long : 65536);
    uint8_t *sbuf = malloc(max_long > 65536 ? max_long : 65536);
    CHECK(g.req_seen && g.rep_seen && g.reply_buf && sbuf);

    check_peer_info();
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REQ), on_request, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_REP), on_reply, NULL));
    CHECK_OK(flit_barrier(g.ep));

    /* Interleaved: message k to every destination before message k + 1. */
    for (unsigned k = 0; k < g.nmsg; k++)
        for (uint32_t j = 0; j < g.n; j++)
            send_request(sbuf, (g.me + j) % g.n, k);

    uint64_t want = (uint64_t)g.n * g.nmsg;
    MP_WAIT(g.ep, g.req_total == want && g.rep_total == want);
    for (uint32_t r = 0; r < g.n; r++) {
        CHECK(g.req_seen[r] == g.nmsg);
        CHECK(g.rep_seen[r] == g.nmsg);
    }
    CHECK_OK(flit_barrier(g.ep));
    /* Nothing more may arrive: the counts are final. */
    CHECK(g.req_total == want && g.rep_total == want);
    check_counters();

    CHECK_OK(flit_finalize());
    printf("am_all: rank %u of %u OK: %u messages each way with every rank, "
           "longs up to %zu bytes, %.2f s\n",
           g.me, g.n, g.nmsg, max_long, mp_now() - t0);
    free(sbuf);
    free(g.reply_buf);
    free(g.req_seen);
    free(g.rep_seen);
    return 0;
}
