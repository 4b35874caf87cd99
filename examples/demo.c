/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-demo: what flit does, in two short acts.
 *
 *     flitrun -n 2 flit-demo latency     latency, bandwidth and message rate
 *                                        beside what the hardware allows
 *     flitrun -n 4 flit-demo alltoall    every rank sends every rank a few
 *                                        thousand mixed messages, verified
 *
 * Without an argument it plays "latency" on 2 ranks, "alltoall" otherwise.
 * Each act first says what else was running (bench_others); a figure
 * during which other work kept a rank from its CPU (bench_noisy, flit-bench's
 * rule) reads "noisy" instead of a number, which would time the scheduler.
 *
 * The all-to-all is a small Active Messages protocol: each message names the
 * handler that checks it (sequence number, length, checksum); each request
 * handler acknowledges with a reply, and a sender keeps at most WINDOW
 * messages unacknowledged per destination. The window is also what makes
 * long messages safe: a long payload lands in a slot of the destination's
 * segment that belongs to the sender and is not reused until that slot's
 * previous message was acknowledged, i.e. its handler has run.
 */
#include <flit/flit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_engine.h"
#include "bench_util.h"

#define PROG "flit-demo"

/* ------------------------------------------------------------ act 1 */

#define LAT_MAX_SIZE (4u << 20)
#define LAT_SEGMENT  (16u << 20)
#define POINT_NS     100000000u /* per figure, after its warm-up */

/* Time both ranks waited for a CPU other work held, when the row began. */
static uint64_t row_wait0, row_t0;
static int noisy_rows;

static void row_begin(bench_t *b)
{
    row_wait0 = bench_sched_wait_ns(b);
    row_t0 = bench_now_ns();
}

/* A row; "noisy" instead of its figures when other work took a rank's CPU
   for too long (bench_noisy, as flit-bench decides it). */
static void row(bench_t *b, const char *figure, size_t size, const char *flit,
                const char *base, double ratio)
{
    double share;
    uint64_t elapsed = bench_now_ns() - row_t0;
    bool noisy = bench_noisy(bench_sched_wait_ns(b) - row_wait0, elapsed, &share);
    noisy_rows += noisy;
    char sz[32], ra[16] = "", why[80] = "";
    bench_fmt_size(sz, sizeof sz, (double)size);
    if (ratio > 0 && !noisy)
        snprintf(ra, sizeof ra, "%.2f", ratio);
    if (noisy) /* both ranks' waits: they can add up to more than the time */
        snprintf(why, sizeof why, "  ranks waited %.0f ms for a CPU in %.0f ms",
                 share * (double)elapsed / 1e6, (double)elapsed / 1e6);
    printf("  %-30s %7s %12s %22s %6s%s\n", figure, sz, noisy ? "noisy" : flit,
           noisy ? "" : base, ra, why);
    fflush(stdout);
}

/* What else ran, always: one line, and a warning when it was a lot. */
static void others_line(void)
{
    char line[640];
    double others = bench_others(line, sizeof line, 200);
    printf("  other work: %s\n", line);
    if (others >= 0.25)
        printf("  (expect noisy figures: a quiet machine gives steadier ones)\n");
    printf("\n");
    fflush(stdout);
}

static void lat_row(bench_t *b)
{
    char f[32], s[48] = "n/a";
    row_begin(b);
    double raw_ns = b->raw ? bench_raw_latency_ns(b, false, POINT_NS, 5) : -1;
    double ns = bench_latency_ns(b, BENCH_SHORT, 8, false, POINT_NS, 5);
    snprintf(f, sizeof f, "%.3f us", ns / 1e3);
    if (raw_ns > 0)
        snprintf(s, sizeof s, "%.3f us raw flag", raw_ns / 1e3);
    row(b, "one-way latency, short AM", 8, f, s, raw_ns > 0 ? ns / raw_ns : 0);
}

