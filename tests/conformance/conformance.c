/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport conformance suite: the rules of the ops table
 * (src/transport/transport.h), checked on one transport through its ops
 * alone, the same checks for every transport:
 *
 *   contact     a pair that carried nothing is in contact on neither side;
 *               after one packet, on both (the receiver only received it)
 *   cancel      a cancelled reservation is never delivered; reserve,
 *               commit, cancel on both lanes
 *   more        packets committed with FL_COMMIT_MORE go out, with the next
 *               commit without it or when the sender is polled
 *   order       packets of one lane arrive in the order sent, intact, of
 *               every size up to ->max_packet, the lanes interleaved
 *   lanes       a lane that is full does not stop the other; polling one
 *               lane delivers nothing of the other
 *   room        no room: NULL with FLIT_ERR_AGAIN; after ->want_room and an
 *               ->arm that said "sleep", ->fd turns readable when the
 *               receiver makes room
 *   lent        where a transport lends (->commit_lent): packets whose
 *               bytes past their header were lent arrive intact and in
 *               order among copied ones, of one chunk and of several, though
 *               the lender scribbles over what it lent as soon as
 *               ->settle_lent returns; transmissions before the settle
 *               (from the lent bytes) and after it (from the copy) alike
 *   budget      ->poll delivers at most its budget, and returns what it
 *               delivered
 *   wake        ->arm says "work waiting" or ->fd turns readable for a
 *               packet sent before the arm (no lost wake-up), and ->fd
 *               turns readable for one sent after it, on either side
 *   settled     once everything was consumed, both sides settle; a
 *               transport that acknowledges is not settled while a packet
 *               is unacknowledged
 *   death       a peer killed with SIGKILL: ->fd wakes the sleeper, what
 *               the peer finished sending is delivered before peer_down
 *               (once), ->reclaim hands back what it never consumed, in
 *               order, once; ->reserve answers FLIT_ERR_PEER_DOWN
 *
 *     conformance_test TRANSPORT
 *
 * TRANSPORT: self (a rank to itself), shm, chan_mem (the reliability
 * channel over a datagram network made of memory, memnet.h), chan_mem_faults
 * (the same under the seeded fault interposer: drop, duplicate, reorder,
 * delay), udp (the channel over UDP on loopback), udp_faults, xdp (the
 * channel over AF_XDP between two network namespaces: run by netns.sh with
 * FLITNET_NS0 and FLITNET_NS1 set, rank 0 in the first, rank 1 in the
 * second, and AF_XDP must attach on both sides); ofi_PROVIDER (the channel
 * over libfabric's reliable datagrams on that provider: ofi_tcp, ofi_udp);
 * or broken:
 * the suite's own test, which wraps self in ops that each break one rule
 * (a commit that swaps two packets of a lane, an arm that loses a wake-up,
 * a cancel that sends) and checks that the suite reports each.
 *
 * Two ranks are two processes: this one (rank 0, the driver) and a child
 * (rank 1) it forks and commands over a socket pair; the child does only
 * what it is told, so it does not poll unless a command says so. Every
 * wait is on an event (a reply, a descriptor) with a deadline; the child is
 * killed and reaped, shm files are unlinked once both connected.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build.h"
#include "channel/channel.h"
#include "core/packet.h"
#include "memnet.h"
#include "platform/le.h"
#include "platform/os.h"
#include "transport/fault/fault.h"
#include "transport/self/self.h"
#include "transport/shm/config.h"
#include "transport/shm/shm.h"
#include "transport/udp/udp.h"
#include "util/config.h"
#ifdef FLIT_HAVE_XDP
#include <fcntl.h>
#include <sched.h>

#include "transport/xdp/xdp.h"
#endif
#ifdef FLIT_HAVE_OFI
#include "transport/ofi/api.h"

#include "transport/ofi/ofi.h"
#endif

#define MAGIC      0x5eafc0deu
#define HDR        16u    /* magic, seq, lane, len */
#define DEADLINE   20000u /* ms: what an event may take on a loaded machine */
#define WAKE_MS    5000u  /* ms: for a packet already there (sent before) */
#define MAX_RECS   8192u
#define PEER_TMO   3000u /* ms: FLIT_PEER_TIMEOUT for the channel variants */
#define FILL_LEN   1024u /* packets that fill a lane */
#define FILL_LIMIT (64u << 20)

/* ---- failures: a check that fails ends the check function with -1 ---- */

static char why[512];

#define EXPECT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            snprintf(why, sizeof why, __VA_ARGS__);                                      \
            return -1;                                                                   \
        }                                                                                \
    } while (0)
#define TRY(call)                                                                        \
    do {                                                                                 \
        if ((call) != 0)                                                                 \
            return -1;                                                                   \
    } while (0)

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "conformance: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* ---- packets: header and a pattern, checked on arrival ---- */

static uint8_t pattern(uint32_t seq, unsigned lane, size_t i)
{
    return (uint8_t)(seq * 31u + lane * 101u + i * 7u);
}

static void fill(uint8_t *p, size_t len, unsigned lane, uint32_t seq)
{
    fl_put32(p, MAGIC);
    fl_put32(p + 4, seq);
    fl_put32(p + 8, lane);
    fl_put32(p + 12, (uint32_t)len);
    for (size_t i = HDR; i < len; i++)
        p[i] = pattern(seq, lane, i);
}

/* What a side saw of one packet. */
struct rec {
    uint32_t src, lane, seq, len;
    uint32_t ok; /* header matches the lane and length, pattern intact */
};

static struct rec inspect(uint32_t src, unsigned lane, const uint8_t *p, size_t len)
{
    struct rec r = {src, lane, UINT32_MAX, (uint32_t)len, 0};
    if (len < HDR || fl_get32(p) != MAGIC)
        return r;
    r.seq = fl_get32(p + 4);
    r.ok = fl_get32(p + 8) == lane && fl_get32(p + 12) == len;
    for (size_t i = HDR; i < len && r.ok; i++)
        r.ok = p[i] == pattern(r.seq, lane, i);
    return r;
}

/* ---- one endpoint ---- */

struct side {
    const struct fl_transport *tp;
    struct fl_tp_ep *ep;
    uint32_t rank, peer;
    struct fl_tp_counters *counters; /* the transport's block: ->counters_size */
    struct rec *log;
    uint32_t nlog;
    uint32_t downs, down_at;
    flit_status down_reason;
    int calls; /* callbacks during the poll in progress */
};

static void on_packet(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct side *s = ctx;
    if (s->nlog == MAX_RECS)
        die("rank %u: more than %u packets unread", s->rank, MAX_RECS);
    s->log[s->nlog++] = inspect(src, lane, pkt, len);
    s->calls++;
}

static void on_down(void *ctx, uint32_t rank, flit_status reason)
{
    struct side *s = ctx;
    s->downs++;
    s->down_at = s->nlog;
    s->down_reason = reason;
    (void)rank;
}

/* One ->poll; checks that it returned what it delivered, within budget. */
static int poll_once(struct side *s, unsigned mask, int budget, int *got)
{
    s->calls = 0;
    int n = s->tp->poll(s->ep, mask, on_packet, s, budget);
    EXPECT(n == s->calls, "%s: ->poll returned %d but delivered %d packets", s->tp->name,
           n, s->calls);
    EXPECT(n <= budget, "%s: ->poll delivered %d packets on a budget of %d", s->tp->name,
           n, budget);
    *got = n;
    return 0;
}

