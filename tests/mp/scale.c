/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many ranks on one host, and pairs set up on first use (--mode):
 *
 *  neighbours  every rank exchanges --count short messages with its two
 *              neighbours on a ring and nobody else; in order per source.
 *              On shared memory a rank then maps exactly its own header,
 *              the blocks of the two that wrote to it, and a header and a
 *              block in each of the two files it wrote to: 7 mappings of
 *              ring files, however many ranks there are. On every transport
 *              its virtual memory grew by less than --vm-mb over creation
 *              and the exchange (all pairs set up at creation: N^2 rings
 *              on shared memory; over UDP two send windows per peer), and
 *              flit_ep_stats counts 3 peers in contact (with FLIT_STATS=1,
 *              flit_ep_destroy prints how many it had at the end: the
 *              quiesce adds only its barrier's partners, see CMakeLists).
 *  alltoall    every rank sends --count medium messages of 1..512 bytes to
 *              every other rank, interleaved; every byte and every
 *              source's order are checked. With --peer-kb K, the heap
 *              (malloc'ed bytes, mallinfo2) grew by less than K KiB per
 *              peer over the exchange: a lane that carried a few small
 *              messages holds a small send buffer, not its whole window.
 *              With --ring-kb K, its ring file holds less than K KiB of
 *              /dev/shm per sender at the end: a pair that carried a few
 *              small messages took a few pages of its rings, not all.
 *  quiet       over UDP: every rank sends --count short messages to every
 *              other, a barrier, then it waits (flit_wait with a timeout,
 *              bounded) until its channel's gauge "udp.buffer_bytes" drops
 *              to at most --idle-kb KiB per peer in contact: the peers,
 *              quiet, gave their windows back (src/channel/idle.c), and
 *              "udp.idle_peers" counts every one of them. It checks the
 *              gauge was above that while they were busy. After a second
 *              barrier, as many messages again: every one arrives once,
 *              in order per source, over the windows grown again.
 *  rss         a measurement (docs/udp-scale.md), not a check: the
 *              all-to-all of quiet, then rank 0 prints its VmRSS, waits
 *              --quiet-ms in flit_wait and prints it again. It reads no
 *              counter, so it runs against a library without them.
 *  pingpong    a measurement (callgrind, docs/udp-scale.md): rank 0 sends
 *              rank 1 --count 8-byte requests, each after the reply to
 *              the one before, waiting in flit_wait.
 *  race        --rounds endpoints in turn; on each, the ranks of a pair
 *              (2k, 2k+1) send to each other the moment creation returns,
 *              so both first contacts race; every message arrives, in
 *              order.
 *  dead        the last rank dies (SIGKILL) right after creation, before
 *              anyone contacted it; the others see its process gone (a
 *              pidfd of their own), then send it a first message: the
 *              send answers FLIT_ERR_PEER_DOWN (or the message comes back
 *              as returned) and the peer-down handler runs once.
 *  gone        every rank exchanges --count messages with its two ring
 *              neighbours, a barrier, then the last rank dies (SIGKILL):
 *              the others destroy their endpoints at once, and each
 *              destroy ends within --max-s seconds (run with a short
 *              FLIT_PEER_TIMEOUT: the dead rank, contacted, never says
 *              goodbye and is found dead by its silence).
 *  idle        nothing is exchanged: every rank prints what its heap
 *              (malloc'ed bytes, mallinfo2) grew by over flit_init and
 *              flit_ep_create, "idle: heap B". Two jobs of different sizes
 *              give what a peer never contacted costs (peer_cost.cmake).
 *  job         what a job across hosts does first (tests/net/proxy_checks.sh):
 *              a barrier (rank 0 prints when it completed, in seconds since
 *              the epoch, "job: first barrier at T", so that a script can
 *              time start to first barrier), then --count short messages
 *              with each ring neighbour, in order per source, then an 8-byte
 *              all-to-all (one message to every other rank, every byte
 *              checked), and a last barrier. --barrier-only 1 stops after
 *              the first barrier. --hold PATH: after the first barrier rank
 *              0 creates PATH.ready, and every rank waits (in flit_wait,
 *              bounded) until PATH exists before it goes on: a script does
 *              something to the job in between (proxy_checks.sh cuts a
 *              host's link).
 *  sleeper     rank 1 sleeps in flit_wait before anyone contacted it; rank
 *              0 sends it a first message once it sees rank 1's process
 *              asleep. The handler runs within --max-s seconds of the send
 *              (run with a FLIT_PEER_CHECK_MS longer than that: the
 *              engine's periodic nap would hide a lost wake-up).
 *
 * Waits sleep (flit_wait with long slices): there are more ranks than CPUs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "mp.h"

#include <flit/am.h>

enum { H_SEQ = 1, H_MED = 2, H_WAKE = 3, H_TOKEN = 4, H_PING = 5, H_EIGHT = 6 };

#define MAX_RANKS 1024u

static struct {
    flit_ep_t *ep;
    uint32_t me, n;
    uint32_t next[MAX_RANKS]; /* per source: the next sequence number */
    bool eight[MAX_RANKS];    /* per source: its 8-byte message came */
    uint32_t eights;          /* how many came */
    uint64_t got, tokens;
    uint64_t downs;
    uint32_t down_rank;
    uint64_t returned;
    double woke_at, sent_at;
} g;

/* Waits until cond, sleeping in slices of 200 ms (many ranks, few CPUs). */
#define SLEEPY_WAIT(cond)                                                                \
    do {                                                                                 \
        double deadline_ = mp_now() + MP_WAIT_LIMIT_S;                                   \
        while (!(cond)) {                                                                \
            flit_status st_ = flit_wait(g.ep, 200000);                                   \
            if (st_ != FLIT_OK && st_ != FLIT_ERR_TIMEOUT)                               \
                FAIL("flit_wait: %s", flit_status_name(st_));                            \
            if (mp_now() > deadline_) {                                                  \
                flit_ep_dump(g.ep, 2);                                                   \
                FAIL("rank %u: no progress waiting for %s", g.me, #cond);                \
            }                                                                            \
        }                                                                                \
    } while (0)

static void on_seq(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)buf, (void)n, (void)u;
    uint32_t src = flit_token_rank(t).idx;
    if (na != 2 || a[0] != src || src >= g.n || a[1] != g.next[src])
        FAIL("rank %u: message from %u out of order or malformed (%u args, %u/%u, "
             "expected seq %u)",
             g.me, src, na, na > 0 ? a[0] : 0, na > 1 ? a[1] : 0, g.next[src]);
    g.next[src]++;
    g.got++;
}

static uint64_t med_seed(uint32_t src, uint32_t dst, uint32_t seq)
{
    return mp_mix(src, dst, seq, 0x5ca1e);
}

static size_t med_len(uint32_t src, uint32_t dst, uint32_t seq)
{
    return 1 + (size_t)(med_seed(src, dst, seq) % 512);
}

static void on_med(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                   void *u)
{
    (void)u;
    uint32_t src = flit_token_rank(t).idx;
    if (na != 1 || src >= g.n || a[0] != g.next[src])
        FAIL("rank %u: medium from %u out of order (seq %u, expected %u)", g.me, src,
             na ? a[0] : 0, g.next[src]);
    if (n != med_len(src, g.me, a[0]) ||
        mp_pattern_check(buf, n, med_seed(src, g.me, a[0])) != n)
        FAIL("rank %u: medium %u from %u damaged (%zu bytes)", g.me, a[0], src, n);
    g.next[src]++;
    g.got++;
}

/* The 8-byte all-to-all of --mode job: one message from each other rank. */
static void on_eight(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                     void *u)
{
    (void)a, (void)u;
    uint32_t src = flit_token_rank(t).idx;
    if (na != 0 || src >= g.n || src == g.me || g.eight[src] || n != 8 ||
        mp_pattern_check(buf, n, med_seed(src, g.me, 8)) != n)
        FAIL("rank %u: 8-byte message from %u damaged, repeated or unexpected (%zu "
             "bytes, %u args)",
             g.me, src, n, na);
    g.eight[src] = true;
    g.eights++;
}

static void on_wake(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)t, (void)buf, (void)n, (void)u;
    CHECK(na == 2);
    memcpy(&g.sent_at, a, sizeof g.sent_at);
    g.woke_at = mp_now();
}

static void on_token(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                     void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.tokens++;
}

static void on_ping(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)buf, (void)n, (void)u;
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_TOKEN), a, na));
}

