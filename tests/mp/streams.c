/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Streams between real processes: every rank sends every rank (itself too)
 * messages of random lengths, from 0 bytes to several times any transport's
 * packet, cut into 1, 2, 100 or 10 000 pieces of random sizes, several
 * messages open at once and their pieces interleaved. Receiving handlers
 * take the bytes in pieces of other random sizes (the boundaries never
 * match the sender's), wait mid-message, and some stop early. Each message
 * is a pattern named by (source, destination, sequence, length): a byte out
 * of place, a message run twice, lost, or out of order fails the check.
 *
 * --extract: the ranks send to rank 0, which takes its messages only with
 * flit_extract(budget): each call must run handlers for at most the budget
 * plus one packet, nothing may be lost, and the senders must have been held
 * back (credit stalls). Rank 0 starts taking only once every sender has
 * filled it up: a sender opens empty messages without waiting until one
 * finds no room, then says so through a FIFO (rank 0 runs no progress that
 * a message could come by).
 *
 * --segment: the endpoints have segments, and handlers take messages of 64
 * KiB and more into slots of theirs, each between guard bytes. On shared
 * memory the senders then place what the handlers wait for straight into
 * those slots (placed pieces): every rank must have offered places and
 * placed bytes, no guard byte may change, and a handler that stops early
 * must find the bytes it did not take untouched in its slot. Without the
 * flag nothing is offered or placed.
 */
#include <errno.h>
#include <fcntl.h>
#include <flit/stream.h>
#include <poll.h>
#include <sys/stat.h>

#include "mp.h"

#define H_MSG      3
#define H_FILL     4
#define MAX_OPEN   4     /* messages a sender keeps open at once */
#define BIG_PACKET 70000 /* more than any transport's packet */

/* --segment: slots of the segment, each a message between guards */
#define GUARD      64
#define SLOT_BYTES ((3u << 20) + 2 * GUARD) /* the longest message, guarded */
#define SLOT_MIN   (64u << 10)              /* shorter messages: malloc */
#define MAX_SLOTS  16
#define GUARD_BYTE 0x5a
#define UNTAKEN    0xc3 /* what a slot holds where no byte was taken */

/* The slots of the segment; a handler holds one while it runs. */
struct slots {
    uint8_t *base;
    unsigned count;
    bool used[MAX_SLOTS];
};

struct rx {
    uint32_t size, me;
    uint64_t *next_seq; /* per source: the next message expected */
    uint64_t *done;     /* per source: handlers finished */
    uint64_t bytes;     /* payload bytes handlers took */
    uint64_t early;     /* handlers that stopped early */
    uint64_t fills;     /* empty messages that filled rank 0 up */
    bool allow_early;
    size_t max_piece; /* receive pieces at most this big (0: any) */
    struct slots slots;
    uint64_t in_slots; /* messages taken into the segment */
};

/* A buffer for a message of total bytes: a slot of the segment when there
   is one free and the message is long, its guards and untaken bytes set;
   else the heap (*slot -1). */
static uint8_t *buf_get(struct rx *rx, size_t total, int *slot)
{
    struct slots *sl = &rx->slots;
    *slot = -1;
    for (unsigned i = 0; total >= SLOT_MIN && i < sl->count; i++)
        if (!sl->used[i]) {
            sl->used[i] = true;
            *slot = (int)i;
            uint8_t *at = sl->base + (size_t)i * SLOT_BYTES;
            memset(at, GUARD_BYTE, GUARD);
            memset(at + GUARD, UNTAKEN, total);
            memset(at + GUARD + total, GUARD_BYTE, GUARD);
            rx->in_slots++;
            return at + GUARD;
        }
    uint8_t *b = malloc(total ? total : 1);
    CHECK(b);
    return b;
}

/* Gives the buffer back, having checked that in a slot nothing was
   written outside the kept bytes: not the guards, not the bytes of the
   message the handler passed over or left. */
static void buf_put(struct rx *rx, uint8_t *buf, int slot, size_t keep, size_t total)
{
    if (slot < 0) {
        free(buf);
        return;
    }
    for (size_t i = 0; i < GUARD; i++)
        if (buf[(ptrdiff_t)i - GUARD] != GUARD_BYTE || buf[total + i] != GUARD_BYTE)
            FAIL("a guard byte of slot %d changed (message of %zu bytes)", slot, total);
    for (size_t i = keep; i < total; i++)
        if (buf[i] != UNTAKEN)
            FAIL("byte %zu of %zu, not taken, was written in slot %d", i, total, slot);
    rx->slots.used[slot] = false;
}

static uint64_t msg_seed(uint32_t src, uint32_t dst, uint64_t seq, uint64_t total)
{
    return mp_mix(src, dst, seq, total);
}

/* Piece sizes that cut n bytes into about pieces parts, at random. */
static size_t next_piece(uint64_t *rng, size_t left, size_t pieces)
{
    if (left == 0)
        return 0;
    size_t mean = left / (pieces ? pieces : 1);
    size_t k = 1 + (size_t)(test_rand(rng) % (2 * mean + 1));
    return k < left ? k : left;
}

static void on_msg(flit_stream_t *s, size_t total, void *user)
{
    struct rx *rx = user;
    uint32_t src = flit_stream_rank(s).idx;
    CHECK(src < rx->size);
    uint64_t seq = rx->next_seq[src]++; /* handlers start in send order */
    CHECK(flit_stream_remaining(s) == total);
    uint64_t rng = mp_mix(src, rx->me, seq, 99);
    size_t keep = total;
    if (rx->allow_early && seq % 7 == 3) {
        keep = total ? (size_t)(test_rand(&rng) % total) : 0;
        rx->early++;
    }
    int slot;
    uint8_t *buf = buf_get(rx, total, &slot);
    /* Receive pieces: mostly small, sometimes big, never the sender's. */
    size_t pieces = 1 + (size_t)(test_rand(&rng) % 50);
    size_t got = 0;
    while (got < keep) {
        size_t k = next_piece(&rng, keep - got, pieces);
        if (rx->max_piece && k > rx->max_piece)
            k = rx->max_piece;
        if (test_rand(&rng) % 4 == 0) {
            /* scatter over two buffers at once */
            size_t a = k / 2;
            struct iovec iov[2] = {{buf + got, a}, {buf + got + a, k - a}};
            CHECK_OK(flit_stream_recvv(s, iov, 2));
        } else {
            CHECK_OK(flit_stream_recv(s, buf + got, k));
        }
        got += k;
        rx->bytes += k;
        CHECK(flit_stream_remaining(s) == total - got);
    }
    if (keep < total && test_rand(&rng) % 2) {
        size_t skip = (total - keep) / 2;
        CHECK_OK(flit_stream_skip(s, skip)); /* over bytes, then return */
    }
    /* Asking for more than remains takes nothing. */
    uint8_t extra;
    CHECK_ST(flit_stream_recv(s, &extra, flit_stream_remaining(s) + 1),
             FLIT_ERR_TOO_LARGE);
    size_t bad = mp_pattern_check(buf, keep, msg_seed(src, rx->me, seq, total));
    if (bad != keep)
        FAIL("message %llu from rank %u (%zu bytes): byte %zu differs",
             (unsigned long long)seq, src, total, bad);
    buf_put(rx, buf, slot, keep, total);
    rx->done[src]++;
}

static void on_fill(flit_stream_t *s, size_t total, void *user)
{
    struct rx *rx = user;
    CHECK(total == 0 && flit_stream_rank(s).idx != 0);
    rx->fills++;
}

/* ---- filling rank 0 up, and saying so ---- */

/* The FIFO the senders say "full" through, named after the job. */
static void full_path(char *buf, size_t len)
{
    const char *tmp = getenv("TMPDIR"), *job = getenv("FLIT_JOB_ID");
    snprintf(buf, len, "%s/flit-streams-%s", tmp && *tmp ? tmp : "/tmp",
             job ? job : "single");
}

/* Rank 0, before any sender can be full. Read and write, so that it never
   reads as ended between two senders. */
static int full_open(void)
{
    char path[4096];
    full_path(path, sizeof path);
    unlink(path);
    CHECK(mkfifo(path, 0600) == 0);
    int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    CHECK(fd >= 0);
    return fd;
}

/* Rank 0: until each of the senders has said it is full. */
static void full_wait(int fd, uint32_t senders)
{
    double deadline = mp_now() + MP_WAIT_LIMIT_S;
    uint32_t got = 0;
    while (got < senders) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, (int)((deadline - mp_now()) * 1000) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        char b[64];
        ssize_t k = n == 1 ? read(fd, b, sizeof b) : -1;
        if (k <= 0 && mp_now() > deadline)
            FAIL("%u of %u senders said they were full", got, senders);
        got += k > 0 ? (uint32_t)k : 0;
    }
    close(fd);
    char path[4096];
    full_path(path, sizeof path);
    unlink(path);
}

