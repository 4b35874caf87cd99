/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Garbage datagrams at a UDP endpoint (2 ranks, FLIT_TRANSPORT=udp).
 *
 * While ranks 0 and 1 exchange real requests and replies (sequence numbers,
 * payload patterns, exact counts), rank 0 fires datagrams at rank 1's
 * socket that rank 1 must refuse:
 *
 *  from addresses outside the job (a plain socket on 127.0.0.1 and one on
 *  127.0.0.2):
 *    - random bytes, random lengths 0 .. 65507;
 *    - well-formed datagrams with the right job key, claiming to be rank 0,
 *      carrying an AM packet in sequence: refused for the address alone;
 *  from rank 0's own endpoint address (rank 0 sends on its flit socket,
 *  which it finds among its file descriptors), so that they get past the
 *  address check and reach the decoder:
 *    - random bytes, random lengths;
 *    - well-formed datagrams cut short anywhere, header included;
 *    - one field broken: version, kind, a chunk count larger than the
 *      chunks (up to 65535) or smaller (bytes left over), a lane, unknown
 *      flags, a chunk length past the end (up to 65535);
 *    - the right layout with a wrong job key;
 *    - the right key with a wrong source rank or a wrong destination rank;
 *    - well-formed, right key, rank 0 to rank 1, with chunks 2^30 sequence
 *      numbers ahead (refused) or behind (dropped as duplicates), on the
 *      reply lane (which every poll serves) and with acknowledgements of
 *      nothing, so that they cannot disturb the real stream.
 *  Rank 0 checks each datagram against fl_chan_decode before sending it:
 *  the ones meant to be refused by the decoder or the key / rank checks
 *  really are, the ones meant to pass the decoder really do.
 *
 * Rank 1 learns the job key without knowing how the library derives it: it
 * peeks (MSG_PEEK, no flit call in between) at a datagram rank 0 sent it and
 * decodes its header, then tells rank 0.
 *
 * Pacing: garbage goes in batches; after each batch rank 0 sends a sync
 * request and does not send the batch after next before rank 1 answered it,
 * so rank 1's socket holds at most about two batches.
 *
 * Proves: rank 1 does not crash (and stays clean under ASan/UBSan), delivers
 * exactly the real traffic both ways, in order, nothing refused of it; its
 * refused_packets counter grows by at most the number of datagrams meant to
 * be refused, and by at least that number less what the kernel dropped on
 * its socket (the drops column of /proc/net/udp); the chunks sent behind
 * show as duplicates the same way. Rank 0 refuses nothing.
 *
 * Options: --batches N (scaled by FLITTEST_SCALE), --per-batch N garbage
 * datagrams per batch, --real N real requests each way per batch, --seed S.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "am/wire.h"
#include "channel/wire.h"
#include "mp.h"

enum {
    H_HELLO = 1, /* rank 0 -> 1: something to peek at */
    H_INFO = 2,  /* rank 1 -> 0: the key and rank 1's address */
    H_DATA = 3,  /* real traffic, both ways */
    H_DATA_REP = 4,
    H_SYNC = 5, /* rank 0 -> 1: batch b sent */
    H_SYNC_REP = 6,
    H_DONE = 7, /* rank 0 -> 1: the totals */
};

/* What a garbage datagram is. */
enum kind {
    G_STRANGER_RANDOM,
    G_STRANGER_VALID,
    G_RANDOM,
    G_TRUNCATED,
    G_VERSION,
    G_KIND,
    G_MORE_CHUNKS,
    G_FEWER_CHUNKS,
    G_LANE,
    G_FLAGS,
    G_CHUNK_LEN,
    G_WRONG_KEY,
    G_WRONG_SRC,
    G_WRONG_DST,
    G_AHEAD,  /* passes the decoder; its chunks are refused */
    G_BEHIND, /* passes the decoder; its chunks are duplicates */
    G_KINDS
};