static void on_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user, (void)reason;
    g.downs++;
    g.down_rank = peer.idx;
}

static void on_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep, (void)r, (void)user;
    g.returned++;
}

static void setup(void)
{
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_SEQ), on_seq, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_MED), on_med, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_WAKE), on_wake, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_TOKEN), on_token, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_PING), on_ping, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_EIGHT), on_eight, NULL));
    memset(g.next, 0, sizeof g.next);
    g.got = 0;
}

static void send_seq(uint32_t dst, uint32_t seq)
{
    uint32_t a[2] = {g.me, seq};
    CHECK_OK(flit_am_short(g.ep, flit_rank(dst), flit_handler(H_SEQ), a, 2, 0));
}

static const char *transport_to(uint32_t r)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(g.ep, flit_rank(r), &info));
    return info.transport;
}

/* Whether process pid's environment holds the line want. */
static bool environ_has(const char *pid, const char *want)
{
    char path[64], buf[16384];
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strcmp(buf + i, want) == 0)
            return true;
    return false;
}

/* The process of rank r: shared memory names it in the peer's address;
   other transports do not, and flitrun's environment for it does
   (FLIT_JOB_ID and FLIT_RANK; the ranks of a test run on this host). 0
   when there is no such process any more. */
static pid_t pid_of(uint32_t r)
{
    flit_peer_info_t info = {.struct_size = sizeof info};
    CHECK_OK(flit_ep_peer_info(g.ep, flit_rank(r), &info));
    int pid = 0;
    if (sscanf(info.address, "pid %d", &pid) == 1 && pid > 0)
        return (pid_t)pid;
    const char *job = getenv("FLIT_JOB_ID");
    CHECK(job != NULL);
    char want_job[96], want_rank[32];
    snprintf(want_job, sizeof want_job, "FLIT_JOB_ID=%s", job);
    snprintf(want_rank, sizeof want_rank, "FLIT_RANK=%u", r);
    DIR *d = opendir("/proc");
    CHECK(d != NULL);
    struct dirent *e;
    while (!pid && (e = readdir(d)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
            environ_has(e->d_name, want_rank) && environ_has(e->d_name, want_job))
            pid = atoi(e->d_name);
    closedir(d);
    return (pid_t)pid;
}

/* A line of /proc/self/status in KiB: "VmSize:", "VmRSS:". */
static double status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    double kb = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0)
            kb = strtod(line + len, NULL);
    fclose(f);
    return kb;
}