/* Progress of a side that is waiting for something else. */
static int progress(struct side *s)
{
    int got;
    TRY(poll_once(s, FL_LANES_ALL, 64, &got));
    s->tp->check_peers(s->ep, on_packet, s);
    return 0;
}

/* Waits up to ms for fd to turn readable. */
static bool readable(int fd, unsigned ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    while ((r = poll(&p, 1, (int)ms)) < 0 && errno == EINTR)
        ;
    return r > 0;
}

/* ---- the peer: local (self) or a child commanded over a socket ---- */

enum op {
    OP_COLLECT = 1,
    OP_SEND,
    OP_ARM,
    OP_WAIT_FD,
    OP_DISARM,
    OP_SETTLE,
    OP_CONTACT,
    OP_QUIT
};

struct cmd {
    uint32_t op, mask, budget, want, lane, first, count, len, ms;
};

struct reply {
    int32_t result;
    uint32_t nrec;
};

struct link {
    const char *name;
    struct side me;
    struct side *peer_side; /* self: &me */
    pid_t child;
    int ctl;
    bool acks;   /* settled only once acknowledged (the channel) */
    bool lossy;  /* the fault interposer is in the path */
    bool killed; /* the child was killed */
    /* sequence numbers: next to send and next expected, per direction
       (0: to the peer, 1: to the driver) and lane */
    uint32_t sent[2][FL_LANES], seen[2][FL_LANES];
};

static void write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("control socket: write: %s", strerror(errno));
        p += n;
        len -= (size_t)n;
    }
}

static bool read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Sends count packets from s to its peer on lane, seq first.., of len bytes
   (0: sizes vary); FL_COMMIT_MORE on all but the last when more. Stops at
   the first NULL reservation: how many went, or -1 on a broken rule. */
static int send_some(struct side *s, unsigned lane, uint32_t first, uint32_t count,
                     uint32_t len, bool more, flit_status *st_out)
{
    size_t max = s->tp->max_packet(s->ep);
    uint32_t i;
    flit_status st = FLIT_OK;
    for (i = 0; i < count; i++) {
        size_t l = len ? len : HDR + ((first + i) * 977u) % 3000u;
        if (l > max)
            l = max;
        st = FLIT_OK;
        uint8_t *p = s->tp->reserve(s->ep, s->peer, lane, l, &st);
        if (!p) {
            EXPECT(st == FLIT_ERR_AGAIN || st == FLIT_ERR_PEER_DOWN,
                   "%s: ->reserve gave NULL with status %d, not AGAIN or PEER_DOWN",
                   s->tp->name, (int)st);
            break;
        }
        fill(p, l, lane, first + i);
        s->tp->commit(s->ep, s->peer, lane, p, l,
                      more && i + 1 < count ? FL_COMMIT_MORE : 0);
    }
    if (st_out)
        *st_out = st;
    return (int)i;
}

/* What the child does for one command. */
static int serve(struct side *s, const struct cmd *c, struct reply *r, struct rec **recs)
{
    uint32_t from = s->nlog;
    r->result = 0;
    if (c->op == OP_COLLECT) {
        uint64_t until = fl_now_ns() + (uint64_t)c->ms * 1000000u;
        do { /* at least one poll */
            int got;
            if (poll_once(s, c->mask, (int)c->budget, &got) != 0) {
                r->result = -1;
                break;
            }
            s->tp->check_peers(s->ep, on_packet, s);
            if (got == 0 && s->nlog - from < c->want) { /* still on their way */
                if (!s->tp->arm(s->ep, c->mask))
                    readable(s->tp->fd(s->ep), 10);
                s->tp->disarm(s->ep);
            }
        } while (s->nlog - from < c->want && fl_now_ns() < until);
        /* as a receiver that goes on polling would: what it took is
           acknowledged (the channel's delayed acknowledgements) */
        uint64_t ack_until = fl_now_ns() + 100000000u;
        int got;
        while (r->result == 0 && !s->tp->settled(s->ep) && fl_now_ns() < ack_until)
            if (poll_once(s, c->mask, (int)c->budget, &got) != 0)
                r->result = -1;
    } else if (c->op == OP_SEND) {
        r->result =
            send_some(s, c->lane, c->first, c->count, c->len, c->budget != 0, NULL);
    } else if (c->op == OP_ARM) {
        r->result = s->tp->arm(s->ep, c->mask);
    } else if (c->op == OP_WAIT_FD) {
        r->result = readable(s->tp->fd(s->ep), c->ms);
    } else if (c->op == OP_DISARM) {
        s->tp->disarm(s->ep);
    } else if (c->op == OP_CONTACT) {
        r->result = s->tp->in_contact(s->ep, s->peer);
    } else if (c->op == OP_SETTLE) {
        /* at least one poll: settled here says nothing of what the driver
           still waits for (a lost acknowledgement: its packet comes again) */
        uint64_t until = fl_now_ns() + (uint64_t)c->ms * 1000000u;
        int got;
        do {
            if (poll_once(s, FL_LANES_ALL, 64, &got) != 0) {
                r->result = -1;
                break;
            }
            if (got == 0 && !s->tp->arm(s->ep, FL_LANES_ALL))
                readable(s->tp->fd(s->ep), 10);
            s->tp->disarm(s->ep);
        } while (!(r->result = s->tp->settled(s->ep)) && fl_now_ns() < until);
    }
    r->nrec = s->nlog - from;
    *recs = s->log + from;
    return 0;
}

static void child_main(struct side *s, int ctl)
{
    struct cmd c;
    while (read_all(ctl, &c, sizeof c) && c.op != OP_QUIT) {
        struct reply r;
        struct rec *recs;
        serve(s, &c, &r, &recs);
        if (r.result < 0)
            fprintf(stderr, "conformance: rank 1: %s\n", why);
        write_all(ctl, &r, sizeof r);
        write_all(ctl, recs, r.nrec * sizeof *recs);
        s->nlog = 0; /* the driver has them now */
    }
    s->tp->close(s->ep);
    _exit(0);
}

/* Runs c on the peer; the driver keeps its own side going meanwhile unless
   quiet (its fd is what is being tested). The records come in *recs. */
static int peer_do(struct link *k, const struct cmd *c, bool quiet, int *result,
                   struct rec **recs, uint32_t *nrec)
{
    static struct rec buf[MAX_RECS];
    struct reply r;
    if (k->peer_side == &k->me) { /* self: the same endpoint */
        struct rec *from;
        TRY(serve(&k->me, c, &r, &from));
        if (r.result < 0)
            return -1; /* why says what */
        memcpy(buf, from, r.nrec * sizeof *from);
        k->me.nlog -= r.nrec;
    } else {
        write_all(k->ctl, c, sizeof *c);
        uint64_t until = fl_now_ns() + (uint64_t)(DEADLINE + c->ms) * 1000000u;
        while (!readable(k->ctl, quiet ? DEADLINE + c->ms : 1)) {
            EXPECT(fl_now_ns() < until, "the peer did not answer command %u", c->op);
            if (!quiet)
                TRY(progress(&k->me));
        }
        EXPECT(read_all(k->ctl, &r, sizeof r) && r.nrec <= MAX_RECS &&
                   read_all(k->ctl, buf, r.nrec * sizeof *buf),
               "the peer died during command %u", c->op);
        EXPECT(r.result >= 0, "the peer found a broken rule (above)");
    }
    *result = r.result;
    *recs = buf;
    *nrec = r.nrec;
    return 0;
}