static const char *const kind_name[G_KINDS] = {
    "stranger random",
    "stranger well-formed",
    "random",
    "truncated",
    "bad version",
    "bad kind",
    "chunk count too large",
    "chunk count too small",
    "bad lane",
    "bad flags",
    "chunk length past the end",
    "wrong key",
    "wrong source rank",
    "wrong destination rank",
    "sequence far ahead",
    "sequence far behind",
};

#define MAX_DGRAM 65507u
#define STRANGERS 2
#define DATA_MAX  20000u

static struct {
    flit_ep_t *ep;
    uint32_t me, other;
    struct opts {
        uint64_t batches, per_batch, real, seed;
    } o;
    /* learned */
    uint64_t key;
    int have_info;
    struct sockaddr_in target; /* rank 1's socket (on rank 0) */
    /* real traffic */
    uint64_t tx, rx, rep, rep_expected;
    uint8_t payload[DATA_MAX];
    /* pacing */
    uint64_t syncs, sync_replies;
    /* rank 1's totals from rank 0 */
    int done;
    uint64_t expect_refused, expect_dups, garbage_sent;
} g;

/* ---- real traffic ---- */

static size_t data_len(uint64_t k)
{
    switch (k % 3) {
    case 0:
        return 0; /* a short message */
    case 1:
        return (size_t)(k * 7919 % 512);
    default:
        return (size_t)(k * 104729 % DATA_MAX);
    }
}

static uint64_t data_seed(uint32_t src, uint64_t k)
{
    return mp_mix(g.o.seed, src, k, 0xda7a);
}

static void send_data(void)
{
    uint64_t k = g.tx++;
    size_t len = data_len(k);
    uint32_t a[3] = {(uint32_t)k, (uint32_t)len, 0};
    /* Some with FLIT_AM_MORE: the channel packs them with the next. */
    unsigned flags = k % 4 == 1 ? FLIT_AM_MORE : 0;
    if (k % 3 == 0) {
        CHECK_OK(
            flit_am_short(g.ep, flit_rank(g.other), flit_handler(H_DATA), a, 3, flags));
    } else {
        mp_pattern_fill(g.payload, len, data_seed(g.me, k));
        a[2] = test_checksum(g.payload, len);
        CHECK_OK(flit_am_medium(g.ep, flit_rank(g.other), flit_handler(H_DATA), g.payload,
                                len, a, 3, flags));
    }
    if (k % 2 == 0)
        g.rep_expected++;
}

static void on_data(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)user;
    CHECK(flit_token_rank(t).idx == g.other && nargs == 3);
    uint64_t k = g.rx;
    if (args[0] != (uint32_t)k)
        FAIL("real message %u from rank %u, expected %llu", args[0], g.other,
             (unsigned long long)k);
    size_t len = data_len(k);
    if (args[1] != len || nbytes != len)
        FAIL("real message %llu: %zu bytes, expected %zu", (unsigned long long)k, nbytes,
             len);
    if (k % 3 == 0) {
        CHECK(buf == NULL);
    } else {
        size_t bad = mp_pattern_check(buf, nbytes, data_seed(g.other, k));
        if (bad != nbytes || test_checksum(buf, nbytes) != args[2])
            FAIL("real message %llu: byte %zu of %zu differs", (unsigned long long)k, bad,
                 nbytes);
    }
    g.rx++;
    if (k % 2 == 0) {
        uint32_t r[1] = {(uint32_t)k};
        CHECK_OK(flit_am_reply_short(t, flit_handler(H_DATA_REP), r, 1));
    }
}

static void on_data_rep(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)buf;
    (void)nbytes;
    (void)user;
    CHECK(flit_token_rank(t).idx == g.other && nargs == 1);
    if (args[0] != (uint32_t)(2 * g.rep))
        FAIL("reply to %u, expected the reply to %llu", args[0],
             (unsigned long long)(2 * g.rep));
    g.rep++;
}