/* Mappings of ring files (/dev/shm/flit-JOB-RANK-EP, not segments). */
static unsigned ring_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[512];
    unsigned n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "/dev/shm/flit-");
        unsigned rank, ep;
        char job[17], rest[32] = "";
        if (p &&
            sscanf(p, "/dev/shm/flit-%16[0-9a-f]-%u-%u%31s", job, &rank, &ep, rest) >=
                3 &&
            (rest[0] == '\0' || rest[0] == '('))
            n++;
    }
    fclose(f);
    return n;
}

static void neighbours(uint32_t count, double vm_mb)
{
    double vm0 = status_kb("VmSize:");
    setup();
    uint32_t left = (g.me + g.n - 1) % g.n, right = (g.me + 1) % g.n;
    for (uint32_t i = 0; i < count; i++) {
        send_seq(right, i);
        send_seq(left, i);
    }
    SLEEPY_WAIT(g.next[left] == count && g.next[right] == count);
    CHECK(g.got == 2ull * count);
    double grew_mb = (status_kb("VmSize:") - vm0) / 1024.0;
    if (strcmp(transport_to(right), "shm") == 0) {
        unsigned maps = ring_mappings();
        if (maps != 7) {
            char cmd[64];
            snprintf(cmd, sizeof cmd, "grep /dev/shm/flit- /proc/%d/maps >&2",
                     (int)getpid());
            if (system(cmd) != 0)
                fprintf(stderr, "(no maps)\n");
            flit_ep_dump(g.ep, 2);
            FAIL("rank %u maps %u ring-file ranges, not 7 (own header, two "
                 "receiving blocks, two peers' header and block)",
                 g.me, maps);
        }
    }
    if (grew_mb > vm_mb)
        FAIL("rank %u: virtual memory grew by %.1f MB for two peers over %s (at most "
             "%.1f)",
             g.me, grew_mb, transport_to(right), vm_mb);
    /* Itself and its two neighbours: no other pair was set up. */
    flit_stats_t st = {.struct_size = sizeof st};
    CHECK_OK(flit_ep_stats(g.ep, &st));
    if (st.peers_in_contact != (g.n > 2 ? 3u : 2u))
        FAIL("rank %u is in contact with %llu peers, not 3 (itself, two neighbours)",
             g.me, (unsigned long long)st.peers_in_contact);
    /* Two laps of a token around the ring before anyone goes on: nobody
       contacts other ranks (flit_ep_destroy does) before all have looked. */
    for (uint64_t lap = 1; lap <= 2; lap++) {
        if (g.me != 0)
            SLEEPY_WAIT(g.tokens >= lap);
        CHECK_OK(
            flit_am_short(g.ep, flit_rank(right), flit_handler(H_TOKEN), NULL, 0, 0));
        if (g.me == 0)
            SLEEPY_WAIT(g.tokens >= lap);
    }
    if (g.me == 0)
        printf("scale neighbours: %u ranks, rank 0 grew %.1f MB\n", g.n, grew_mb);
}