static void bw_row(bench_t *b, enum bench_kind kind, size_t size)
{
    char f[32], s[48];
    row_begin(b);
    double v = (double)size / bench_stream_ns(b, kind, size, 64, POINT_NS, 5);
    double m = bench_memcpy_mbps(size, POINT_NS) / 1e3;
    snprintf(f, sizeof f, "%.2f GB/s", v);
    snprintf(s, sizeof s, "%.2f GB/s memcpy", m);
    row(b, kind == BENCH_MEDIUM ? "bandwidth, medium AM" : "bandwidth, long AM", size, f,
        s, m > 0 ? v / m : 0);
}

static void rate_row(bench_t *b)
{
    char f[32], s[48] = "n/a";
    row_begin(b);
    double raw = bench_raw_stream_ns(b, POINT_NS, 5);
    double ns = bench_stream_ns(b, BENCH_SHORT, 8, 256, POINT_NS, 5);
    snprintf(f, sizeof f, "%.2f M/s", 1e3 / ns);
    if (raw > 0)
        snprintf(s, sizeof s, "%.2f M/s raw ring", 1e3 / raw);
    row(b, "message rate, short AM", 8, f, s, raw > 0 ? raw / ns : 0);
}

static void act_latency(flit_ep_t *ep)
{
    bench_t b;
    bench_init(&b, ep, LAT_MAX_SIZE, PROG);
    bench_check(&b, flit_barrier(ep), "flit_barrier");
    if (b.rank != 0) {
        bench_serve(&b);
        bench_fini(&b);
        return;
    }
    char host[512];
    bench_host_info(host, sizeof host);
    printf("flit %d.%d.%d: two ranks, shared memory, on %s\n\n", FLIT_VERSION_MAJOR,
           FLIT_VERSION_MINOR, FLIT_VERSION_PATCH, host);
    others_line();
    printf("  %-30s %7s %12s %22s %6s\n", "what", "size", "flit",
           "what the hardware does", "ratio");
    printf("  %-30s %7s %12s %22s %6s\n", "------------------------------", "-------",
           "------------", "----------------------", "------");
    fflush(stdout);
    bench_raw_setup(&b);
    lat_row(&b);
    bw_row(&b, BENCH_MEDIUM, 4096);
    bw_row(&b, BENCH_MEDIUM, 65536);
    bw_row(&b, BENCH_LONG, 65536);
    bw_row(&b, BENCH_LONG, 1u << 20);
    bw_row(&b, BENCH_LONG, 4u << 20);
    rate_row(&b);
    printf("\n  ratio = flit / hardware. Latency: round trip / 2, median of 5, "
           "beside two\n  processes bouncing a flag through shared memory. "
           "Bandwidth: 64 messages in\n  flight, beside one core's memcpy (a long "
           "message is one copy, so about 1.0\n  is the goal). Rate: 8-byte "
           "messages, beside a bare ring of 64-byte slots.\n  The full sweep: "
           "flitrun -n 2 flit-bench\n");
    if (noisy_rows)
        printf("  noisy: other work kept a rank from its CPU over %.0f%% of the row's "
               "time, so\n  its figures would measure the scheduler, not flit\n",
               BENCH_NOISY_SHARE * 100);
    fflush(stdout);
    bench_quit(&b);
    bench_fini(&b);
}

/* ------------------------------------------------------------ act 2 */

enum {
    H_SHORT = 1, /* request: a short message of a stream */
    H_MEDIUM,    /* request: a medium one */
    H_LONG,      /* request: a long one */
    H_ACK,       /* reply: one more delivered */
    H_PROGRESS,  /* request to rank 0: messages received */
    H_REPORT,    /* request to rank 0: the final tally */
};

#define WINDOW         32u /* unacknowledged messages per destination */
#define MEDIUM_MAX     8192u
#define LONG_MAX_BYTES 32768u
#define REGION         (WINDOW * LONG_MAX_BYTES) /* one sender's part of a segment */
#define DEFAULT_MSGS   5000u
#define SHOW_ERRORS    5