/* Checks records of direction dir: in order per lane, intact, each once. */
static int check_recs(struct link *k, unsigned dir, const struct rec *r, uint32_t n,
                      uint32_t mask, uint32_t from)
{
    for (uint32_t i = 0; i < n; i++) {
        EXPECT(r[i].lane < FL_LANES && (mask & FL_LANE_MASK(r[i].lane)),
               "%s: a packet of lane %u delivered by a poll of lanes 0x%x", k->name,
               r[i].lane, mask);
        EXPECT(r[i].ok, "%s: packet %u of lane %u arrived damaged (%u bytes)", k->name,
               r[i].seq, r[i].lane, r[i].len);
        EXPECT(r[i].src == from, "%s: a packet from rank %u, not %u", k->name, r[i].src,
               from);
        uint32_t *want = &k->seen[dir][r[i].lane];
        EXPECT(r[i].seq == *want,
               "%s: lane %u delivered packet %u where %u was next: out of order, lost "
               "or twice",
               k->name, r[i].lane, r[i].seq, *want);
        (*want)++;
    }
    return 0;
}

/* The peer polls lanes mask with polls of budget until it has want
   packets; they must be the next ones, in order. */
static int peer_take(struct link *k, uint32_t mask, uint32_t budget, uint32_t want,
                     uint32_t ms, bool quiet)
{
    struct cmd c = {
        .op = OP_COLLECT, .mask = mask, .budget = budget, .want = want, .ms = ms};
    int res;
    struct rec *r;
    uint32_t n;
    TRY(peer_do(k, &c, quiet, &res, &r, &n));
    TRY(check_recs(k, 0, r, n, mask, k->me.rank));
    EXPECT(n >= want, "%s: %u of %u packets arrived within %u s", k->name, n, want,
           ms / 1000);
    return 0;
}

/* The peer collects every packet it is owed on mask. */
static int peer_collect(struct link *k, uint32_t mask, uint32_t budget, uint32_t want)
{
    if (!want)
        for (unsigned l = 0; l < FL_LANES; l++)
            if (mask & FL_LANE_MASK(l))
                want += k->sent[0][l] - k->seen[0][l];
    return peer_take(k, mask, budget, want, DEADLINE, false);
}

static int peer_simple(struct link *k, uint32_t op, uint32_t mask, uint32_t ms,
                       bool quiet, int *res)
{
    struct cmd c = {.op = op, .mask = mask, .ms = ms};
    struct rec *r;
    uint32_t n;
    TRY(peer_do(k, &c, quiet, res, &r, &n));
    EXPECT(n == 0, "%s: the peer delivered packets during command %u", k->name, op);
    return 0;
}

/* The driver sends count packets on lane. Where there is no room, the peer
   takes what it has on that lane (as a receiver that polls does) until
   there is. */
static int send_ok(struct link *k, unsigned lane, uint32_t count, uint32_t len, bool more)
{
    uint64_t until = fl_now_ns() + (uint64_t)DEADLINE * 1000000u;
    uint32_t done = 0;
    for (;;) {
        flit_status st;
        int n = send_some(&k->me, lane, k->sent[0][lane], count - done, len, more, &st);
        TRY(n < 0);
        k->sent[0][lane] += (uint32_t)n;
        done += (uint32_t)n;
        if (done == count)
            return 0;
        EXPECT(st == FLIT_ERR_AGAIN && fl_now_ns() < until,
               "%s: %u of %u packets found no room on lane %u (status %d) while the peer "
               "took its packets for %u s",
               k->name, count - done, count, lane, (int)st, DEADLINE / 1000);
        TRY(peer_take(k, FL_LANE_MASK(lane), 64, 0, 0, false));
        /* as a sender waiting for room does: take what came back (the
           acknowledgements that free the window); a peer that answers
           within the millisecond peer_do polls at would leave them unread */
        TRY(progress(&k->me));
    }
}

/* Sends on lane until ->reserve says AGAIN; how many went in *n. */
static int fill_lane(struct link *k, unsigned lane, uint32_t *n)
{
    flit_status st;
    uint32_t total = 0;
    for (;;) {
        int got = send_some(&k->me, lane, k->sent[0][lane], 64, FILL_LEN, false, &st);
        TRY(got < 0);
        k->sent[0][lane] += (uint32_t)got;
        total += (uint32_t)got;
        if (got < 64)
            break;
        EXPECT((uint64_t)total * FILL_LEN < FILL_LIMIT,
               "%s: lane %u took %u MiB for a peer that does not poll: no credit",
               k->name, lane, FILL_LIMIT >> 20);
    }
    EXPECT(st == FLIT_ERR_AGAIN, "%s: a full lane answered %d, not FLIT_ERR_AGAIN",
           k->name, (int)st);
    EXPECT(total > 0, "%s: lane %u had no room for a first packet", k->name, lane);
    *n = total;
    return 0;
}

/* ---- the rules ---- */

static int check_cancel(struct link *k)
{
    for (unsigned lane = 0; lane < FL_LANES; lane++) {
        flit_status st;
        uint8_t *p = k->me.tp->reserve(k->me.ep, k->me.peer, lane, 200, &st);
        EXPECT(p, "%s: ->reserve of 200 bytes on an idle lane %u failed (%d)", k->name,
               lane, (int)st);
        /* the same sequence number as the next commit: if this one is ever
           delivered, the next arrives twice */
        fill(p, 200, lane, k->sent[0][lane]);
        k->me.tp->cancel(k->me.ep, k->me.peer, lane, p);
        TRY(send_ok(k, lane, 2, 0, false));
    }
    return peer_collect(k, FL_LANES_ALL, 64, 0);
}

static int check_more(struct link *k)
{
    /* with the flag on all of them: the sender's polls must send them */
    for (unsigned lane = 0; lane < FL_LANES; lane++)
        for (int i = 0; i < 8; i++) {
            flit_status st;
            uint32_t seq = k->sent[0][lane]++;
            uint8_t *p = k->me.tp->reserve(k->me.ep, k->me.peer, lane, 100 + i * 50, &st);
            EXPECT(p, "%s: ->reserve for a packed packet failed (%d)", k->name, (int)st);
            fill(p, 100 + i * 50, lane, seq);
            k->me.tp->commit(k->me.ep, k->me.peer, lane, p, 100 + i * 50, FL_COMMIT_MORE);
        }
    TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
    /* with the flag on all but the last */
    TRY(send_ok(k, FL_LANE_REQ, 20, 0, true));
    TRY(send_ok(k, FL_LANE_REP, 20, 0, true));
    return peer_collect(k, FL_LANES_ALL, 64, 0);
}

static int check_order(struct link *k)
{
    uint32_t seed = 12345;
    size_t max = k->me.tp->max_packet(k->me.ep);
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < 16; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned lane = (seed >> 16) & 1u;
            uint32_t len = HDR + (seed >> 8) % 6000u;
            if (i == 5 && round % 4 == 0)
                len = (uint32_t)(max < 65536 ? max : 65536); /* several datagrams */
            TRY(send_ok(k, lane, 1, len, (seed & 0x100) != 0 && i < 15));
        }
        TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
    }
    return 0;
}

static int check_budget(struct link *k)
{
    TRY(send_ok(k, FL_LANE_REQ, 10, 0, false));
    TRY(send_ok(k, FL_LANE_REP, 10, 0, false));
    TRY(peer_collect(k, FL_LANES_ALL, 3, 0));
    TRY(send_ok(k, FL_LANE_REQ, 5, 0, false));
    return peer_collect(k, FL_LANES_ALL, 1, 0);
}

