/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pulled messages (src/stream/pull.c): large stream and tagged messages
 * that the receiver copies once, from its sender's memory, into private
 * memory. Rank 0 receives; every other rank sends.
 *
 * Sizes around the threshold t (FLIT_SHM_RNDV_MIN_KB, under
 * FLIT_TRANSPORT=ofi FLIT_OFI_RNDV_KB; 64 KiB when unset):
 * t-1, t, t+1, odd ones, 4 MiB; each as a stream sent in one call with a
 * header part (flit_stream_sendmsg), as a stream begun and sent whole
 * (flit_stream_send), and as a tagged message, first unexpected (rank 0
 * posts its receives only once every message is in), then into posted
 * receives; every byte checked. With several senders their messages are
 * in flight at once. --expect on|off: every message of t bytes or more
 * (a tagged one: with its 8-byte tag) was pulled, or none was
 * (stream.pulled_msgs); auto: from each sender some were pulled and some
 * declined, taken in packets to measure the rings (stream.pull_declined).
 *
 * --kill: rank 1 sends its pid, then a 4 MiB message; rank 0's handler
 * takes its first 64 KiB (pulled), kills rank 1 (SIGKILL), waits until it
 * is gone (/proc), and asks for the rest: FLIT_ERR_PEER_DOWN, no hang, no
 * crash. Run under flitrun --keep-going (it exits 137 naming rank 1).
 */
#include <errno.h>
#include <signal.h>
#include <sys/types.h>

#include <flit/stream.h>
#include <flit/tagged.h>

#include "mp.h"

enum { H_STREAM = 1, H_PID = 2, H_BIG = 3 };

#define MAX_LEN   (4u << 20)
#define NSIZES    7
#define HDR       8u
#define KILL_LEN  (4u << 20)
#define KILL_HEAD (64u << 10)

static struct {
    flit_ep_t *ep;
    flit_tagged_t *tg;
    uint32_t me, size;
    size_t sizes[NSIZES];
    uint8_t *buf;     /* rank 0: where messages land (private memory) */
    uint8_t *bufs[9]; /* rank 0: a stream's, by sender (taken in packets,
                         two senders' handlers wait at once) */
    unsigned streams_in;
    /* --kill */
    pid_t victim;
    flit_status big_status;
    size_t big_first;
    bool big_done;
    int down_calls;
} g;