/* ---- control ---- */

static void on_hello(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)args, (void)nargs, (void)user;
}

static void on_info(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 4);
    g.key = (uint64_t)args[0] | (uint64_t)args[1] << 32;
    g.target = (struct sockaddr_in){.sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(args[2]),
                                    .sin_port = htons((uint16_t)args[3])};
    g.have_info = 1;
}

static void on_sync(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1);
    if (args[0] != g.syncs)
        FAIL("sync %u, expected %llu", args[0], (unsigned long long)g.syncs);
    g.syncs++;
    CHECK_OK(flit_am_reply_short(t, flit_handler(H_SYNC_REP), args, 1));
}

static void on_sync_rep(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 1 && args[0] == g.sync_replies);
    g.sync_replies++;
}

static void on_done(flit_token_t *t, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user)
{
    (void)t, (void)buf, (void)nbytes, (void)user;
    CHECK(nargs == 3);
    g.expect_refused = args[0];
    g.expect_dups = args[1];
    g.garbage_sent = args[2];
    g.done = 1;
}

/* ---- sockets ---- */

/* The endpoint's UDP socket among this process's descriptors (one endpoint:
   one socket); -1 when there is none. */
static int find_udp_socket(struct sockaddr_in *addr)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int found = -1, n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name);
        if (fd == dirfd(d))
            continue;
        int type = 0, domain = 0;
        socklen_t len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_DGRAM)
            continue;
        len = sizeof domain;
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
            domain != AF_INET)
            continue;
        struct sockaddr_in sa;
        len = sizeof sa;
        if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sin_port == 0)
            continue;
        found = fd;
        *addr = sa;
        n++;
    }
    closedir(d);
    if (n > 1)
        FAIL("%d bound UDP sockets in this process; expected the endpoint's one", n);
    return found;
}

/* Datagrams the kernel dropped on socket fd for lack of room (the drops
   column of /proc/net/udp); 0 when it cannot be read. */
static uint64_t kernel_drops(int fd)
{
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    FILE *f = fopen("/proc/net/udp", "r");
    if (!f)
        return 0;
    char line[512];
    uint64_t drops = 0;
    while (fgets(line, sizeof line, f)) {
        char *tok[16], *save = NULL;
        int n = 0;
        for (char *p = strtok_r(line, " \t\n", &save); p && n < 16;
             p = strtok_r(NULL, " \t\n", &save))
            tok[n++] = p;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref ptr drops */
        if (n >= 13 && strtoull(tok[9], NULL, 10) == (unsigned long long)st.st_ino) {
            drops = strtoull(tok[12], NULL, 10);
            break;
        }
    }
    fclose(f);
    return drops;
}

static int stranger_socket(const char *ip)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    CHECK(inet_pton(AF_INET, ip, &sa.sin_addr) == 1);
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0)
        FAIL("binding a UDP socket to %s: %s", ip, strerror(errno));
    int v = 4 << 20;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    return s;
}

/* ---- rank 1 learns the key from a datagram of rank 0 ---- */

static void learn_key(int sock)
{
    static uint8_t buf[MAX_DGRAM + 1];
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    double deadline = mp_now() + MP_WAIT_LIMIT_S;
    for (;;) {
        int r = poll(&pfd, 1, 100);
        if (r > 0)
            break;
        if (r < 0 && errno != EINTR)
            FAIL("poll: %s", strerror(errno));
        if (mp_now() > deadline)
            FAIL("no datagram from rank 0 to learn the job key from");
    }
    ssize_t n = recv(sock, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0)
        FAIL("peeking at a datagram: %s", strerror(errno));
    struct fl_chan_hdr h;
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    CHECK_OK(fl_chan_decode(buf, (size_t)n, &h, chunks));
    CHECK(h.src == 0 && h.dst == 1);
    g.key = h.key;
}

/* ---- rank 0 builds the garbage ---- */