static int check_lanes(struct link *k)
{
    uint32_t n;
    TRY(fill_lane(k, FL_LANE_REQ, &n));
    TRY(send_ok(k, FL_LANE_REP, 4, 0, false)); /* the other lane still has room */
    TRY(peer_collect(k, FL_LANE_MASK(FL_LANE_REP), 64, 0));
    TRY(peer_collect(k, FL_LANE_MASK(FL_LANE_REQ), 64, 0));
    /* and the other way round */
    TRY(fill_lane(k, FL_LANE_REP, &n));
    TRY(send_ok(k, FL_LANE_REQ, 4, 0, false));
    TRY(peer_collect(k, FL_LANE_MASK(FL_LANE_REQ), 64, 0));
    return peer_collect(k, FL_LANE_MASK(FL_LANE_REP), 64, 0);
}

/* Lends count packets on lane (every third copied whole, as the layers
   above mix them), their bytes past the header from src; where there is no
   room the peer takes what it has on the lane, so acknowledgements and
   retransmissions run while the bytes are lent. */
static int lend_some(struct link *k, unsigned lane, uint32_t count, uint8_t *src,
                     size_t slot, uint32_t round)
{
    struct side *s = &k->me;
    size_t max = s->tp->max_packet(s->ep);
    uint64_t until = fl_now_ns() + (uint64_t)DEADLINE * 1000000u;
    for (uint32_t i = 0; i < count;) {
        uint32_t seq = k->sent[0][lane];
        /* one chunk, several (memnet's MTU is 4 KiB), and a header alone */
        size_t len = (size_t[]){HDR + 3000, HDR + 9000, HDR, HDR + 1}[(i + round) % 4];
        if (len > max)
            len = max;
        if (len > slot)
            len = slot;
        flit_status st;
        uint8_t *pkt = s->tp->reserve(s->ep, s->peer, lane, len, &st);
        if (!pkt) {
            EXPECT(st == FLIT_ERR_AGAIN && fl_now_ns() < until,
                   "%s: no room to lend packet %u on lane %u (status %d)", k->name, seq,
                   lane, (int)st);
            TRY(peer_take(k, FL_LANE_MASK(lane), 64, 0, 0, false));
            TRY(progress(&k->me)); /* the acknowledgements (send_ok) */
            continue;
        }
        uint8_t *mine = src + (size_t)i * slot;
        fill(mine, len, lane, seq);
        memcpy(pkt, mine, HDR);
        if (i % 3 == 2) {
            memcpy(pkt + HDR, mine + HDR, len - HDR);
            s->tp->commit(s->ep, s->peer, lane, pkt, len, 0);
        } else {
            s->tp->commit_lent(s->ep, s->peer, lane, pkt, len, HDR, mine + HDR,
                               i % 2 ? FL_COMMIT_MORE : 0);
        }
        k->sent[0][lane]++;
        i++;
        if (i == count / 2) /* the peer acknowledges some; the rest stay lent */
            TRY(peer_take(k, FL_LANE_MASK(lane), 64, 1, DEADLINE, false));
    }
    return 0;
}

static int check_lent(struct link *k)
{
    struct side *s = &k->me;
    if (!s->tp->commit_lent)
        return 0; /* this transport copies everything it is given */
    enum { COUNT = 12, SLOT = HDR + 9000 };
    uint8_t *src = malloc((size_t)COUNT * SLOT);
    EXPECT(src, "no memory for the lent bytes");
    int rc = 0;
    for (uint32_t round = 0; round < 8 && rc == 0; round++) {
        unsigned lane = round & 1u;
        rc = lend_some(k, lane, COUNT, src, SLOT, round);
        s->tp->settle_lent(s->ep, s->peer, lane);
        memset(src, 0xee, (size_t)COUNT * SLOT); /* the lender's again */
        if (rc == 0)
            rc = peer_collect(k, FL_LANES_ALL, 64, 0);
    }
    free(src);
    return rc;
}

/* Whether a reservation on lane finds room now (given back at once). */
static bool has_room(struct side *s, unsigned lane)
{
    flit_status st;
    void *p = s->tp->reserve(s->ep, s->peer, lane, FILL_LEN, &st);
    if (p)
        s->tp->cancel(s->ep, s->peer, lane, p);
    return p != NULL;
}

static int check_room(struct link *k)
{
    uint32_t n;
    TRY(fill_lane(k, FL_LANE_REQ, &n));
    struct side *s = &k->me;
    s->tp->want_room(s->ep, s->peer, FL_LANE_REQ);
    if (k->peer_side == &k->me) { /* self: only its own poll makes room */
        TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
        EXPECT(has_room(s, FL_LANE_REQ), "%s: no room after the lane was drained",
               k->name);
        return 0;
    }
    if (!k->lossy) {
        /* room made after ->want_room, before the arm (the driver does
           nothing meanwhile): ->arm must not sleep through it */
        TRY(peer_take(k, FL_LANES_ALL, 64, n, DEADLINE, true));
        if (!s->tp->arm(s->ep, FL_LANES_ALL))
            EXPECT(readable(s->tp->fd(s->ep), WAKE_MS),
                   "%s: room made between ->want_room and ->arm, ->arm said sleep and "
                   "->fd stayed quiet: a lost wake-up",
                   k->name);
        s->tp->disarm(s->ep);
        uint64_t until = fl_now_ns() + (uint64_t)DEADLINE * 1000000u;
        while (!has_room(s, FL_LANE_REQ)) {
            EXPECT(fl_now_ns() < until, "%s: no room after the peer drained the lane",
                   k->name);
            TRY(progress(s));
        }
        TRY(fill_lane(k, FL_LANE_REQ, &n));
        s->tp->want_room(s->ep, s->peer, FL_LANE_REQ);
    }
    /* The driver sleeps the way an endpoint does while the peer drains the
       lane: arm; if it says "sleep", wait on ->fd; on waking, poll and look
       for room. A wake-up that never comes is the failure. */
    struct cmd c = {
        .op = OP_COLLECT, .mask = FL_LANES_ALL, .budget = 64, .want = n, .ms = DEADLINE};
    write_all(k->ctl, &c, sizeof c);
    uint64_t until = fl_now_ns() + (uint64_t)DEADLINE * 2 * 1000000u;
    bool room = false, answered = false;
    while (!room && fl_now_ns() < until) {
        if (!s->tp->arm(s->ep, FL_LANES_ALL)) {
            struct pollfd p[2] = {{.fd = s->tp->fd(s->ep), .events = POLLIN},
                                  {.fd = k->ctl, .events = answered ? 0 : POLLIN}};
            if (poll(p, 2, DEADLINE) <= 0)
                break;
            if (!(p[0].revents & POLLIN) && (p[1].revents & POLLIN)) {
                /* the peer is done: room must now wake us, not the reply */
                struct reply r;
                static struct rec buf[MAX_RECS];
                EXPECT(read_all(k->ctl, &r, sizeof r) && r.nrec <= MAX_RECS &&
                           read_all(k->ctl, buf, r.nrec * sizeof *buf),
                       "the peer died while draining");
                EXPECT(r.result >= 0, "the peer found a broken rule (above)");
                TRY(check_recs(k, 0, buf, r.nrec, FL_LANES_ALL, k->me.rank));
                answered = true;
                s->tp->disarm(s->ep);
                continue;
            }
        }
        s->tp->disarm(s->ep);
        TRY(progress(s));
        room = has_room(s, FL_LANE_REQ);
        if (!room)
            s->tp->want_room(s->ep, s->peer, FL_LANE_REQ);
        if (!room && answered) /* the peer polls on, as a receiver does */
            TRY(peer_take(k, FL_LANES_ALL, 64, 0, 0, true));
    }
    EXPECT(room, "%s: the peer drained the lane but ->fd never woke the sender for room",
           k->name);
    if (!answered) {
        struct reply r;
        static struct rec buf[MAX_RECS];
        while (!readable(k->ctl, 1))
            TRY(progress(s));
        EXPECT(read_all(k->ctl, &r, sizeof r) && r.nrec <= MAX_RECS &&
                   read_all(k->ctl, buf, r.nrec * sizeof *buf),
               "the peer died while draining");
        EXPECT(r.result >= 0, "the peer found a broken rule (above)");
        TRY(check_recs(k, 0, buf, r.nrec, FL_LANES_ALL, k->me.rank));
    }
    return peer_collect(k, FL_LANES_ALL, 64, 0); /* whatever is left */
}