static uint64_t seed_of(uint32_t src, unsigned kind, unsigned i)
{
    return mp_mix(src, kind, i, 41);
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A stream: an 8-byte header (which size), then its pattern, taken in
   two pieces into private memory. */
static void on_stream(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    uint8_t hdr[HDR];
    CHECK(total >= HDR);
    CHECK_OK(flit_stream_recv(s, hdr, HDR));
    uint64_t w = get64(hdr);
    unsigned i = (unsigned)(w & 0xff), kind = (unsigned)(w >> 8) & 0xff;
    uint32_t src = flit_stream_rank(s).idx;
    CHECK(i < NSIZES && total == g.sizes[i]);
    size_t n = total - HDR, first = n < 1000 ? n : 1000;
    uint8_t *buf = g.bufs[src];
    memset(buf, 0, n);
    CHECK_OK(flit_stream_recv(s, buf, first));
    CHECK_OK(flit_stream_recv(s, buf + first, n - first));
    size_t bad = mp_pattern_check(buf, n, seed_of(src, kind, i));
    if (bad != n)
        FAIL("stream %u (%zu bytes, kind %u) from rank %u: byte %zu differs", i, total,
             kind, src, bad);
    g.streams_in++;
}

static void send_streams(uint8_t *data)
{
    for (unsigned kind = 0; kind < 2; kind++)
        for (unsigned i = 0; i < NSIZES; i++) {
            size_t total = g.sizes[i];
            uint64_t w = i | (uint64_t)kind << 8;
            memcpy(data, &w, HDR);
            mp_pattern_fill(data + HDR, total - HDR, seed_of(g.me, kind, i));
            if (kind == 0) {
                struct iovec iov[2] = {{data, HDR}, {data + HDR, total - HDR}};
                CHECK_OK(flit_stream_sendmsg(g.ep, flit_rank(0), flit_handler(H_STREAM),
                                             iov, 2, 0));
            } else {
                flit_stream_out_t *o;
                CHECK_OK(flit_stream_begin(g.ep, flit_rank(0), flit_handler(H_STREAM),
                                           total, 0, &o));
                CHECK_OK(flit_stream_send(o, data, total));
                CHECK_OK(flit_stream_end(o));
            }
        }
}

static void send_tagged(uint8_t *data, unsigned kind)
{
    for (unsigned i = 0; i < NSIZES; i++) {
        mp_pattern_fill(data, g.sizes[i], seed_of(g.me, kind, i));
        CHECK_OK(flit_tagged_send(g.tg, flit_rank(0), i, data, g.sizes[i]));
    }
}

static uint64_t counter(const char *name)
{
    flit_counter_t c;
    CHECK_OK(flit_ep_counter(g.ep, name, &c));
    return c.value;
}

static void check_tagged(const uint8_t *buf, uint32_t src, unsigned kind, unsigned i,
                         const flit_tagged_info_t *info)
{
    CHECK(info->status == FLIT_OK && info->length == g.sizes[i] &&
          info->received == g.sizes[i] && info->source.idx == src && info->tag == i);
    size_t bad = mp_pattern_check(buf, g.sizes[i], seed_of(src, kind, i));
    if (bad != g.sizes[i])
        FAIL("tagged %u (%zu bytes, kind %u) from rank %u: byte %zu differs", i,
             g.sizes[i], kind, src, bad);
}

static void receive_all(void)
{
    unsigned senders = g.size - 1;
    MP_WAIT(g.ep, g.streams_in == 2 * NSIZES * senders);
    /* Unexpected: every tagged message in before any receive is posted. */
    uint64_t unexp = counter("tagged.unexpected");
    CHECK_OK(flit_barrier(g.ep));
    MP_WAIT(g.ep, counter("tagged.unexpected") == unexp + NSIZES * senders);
    for (uint32_t src = 1; src < g.size; src++)
        for (unsigned i = 0; i < NSIZES; i++) {
            flit_tagged_info_t info;
            CHECK_OK(flit_tagged_recv(g.tg, flit_rank(src), i, g.buf, MAX_LEN, &info));
            check_tagged(g.buf, src, 2, i, &info);
        }
    /* Posted: every receive in place before the senders start. */
    uint8_t *bufs = malloc((size_t)senders * NSIZES * MAX_LEN);
    CHECK(bufs);
    flit_request_t *reqs[NSIZES * 8];
    CHECK(senders * NSIZES <= NSIZES * 8);
    for (uint32_t k = 0; k < senders * NSIZES; k++)
        CHECK_OK(flit_tagged_irecv(g.tg, flit_rank(1 + k / NSIZES), k % NSIZES,
                                   bufs + (size_t)k * MAX_LEN, MAX_LEN, &reqs[k]));
    CHECK_OK(flit_barrier(g.ep));
    for (uint32_t k = 0; k < senders * NSIZES; k++) {
        flit_tagged_info_t info;
        CHECK_OK(flit_tagged_wait(&reqs[k], -1, &info));
        check_tagged(bufs + (size_t)k * MAX_LEN, 1 + k / NSIZES, 3, k % NSIZES, &info);
    }
    free(bufs);
}

static void send_all(void)
{
    uint8_t *data = malloc(MAX_LEN + HDR);
    CHECK(data);
    send_streams(data);
    CHECK_OK(flit_barrier(g.ep));
    send_tagged(data, 2);
    CHECK_OK(flit_barrier(g.ep));
    send_tagged(data, 3);
    free(data);
}

/* Messages of rank 0's that were pulled, by --expect. */
static void check_pulled(const char *expect)
{
    unsigned at_least = 0;
    for (unsigned i = 0; i < NSIZES; i++)
        at_least += (g.sizes[i] >= g.sizes[1]) * 2 + (g.sizes[i] + HDR >= g.sizes[1]) * 2;
    uint64_t want = strcmp(expect, "off") == 0 ? 0 : (uint64_t)at_least * (g.size - 1);
    uint64_t got = counter("stream.pulled_msgs");
    printf("pull: rank 0: %llu messages pulled (%llu bytes), %llu refused\n",
           (unsigned long long)got, (unsigned long long)counter("stream.pulled_bytes"),
           (unsigned long long)counter("stream.pull_refused"));
    if (strcmp(expect, "auto") == 0) {
        /* Its first offer of a size class pulled, the next in packets (the
           rings measured), then the cheaper way, each sender apart. */
        uint64_t declined = counter("stream.pull_declined");
        printf("pull: rank 0: %llu offers declined\n", (unsigned long long)declined);
        if (got < g.size - 1 || declined < g.size - 1)
            FAIL("%llu messages pulled and %llu declined: each at least %u expected "
                 "(FLIT_SHM_RNDV auto measures both ways)",
                 (unsigned long long)got, (unsigned long long)declined, g.size - 1);
    } else if (strcmp(expect, "any") != 0 && got != want) {
        FAIL("%llu messages pulled, %llu expected (pulls %s)", (unsigned long long)got,
             (unsigned long long)want, expect);
    }
}

/* ---- --kill ---- */

static void on_pid(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *user)
{
    (void)t, (void)buf, (void)n, (void)user;
    CHECK(na == 1);
    g.victim = (pid_t)a[0];
}

/* Whether process pid has exited (a zombie, or reaped). */
static bool gone(pid_t pid)
{
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *p = strrchr(stat, ')');
    return !p || p[1] == 0 || p[2] == 'Z' || p[2] == 'X';
}

static void on_big(flit_stream_t *s, size_t total, void *user)
{
    (void)user;
    CHECK(total == KILL_LEN && g.victim > 0);
    CHECK_OK(flit_stream_recv(s, g.buf, KILL_HEAD));
    g.big_first = mp_pattern_check(g.buf, KILL_HEAD, 99);
    CHECK(kill(g.victim, SIGKILL) == 0);
    double deadline = mp_now() + 60;
    while (!gone(g.victim))
        if (mp_now() > deadline)
            FAIL("rank 1 (pid %d) still runs 60 s after SIGKILL", (int)g.victim);
    g.big_status = flit_stream_recv(s, g.buf + KILL_HEAD, total - KILL_HEAD);
    g.big_done = true;
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    CHECK(peer.idx == 1 && reason == FLIT_ERR_PEER_DOWN);
    g.down_calls++;
}

static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    if (r->peer.idx == 1 && r->reason == FLIT_ERR_PEER_DOWN)
        return;
    mp_returned_fail(ep, r, user);
}