/* --hold PATH: rank 0 says the job got here (PATH.ready); all wait for PATH. */
static void hold(const char *path)
{
    if (g.me == 0) {
        char ready[PATH_MAX];
        CHECK((size_t)snprintf(ready, sizeof ready, "%s.ready", path) < sizeof ready);
        int fd = open(ready, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            FAIL("open %s: %s", ready, strerror(errno));
        close(fd);
    }
    SLEEPY_WAIT(access(path, F_OK) == 0);
}

/* In a job across hosts a rank that goes is a failure, said plainly. */
static void job_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)user;
    FAIL("rank %u: rank %u went down (%s)", g.me, peer.idx, flit_status_name(reason));
}

static void job_returned(flit_ep_t *ep, const flit_returned_t *r, void *user)
{
    (void)ep, (void)user;
    FAIL("rank %u: a message to rank %u came back (%s)", g.me, r->peer.idx,
         flit_status_name(r->reason));
}

static void job(uint32_t count, bool barrier_only, const char *hold_path)
{
    setup();
    CHECK_OK(flit_ep_set_peer_down_handler(g.ep, job_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, job_returned, NULL));
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        printf("job: first barrier at %.3f\n", (double)ts.tv_sec + ts.tv_nsec / 1e9);
        fflush(stdout);
    }
    if (barrier_only)
        return;
    if (hold_path)
        hold(hold_path);
    uint32_t left = (g.me + g.n - 1) % g.n, right = (g.me + 1) % g.n;
    for (uint32_t i = 0; i < count; i++) {
        send_seq(right, i);
        if (left != right) /* of two ranks, each is the other's both sides */
            send_seq(left, i);
    }
    SLEEPY_WAIT(g.next[left] == count && g.next[right] == count);
    CHECK(g.got == (left == right ? 1u : 2u) * (uint64_t)count);
    CHECK_OK(flit_barrier(g.ep));
    uint8_t buf[8];
    for (uint32_t k = 1; k < g.n; k++) {
        uint32_t dst = (g.me + k) % g.n;
        mp_pattern_fill(buf, sizeof buf, med_seed(g.me, dst, 8));
        CHECK_OK(flit_am_medium(g.ep, flit_rank(dst), flit_handler(H_EIGHT), buf,
                                sizeof buf, NULL, 0, 0));
    }
    SLEEPY_WAIT(g.eights == g.n - 1u);
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0)
        printf("job: %u ranks: barrier, %u messages each way with both neighbours, "
               "8-byte all-to-all: every byte checked\n",
               g.n, count);
}

static uint64_t heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* The bytes of /dev/shm our ring files hold (the pages taken, not their
   size): each is open here, already unlinked, as /dev/shm/flit-JOB-RANK-EP. */
static uint64_t ring_file_bytes(void)
{
    char tail[32];
    snprintf(tail, sizeof tail, "-%u-", g.me);
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    uint64_t bytes = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[300], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        const char *ours = strstr(target, tail);
        struct stat sb;
        if (strncmp(target, "/dev/shm/flit-", 14) != 0 || !ours ||
            strstr(target, "-seg") || stat(path, &sb) != 0)
            continue;
        bytes += (uint64_t)sb.st_blocks * 512u;
    }
    closedir(d);
    return bytes;
}