/* The peer arms until ->arm says "sleep" (a transport may say "work" for
   what is only acknowledgements: then it polls first). */
static int peer_arm_quiet(struct link *k)
{
    for (int i = 0; i < 50; i++) {
        int armed;
        TRY(peer_simple(k, OP_ARM, FL_LANES_ALL, 0, false, &armed));
        if (!armed)
            return 0;
        TRY(peer_simple(k, OP_DISARM, 0, 0, false, &armed));
        struct cmd c = {.op = OP_COLLECT, .mask = FL_LANES_ALL, .budget = 64, .ms = 0};
        struct rec *r;
        uint32_t n;
        TRY(peer_do(k, &c, false, &armed, &r, &n));
        EXPECT(n == 0, "%s: packets arrived that nobody sent", k->name);
    }
    EXPECT(0, "%s: ->arm says work is waiting 50 times with nothing sent", k->name);
}

static int check_wake(struct link *k)
{
    int res;
    /* a packet sent before the arm: "work waiting", or a readable fd */
    TRY(send_ok(k, FL_LANE_REQ, 1, 0, false));
    TRY(peer_simple(k, OP_ARM, FL_LANES_ALL, 0, false, &res));
    if (!res) {
        int woke;
        TRY(peer_simple(k, OP_WAIT_FD, 0, WAKE_MS, false, &woke));
        EXPECT(woke,
               "%s: a packet waited, ->arm said sleep and ->fd stayed quiet: a lost "
               "wake-up",
               k->name);
    }
    TRY(peer_simple(k, OP_DISARM, 0, 0, false, &res));
    TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
    /* a packet sent after the arm said sleep, on each lane */
    for (unsigned lane = 0; lane < FL_LANES; lane++) {
        TRY(peer_arm_quiet(k));
        TRY(send_ok(k, lane, 1, 0, false));
        int woke;
        TRY(peer_simple(k, OP_WAIT_FD, 0, DEADLINE, false, &woke));
        EXPECT(woke, "%s: ->fd stayed quiet for a packet on lane %u sent while armed",
               k->name, lane);
        TRY(peer_simple(k, OP_DISARM, 0, 0, false, &res));
        TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
    }
    if (k->peer_side == &k->me)
        return 0;
    /* the driver sleeps, the peer sends */
    struct side *s = &k->me;
    for (int i = 0; i < 50 && s->tp->arm(s->ep, FL_LANES_ALL); i++) {
        s->tp->disarm(s->ep);
        TRY(progress(s));
    }
    struct cmd c = {
        .op = OP_SEND, .lane = FL_LANE_REQ, .first = k->sent[1][FL_LANE_REQ], .count = 1};
    struct rec *r;
    uint32_t n;
    TRY(peer_do(k, &c, true, &res, &r, &n));
    EXPECT(res == 1, "%s: the peer found no room for one packet", k->name);
    k->sent[1][FL_LANE_REQ]++;
    EXPECT(readable(s->tp->fd(s->ep), DEADLINE),
           "%s: ->fd of the armed driver stayed quiet for a packet the peer sent",
           k->name);
    s->tp->disarm(s->ep);
    uint64_t until = fl_now_ns() + (uint64_t)DEADLINE * 1000000u;
    while (s->nlog < 1 && fl_now_ns() < until) {
        TRY(progress(s));
        if (s->nlog < 1 && k->lossy) /* its datagram was lost: the peer sends again */
            TRY(peer_take(k, FL_LANES_ALL, 64, 0, 0, false));
    }
    TRY(check_recs(k, 1, s->log, s->nlog, FL_LANES_ALL, k->peer_side->rank));
    EXPECT(s->nlog == 1, "%s: the driver got %u packets, not 1", k->name, s->nlog);
    s->nlog = 0;
    return 0;
}

static int check_settled(struct link *k)
{
    struct side *s = &k->me;
    if (k->acks && k->peer_side != &k->me) {
        TRY(send_ok(k, FL_LANE_REQ, 1, 0, false));
        EXPECT(!s->tp->settled(s->ep),
               "%s: settled with a packet the peer has not even polled", k->name);
        TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
    }
    uint64_t until = fl_now_ns() + (uint64_t)DEADLINE * 1000000u;
    for (;;) {
        int peer_settled;
        TRY(peer_simple(k, OP_SETTLE, 0, 200, false, &peer_settled));
        TRY(progress(s));
        bool mine = s->tp->settled(s->ep);
        if (peer_settled && mine)
            return 0;
        char state[256] = "";
        if (s->tp->dump_peer)
            s->tp->dump_peer(s->ep, s->peer, state, sizeof state);
        EXPECT(fl_now_ns() < until,
               "%s: not settled within %u s of the last packet (the driver %s, the peer "
               "%s; the driver's view: %s)",
               k->name, DEADLINE / 1000, mine ? "is" : "is not",
               peer_settled ? "is" : "is not", state);
    }
}

static int check_contact(struct link *k)
{
    struct side *s = &k->me;
    int peer_says;
    if (k->peer_side == &k->me) {
        EXPECT(s->tp->in_contact(s->ep, s->peer),
               "%s: a rank is not in contact with itself", k->name);
        return 0;
    }
    TRY(peer_simple(k, OP_CONTACT, 0, 0, false, &peer_says));
    EXPECT(!s->tp->in_contact(s->ep, s->peer) && !peer_says,
           "%s: in contact before a packet went (the driver %d, the peer %d)", k->name,
           s->tp->in_contact(s->ep, s->peer), peer_says);
    TRY(send_ok(k, FL_LANE_REQ, 1, 0, false));
    EXPECT(s->tp->in_contact(s->ep, s->peer), "%s: a sender is not in contact", k->name);
    /* the receiver, once the packet reached it: it only ever received */
    TRY(peer_collect(k, FL_LANES_ALL, 64, 0));
    TRY(check_settled(k));
    TRY(peer_simple(k, OP_CONTACT, 0, 0, false, &peer_says));
    EXPECT(peer_says, "%s: a receiver is not in contact once the packet arrived",
           k->name);
    return 0;
}

static void on_reclaim(void *ctx, uint32_t src, unsigned lane, void *pkt, size_t len)
{
    struct side *s = ctx; /* the log of reclaimed packets */
    if (s->nlog < MAX_RECS)
        s->log[s->nlog++] = inspect(src, lane, pkt, len);
}