/* What one rank learned from one sender, sent to rank 0 at the end. */
struct tally {
    uint64_t msgs, bytes, errors;
    uint64_t kinds[3];
};

struct a2a {
    flit_ep_t *ep;
    uint32_t rank, n, msgs; /* msgs per stream */
    uint8_t *buf;           /* what a message carries, built per message */
    /* sending, per destination */
    uint32_t *next, *acked;
    /* receiving, per source */
    struct tally *from;
    uint64_t received, errors_shown, ack_errors;
    uint64_t waited_ns; /* this rank's wait for a CPU during the exchange; on
                           rank 0 after gather: every rank's */
    /* rank 0 */
    uint64_t *seen;    /* per rank: messages it has received */
    struct tally *all; /* [n][n]: from src to dst, at dst */
    uint32_t reports;
};

static uint64_t mix(uint64_t x)
{
    /* splitmix64's finaliser: every message's kind, size and bytes */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t seed(uint32_t src, uint32_t dst, uint32_t seq)
{
    return mix(((uint64_t)src << 40) ^ ((uint64_t)dst << 20) ^ seq);
}

/* Message seq of stream src -> dst: its kind and payload length. */
static unsigned kind_of(uint64_t s, size_t *len)
{
    unsigned k = (unsigned)(s % 10);
    if (k < 4) {
        *len = 0;
        return 0;
    }
    if (k < 8) {
        *len = (s >> 16) % (MEDIUM_MAX + 1);
        return 1;
    }
    *len = 1 + (s >> 16) % LONG_MAX_BYTES;
    return 2;
}

static void fill(uint8_t *p, size_t len, uint64_t s)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = mix(s + i);
        memcpy(p + i, &w, 8);
    }
    uint64_t w = mix(s + i);
    memcpy(p + i, &w, len - i);
}

static uint32_t checksum(const uint8_t *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return (uint32_t)(h ^ (h >> 32));
}

static void die(const char *what, flit_status st)
{
    fprintf(stderr, PROG ": rank %u: %s: %s\n", flit_job_rank().idx, what,
            flit_strerror(st));
    exit(1);
}

static void complain(struct a2a *a, uint32_t src, uint32_t seq, const char *what,
                     uint64_t got, uint64_t want)
{
    a->from[src].errors++;
    if (a->errors_shown++ >= SHOW_ERRORS)
        return;
    bool hex = strcmp(what, "checksum") == 0 || strcmp(what, "arguments") == 0;
    fprintf(stderr,
            hex ? PROG ": rank %u: stream %u->%u, message %u: %s %#llx, "
                       "expected %#llx\n"
                : PROG ": rank %u: stream %u->%u, message %u: %s %llu, "
                       "expected %llu\n",
            a->rank, src, a->rank, seq, what, (unsigned long long)got,
            (unsigned long long)want);
}

/* Every message: in order, the kind and length its sequence number says,
   and the bytes its checksum says; then the acknowledgement. */
static void deliver(flit_token_t *t, unsigned kind, const void *buf, size_t nbytes,
                    const uint32_t *args, unsigned nargs, struct a2a *a)
{
    uint32_t src = flit_token_rank(t).idx;
    struct tally *tl = &a->from[src];
    uint32_t seq = nargs == 4 ? args[0] : UINT32_MAX;
    size_t len;
    uint64_t s = seed(src, a->rank, seq);
    unsigned want_kind = kind_of(s, &len);
    if (nargs != 4)
        complain(a, src, seq, "argument count", nargs, 4);
    else if (seq != tl->msgs)
        complain(a, src, seq, "sequence number", seq, tl->msgs);
    else if (kind != want_kind)
        complain(a, src, seq, "kind", kind, want_kind);
    else if (nbytes != len)
        complain(a, src, seq, "length", nbytes, len);
    else if (args[1] != (uint32_t)s || args[2] != (uint32_t)(s >> 32))
        complain(a, src, seq, "arguments", args[1] | (uint64_t)args[2] << 32, s);
    else if (kind != 0 && checksum(buf, nbytes) != args[3])
        complain(a, src, seq, "checksum", checksum(buf, nbytes), args[3]);
    tl->msgs++;
    tl->bytes += nbytes;
    tl->kinds[kind < 3 ? kind : 0]++;
    a->received++;
    uint32_t ack = seq;
    flit_status st = flit_am_reply_short(t, flit_handler(H_ACK), &ack, 1);
    if (st != FLIT_OK)
        die("acknowledging", st);
}