/* A sender: empty messages to rank 0 until one finds no room (a credit
   stall), then the word. Rank 0 takes nothing before every word is in. */
static void fill_up(flit_ep_t *ep)
{
    flit_stream_out_t *s;
    flit_status st;
    while ((st = flit_stream_begin(ep, flit_rank(0), flit_handler(H_FILL), 0,
                                   FLIT_STREAM_NONBLOCK, &s)) == FLIT_OK)
        CHECK_OK(flit_stream_end(s));
    CHECK_ST(st, FLIT_ERR_AGAIN);
    char path[4096];
    full_path(path, sizeof path);
    int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    CHECK(fd >= 0 && write(fd, "f", 1) == 1);
    close(fd);
}

/* ---- the sender ---- */

struct open_msg {
    flit_stream_out_t *s;
    uint8_t *data;
    size_t total, sent, pieces;
    uint64_t rng;
};

static size_t pick_total(uint64_t *rng)
{
    switch (test_rand(rng) % 10) {
    case 0:
        return 0;
    case 1:
        return 1 + test_rand(rng) % 16;
    case 2:
    case 3:
        return 1 + test_rand(rng) % 4096;
    case 4:
    case 5:
    case 6:
        return 1 + test_rand(rng) % 100000;
    case 7:
    case 8:
        return BIG_PACKET + test_rand(rng) % 300000;
    default:
        return test_rand(rng) % 8 == 0 ? (1u << 20) + test_rand(rng) % (2u << 20)
                                       : 1 + test_rand(rng) % 40000;
    }
}