static uint64_t rnd(uint64_t *s, uint64_t n)
{
    return n ? test_rand(s) % n : 0;
}

static void random_bytes(uint8_t *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)test_rand(s);
}

/* Mostly short (around the header sizes), sometimes up to the largest. */
static size_t random_len(uint64_t *s)
{
    return rnd(s, 8) == 0 ? (size_t)rnd(s, MAX_DGRAM + 1) : (size_t)rnd(s, 300);
}

struct built {
    size_t len;
    size_t chunk_at[4]; /* offsets of the chunk headers */
    unsigned nchunks;
};

/*
 * A well-formed datagram from rank 0 to rank 1 with the right key and
 * acknowledgements of nothing: 1..4 chunks on lane, sequence numbers from
 * seq, each a whole packet (an AM short request when am, else bytes).
 */
static struct built well_formed(uint8_t *buf, unsigned lane, uint32_t seq, bool am,
                                uint64_t *s)
{
    struct built b = {.nchunks = 1 + (unsigned)rnd(s, 4)};
    struct fl_chan_hdr h = {.kind = FL_CHAN_DATA,
                            .nchunks = (uint16_t)b.nchunks,
                            .src = 0,
                            .dst = 1,
                            .key = g.key};
    fl_chan_encode_hdr(buf, &h);
    size_t pos = FL_CHAN_HDR;
    for (unsigned i = 0; i < b.nchunks; i++) {
        uint8_t *data = buf + pos + FL_CHAN_CHUNK_HDR;
        size_t len;
        if (am) {
            uint32_t a[3] = {(uint32_t)g.tx + i, 0, 0};
            len = fl_am_encode_short(data, false, H_DATA, 0, a, 3);
        } else {
            len = (size_t)rnd(s, 200);
            random_bytes(data, len, s);
        }
        struct fl_chan_chunk c = {.lane = (uint8_t)lane,
                                  .flags = FL_CHAN_FIRST | FL_CHAN_LAST,
                                  .len = (uint16_t)len,
                                  .seq = seq + i};
        fl_chan_encode_chunk(buf + pos, &c);
        memset(data + len, 0, fl_chan_chunk_size(len) - FL_CHAN_CHUNK_HDR - len);
        b.chunk_at[i] = pos;
        pos += fl_chan_chunk_size(len);
    }
    b.len = pos;
    return b;
}

/* Whether rank 1's channel would take d as a datagram of rank 0's. */
static bool passes(uint8_t *d, size_t len)
{
    static struct fl_chan_chunk chunks[FL_CHAN_MAX_CHUNKS];
    struct fl_chan_hdr h;
    return fl_chan_decode(d, len, &h, chunks) == FLIT_OK && h.key == g.key &&
           h.src == 0 && h.dst == 1;
}

/* Builds one datagram of kind k into buf; returns its length, and how many
   chunks rank 1 must refuse (*ahead) or drop as duplicates (*behind). */