static void on_short(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    deliver(t, 0, buf, nbytes, args, nargs, user);
}

static void on_medium(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    deliver(t, 1, buf, nbytes, args, nargs, user);
}

static void on_long(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    deliver(t, 2, buf, nbytes, args, nargs, user);
}

static void on_ack(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    struct a2a *a = user;
    uint32_t dst = flit_token_rank(t).idx;
    /* Replies come back in order: the oldest unacknowledged is the one. */
    if (nargs != 1 || args[0] != a->acked[dst]) {
        if (a->ack_errors++ < SHOW_ERRORS)
            fprintf(stderr,
                    PROG ": rank %u: acknowledgement from rank %u out "
                         "of order\n",
                    a->rank, dst);
    }
    a->acked[dst]++;
}

static void on_progress(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    struct a2a *a = user;
    uint32_t src = flit_token_rank(t).idx;
    uint64_t v = nargs == 2 ? args[0] | (uint64_t)args[1] << 32 : 0;
    if (v > a->seen[src])
        a->seen[src] = v;
}

static void on_report(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user)
{
    struct a2a *a = user;
    uint32_t src = flit_token_rank(t).idx;
    if (nbytes != a->n * sizeof(struct tally) || nargs != 2) {
        fprintf(stderr, PROG ": rank 0: rank %u's report has %zu bytes, %u args\n", src,
                nbytes, nargs);
        return;
    }
    memcpy(&a->all[(size_t)src * a->n], buf, nbytes);
    a->waited_ns += (args[0] | (uint64_t)args[1] << 32) * 1000; /* sent in us */
    a->reports++;
}

/* ---- sending ---- */

static void send_next(struct a2a *a, uint32_t dst)
{
    uint32_t seq = a->next[dst];
    size_t len;
    uint64_t s = seed(a->rank, dst, seq);
    unsigned kind = kind_of(s, &len);
    uint32_t args[4] = {seq, (uint32_t)s, (uint32_t)(s >> 32), 0};
    flit_status st;
    if (kind == 0) {
        st = flit_am_short(a->ep, flit_rank(dst), flit_handler(H_SHORT), args, 4, 0);
    } else {
        fill(a->buf, len, s);
        args[3] = checksum(a->buf, len);
        if (kind == 1) {
            st = flit_am_medium(a->ep, flit_rank(dst), flit_handler(H_MEDIUM), a->buf,
                                len, args, 4, 0);
        } else {
            /* Our slot for this message in dst's segment: free, since the
               message WINDOW before it was acknowledged. */
            uint64_t off =
                (uint64_t)a->rank * REGION + (uint64_t)(seq % WINDOW) * LONG_MAX_BYTES;
            st = flit_am_long(a->ep, flit_rank(dst), flit_handler(H_LONG), a->buf, len,
                              off, args, 4, 0);
        }
    }
    if (st != FLIT_OK)
        die("sending", st);
    a->next[dst]++;
}

/* Sends what the windows allow; true if it sent anything. */
static bool send_some(struct a2a *a)
{
    bool sent = false;
    for (uint32_t k = 0; k < a->n; k++) {
        uint32_t dst = (a->rank + k) % a->n; /* everyone starts elsewhere */
        if (a->next[dst] < a->msgs && a->next[dst] - a->acked[dst] < WINDOW) {
            send_next(a, dst);
            sent = true;
        }
    }
    return sent;
}

