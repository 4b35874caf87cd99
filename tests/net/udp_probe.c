/* SPDX-License-Identifier: BSD-3-Clause */
/* udp_probe: checks the test network that netns.sh builds, with plain UDP.
 *
 * Sends COUNT numbered datagrams to DEST and counts, per number, the copies
 * that arrive: none (lost), one, two (duplicated). The two sockets may live in
 * different network namespaces (-t, -r) of one process, so no second process
 * and no readiness handshake are needed: the receiving socket is bound before
 * the first send.
 *
 * Under netns.sh run, --from I --to J names the hosts by index: the sockets go
 * in namespaces $FLITNET_NS<I> and $FLITNET_NS<J>, the datagrams to
 * $FLITNET_ADDR<J>, as a flit test would find its hosts.
 *
 * With --loss L --dup D it checks the counts against what rules that drop L%
 * of the frames a host receives and duplicate D% of the packets a host sends
 * should give, in a wide band (six standard deviations, and at least half the
 * expected count either side): this tests the harness, not the random numbers.
 * --frames F says each datagram travels as F frames (fragments), each lost on
 * its own.
 * With --df it sends with DF set; --expect-emsgsize wants the send refused;
 * --expect-frag / --expect-nofrag read the IP counters of both namespaces.
 *
 * Exit: 0 pass, 1 fail, 2 usage, 77 cannot enter the namespaces (not root).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_MAX_SIZE      65507
#define PROBE_BATCH         32 /* sends between drains: far below any queue */
#define PROBE_RCVBUF        (8 << 20)
#define PROBE_FINAL_IDLE_MS 300 /* quiet time that ends the run */

enum frag_check { FRAG_ANY, FRAG_NONE, FRAG_ALL };

struct probe_opts {
    const char *tx_ns, *rx_ns;
    struct in_addr dest;
    unsigned count, size;
    double loss, dup; /* percent, as configured in netns.sh */
    unsigned frames;  /* frames per datagram: loss applies to each */
    int check_counts; /* --loss or --dup given */
    int df, expect_emsgsize;
    enum frag_check frag;
};

struct probe_counts {
    unsigned char *copies; /* per sequence number, saturating at 255 */
    unsigned received, unique, twice, more, corrupt;
    uint32_t rxq_drops; /* SO_RXQ_OVFL: dropped by our own socket */
};

struct ip_counters {
    long frag_creates, reasm_oks;
};

/* What the kernel counted around a run: fragments made by the sender,
 * datagrams reassembled by the receiver, and frames dropped by the input
 * backlogs of the CPUs (machine-wide): loss that is not the rules'. */
struct probe_snapshot {
    struct ip_counters tx, rx;
    long backlog_drops;
};

static void usage(void)
{
    fprintf(stderr,
            "usage: udp_probe [-t TX_NETNS] [-r RX_NETNS] [-n COUNT] [-s SIZE]\n"
            "                 [--loss PCT] [--dup PCT] [--frames F] [--df]\n"
            "                 [--expect-emsgsize] [--expect-frag | --expect-nofrag]\n"
            "                 DEST_ADDR | --from I --to J\n");
    exit(2);
}

/* Enter namespace NAME (a name under /run/netns or a path); -errno on error. */
static int netns_enter(const char *name)
{
    char path[512];
    int fd, rc = 0;

    if (strchr(name, '/'))
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "/run/netns/%s", name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        fprintf(stderr, "udp_probe: open %s: %s\n", path, strerror(-rc));
        return rc;
    }
    if (setns(fd, CLONE_NEWNET) < 0) {
        rc = -errno;
        fprintf(stderr, "udp_probe: setns %s: %s\n", path, strerror(-rc));
    }
    close(fd);
    return rc;
}

/* A socket made in NS (NULL: ours); a socket stays in the namespace it was
 * made in, whatever namespace its process moves to later. */
static int socket_in(const char *ns, int home)
{
    int fd, rc;

    rc = ns ? netns_enter(ns) : 0;
    if (rc < 0)
        exit(rc == -EPERM ? 77 : 1);
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (ns && setns(home, CLONE_NEWNET) < 0) {
        perror("udp_probe: setns back");
        exit(1);
    }
    if (fd < 0) {
        perror("udp_probe: socket");
        exit(1);
    }
    return fd;
}

/* Ip: FragCreates and ReasmOKs as NS sees them (/proc/self/net follows the
 * namespace of the reading thread). */