static void alltoall(uint32_t count, uint64_t peer_kb, uint64_t ring_kb)
{
    setup();
    uint64_t heap0 = heap_bytes();
    uint8_t buf[512];
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t k = 1; k < g.n; k++) {
            uint32_t dst = (g.me + k) % g.n;
            size_t len = med_len(g.me, dst, i);
            mp_pattern_fill(buf, len, med_seed(g.me, dst, i));
            uint32_t a = i;
            CHECK_OK(flit_am_medium(g.ep, flit_rank(dst), flit_handler(H_MED), buf, len,
                                    &a, 1, 0));
        }
    SLEEPY_WAIT(g.got == (uint64_t)count * (g.n - 1));
    for (uint32_t r = 0; r < g.n; r++)
        CHECK(g.next[r] == (r == g.me ? 0 : count));
    /* (under a sanitizer's allocator mallinfo2 may say nothing: 0 grew) */
    uint64_t heap1 = heap_bytes(),
             per_peer = heap1 > heap0 ? (heap1 - heap0) / (g.n - 1) : 0;
    if (peer_kb && per_peer > peer_kb << 10)
        FAIL("rank %u: the heap grew by %llu bytes per peer over %s (at most %llu KiB)",
             g.me, (unsigned long long)per_peer, transport_to((g.me + 1) % g.n),
             (unsigned long long)peer_kb);
    if (g.me == 0)
        printf("alltoall: the heap grew by %llu bytes per peer\n",
               (unsigned long long)per_peer);
    /* every sender wrote all it sends us into our file */
    uint64_t rings = ring_file_bytes() / (g.n - 1);
    if (ring_kb && rings > ring_kb << 10)
        FAIL("rank %u: its ring file holds %llu bytes of /dev/shm per sender (at most "
             "%llu KiB)",
             g.me, (unsigned long long)rings, (unsigned long long)ring_kb);
    if (g.me == 0)
        printf("alltoall: the ring file holds %llu bytes per sender\n",
               (unsigned long long)rings);
}

static void idle(uint64_t heap_start)
{
    setup();
    uint64_t heap = heap_bytes();
    printf("idle: rank %u heap %llu\n", g.me,
           (unsigned long long)(heap > heap_start ? heap - heap_start : 0));
    fflush(stdout);
}

static uint64_t counter(const char *name)
{
    flit_counter_t c;
    CHECK_OK(flit_ep_counter(g.ep, name, &c));
    return c.value;
}

/* Every rank sends messages from .. to-1 to every other; all arrive. */
static void seq_round(uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        for (uint32_t k = 1; k < g.n; k++)
            send_seq((g.me + k) % g.n, i);
    SLEEPY_WAIT(g.got == (uint64_t)to * (g.n - 1));
    for (uint32_t r = 0; r < g.n; r++)
        CHECK(g.next[r] == (r == g.me ? 0 : to));
}