static size_t pick_pieces(uint64_t *rng, size_t total)
{
    static const size_t choice[] = {1, 2, 100, 10000};
    size_t p = choice[test_rand(rng) % 4];
    return p > total ? (total ? total : 1) : p;
}

/* Adds the next piece (or gathered pieces) of m; true when m is complete. */
static bool add_piece(struct open_msg *m)
{
    size_t left = m->total - m->sent;
    size_t k = next_piece(&m->rng, left, m->pieces);
    if (k > 1 && test_rand(&m->rng) % 5 == 0) {
        size_t a = k / 3;
        struct iovec iov[3] = {{m->data + m->sent, a},
                               {m->data + m->sent + a, 0},
                               {m->data + m->sent + a, k - a}};
        CHECK_OK(flit_stream_sendv(m->s, iov, 3));
    } else {
        CHECK_OK(flit_stream_send(m->s, m->data + m->sent, k));
    }
    m->sent += k;
    if (m->pieces > 1)
        m->pieces--;
    return m->sent == m->total;
}

static void finish(struct open_msg *m)
{
    uint8_t x = 0;
    CHECK_ST(flit_stream_send(m->s, &x, 1), FLIT_ERR_TOO_LARGE);
    CHECK_OK(flit_stream_end(m->s));
    free(m->data);
    m->s = NULL;
}

/* Sends count messages to each rank in dests, MAX_OPEN open at a time. */
static void send_all(flit_ep_t *ep, uint32_t me, const uint32_t *dests, uint32_t ndests,
                     uint64_t count, uint64_t seed, size_t max_total)
{
    uint64_t rng = mp_mix(me, seed, 1, 2);
    uint64_t *seq = calloc(ndests, sizeof *seq);
    struct open_msg open[MAX_OPEN] = {0};
    uint64_t started = 0, total_msgs = count * ndests;
    unsigned nopen = 0;
    while (started < total_msgs || nopen) {
        /* Open another one now and then, while there is room. */
        if (started < total_msgs && nopen < MAX_OPEN &&
            (nopen == 0 || test_rand(&rng) % 3 == 0)) {
            uint32_t d;
            do
                d = (uint32_t)(test_rand(&rng) % ndests);
            while (seq[d] == count);
            unsigned slot = 0;
            while (open[slot].s)
                slot++;
            struct open_msg *m = &open[slot];
            m->total = pick_total(&rng);
            if (max_total && m->total > max_total)
                m->total %= max_total;
            m->pieces = pick_pieces(&rng, m->total);
            m->sent = 0;
            m->rng = mp_mix(me, dests[d], seq[d], 5);
            m->data = malloc(m->total ? m->total : 1);
            CHECK(m->data);
            mp_pattern_fill(m->data, m->total, msg_seed(me, dests[d], seq[d], m->total));
            CHECK_OK(flit_stream_begin(ep, flit_rank(dests[d]), flit_handler(H_MSG),
                                       m->total, 0, &m->s));
            seq[d]++;
            started++;
            nopen++;
            if (m->total == 0) {
                finish(m);
                nopen--;
            }
            continue;
        }
        unsigned slot = (unsigned)(test_rand(&rng) % MAX_OPEN);
        while (!open[slot].s)
            slot = (slot + 1) % MAX_OPEN;
        if (add_piece(&open[slot])) {
            finish(&open[slot]);
            nopen--;
        }
    }
    free(seq);
}