static bool all_done(const struct a2a *a)
{
    for (uint32_t d = 0; d < a->n; d++)
        if (a->acked[d] < a->msgs)
            return false;
    return a->received == (uint64_t)a->n * a->msgs;
}

/* ---- progress on rank 0 ---- */

static char *group(char *buf, size_t len, uint64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v), o = 0;
    for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

static void show_progress(struct a2a *a, bool final, int *last_shown)
{
    uint64_t total = (uint64_t)a->n * a->n * a->msgs, done = 0;
    a->seen[0] = a->received;
    for (uint32_t r = 0; r < a->n; r++)
        done += a->seen[r];
    int pct = (int)(done * 100 / total);
    bool tty = isatty(STDOUT_FILENO);
    if (final)
        pct = 100, done = total;
    if (tty) {
        if (pct == *last_shown && !final)
            return;
        char bar[41];
        int fill_to = pct * 40 / 100;
        for (int i = 0; i < 40; i++)
            bar[i] = i < fill_to ? '#' : '.';
        bar[40] = '\0';
        char d[32], t[32];
        printf("\r  [%s] %3d%%  %s / %s messages delivered", bar, pct,
               group(d, sizeof d, done), group(t, sizeof t, total));
        if (final)
            printf("\n");
    } else {
        /* A log, not a terminal: a line every quarter. */
        if (pct / 25 == *last_shown / 25 && !final)
            return;
        if (final && *last_shown == 100)
            return;
        char d[32], t[32];
        printf("  %3d%%  %s / %s messages delivered\n", pct, group(d, sizeof d, done),
               group(t, sizeof t, total));
    }
    fflush(stdout);
    *last_shown = pct;
}

static void report_progress(struct a2a *a, uint64_t *reported)
{
    uint64_t step = (uint64_t)a->n * a->msgs / 50 + 1;
    if (a->rank == 0 || a->received < *reported + step)
        return;
    *reported = a->received;
    uint32_t args[2] = {(uint32_t)a->received, (uint32_t)(a->received >> 32)};
    /* Best effort: a full ring just means this report is skipped. */
    flit_status st = flit_am_short(a->ep, flit_rank(0), flit_handler(H_PROGRESS), args, 2,
                                   FLIT_AM_NONBLOCK);
    if (st != FLIT_OK && st != FLIT_ERR_AGAIN)
        die("reporting progress", st);
}