static size_t build(enum kind k, uint8_t *buf, uint64_t *s, unsigned *ahead,
                    unsigned *behind)
{
    *ahead = *behind = 0;
    if (k == G_STRANGER_RANDOM || k == G_RANDOM) {
        size_t len = random_len(s);
        random_bytes(buf, len, s);
        return len;
    }
    bool am = k == G_STRANGER_VALID;
    uint32_t seq = (uint32_t)rnd(s, 1u << 20);
    unsigned lane = (unsigned)rnd(s, FL_LANES);
    if (k == G_AHEAD || k == G_BEHIND) {
        lane = FL_LANE_REP;
        seq = (k == G_AHEAD ? 0x40000000u : 0xc0000000u) + (uint32_t)rnd(s, 1u << 16);
    }
    struct built b = well_formed(buf, lane, seq, am, s);
    uint8_t *c = buf + b.chunk_at[rnd(s, b.nchunks)];
    switch (k) {
    case G_TRUNCATED:
        return (size_t)rnd(s, b.len);
    case G_VERSION:
        buf[0] = (uint8_t)(FL_CHAN_VERSION + 1 + rnd(s, 255));
        break;
    case G_KIND:
        buf[1] = (uint8_t)(FL_CHAN_PING + 1 + rnd(s, 255 - FL_CHAN_PING));
        break;
    case G_MORE_CHUNKS: {
        uint16_t n = (uint16_t)(b.nchunks + 1 + rnd(s, 65535 - b.nchunks));
        buf[2] = (uint8_t)n;
        buf[3] = (uint8_t)(n >> 8);
        break;
    }
    case G_FEWER_CHUNKS:
        buf[2] = (uint8_t)rnd(s, b.nchunks); /* the rest are trailing bytes */
        buf[3] = 0;
        break;
    case G_LANE:
        c[0] = (uint8_t)(FL_LANES + rnd(s, 256 - FL_LANES));
        break;
    case G_FLAGS:
        c[1] |= (uint8_t)(0x04u << rnd(s, 6));
        break;
    case G_CHUNK_LEN: {
        /* Longer than what is left of the datagram, up to 65535. */
        size_t left = b.len - (size_t)(c - buf) - FL_CHAN_CHUNK_HDR;
        uint16_t n = (uint16_t)(left + 1 + rnd(s, 65535 - left));
        c[2] = (uint8_t)n;
        c[3] = (uint8_t)(n >> 8);
        break;
    }
    case G_WRONG_KEY: {
        uint64_t key = g.key ^ (rnd(s, 2) ? (uint64_t)1 << rnd(s, 64) : test_rand(s) | 1);
        for (int i = 0; i < 8; i++)
            buf[8 + i] = (uint8_t)(key >> (8 * i));
        break;
    }
    case G_WRONG_SRC:
    case G_WRONG_DST: {
        static const uint32_t bad_src[] = {1, 2, 255, 0x80000000u, UINT32_MAX};
        static const uint32_t bad_dst[] = {0, 2, 255, 0x80000001u, UINT32_MAX};
        uint32_t v = k == G_WRONG_SRC ? bad_src[rnd(s, 5)] : bad_dst[rnd(s, 5)];
        uint8_t *f = buf + (k == G_WRONG_SRC ? 4 : 16);
        for (int i = 0; i < 4; i++)
            f[i] = (uint8_t)(v >> (8 * i));
        break;
    }
    case G_AHEAD:
        *ahead = b.nchunks;
        break;
    case G_BEHIND:
        *behind = b.nchunks;
        break;
    default:
        break;
    }
    return b.len;
}

struct firing {
    int jfd; /* rank 0's endpoint socket */
    int stranger[STRANGERS];
    uint64_t rng;
    uint64_t sent[G_KINDS];
    uint64_t total, refused, dups;
};

static bool send_dgram(int fd, const uint8_t *buf, size_t len)
{
    for (int tries = 0; tries < 1000; tries++) {
        ssize_t n = sendto(fd, buf, len, MSG_DONTWAIT, (const struct sockaddr *)&g.target,
                           sizeof g.target);
        if (n == (ssize_t)len)
            return true;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS &&
            errno != EINTR)
            FAIL("sending garbage: %s", strerror(errno));
        CHECK_OK(flit_poll(g.ep)); /* let our own socket drain */
    }
    return false;
}