static bool all_done(const struct rx *rx, const uint32_t *srcs, uint32_t nsrcs,
                     uint64_t count)
{
    for (uint32_t i = 0; i < nsrcs; i++)
        if (rx->done[srcs[i]] < count)
            return false;
    return true;
}

static void check_no_extra(const struct rx *rx, const uint32_t *srcs, uint32_t nsrcs,
                           uint64_t count)
{
    for (uint32_t i = 0; i < nsrcs; i++)
        if (rx->done[srcs[i]] != count || rx->next_seq[srcs[i]] != count)
            FAIL("rank %u: %llu handlers ran, %llu started, %llu sent", srcs[i],
                 (unsigned long long)rx->done[srcs[i]],
                 (unsigned long long)rx->next_seq[srcs[i]], (unsigned long long)count);
}

/* Everyone to everyone, itself included. */
static void run_all(flit_ep_t *ep, struct rx *rx, uint64_t count, uint64_t seed)
{
    uint32_t n = rx->size;
    uint32_t *all = malloc(n * sizeof *all);
    for (uint32_t i = 0; i < n; i++)
        all[i] = i;
    send_all(ep, rx->me, all, n, count, seed, 0);
    MP_WAIT(ep, all_done(rx, all, n, count));
    CHECK_OK(flit_barrier(ep));
    check_no_extra(rx, all, n, count);
    free(all);
}

/* Ranks 1.. to rank 0, which takes its data only through flit_extract,
   once they have filled it up (full_fd: rank 0's end of the FIFO). */
static void run_extract(flit_ep_t *ep, struct rx *rx, uint64_t count, uint64_t seed,
                        size_t budget, int full_fd)
{
    uint32_t n = rx->size;
    if (rx->me != 0) {
        uint32_t zero = 0;
        fill_up(ep);
        send_all(ep, rx->me, &zero, 1, count, seed, 200000);
        flit_stats_t st = {.struct_size = sizeof st};
        CHECK_OK(flit_ep_stats(ep, &st));
        printf("rank %u: %llu credit stalls while rank 0 paced itself\n", rx->me,
               (unsigned long long)st.credit_stalls);
        CHECK(st.credit_stalls > 0);
    } else {
        if (n > 1)
            full_wait(full_fd, n - 1); /* not taking anything until then */
        uint32_t *srcs = malloc(n * sizeof *srcs);
        for (uint32_t i = 1; i < n; i++)
            srcs[i - 1] = i;
        uint64_t calls = 0, max_seen = 0;
        double deadline = mp_now() + MP_WAIT_LIMIT_S;
        while (!all_done(rx, srcs, n - 1, count)) {
            uint64_t before = rx->bytes;
            flit_status st = flit_extract(ep, budget);
            CHECK(st == FLIT_OK || st == FLIT_ERR_AGAIN);
            uint64_t took = rx->bytes - before;
            if (took > max_seen)
                max_seen = took;
            /* Whole packets: at most one beyond the budget (and a receive
               piece that started in an earlier packet). */
            if (took > budget + 65536 + 64 + rx->max_piece)
                FAIL("flit_extract(%zu) ran handlers for %llu bytes", budget,
                     (unsigned long long)took);
            calls++;
            if (st == FLIT_ERR_AGAIN)
                usleep(100);
            if (mp_now() > deadline)
                FAIL("extract: no progress");
        }
        /* Pulled bytes draw on the budget as packets do (checked above). */
        uint64_t pulled = mp_counter(ep, "stream.pulled_bytes");
        printf("rank 0: %llu extract calls of %zu bytes, at most %llu bytes each "
               "(%llu bytes pulled), after %llu empty messages filled it\n",
               (unsigned long long)calls, budget, (unsigned long long)max_seen,
               (unsigned long long)pulled, (unsigned long long)rx->fills);
        if (n > 1 && strcmp(mp_bulk_path(), "pull") == 0)
            CHECK(pulled > 0);
        check_no_extra(rx, srcs, n - 1, count);
        free(srcs);
    }
    CHECK_OK(flit_barrier(ep));
}