static int check_death(struct link *k)
{
    struct side *s = &k->me;
    /* packets the peer will never consume, and packets it finishes sending */
    uint32_t lost[FL_LANES], sent = 0;
    for (unsigned lane = 0; lane < FL_LANES; lane++) {
        lost[lane] = k->sent[0][lane];
        TRY(send_ok(k, lane, 5, 0, false));
        struct cmd c = {
            .op = OP_SEND, .lane = lane, .first = k->sent[1][lane], .count = 5};
        int res;
        struct rec *r;
        uint32_t n;
        TRY(peer_do(k, &c, true, &res, &r, &n));
        EXPECT(res == 5, "%s: the peer found room for %d of 5 packets", k->name, res);
        k->sent[1][lane] += 5;
        sent += 5;
    }
    bool slept = !s->tp->arm(s->ep, FL_LANES_ALL);
    kill(k->child, SIGKILL);
    int status;
    while (waitpid(k->child, &status, 0) < 0 && errno == EINTR)
        ;
    k->killed = true;
    if (slept) { /* what woke it: the death (shm) or a timer (channel) */
        EXPECT(readable(s->tp->fd(s->ep), DEADLINE + PEER_TMO),
               "%s: ->fd of an armed endpoint stayed quiet after its peer died", k->name);
        s->tp->disarm(s->ep);
    } else {
        s->tp->disarm(s->ep);
    }
    uint64_t until = fl_now_ns() + (uint64_t)(DEADLINE + PEER_TMO) * 1000000u;
    while (!s->downs) {
        EXPECT(fl_now_ns() < until, "%s: a killed peer never reported down", k->name);
        s->tp->check_peers(s->ep, on_packet, s);
        int got;
        if (!s->downs)
            TRY(poll_once(s, FL_LANES_ALL, 64, &got));
        if (!s->downs && !s->tp->arm(s->ep, FL_LANES_ALL))
            readable(s->tp->fd(s->ep), 50);
        s->tp->disarm(s->ep);
    }
    TRY(progress(s)); /* nothing may come after the report */
    EXPECT(s->downs == 1 && s->down_reason == FLIT_ERR_PEER_DOWN,
           "%s: peer_down called %u times, reason %d", k->name, s->downs,
           (int)s->down_reason);
    EXPECT(s->down_at == s->nlog, "%s: %u packets delivered after peer_down", k->name,
           s->nlog - s->down_at);
    TRY(check_recs(k, 1, s->log, s->nlog, FL_LANES_ALL, k->peer_side->rank));
    EXPECT(k->lossy || s->nlog == sent,
           "%s: %u of the %u packets the dead peer finished sending were delivered",
           k->name, s->nlog, sent);
    /* what it never consumed comes back, in order per lane, once */
    s->nlog = 0;
    s->tp->reclaim(s->ep, s->peer, on_reclaim, s);
    uint32_t want = 0;
    for (unsigned lane = 0; lane < FL_LANES; lane++) {
        want += k->sent[0][lane] - lost[lane];
        k->seen[0][lane] = lost[lane];
    }
    TRY(check_recs(k, 0, s->log, s->nlog, FL_LANES_ALL,
                   s->peer)); /* from its destination */
    EXPECT(s->nlog == want, "%s: ->reclaim handed back %u packets, not %u", k->name,
           s->nlog, want);
    s->nlog = 0;
    s->tp->reclaim(s->ep, s->peer, on_reclaim, s);
    EXPECT(s->nlog == 0, "%s: a second ->reclaim handed back %u packets again", k->name,
           s->nlog);
    flit_status st = FLIT_OK;
    void *p = s->tp->reserve(s->ep, s->peer, FL_LANE_REQ, 64, &st);
    EXPECT(!p && st == FLIT_ERR_PEER_DOWN,
           "%s: ->reserve to a dead peer answered %s with status %d", k->name,
           p ? "room" : "NULL", (int)st);
    return 0;
}

/* ---- the transports ---- */

static struct fl_fault_params faults;

static flit_status chan_mem_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    return fl_chan_open(&memnet_ops, a, out);
}

/* The interposer over inner, seeded with the suite's seed + rank. */
static flit_status faulty_open(const struct fl_dgram_ops *inner,
                               const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    struct fl_fault_params p = faults;
    p.seed += a->rank;
    return fl_fault_open(inner, &p, a, out);
}

static flit_status faulty_mem_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    return faulty_open(&memnet_ops, a, out);
}

static const struct fl_dgram_ops faulty_mem = FL_FAULT_DGRAM("memory", faulty_mem_open);

static flit_status chan_mem_faults_open(const struct fl_tp_open_args *a,
                                        struct fl_tp_ep **out)
{
    return fl_chan_open(&faulty_mem, a, out);
}

static flit_status udp_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    return fl_chan_open(&fl_dgram_udp, a, out);
}

static flit_status faulty_udp_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    return faulty_open(&fl_dgram_udp, a, out);
}

static const struct fl_dgram_ops faulty_udp = FL_FAULT_DGRAM("udp", faulty_udp_open);

static flit_status udp_faults_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    return fl_chan_open(&faulty_udp, a, out);
}

/* The channel over a datagram transport, as src/flit.c composes them. */
#define CHAN_TP(name_, open_)                                                            \
    {                                                                                    \
        .name = (name_), .reach = FL_REACH_HOST | FL_REACH_REMOTE, .open = (open_),      \
        FL_CHANNEL_OPS, FL_CHANNEL_COUNTERS                                              \
    }

static const struct fl_transport chan_mem = CHAN_TP("chan_mem", chan_mem_open);
static const struct fl_transport chan_mem_faults =
    CHAN_TP("chan_mem_faults", chan_mem_faults_open);
static const struct fl_transport udp = CHAN_TP("udp", udp_open);

#ifdef FLIT_HAVE_XDP
static flit_status xdp_dgram_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    return fl_xdp_open(&fl_dgram_udp, a, out);
}

static const struct fl_dgram_ops xdp_dgram = FL_XDP_DGRAM(xdp_dgram_open);

static flit_status xdp_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    return fl_chan_open(&xdp_dgram, a, out);
}

static const struct fl_transport xdp = CHAN_TP("xdp", xdp_open);
#endif

#ifdef FLIT_HAVE_OFI
static flit_status ofi_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    return fl_chan_open(&fl_dgram_ofi, a, out);
}

static const struct fl_setting *const ofi_tables[] = {fl_ofi_settings, NULL};
static const struct fl_transport ofi = {.name = "ofi",
                                        .reach = FL_REACH_HOST | FL_REACH_REMOTE,
                                        .settings = ofi_tables,
                                        .open = ofi_open,
                                        FL_CHANNEL_OPS,
                                        FL_CHANNEL_COUNTERS};
#endif

/* xdp: each rank in its host's network namespace (FLITNET_NS<rank>). */
static void enter_host(const struct fl_transport *tp, uint32_t rank)
{
    (void)tp;
    (void)rank;
#ifdef FLIT_HAVE_XDP
    if (tp != &xdp)
        return;
    char var[16], path[256];
    snprintf(var, sizeof var, "FLITNET_NS%u", rank);
    const char *ns = getenv(var);
    snprintf(path, sizeof path, "/run/netns/%s", ns ? ns : "");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
        die("xdp: cannot enter network namespace '%s': %s", path, strerror(errno));
    close(fd);
#endif
}
static const struct fl_transport udp_faults = CHAN_TP("udp_faults", udp_faults_open);

/* ---- broken transports: self with one rule broken each ---- */