static void exchange(struct a2a *a)
{
    int last_shown = -1;
    uint64_t reported = 0, t_show = 0;
    while (!all_done(a)) {
        bool sent = send_some(a);
        flit_status st = sent ? flit_poll(a->ep) : flit_wait(a->ep, 20000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            die(sent ? "flit_poll" : "flit_wait", st);
        report_progress(a, &reported);
        if (a->rank == 0) {
            uint64_t now = bench_now_ns();
            if (now - t_show > 50000000u) {
                t_show = now;
                show_progress(a, false, &last_shown);
            }
        }
    }
    if (a->rank == 0)
        show_progress(a, true, &last_shown);
}

/* ---- the end ---- */

static void gather(struct a2a *a)
{
    if (a->rank != 0) {
        uint64_t us = a->waited_ns / 1000;
        uint32_t args[2] = {(uint32_t)us, (uint32_t)(us >> 32)};
        flit_status st = flit_am_medium(a->ep, flit_rank(0), flit_handler(H_REPORT),
                                        a->from, a->n * sizeof(struct tally), args, 2, 0);
        if (st != FLIT_OK)
            die("sending the report", st);
        return;
    }
    memcpy(a->all, a->from, a->n * sizeof(struct tally));
    while (a->reports < a->n - 1) {
        flit_status st = flit_wait(a->ep, 1000000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            die("waiting for reports", st);
    }
}

/* Rank 0: the summary; the number of streams that failed. */
static unsigned summarize(const struct a2a *a, double secs)
{
    unsigned bad = 0;
    uint64_t msgs = 0, bytes = 0, kinds[3] = {0, 0, 0};
    for (uint32_t dst = 0; dst < a->n; dst++)
        for (uint32_t src = 0; src < a->n; src++) {
            const struct tally *t = &a->all[(size_t)dst * a->n + src];
            msgs += t->msgs;
            bytes += t->bytes;
            for (int k = 0; k < 3; k++)
                kinds[k] += t->kinds[k];
            if (t->msgs != a->msgs || t->errors) {
                bad++;
                fprintf(stderr,
                        "  stream %u->%u: %llu of %u messages, %llu "
                        "wrong\n",
                        src, dst, (unsigned long long)t->msgs, a->msgs,
                        (unsigned long long)t->errors);
            }
        }
    char m[32], k0[32], k1[32], k2[32], r[32];
    printf("\n  %s messages (%s short, %s medium, %s long), %.1f MB of payload\n",
           group(m, sizeof m, msgs), group(k0, sizeof k0, kinds[0]),
           group(k1, sizeof k1, kinds[1]), group(k2, sizeof k2, kinds[2]),
           (double)bytes / 1e6);
    /* The rate only when no rank lost its CPU for long (as flit-bench). */
    if (bench_noisy(a->waited_ns, (uint64_t)(secs * 1e9), NULL))
        printf("  rate noisy: the %u ranks waited %.0f ms for a CPU in %.0f ms (other "
               "work,\n  or more ranks than CPUs); each message was acknowledged by a "
               "reply\n",
               a->n, (double)a->waited_ns / 1e6, secs * 1e3);
    else
        printf("  in %.2f s: %s messages/s, %.1f MB/s of payload; each message was "
               "acknowledged by a reply\n",
               secs, group(r, sizeof r, (uint64_t)((double)msgs / secs)),
               (double)bytes / secs / 1e6);
    if (bad == 0)
        printf("  all %u\xc3\x97%u streams verified: nothing lost, nothing "
               "duplicated, in order, checksums match\n",
               a->n, a->n);
    else
        printf("  %u of %u\xc3\x97%u streams FAILED verification\n", bad, a->n, a->n);
    fflush(stdout);
    return bad;
}

static int act_alltoall(uint32_t msgs)
{
    struct a2a a = {.rank = flit_job_rank().idx, .n = flit_job_size(), .msgs = msgs};
    flit_ep_params_t p = {
        /* Single-threaded, and no progress thread even if FLIT_PROGRESS_THREAD
           says so: handlers run in our own polls, which the counters rely on. */
        .field_mask = FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT |
                      FLIT_EP_PARAM_PROGRESS_THREAD,
        .thread_mode = FLIT_THREAD_SINGLE,
        .progress_thread = 0,
        .segment_size = (size_t)a.n * REGION,
    };
    flit_status st = flit_ep_create(&p, &a.ep);
    if (st != FLIT_OK)
        die("flit_ep_create", st);
    a.buf = malloc(LONG_MAX_BYTES > MEDIUM_MAX ? LONG_MAX_BYTES : MEDIUM_MAX);
    a.next = calloc(a.n, sizeof *a.next);
    a.acked = calloc(a.n, sizeof *a.acked);
    a.from = calloc(a.n, sizeof *a.from);
    a.seen = calloc(a.n, sizeof *a.seen);
    a.all = calloc((size_t)a.n * a.n, sizeof *a.all);
    if (!a.buf || !a.next || !a.acked || !a.from || !a.seen || !a.all)
        die("allocating", FLIT_ERR_NO_MEMORY);
    static const struct {
        unsigned h;
        flit_am_handler_fn fn;
    } table[] = {{H_SHORT, on_short}, {H_MEDIUM, on_medium},     {H_LONG, on_long},
                 {H_ACK, on_ack},     {H_PROGRESS, on_progress}, {H_REPORT, on_report}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if ((st = flit_am_register(a.ep, flit_handler((uint16_t)table[i].h), table[i].fn,
                                   &a)) != FLIT_OK)
            die("flit_am_register", st);

    if (a.rank == 0) {
        char m[32], t[32];
        printf("flit all-to-all: %u rank%s, each sends every rank (itself "
               "included) %s messages\n",
               a.n, a.n == 1 ? "" : "s", group(m, sizeof m, msgs));
        printf("  40%% short (4 args), 40%% medium (0-8 KiB), 20%% long (1 B-32 "
               "KiB into the\n  destination's segment); %s messages in all, "
               "at most %u unacknowledged per stream\n\n",
               group(t, sizeof t, (uint64_t)a.n * a.n * msgs), WINDOW);
        fflush(stdout);
    }
    if (a.rank == 0)
        others_line(); /* the other ranks wait in the barrier meanwhile */
    if ((st = flit_barrier(a.ep)) != FLIT_OK) /* handlers are in place */
        die("flit_barrier", st);
    uint64_t t0 = bench_now_ns(), wait0 = bench_runq_wait_ns();
    exchange(&a);
    if ((st = flit_barrier(a.ep)) != FLIT_OK) /* everyone has everything */
        die("flit_barrier", st);
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    a.waited_ns = bench_runq_wait_ns() - wait0;
    gather(&a);
    unsigned bad = a.ack_errors != 0;
    for (uint32_t s = 0; s < a.n; s++)
        bad += a.from[s].msgs != a.msgs || a.from[s].errors;
    if (a.rank == 0)
        bad += summarize(&a, secs);
    if ((st = flit_ep_destroy(a.ep)) != FLIT_OK)
        die("flit_ep_destroy", st);
    free(a.buf);
    free(a.next);
    free(a.acked);
    free(a.from);
    free(a.seen);
    free(a.all);
    return bad ? 1 : 0;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: flitrun -n 2 " PROG " latency\n"
                    "       flitrun -n 4 " PROG " alltoall [MESSAGES_PER_STREAM]\n");
}

int main(int argc, char **argv)
{
    flit_status st = flit_init(NULL);
    if (st != FLIT_OK)
        die("flit_init", st);
    uint32_t rank = flit_job_rank().idx, size = flit_job_size();
    const char *act = argc > 1 ? argv[1] : size == 2 ? "latency" : "alltoall";
    int rc = 0;
    if (strcmp(act, "latency") == 0 && argc <= 2) {
        if (size != 2) {
            if (rank == 0)
                fprintf(stderr, PROG ": latency needs exactly 2 ranks, has %u\n", size);
            rc = 2;
        } else {
            flit_ep_params_t p = {
                /* As in act_alltoall: no progress thread, whatever the
                   environment says. */
                .field_mask = FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT |
                              FLIT_EP_PARAM_PROGRESS_THREAD,
                .thread_mode = FLIT_THREAD_SINGLE,
                .progress_thread = 0,
                .segment_size = LAT_SEGMENT,
            };
            flit_ep_t *ep;
            if ((st = flit_ep_create(&p, &ep)) != FLIT_OK)
                die("flit_ep_create", st);
            act_latency(ep);
            if ((st = flit_ep_destroy(ep)) != FLIT_OK)
                die("flit_ep_destroy", st);
        }
    } else if (strcmp(act, "alltoall") == 0 && argc <= 3) {
        char *end = NULL;
        unsigned long m = argc == 3 ? strtoul(argv[2], &end, 10) : DEFAULT_MSGS;
        if ((end && *end) || m == 0 || m > 10000000) {
            if (rank == 0)
                usage();
            rc = 2;
        } else {
            rc = act_alltoall((uint32_t)m);
        }
    } else {
        if (rank == 0)
            usage();
        rc = 2;
    }
    if ((st = flit_finalize()) != FLIT_OK)
        die("flit_finalize", st);
    return rc;
}