static struct ip_counters ip_counters_read(const char *ns, int home)
{
    struct ip_counters c = {-1, -1};
    char names[4096], values[4096];
    char *n, *v, *sn, *sv;
    FILE *f;

    if (ns && netns_enter(ns) < 0)
        exit(1);
    f = fopen("/proc/self/net/snmp", "r");
    if (ns && setns(home, CLONE_NEWNET) < 0)
        exit(1);
    if (!f)
        return c;
    /* The first two lines: "Ip: names..." then "Ip: values...". */
    if (fgets(names, sizeof names, f) && fgets(values, sizeof values, f)) {
        n = strtok_r(names, " \n", &sn);
        v = strtok_r(values, " \n", &sv);
        for (; n && v; n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv)) {
            if (!strcmp(n, "FragCreates"))
                c.frag_creates = atol(v);
            else if (!strcmp(n, "ReasmOKs"))
                c.reasm_oks = atol(v);
        }
    }
    fclose(f);
    return c;
}

/* Second column of softnet_stat, summed over the CPUs. */
static long backlog_drops_read(void)
{
    char line[512];
    unsigned long processed, dropped;
    long sum = 0;
    FILE *f = fopen("/proc/net/softnet_stat", "r");

    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx %lx", &processed, &dropped) == 2)
            sum += (long)dropped;
    fclose(f);
    return sum;
}

static struct probe_snapshot snapshot(const struct probe_opts *o, int home)
{
    struct probe_snapshot s;

    s.tx = ip_counters_read(o->tx_ns, home);
    s.rx = ip_counters_read(o->rx_ns, home);
    s.backlog_drops = backlog_drops_read();
    return s;
}

static void payload_fill(unsigned char *buf, unsigned size, uint32_t seq)
{
    uint32_t be = htonl(seq);

    memcpy(buf, &be, 4);
    for (unsigned i = 4; i < size; i++)
        buf[i] = (unsigned char)(seq * 31u + i);
}

/* The sequence number of a well-formed datagram, or -1. */
static long payload_check(const unsigned char *buf, long len, unsigned size,
                          unsigned count)
{
    uint32_t be, seq;

    if (len != (long)size)
        return -1;
    memcpy(&be, buf, 4);
    seq = ntohl(be);
    if (seq >= count)
        return -1;
    for (unsigned i = 4; i < size; i++)
        if (buf[i] != (unsigned char)(seq * 31u + i))
            return -1;
    return seq;
}

static void count_one(struct probe_counts *pc, long seq)
{
    pc->received++;
    if (seq < 0) {
        pc->corrupt++;
        return;
    }
    if (pc->copies[seq] < 255)
        pc->copies[seq]++;
    switch (pc->copies[seq]) {
    case 1:
        pc->unique++;
        break;
    case 2:
        pc->twice++;
        break;
    case 3:
        pc->more++;
        break;
    default:
        break;
    }
}

/* Read what is queued; wait at most WAIT_MS for the first datagram. Returns
 * how many were read. */