static struct fl_transport broken;
static struct {
    uint8_t buf[2][8192];
    size_t len[2];
    unsigned lane;
    int held; /* -1: none; else which buf holds a packet not yet sent */
    int next; /* which buf the next reservation gets */
} swap = {.held = -1};

/* reserve gives our own buffer; commit sends the first of two packets of a
   lane after the second */
static void *swap_reserve(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                          flit_status *st)
{
    void *p = fl_tp_self.reserve(t, dst, lane, len, st);
    if (!p || len > sizeof swap.buf[0])
        return p;
    fl_tp_self.cancel(t, dst, lane, p);
    swap.next = swap.held == 0 ? 1 : 0;
    return swap.buf[swap.next];
}

static void send_copy(struct fl_tp_ep *t, uint32_t dst, unsigned lane, int b)
{
    flit_status st;
    void *p = fl_tp_self.reserve(t, dst, lane, swap.len[b], &st);
    if (!p)
        die("broken transport: no room to send a held packet");
    memcpy(p, swap.buf[b], swap.len[b]);
    fl_tp_self.commit(t, dst, lane, p, swap.len[b], 0);
}

static void swap_commit(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt,
                        size_t len, unsigned flags)
{
    (void)flags;
    if (pkt != swap.buf[0] && pkt != swap.buf[1]) {
        fl_tp_self.commit(t, dst, lane, pkt, len, flags);
        return;
    }
    int b = pkt == swap.buf[0] ? 0 : 1;
    swap.len[b] = len;
    if (swap.held < 0) { /* keep it back */
        swap.held = b;
        swap.lane = lane;
        return;
    }
    send_copy(t, dst, lane, b);
    send_copy(t, dst, swap.lane, swap.held);
    swap.held = -1;
}

static void swap_cancel(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt)
{
    if (pkt != swap.buf[0] && pkt != swap.buf[1])
        fl_tp_self.cancel(t, dst, lane, pkt);
}

/* arm says "sleep" even with a packet waiting (and then is not armed) */
static bool lose_arm(struct fl_tp_ep *t, unsigned lane_mask)
{
    (void)fl_tp_self.arm(t, lane_mask);
    return false;
}

/* cancel sends the packet instead */
static void leaky_cancel(struct fl_tp_ep *t, uint32_t dst, unsigned lane, void *pkt)
{
    fl_tp_self.commit(t, dst, lane, pkt, 200, 0);
}

/* ---- setting up ---- */

static void open_side(struct side *s, const struct fl_transport *tp, uint32_t rank,
                      uint32_t size, uint64_t job)
{
    static const uint32_t one_host[2] = {0, 0}, two_hosts[2] = {0, 1};
    const uint32_t *host_of = one_host;
#ifdef FLIT_HAVE_XDP
    if (tp == &xdp)
        host_of = two_hosts; /* as flit_init sees ranks in namespaces of their own */
#endif
    (void)two_hosts;
    enter_host(tp, rank);
    s->tp = tp;
    s->rank = rank;
    s->peer = size == 1 ? rank : 1 - rank;
    s->log = calloc(MAX_RECS, sizeof *s->log);
    /* The channel's block is larger: its gauges follow the transports'. */
    s->counters =
        calloc(1, tp->counters_size > sizeof *s->counters ? tp->counters_size
                                                          : sizeof *s->counters);
    if (!s->log || !s->counters)
        die("out of memory");
    struct fl_tp_open_args a = {.job_id = job,
                                .rank = rank,
                                .size = size,
                                .segment_fd = -1,
                                .host_of = host_of,
                                .max_packet = FL_PACKET_MAX,
                                .counters = s->counters,
                                .peer_down = on_down,
                                .up_ctx = s};
    flit_status st = tp->open(&a, &s->ep);
    if (st == FLIT_ERR_NOT_SUPPORTED)
        die("%s: the transport refuses to open (FLIT_TRANSPORT set?)", tp->name);
    if (st != FLIT_OK)
        die("%s: open failed: %d", tp->name, (int)st);
#ifdef FLIT_HAVE_XDP
    char line[256];
    if (tp == &xdp &&
        (tp->dump_peer(s->ep, s->peer, line, sizeof line), strstr(line, "no xdp")))
        die("xdp: rank %u: AF_XDP did not attach (%s; the warning above says why)", rank,
            line);
#endif
}

/* Each side publishes its address and connects to the other's. */
static void connect_side(struct side *s, int ctl)
{
    uint8_t mine[256], theirs[256];
    size_t len = sizeof mine;
    uint32_t tlen;
    if (s->tp->address(s->ep, mine, &len) != FLIT_OK)
        die("%s: ->address failed", s->tp->name);
    uint32_t l32 = (uint32_t)len;
    write_all(ctl, &l32, sizeof l32);
    write_all(ctl, mine, len);
    if (!read_all(ctl, &tlen, sizeof tlen) || tlen > sizeof theirs ||
        !read_all(ctl, theirs, tlen))
        die("rank %u: the other rank went away while connecting", s->rank);
    if (!s->tp->reachable(s->ep, s->peer, theirs, tlen))
        die("%s: rank %u does not reach rank %u by its address", s->tp->name, s->rank,
            s->peer);
    if (s->tp->connect(s->ep, s->peer, theirs, tlen) != FLIT_OK)
        die("%s: ->connect failed", s->tp->name);
    uint8_t b = 1; /* both connected before either drops its rendezvous */
    write_all(ctl, &b, 1);
    if (!read_all(ctl, &b, 1))
        die("rank %u: the other rank went away while connecting", s->rank);
    s->tp->connected(s->ep);
}

static void open_link(struct link *k, const struct fl_transport *tp)
{
    memset(k, 0, sizeof *k);
    k->name = tp->name;
    k->ctl = -1;
    uint64_t job = ((uint64_t)getpid() << 20) ^ fl_now_ns();
    if (tp == &fl_tp_self || tp == &broken) {
        open_side(&k->me, tp, 0, 1, job);
        k->peer_side = &k->me;
        return;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        static struct side child;
        close(sv[0]);
        open_side(&child, tp, 1, 2, job);
        connect_side(&child, sv[1]);
        child_main(&child, sv[1]);
    }
    close(sv[1]);
    k->child = pid;
    k->ctl = sv[0];
    k->acks = tp != &fl_tp_shm;
    k->lossy = tp == &chan_mem_faults || tp == &udp_faults;
    static struct side remote = {.rank = 1};
    k->peer_side = &remote;
    open_side(&k->me, tp, 0, 2, job);
    connect_side(&k->me, k->ctl);
}

static void close_link(struct link *k)
{
    if (k->ctl >= 0) {
        if (!k->killed) {
            struct cmd c = {.op = OP_QUIT};
            write_all(k->ctl, &c, sizeof c);
            int status;
            while (waitpid(k->child, &status, 0) < 0 && errno == EINTR)
                ;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("%s: the peer process failed (status 0x%x)", k->name, status);
        }
        close(k->ctl);
    }
    k->me.tp->close(k->me.ep);
    free(k->me.log);
    free(k->me.counters);
}

struct check {
    const char *name;
    int (*fn)(struct link *k);
    bool needs_peer; /* another process */
};

static const struct check checks[] = {
    {"contact", check_contact, false}, /* first: the pair has carried nothing */
    {"cancel", check_cancel, false},   {"more", check_more, false},
    {"order", check_order, false},     {"budget", check_budget, false},
    {"lanes", check_lanes, false},     {"lent", check_lent, false},
    {"room", check_room, false},       {"wake", check_wake, false},
    {"settled", check_settled, false}, {"death", check_death, true},
};