static void kill_test(void)
{
    CHECK(g.size == 2);
    if (g.me == 1) {
        uint8_t *data = malloc(KILL_LEN);
        CHECK(data);
        mp_pattern_fill(data, KILL_LEN, 99);
        uint32_t pid[1] = {(uint32_t)getpid()};
        CHECK_OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_PID), pid, 1, 0));
        struct iovec iov = {data, KILL_LEN};
        flit_status st =
            flit_stream_sendmsg(g.ep, flit_rank(0), flit_handler(H_BIG), &iov, 1, 0);
        FAIL("rank 1 outlived its kill: sendmsg answered %s", flit_status_name(st));
    }
    MP_WAIT(g.ep, g.big_done && g.down_calls == 1);
    CHECK(g.big_first == KILL_HEAD);
    CHECK_ST(g.big_status, FLIT_ERR_PEER_DOWN);
    CHECK(counter("stream.pulled_bytes") >= KILL_HEAD);
    CHECK_ST(flit_barrier(g.ep), FLIT_ERR_PEER_DOWN);
    printf("pull: rank 0 OK: the sender died mid-pull\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.size = flit_job_size();
    CHECK(g.size >= 2 && g.size <= 9);
    const char *tp = getenv("FLIT_TRANSPORT");
    bool ofi = tp && strcmp(tp, "ofi") == 0;
    const char *kb = getenv(ofi ? "FLIT_OFI_RNDV_KB" : "FLIT_SHM_RNDV_MIN_KB");
    size_t t = (kb && atoi(kb) > 0 ? (size_t)atoi(kb) : 64) << 10;
    size_t sizes[NSIZES] = {t - 1, t, t + 1, t + 4097, 3 * t + 13, MAX_LEN - 1, MAX_LEN};
    memcpy(g.sizes, sizes, sizeof sizes);
    flit_ep_params_t params = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "tagged"};
    CHECK_OK(flit_ep_create(&params, &g.ep));
    CHECK_OK(flit_tagged_open(g.ep, &g.tg));
    g.buf = malloc(MAX_LEN);
    CHECK(g.buf);
    for (uint32_t r = 0; g.me == 0 && r < g.size; r++)
        CHECK((g.bufs[r] = malloc(MAX_LEN)) != NULL);
    CHECK_OK(flit_stream_register(g.ep, flit_handler(H_STREAM), on_stream, NULL));
    CHECK_OK(flit_stream_register(g.ep, flit_handler(H_BIG), on_big, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_PID), on_pid, NULL));
    CHECK_OK(flit_ep_set_peer_down_handler(g.ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, on_returned, NULL));
    CHECK_OK(flit_barrier(g.ep));
    if (mp_arg_flag(argc, argv, "--kill")) {
        kill_test();
    } else if (g.me == 0) {
        receive_all();
        check_pulled(mp_arg_str(argc, argv, "--expect", "any"));
        printf("pull: rank 0 OK\n");
    } else {
        send_all();
    }
    if (!mp_arg_flag(argc, argv, "--kill"))
        CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_finalize());
    free(g.buf);
    for (uint32_t r = 0; r < g.size; r++)
        free(g.bufs[r]);
    return 0;
}