static unsigned drain(int fd, const struct probe_opts *o, struct probe_counts *pc,
                      unsigned char *buf, int wait_ms)
{
    char ctl[CMSG_SPACE(sizeof(uint32_t))];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct iovec iov = {.iov_base = buf, .iov_len = PROBE_MAX_SIZE + 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    struct cmsghdr *c;
    unsigned got = 0;
    ssize_t len;

    if (poll(&p, 1, wait_ms) <= 0)
        return 0;
    for (;;) {
        m.msg_control = ctl;
        m.msg_controllen = sizeof ctl;
        len = recvmsg(fd, &m, MSG_DONTWAIT);
        if (len < 0)
            return got;
        for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                memcpy(&pc->rxq_drops, CMSG_DATA(c), sizeof pc->rxq_drops);
        count_one(pc, payload_check(buf, len, o->size, o->count));
        got++;
    }
}

static int rx_setup(int fd, struct sockaddr_in *where)
{
    int one = 1, size = PROBE_RCVBUF;
    socklen_t len = sizeof *where;

    /* FORCE: beyond rmem_max (we are root), so that our socket is never
     * where the loss happens; RXQ_OVFL tells if it still was. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    where->sin_family = AF_INET;
    where->sin_port = 0;
    where->sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)where, sizeof *where) < 0 ||
        getsockname(fd, (struct sockaddr *)where, &len) < 0) {
        perror("udp_probe: bind");
        return -1;
    }
    return 0;
}

/* Sends everything; returns the errno of a refused send (0: none). */
static int run_probe(int tx, int rx, const struct sockaddr_in *to,
                     const struct probe_opts *o, struct probe_counts *pc)
{
    unsigned char *out = malloc(o->size), *in = malloc(PROBE_MAX_SIZE + 1);

    if (!out || !in) {
        fprintf(stderr, "udp_probe: out of memory\n");
        exit(1);
    }
    for (unsigned seq = 0; seq < o->count; seq++) {
        payload_fill(out, o->size, seq);
        if (sendto(tx, out, o->size, 0, (const struct sockaddr *)to, sizeof *to) < 0) {
            int err = errno;
            free(out);
            free(in);
            return err;
        }
        if (seq % PROBE_BATCH == PROBE_BATCH - 1)
            drain(rx, o, pc, in, 0);
    }
    while (drain(rx, o, pc, in, PROBE_FINAL_IDLE_MS) > 0)
        ;
    free(out);
    free(in);
    return 0;
}

/* Is COUNT a plausible outcome of N trials with probability P? */
static int in_band(const char *what, unsigned count, unsigned n, double p)
{
    double mean = n * p, q = p < 1 - p ? p : 1 - p;
    double half = fmax(6 * sqrt(n * p * (1 - p)), 0.5 * n * q);

    if (p <= 0 || p >= 1)
        half = 0;
    if (fabs(count - mean) <= half)
        return 1;
    fprintf(stderr, "udp_probe: FAIL: %s %u, expected %.1f +- %.1f\n", what, count, mean,
            half);
    return 0;
}

/* Each packet is duplicated with probability D at the sender, and each frame
 * of each copy then lost with probability L at the receiver. */
static int check_counts(const struct probe_opts *o, const struct probe_counts *pc)
{
    double l = o->loss / 100, d = o->dup / 100;
    double c = pow(1 - l, o->frames); /* one copy arrives whole */
    double p_some = (1 - d) * c + d * (1 - (1 - c) * (1 - c));
    double p_two = d * c * c;
    int ok = 1;

    ok &= in_band("arrived", pc->unique, o->count, p_some);
    ok &= in_band("arrived twice", pc->twice, o->count, p_two);
    return ok;
}

static int check_frag(const struct probe_opts *o, const struct probe_counts *pc,
                      const struct probe_snapshot *s0, const struct probe_snapshot *s1)
{
    long created = s1->tx.frag_creates - s0->tx.frag_creates;
    long reasm = s1->rx.reasm_oks - s0->rx.reasm_oks;
    long backlog = s1->backlog_drops - s0->backlog_drops;

    printf("frag_creates=%ld reasm_oks=%ld backlog_drops=%ld\n", created, reasm, backlog);
    if (backlog)
        fprintf(stderr,
                "udp_probe: note: the kernel's input backlog dropped %ld "
                "frames: some loss was not the rules'\n",
                backlog);
    if (o->frag == FRAG_NONE && (created || reasm)) {
        fprintf(stderr, "udp_probe: FAIL: datagrams were fragmented\n");
        return 0;
    }
    if (o->frag == FRAG_ALL && (reasm != (long)pc->received || created < 2L * o->count)) {
        fprintf(stderr, "udp_probe: FAIL: expected every datagram fragmented\n");
        return 0;
    }
    return 1;
}

static int verdict(const struct probe_opts *o, const struct probe_counts *pc)
{
    int ok = 1;

    if (pc->corrupt || pc->more) {
        fprintf(stderr, "udp_probe: FAIL: %u corrupt, %u arrived 3+ times\n", pc->corrupt,
                pc->more);
        ok = 0;
    }
    if (pc->rxq_drops) {
        fprintf(stderr, "udp_probe: FAIL: our receive queue dropped %u (probe bug)\n",
                (unsigned)pc->rxq_drops);
        ok = 0;
    }
    if (o->check_counts)
        ok &= check_counts(o, pc);
    else if (pc->unique != o->count || pc->twice) {
        fprintf(stderr, "udp_probe: FAIL: expected each datagram exactly once\n");
        ok = 0;
    }
    return ok;
}

static double parse_pct(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    if (*end || v < 0 || v > 100)
        usage();
    return v;
}

/* $FLITNET_<WHAT><I>, or a usage error. */
static const char *flitnet_env(const char *what, const char *index)
{
    char name[64];
    const char *v;

    snprintf(name, sizeof name, "FLITNET_%s%s", what, index);
    v = getenv(name);
    if (!v) {
        fprintf(stderr, "udp_probe: %s not set (run under netns.sh run)\n", name);
        exit(2);
    }
    return v;
}

static void parse_args(int argc, char **argv, struct probe_opts *o)
{
    static const struct option longs[] = {
        {"loss", required_argument, NULL, 'L'},
        {"dup", required_argument, NULL, 'U'},
        {"df", no_argument, NULL, 'D'},
        {"expect-emsgsize", no_argument, NULL, 'E'},
        {"expect-frag", no_argument, NULL, 'F'},
        {"expect-nofrag", no_argument, NULL, 'N'},
        {"frames", required_argument, NULL, 'R'},
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    const char *dest = NULL;
    int c;

    *o = (struct probe_opts){.count = 5000, .size = 64, .frames = 1};
    while ((c = getopt_long(argc, argv, "t:r:n:s:", longs, NULL)) != -1) {
        switch (c) {
        case 't':
            o->tx_ns = optarg;
            break;
        case 'r':
            o->rx_ns = optarg;
            break;
        case 'n':
            o->count = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 's':
            o->size = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'L':
            o->loss = parse_pct(optarg);
            o->check_counts = 1;
            break;
        case 'U':
            o->dup = parse_pct(optarg);
            o->check_counts = 1;
            break;
        case 'D':
            o->df = 1;
            break;
        case 'E':
            o->expect_emsgsize = 1;
            break;
        case 'F':
            o->frag = FRAG_ALL;
            break;
        case 'N':
            o->frag = FRAG_NONE;
            break;
        case 'R':
            o->frames = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'f':
            o->tx_ns = flitnet_env("NS", optarg);
            break;
        case 'o':
            o->rx_ns = flitnet_env("NS", optarg);
            dest = flitnet_env("ADDR", optarg);
            break;
        default:
            usage();
        }
    }
    if (!dest && optind == argc - 1)
        dest = argv[optind++];
    if (optind != argc || !dest || inet_pton(AF_INET, dest, &o->dest) != 1 ||
        o->count == 0 || o->size < 4 || o->size > PROBE_MAX_SIZE || o->frames == 0)
        usage();
}

/* Prints the outcome of a run that sent everything (or was refused with
 * ERR) and judges it. */
static int report(const struct probe_opts *o, const struct probe_counts *pc, int err,
                  const struct probe_snapshot *s0, const struct probe_snapshot *s1)
{
    if (o->expect_emsgsize) {
        printf("size=%u send: %s\n", o->size, err ? strerror(err) : "accepted");
        if (err == EMSGSIZE)
            return 1;
        fprintf(stderr, "udp_probe: FAIL: expected EMSGSIZE\n");
        return 0;
    }
    if (err) {
        fprintf(stderr, "udp_probe: FAIL: sendto: %s\n", strerror(err));
        return 0;
    }
    printf("size=%u sent=%u received=%u unique=%u lost=%u twice=%u loss_pct=%.2f "
           "dup_pct=%.2f\n",
           o->size, o->count, pc->received, pc->unique, o->count - pc->unique, pc->twice,
           100.0 * (o->count - pc->unique) / o->count, 100.0 * pc->twice / o->count);
    return verdict(o, pc) & check_frag(o, pc, s0, s1);
}

int main(int argc, char **argv)
{
    struct probe_opts o;
    struct probe_counts pc = {0};
    struct probe_snapshot s0, s1;
    struct sockaddr_in to;
    int home, tx, rx, err, pmtu, ok;

    parse_args(argc, argv, &o);
    home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) {
        perror("udp_probe: /proc/self/ns/net");
        return 1;
    }
    rx = socket_in(o.rx_ns, home);
    tx = socket_in(o.tx_ns, home);
    pmtu = o.df ? IP_PMTUDISC_DO : IP_PMTUDISC_DONT;
    setsockopt(tx, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
    pc.copies = calloc(o.count, 1);
    if (!pc.copies || rx_setup(rx, &to) < 0)
        return 1;
    to.sin_addr = o.dest;

    s0 = snapshot(&o, home);
    err = run_probe(tx, rx, &to, &o, &pc);
    s1 = snapshot(&o, home);
    ok = report(&o, &pc, err, &s0, &s1);
    free(pc.copies);
    close(tx);
    close(rx);
    close(home);
    return ok ? 0 : 1;
}