static void quiet(uint32_t count, uint64_t idle_kb)
{
    setup();
    seq_round(0, count);
    CHECK_OK(flit_barrier(g.ep));
    uint64_t peers = counter("udp.peers_in_contact"), bound = peers * (idle_kb << 10);
    uint64_t busy = counter("udp.buffer_bytes");
    if (busy <= bound)
        FAIL("rank %u: %llu bytes of buffers for %llu busy peers: not counted", g.me,
             (unsigned long long)busy, (unsigned long long)peers);
    double start = mp_now(), deadline = start + MP_WAIT_LIMIT_S;
    uint64_t held, nidle;
    while ((held = counter("udp.buffer_bytes")) > bound ||
           (nidle = counter("udp.idle_peers")) < peers) {
        flit_status st = flit_wait(g.ep, 200000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            FAIL("flit_wait: %s", flit_status_name(st));
        if (mp_now() > deadline)
            FAIL("rank %u: %llu bytes of buffers still held for %llu quiet peers after "
                 "%.0f s (at most %llu KiB each), %llu of them idle",
                 g.me, (unsigned long long)held, (unsigned long long)peers,
                 mp_now() - start, (unsigned long long)idle_kb,
                 (unsigned long long)counter("udp.idle_peers"));
    }
    if (g.me == 0)
        printf("quiet: rank 0 held %llu bytes for %llu busy peers, %llu (%llu a peer) "
               "after %.2f s quiet, %llu peers idle\n",
               (unsigned long long)busy, (unsigned long long)peers,
               (unsigned long long)held, (unsigned long long)(held / peers),
               mp_now() - start, (unsigned long long)nidle);
    CHECK_OK(flit_barrier(g.ep));
    seq_round(count, 2 * count);
}

static void rss(uint32_t count, uint64_t quiet_ms)
{
    setup();
    seq_round(0, count);
    CHECK_OK(flit_barrier(g.ep));
    double busy = status_kb("VmRSS:"), until = mp_now() + (double)quiet_ms / 1e3;
    while (mp_now() < until) {
        flit_status st = flit_wait(g.ep, 100000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            FAIL("flit_wait: %s", flit_status_name(st));
    }
    if (g.me == 0)
        printf("rss: rank 0 VmRSS %.0f KiB after the all-to-all, %.0f KiB after %llu ms "
               "quiet\n",
               busy, status_kb("VmRSS:"), (unsigned long long)quiet_ms);
    CHECK_OK(flit_barrier(g.ep));
}

static void __attribute__((noinline)) pingpong_rounds(uint32_t count)
{
    uint32_t a[2] = {0, 0};
    for (uint32_t i = 0; i < count; i++) {
        a[1] = i;
        CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_PING), a, 2, 0));
        SLEEPY_WAIT(g.tokens == (uint64_t)i + 1);
    }
}

static void pingpong(uint32_t count)
{
    setup();
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == 0)
        pingpong_rounds(count);
    CHECK_OK(flit_barrier(g.ep));
}

static void race(uint32_t rounds, uint32_t count)
{
    uint32_t partner = g.me ^ 1u;
    CHECK(g.n % 2 == 0);
    for (uint32_t round = 0; round < rounds; round++) {
        setup();
        for (uint32_t i = 0; i < count; i++)
            send_seq(partner, i);
        SLEEPY_WAIT(g.next[partner] == count);
        CHECK(g.got == count);
        CHECK_OK(flit_ep_destroy(g.ep));
    }
    g.ep = NULL;
}

static void dead(void)
{
    setup();
    uint32_t victim = g.n - 1;
    if (g.me == victim) {
        fflush(stdout);
        raise(SIGKILL);
    }
    CHECK_OK(flit_ep_set_peer_down_handler(g.ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, on_returned, NULL));
    pid_t vpid = pid_of(victim);
    int pfd = vpid > 0 ? (int)syscall(SYS_pidfd_open, vpid, 0) : -1;
    if (pfd >= 0) { /* readable once it is gone */
        struct pollfd p = {.fd = pfd, .events = POLLIN};
        CHECK(poll(&p, 1, (int)(MP_WAIT_LIMIT_S * 1000)) == 1);
        close(pfd);
    }
    flit_status st =
        flit_am_short(g.ep, flit_rank(victim), flit_handler(H_SEQ), NULL, 0, 0);
    if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
        FAIL("rank %u: first send to a dead rank: %s", g.me, flit_status_name(st));
    SLEEPY_WAIT(g.downs >= 1 && (st == FLIT_ERR_PEER_DOWN || g.returned == 1));
    CHECK(g.downs == 1 && g.down_rank == victim);
    printf("scale dead: rank %u OK (%s)\n", g.me,
           st == FLIT_OK ? "message returned" : "send answered PEER_DOWN");
}