/* Runs every check on tp; the number that failed. */
/* Runs checks[from .. to) on a fresh link; the number that failed. */
static int run_checks(const struct fl_transport *tp, bool quiet, size_t from, size_t to)
{
    struct link k;
    int failed = 0;
    open_link(&k, tp);
    for (size_t i = from; i < to; i++) {
        if (checks[i].needs_peer && k.peer_side == &k.me)
            continue;
        uint64_t t0 = fl_now_ns();
        if (checks[i].fn(&k) != 0) {
            failed++;
            if (!quiet)
                fprintf(stderr, "FAIL %s %s: %s\n", k.name, checks[i].name, why);
            break; /* the link's state is unknown now */
        }
        if (!quiet)
            printf("ok   %s %s (%.2f s)\n", k.name, checks[i].name,
                   (double)(fl_now_ns() - t0) / 1e9);
    }
    uint64_t injected = FL_READ(k.me.counters->faults_injected);
    if (!failed && k.lossy && injected == 0) {
        fprintf(stderr, "FAIL %s: the fault interposer injected nothing\n", k.name);
        failed++;
    } else if (!failed && k.lossy && !quiet) {
        printf("     %s: %llu faults injected at rank 0\n", k.name,
               (unsigned long long)injected);
    }
    close_link(&k);
    return failed;
}

/* Every check; death on a link of its own, where a silent peer is given up
   after PEER_TMO (on the first one, a peer that is slow to be scheduled on
   a loaded machine must not be taken for dead). */
static int run_suite(const struct fl_transport *tp, bool quiet)
{
    size_t n = sizeof checks / sizeof checks[0];
    fl_cfg.peer_timeout_ms = 120000;
    int failed = run_checks(tp, quiet, 0, n - 1);
    fl_cfg.peer_timeout_ms = PEER_TMO;
    if (!failed && tp != &fl_tp_self && tp != &broken)
        failed = run_checks(tp, quiet, n - 1, n);
    return failed;
}

/* The suite on self with one op broken must fail, naming the rule. */
static int expect_caught(const char *what, const char *needle)
{
    swap.held = -1;
    int failed = run_suite(&broken, true);
    if (!failed || !strstr(why, needle)) {
        fprintf(stderr, "FAIL broken %s: the suite %s\n", what,
                failed ? "failed, but not for that reason:" : "passed it");
        if (failed)
            fprintf(stderr, "  %s\n", why);
        return 1;
    }
    printf("ok   broken %s caught: %s\n", what, why);
    return 0;
}

static int run_broken(void)
{
    int bad = 0;
    broken = fl_tp_self;
    broken.reserve = swap_reserve;
    broken.commit = swap_commit;
    broken.cancel = swap_cancel;
    bad += expect_caught("commit that swaps two packets of a lane", "out of order");
    broken = fl_tp_self;
    broken.arm = lose_arm;
    bad += expect_caught("arm that loses a wake-up", "lost wake-up");
    broken = fl_tp_self;
    broken.cancel = leaky_cancel;
    bad += expect_caught("cancel that sends", "out of order, lost or twice");
    /* and self itself passes, so the failures above are the broken ops' */
    bad += run_suite(&fl_tp_self, true);
    return bad;
}

/* The xdp instance, or a skip (77) saying what is missing. */
static const struct fl_transport *xdp_transport(void)
{
#ifdef FLIT_HAVE_XDP
    if (!getenv("FLITNET_NS0") || !getenv("FLITNET_NS1")) {
        printf("SKIP: xdp runs between two network namespaces: under netns.sh run "
               "(ctest -R conformance.xdp)\n");
        exit(77);
    }
    return &xdp;
#else
    printf("SKIP: this flit was built without AF_XDP (Debian: libxdp-dev libbpf-dev "
           "clang)\n");
    exit(77);
#endif
}

/* The ofi instance on libfabric's provider prov (FLIT_OFI_PROVIDER), or a
   skip (77) saying what is missing. */
static const struct fl_transport *ofi_transport(const char *prov)
{
#ifdef FLIT_HAVE_OFI
    if (fl_ofi_load() != FLIT_OK) {
        printf("SKIP: libfabric cannot be loaded (Debian: libfabric1)\n");
        exit(77);
    }
    struct fi_info *h = fi_allocinfo(), *got = NULL;
    if (!h || !(h->fabric_attr->prov_name = strdup(prov)))
        die("out of memory");
    h->caps = FI_MSG;
    h->ep_attr->type = FI_EP_RDM;
    int ret = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &got);
    fi_freeinfo(h);
    fi_freeinfo(got);
    if (ret != 0) {
        printf("SKIP: libfabric has no provider '%s' for FI_EP_RDM here (fi_info -p %s: "
               "%s)\n",
               prov, prov, fi_strerror(-ret));
        exit(77);
    }
    setenv("FLIT_OFI_PROVIDER", prov, 1);
    return &ofi;
#else
    (void)prov;
    printf("SKIP: this flit was built without libfabric (Debian: libfabric-dev)\n");
    exit(77);
#endif
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: conformance_test self|shm|chan_mem|chan_mem_faults|udp|udp_faults|"
            "xdp|ofi_PROVIDER|toy|broken");
    signal(SIGPIPE, SIG_IGN);
    unsetenv("FLIT_TRANSPORT");
    if (fl_build_settings() != FLIT_OK || fl_config_load() != FLIT_OK)
        die("bad FLIT_* settings");
    fl_shm_cfg.ring_bytes = 256 << 10;
    const char *name = argv[1];
    const struct fl_transport *tp = NULL;
    faults = (struct fl_fault_params){.seed = 77,
                                      .drop_ppm = 50000,
                                      .dup_ppm = 30000,
                                      .reorder_ppm = 50000,
                                      .delay_ppm = 30000,
                                      .delay_ns = 2000000};
    if (strcmp(name, "broken") == 0)
        return run_broken() ? 1 : 0;
    if (strcmp(name, "self") == 0) {
        tp = &fl_tp_self;
    } else if (strcmp(name, "shm") == 0) {
        tp = &fl_tp_shm;
    } else if (strcmp(name, "chan_mem") == 0 || strcmp(name, "chan_mem_faults") == 0) {
        if (memnet_create() != 0)
            die("cannot map the memory network: %s", strerror(errno));
        tp = strcmp(name, "chan_mem") == 0 ? &chan_mem : &chan_mem_faults;
    } else if (strcmp(name, "udp") == 0 || strcmp(name, "udp_faults") == 0) {
        tp = strcmp(name, "udp") == 0 ? &udp : &udp_faults;
    } else if (strcmp(name, "xdp") == 0) {
        tp = xdp_transport();
    } else if (strncmp(name, "ofi_", 4) == 0) {
        tp = ofi_transport(name + 4);
    }
#ifdef FLIT_TOY_TRANSPORT
    extern const struct fl_transport fl_tp_toy; /* tests/toy: defined outside src/ */
    if (strcmp(name, "toy") == 0)
        tp = &fl_tp_toy;
#endif
    if (!tp)
        die("unknown transport '%s'", name);
    for (int k = 0; tp->settings && tp->settings[k]; k++) /* one outside the build */
        if (fl_config_add(tp->settings[k]) != FLIT_OK || fl_config_load() != FLIT_OK)
            die("bad FLIT_* settings");
    return run_suite(tp, false) ? 1 : 0;
}