static void fire_batch(struct firing *f)
{
    static uint8_t buf[MAX_DGRAM];
    for (uint64_t i = 0; i < g.o.per_batch; i++) {
        /* Random bytes twice as often as each other kind. */
        unsigned pick = (unsigned)rnd(&f->rng, G_KINDS + 2);
        enum kind k = pick >= G_KINDS ? (pick == G_KINDS ? G_STRANGER_RANDOM : G_RANDOM)
                                      : (enum kind)pick;
        unsigned ahead, behind;
        size_t len = build(k, buf, &f->rng, &ahead, &behind);
        bool stranger = k == G_STRANGER_RANDOM || k == G_STRANGER_VALID;
        /* What rank 1's decoder and checks will say. */
        if (!stranger) {
            bool want = k == G_AHEAD || k == G_BEHIND;
            if (passes(buf, len) != want)
                FAIL("test bug: a '%s' datagram of %zu bytes %s fl_chan_decode and the "
                     "key and rank checks",
                     kind_name[k], len, want ? "fails" : "passes");
        }
        int fd = stranger ? f->stranger[rnd(&f->rng, STRANGERS)] : f->jfd;
        if (!send_dgram(fd, buf, len))
            continue;
        f->sent[k]++;
        f->total++;
        if (k == G_AHEAD)
            f->refused += ahead;
        else if (k == G_BEHIND)
            f->dups += behind;
        else
            f->refused++;
    }
}

/* ---- the ranks ---- */

static void rank0(void)
{
    struct sockaddr_in mine;
    struct firing f = {.rng = mp_mix(g.o.seed, 0, 0, 0x9a7b)};
    f.jfd = find_udp_socket(&mine);
    CHECK(f.jfd >= 0);
    f.stranger[0] = stranger_socket("127.0.0.1");
    f.stranger[1] = stranger_socket("127.0.0.2");

    uint32_t none[1] = {0};
    CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_HELLO), none, 0, 0));
    MP_WAIT(g.ep, g.have_info);
    printf("garbage: rank 0 (udp port %u) fires at rank 1, %s:%u\n", ntohs(mine.sin_port),
           inet_ntoa(g.target.sin_addr), ntohs(g.target.sin_port));
    flit_stats_t s0 = {.struct_size = sizeof s0};
    CHECK_OK(flit_ep_stats(g.ep, &s0));

    for (uint64_t b = 0; b < g.o.batches; b++) {
        fire_batch(&f);
        for (uint64_t i = 0; i < g.o.real; i++)
            send_data();
        uint32_t a[1] = {(uint32_t)b};
        CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_SYNC), a, 1, 0));
        MP_WAIT(g.ep, g.sync_replies >= b); /* at most two batches unread */
    }
    MP_WAIT(g.ep, g.sync_replies == g.o.batches);
    CHECK(f.refused < UINT32_MAX && f.total < UINT32_MAX);
    uint32_t totals[3] = {(uint32_t)f.refused, (uint32_t)f.dups, (uint32_t)f.total};
    CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_DONE), totals, 3, 0));
    MP_WAIT(g.ep, g.rx == g.o.batches * g.o.real && g.rep == g.rep_expected);

    flit_stats_t s1 = {.struct_size = sizeof s1};
    CHECK_OK(flit_ep_stats(g.ep, &s1));
    if (s1.refused_packets != s0.refused_packets)
        FAIL("rank 0 refused %llu packets; nobody sent it garbage",
             (unsigned long long)(s1.refused_packets - s0.refused_packets));
    printf("garbage: rank 0 sent %llu garbage datagrams:", (unsigned long long)f.total);
    for (int k = 0; k < G_KINDS; k++)
        printf("%s %llu %s", k ? "," : "", (unsigned long long)f.sent[k], kind_name[k]);
    printf("\n");
    for (int i = 0; i < STRANGERS; i++)
        close(f.stranger[i]);
}