static void gone(uint32_t count, double max_s)
{
    setup();
    CHECK_OK(flit_ep_set_peer_down_handler(g.ep, on_down, NULL));
    /* what the dead rank took but had not acknowledged comes back */
    CHECK_OK(flit_am_set_returned_handler(g.ep, on_returned, NULL));
    uint32_t left = (g.me + g.n - 1) % g.n, right = (g.me + 1) % g.n;
    for (uint32_t i = 0; i < count; i++) {
        send_seq(right, i);
        send_seq(left, i);
    }
    SLEEPY_WAIT(g.next[left] == count && g.next[right] == count);
    CHECK_OK(flit_barrier(g.ep));
    if (g.me == g.n - 1) {
        fflush(stdout);
        raise(SIGKILL);
    }
    double start = mp_now();
    flit_status st = flit_ep_destroy(g.ep);
    double took = mp_now() - start;
    g.ep = NULL;
    if (st != FLIT_OK && st != FLIT_ERR_PEER_DOWN)
        FAIL("rank %u: flit_ep_destroy with a contacted rank dead: %s", g.me,
             flit_status_name(st));
    if (took > max_s)
        FAIL("rank %u: flit_ep_destroy with a contacted rank dead took %.1f s (at most "
             "%.0f)",
             g.me, took, max_s);
    if (g.me == 0 || g.me == g.n - 2)
        printf("gone: rank %u's destroy took %.2f s (%s)\n", g.me, took,
               flit_status_name(st));
}

/* Whether process pid is asleep (state S in /proc/PID/stat). */
static bool asleep(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'S';
}

static void sleeper(double max_s)
{
    setup();
    if (g.me == 1) {
        SLEEPY_WAIT(g.woke_at > 0);
        flit_stats_t s = {.struct_size = sizeof s};
        CHECK_OK(flit_ep_stats(g.ep, &s));
        double took = g.woke_at - g.sent_at;
        if (took > max_s)
            FAIL("the first message took %.3f s to wake rank 1 (at most %.1f s)", took,
                 max_s);
        printf("scale sleeper: woken %.3f ms after the send, %llu sleeps\n", took * 1e3,
               (unsigned long long)s.sleeps);
        CHECK(s.sleeps >= 1);
    } else if (g.me == 0) {
        pid_t p1 = pid_of(1);
        CHECK(p1 > 0);
        /* Asleep on three looks in a row, 10 ms apart: in flit_wait. */
        for (int seen = 0; seen < 3;) {
            seen = asleep(p1) ? seen + 1 : 0;
            usleep(10000);
        }
        double now = mp_now();
        uint32_t a[2];
        memcpy(a, &now, sizeof now);
        CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_WAKE), a, 2, 0));
    }
}

int main(int argc, char **argv)
{
    const char *mode = "neighbours";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--mode") == 0)
            mode = argv[i + 1];
    uint32_t count = (uint32_t)test_scaled(mp_arg_u64(argc, argv, "--count", 100));
    if (count == 0)
        count = 1;
    uint64_t heap_start = heap_bytes();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    g.n = flit_job_size();
    CHECK(g.n >= 2 && g.n <= MAX_RANKS);
    if (strcmp(mode, "neighbours") == 0)
        neighbours(count, (double)mp_arg_u64(argc, argv, "--vm-mb", 16));
    else if (strcmp(mode, "alltoall") == 0)
        alltoall(count, mp_arg_u64(argc, argv, "--peer-kb", 0),
                 mp_arg_u64(argc, argv, "--ring-kb", 0));
    else if (strcmp(mode, "quiet") == 0)
        quiet(count, mp_arg_u64(argc, argv, "--idle-kb", 16));
    else if (strcmp(mode, "rss") == 0)
        rss(count, mp_arg_u64(argc, argv, "--quiet-ms", 3000));
    else if (strcmp(mode, "pingpong") == 0)
        pingpong(count);
    else if (strcmp(mode, "race") == 0)
        race((uint32_t)mp_arg_u64(argc, argv, "--rounds", 10), count);
    else if (strcmp(mode, "dead") == 0)
        dead();
    else if (strcmp(mode, "sleeper") == 0)
        sleeper((double)mp_arg_u64(argc, argv, "--max-s", 5));
    else if (strcmp(mode, "gone") == 0)
        gone(count, (double)mp_arg_u64(argc, argv, "--max-s", 30));
    else if (strcmp(mode, "job") == 0)
        job(count, mp_arg_u64(argc, argv, "--barrier-only", 0) != 0,
            mp_arg_str(argc, argv, "--hold", NULL));
    else if (strcmp(mode, "idle") == 0)
        idle(heap_start);
    else
        FAIL("unknown --mode %s", mode);
    if (g.ep)
        CHECK_OK(flit_ep_destroy(g.ep));
    CHECK_OK(flit_finalize());
    if (strcmp(mode, "dead") != 0 && g.me == 0)
        printf("scale %s: OK\n", mode);
    return 0;
}