/* --segment: what was placed (on shared memory; over UDP, or with
   FLIT_SHM_BULK=copy, only a rank's messages to itself can be), and that
   nothing was without it. */
static void check_placed(const flit_stats_t *st, const struct rx *rx, bool segment)
{
    const char *tp = getenv("FLIT_TRANSPORT"), *bulk = getenv("FLIT_SHM_BULK");
    bool udp = tp && strcmp(tp, "udp") == 0;
    bool copy = bulk && strcmp(bulk, "copy") == 0; /* no put between ranks */
    printf("rank %u: %llu messages into the segment, %llu places offered, %llu bytes "
           "placed\n",
           rx->me, (unsigned long long)rx->in_slots,
           (unsigned long long)st->stream_offers,
           (unsigned long long)st->stream_placed_bytes);
    if (!segment)
        CHECK(st->stream_offers == 0 && st->stream_placed_bytes == 0);
    else if (copy)
        CHECK(rx->in_slots > 0);
    else if (!udp && rx->size > 1)
        CHECK(rx->in_slots > 0 && st->stream_offers > 0 && st->stream_placed_bytes > 0);
}

int main(int argc, char **argv)
{
    CHECK_OK(flit_init(NULL));
    uint32_t n = flit_job_size(), me = flit_job_rank().idx;
    bool segment = mp_arg_flag(argc, argv, "--segment");
    unsigned nslots = n * MAX_OPEN < MAX_SLOTS ? n * MAX_OPEN : MAX_SLOTS;
    flit_ep_params_t params = {.field_mask = FLIT_EP_PARAM_SEGMENT,
                               .segment_size = (size_t)nslots * SLOT_BYTES};
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(segment ? &params : NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    struct rx rx = {.size = n, .me = me, .allow_early = true};
    if (segment) {
        void *base;
        size_t size;
        CHECK_OK(flit_ep_segment(ep, &base, &size));
        rx.slots.base = base;
        rx.slots.count = nslots;
    }
    rx.next_seq = calloc(n, sizeof *rx.next_seq);
    rx.done = calloc(n, sizeof *rx.done);
    CHECK_OK(flit_stream_register(ep, flit_handler(H_MSG), on_msg, &rx));
    CHECK_OK(flit_stream_register(ep, flit_handler(H_FILL), on_fill, &rx));
    bool extract = mp_arg_flag(argc, argv, "--extract");
    /* before the barrier: no sender can be full before it exists */
    int full_fd = extract && me == 0 && n > 1 ? full_open() : -1;
    CHECK_OK(flit_barrier(ep));
    uint64_t count = test_scaled(mp_arg_u64(argc, argv, "--count", 200));
    uint64_t seed = mp_arg_u64(argc, argv, "--seed", 1);
    if (extract) {
        rx.allow_early = false;
        rx.max_piece = 1024;
        run_extract(ep, &rx, count, seed, mp_arg_u64(argc, argv, "--budget", 4096),
                    full_fd);
    } else {
        run_all(ep, &rx, count, seed);
    }
    flit_stats_t st = {.struct_size = sizeof st};
    CHECK_OK(flit_ep_stats(ep, &st));
    printf("streams: rank %u OK: received %llu msgs, %llu bytes taken, %llu stopped "
           "early, %llu handlers on fibers\n",
           me, (unsigned long long)st.stream_recv_msgs, (unsigned long long)rx.bytes,
           (unsigned long long)rx.early, (unsigned long long)st.stream_fibers);
    check_placed(&st, &rx, segment);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    free(rx.next_seq);
    free(rx.done);
    return 0;
}