static void rank1(void)
{
    struct sockaddr_in mine;
    int sock = find_udp_socket(&mine);
    CHECK(sock >= 0);
    flit_stats_t s0 = {.struct_size = sizeof s0};
    CHECK_OK(flit_ep_stats(g.ep, &s0));
    uint64_t drops0 = kernel_drops(sock);

    learn_key(sock); /* no flit call before: the datagram is still there */
    uint32_t info[4] = {(uint32_t)g.key, (uint32_t)(g.key >> 32),
                        ntohl(mine.sin_addr.s_addr), ntohs(mine.sin_port)};
    CHECK_OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_INFO), info, 4, 0));

    for (uint64_t b = 0; b < g.o.batches; b++) {
        MP_WAIT(g.ep, g.syncs > b);
        for (uint64_t i = 0; i < g.o.real; i++)
            send_data();
    }
    MP_WAIT(g.ep, g.done && g.rx == g.o.batches * g.o.real && g.rep == g.rep_expected);

    /* Everything rank 0 sent before its DONE has been read, or was dropped by
       the kernel; what went from other sockets may still be on its way. */
    flit_stats_t s = {.struct_size = sizeof s};
    uint64_t refused, drops, dups;
    double deadline = mp_now() + MP_WAIT_LIMIT_S;
    for (;;) {
        CHECK_OK(flit_ep_stats(g.ep, &s));
        refused = s.refused_packets - s0.refused_packets;
        dups = s.duplicates - s0.duplicates;
        drops = kernel_drops(sock) - drops0;
        if (refused + drops >= g.expect_refused && dups + drops >= g.expect_dups)
            break;
        if (mp_now() > deadline)
            FAIL("refused %llu of %llu garbage datagrams (+ %llu dropped by the kernel), "
                 "%llu duplicates of %llu chunks sent behind",
                 (unsigned long long)refused, (unsigned long long)g.expect_refused,
                 (unsigned long long)drops, (unsigned long long)dups,
                 (unsigned long long)g.expect_dups);
        flit_status st = flit_wait(g.ep, MP_WAIT_SLICE_US);
        CHECK(st == FLIT_OK || st == FLIT_ERR_TIMEOUT);
    }
    if (refused > g.expect_refused)
        FAIL(
            "refused %llu packets, but only %llu garbage datagrams and chunks were meant "
            "to be: real traffic was refused",
            (unsigned long long)refused, (unsigned long long)g.expect_refused);
    printf(
        "garbage: rank 1 refused %llu of %llu datagrams and chunks meant to be refused "
        "(%llu garbage datagrams in all); %llu duplicates for %llu chunks sent behind; "
        "kernel drops on its socket %llu\n",
        (unsigned long long)refused, (unsigned long long)g.expect_refused,
        (unsigned long long)g.garbage_sent, (unsigned long long)dups,
        (unsigned long long)g.expect_dups, (unsigned long long)drops);
}

int main(int argc, char **argv)
{
    g.o.batches = test_scaled(mp_arg_u64(argc, argv, "--batches", 100));
    g.o.per_batch = mp_arg_u64(argc, argv, "--per-batch", 48);
    g.o.real = mp_arg_u64(argc, argv, "--real", 20);
    g.o.seed = mp_arg_u64(argc, argv, "--seed", 1);
    double t0 = mp_now();
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    if (flit_job_size() != 2) {
        fprintf(stderr, "garbage runs with 2 ranks\n");
        return TEST_SKIP;
    }
    g.other = 1 - g.me;
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    struct sockaddr_in sa;
    if (find_udp_socket(&sa) < 0) {
        fprintf(stderr,
                "garbage: rank %u has no UDP socket: run with FLIT_TRANSPORT=udp\n",
                g.me);
        return TEST_SKIP;
    }
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_HELLO), on_hello, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_INFO), on_info, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DATA), on_data, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DATA_REP), on_data_rep, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_SYNC), on_sync, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_SYNC_REP), on_sync_rep, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DONE), on_done, NULL));
    CHECK_OK(flit_barrier(g.ep));

    if (g.me == 0)
        rank0();
    else
        rank1();
    CHECK_OK(flit_barrier(g.ep));
    CHECK(g.tx == g.o.batches * g.o.real && g.rx == g.o.batches * g.o.real);
    CHECK_OK(flit_finalize());
    printf("garbage: rank %u OK: %llu real messages each way, %.2f s\n", g.me,
           (unsigned long long)g.tx, mp_now() - t0);
    return 0;
}
