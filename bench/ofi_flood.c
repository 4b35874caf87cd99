/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ofi_flood: libfabric's own message rate, and its own one-sided write
 * ping-pong: the floors beside flit's over FLIT_TRANSPORT=ofi
 * (bench/ofi_bench.sh, make bench-ofi).
 *
 *     ofi_flood PROVIDER [--size B] [--count N] [--reps R] [--put-pingpong]
 *
 * Two processes (this one and a child) open an FI_EP_RDM endpoint each on
 * the provider and stream messages one way exactly as flit-bench streams
 * short AMs: at most 256 not yet acknowledged by the receiving program,
 * which answers every 128th with an 8-byte acknowledgement of its own. The
 * sender times N messages from its first send to the last
 * acknowledgement; R such runs after a warm-up, and the median is printed,
 * in millions of messages a second. The receiver reposts each buffer and
 * does not read its bytes (as flit's short AM handler reads only its
 * arguments). Names are exchanged over a socket pair; nothing touches the
 * network but the provider.
 *
 * --put-pingpong: instead, each side exposes 8 bytes (FI_REMOTE_WRITE) and
 * the two write a sequence number into each other's by turns, as
 * flit-bench's latency_put does with flit_rma_put: an fi_writemsg posted
 * with FI_INJECT and FI_TRANSMIT_COMPLETE (as flit's puts of the inject
 * size or less), the other side watching its memory while it reads its
 * completion queues (which moves a software provider on). N round trips a
 * run; the median run's one-way time is printed, in microseconds.
 */
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW    256u /* messages in flight, unacknowledged */
#define ACK_EVERY 128u
#define RX_BUFS   512u /* the receiver's posted buffers */
#define TX_SLOTS  1024u
#define ACK_BUFS  16u /* the sender's, for acknowledgements */
#define MAX_REPS  15

struct side {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *txcq, *rxcq;
    struct fid_ep *ep;
    struct fid_mr *mr;
    void *desc;
    fi_addr_t peer;
    uint8_t *mem; /* rx buffers, then one tx buffer */
    size_t buf;   /* bytes of one rx buffer */
    /* --put-pingpong: the word peers write (its registration, key and
       address as the peer names it) and the peer's. */
    _Atomic uint64_t *flag;
    struct fid_mr *flag_mr;
    uint64_t their_key, their_addr;
    struct fi_context2 rx_ctx[RX_BUFS], tx_ctx[TX_SLOTS];
    unsigned tx_next, tx_out;
};

static const char *prog = "ofi_flood";

static void die(const char *what, int ret)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, fi_strerror(ret < 0 ? -ret : ret));
    exit(1);
}

static void check(const char *what, int ret)
{
    if (ret != 0)
        die(what, ret);
}

/* The provider's RDM endpoint with messages (rma: and writes into exposed
   memory), or NULL. */
static struct fi_info *find(const char *prov, bool rma)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    if (!hints)
        die("fi_allocinfo", -FI_ENOMEM);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | (rma ? FI_RMA | FI_WRITE | FI_REMOTE_WRITE : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(prov);
    if (fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info) != 0)
        info = NULL;
    fi_freeinfo(hints);
    return info;
}

static void open_side(struct side *s, const char *prov, size_t size, unsigned nbufs,
                      bool rma)
{
    if (!(s->info = find(prov, rma)))
        die("fi_getinfo", -FI_ENODATA);
    check("fi_fabric", fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
    check("fi_domain", fi_domain(s->fabric, s->info, &s->domain, NULL));
    struct fi_av_attr av = {.type = FI_AV_TABLE, .count = 2};
    check("fi_av_open", fi_av_open(s->domain, &av, &s->av, NULL));
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_CONTEXT, .size = 4096};
    check("fi_cq_open (tx)", fi_cq_open(s->domain, &cq, &s->txcq, NULL));
    check("fi_cq_open (rx)", fi_cq_open(s->domain, &cq, &s->rxcq, NULL));
    check("fi_endpoint", fi_endpoint(s->domain, s->info, &s->ep, NULL));
    check("fi_ep_bind (av)", fi_ep_bind(s->ep, &s->av->fid, 0));
    check("fi_ep_bind (tx)", fi_ep_bind(s->ep, &s->txcq->fid, FI_TRANSMIT));
    check("fi_ep_bind (rx)", fi_ep_bind(s->ep, &s->rxcq->fid, FI_RECV));
    check("fi_enable", fi_enable(s->ep));

    s->buf = size < 8 ? 8 : (size + 63) & ~(size_t)63;
    size_t len = s->buf * (nbufs + 1);
    if (posix_memalign((void **)&s->mem, 4096, len) != 0)
        die("posix_memalign", -FI_ENOMEM);
    memset(s->mem, 0x5a, len);
    if (s->info->domain_attr->mr_mode & FI_MR_LOCAL) {
        check("fi_mr_reg", fi_mr_reg(s->domain, s->mem, len, FI_SEND | FI_RECV, 0, 1, 0,
                                     &s->mr, NULL));
        if (s->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
            check("fi_mr_bind", fi_mr_bind(s->mr, &s->ep->fid, 0));
            check("fi_mr_enable", fi_mr_enable(s->mr));
        }
        s->desc = fi_mr_desc(s->mr);
    }
}

static void close_side(struct side *s)
{
    fi_close(&s->ep->fid);
    if (s->mr)
        fi_close(&s->mr->fid);
    if (s->flag_mr)
        fi_close(&s->flag_mr->fid);
    free((void *)s->flag);
    fi_close(&s->rxcq->fid);
    fi_close(&s->txcq->fid);
    fi_close(&s->av->fid);
    fi_close(&s->domain->fid);
    fi_close(&s->fabric->fid);
    fi_freeinfo(s->info);
    free(s->mem);
}

/* n bytes to (out) or from the peer's socket, all of them. */
static void full_io(int fd, void *p, size_t n, bool out)
{
    uint8_t *b = p;
    while (n) {
        ssize_t k = out ? write(fd, b, n) : read(fd, b, n);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            die(out ? "writing to the peer's socket"
                    : "reading the peer's socket (it exited?)",
                -FI_EIO);
        }
        b += k;
        n -= (size_t)k;
    }
}

/* Each side's address to the other over fd, inserted as s->peer. */
static void exchange(struct side *s, int fd)
{
    char name[256], theirs[256];
    size_t len = sizeof name;
    check("fi_getname", fi_getname(&s->ep->fid, name, &len));
    uint32_t n = (uint32_t)len, m;
    full_io(fd, &n, sizeof n, true);
    full_io(fd, name, len, true);
    full_io(fd, &m, sizeof m, false);
    if (m > sizeof theirs)
        die("the peer's name is too long", -FI_EINVAL);
    full_io(fd, theirs, m, false);
    if (fi_av_insert(s->av, theirs, 1, &s->peer, 0, NULL) != 1)
        die("fi_av_insert", -FI_EINVAL);
}

static void fail_cq(struct fid_cq *cq, const char *which)
{
    struct fi_cq_err_entry e = {0};
    fi_cq_readerr(cq, &e, 0);
    fprintf(stderr, "%s: %s completion failed: %s (%s)\n", prog, which,
            fi_strerror(e.err), fi_cq_strerror(cq, e.prov_errno, e.err_data, NULL, 0));
    exit(1);
}

static void reap_tx(struct side *s)
{
    struct fi_cq_entry c[64];
    ssize_t k = fi_cq_read(s->txcq, c, 64);
    if (k == -FI_EAVAIL)
        fail_cq(s->txcq, "send");
    if (k > 0)
        s->tx_out -= (unsigned)k;
}

static void post_rx(struct side *s, unsigned i)
{
    ssize_t ret;
    while ((ret = fi_recv(s->ep, s->mem + (size_t)i * s->buf, s->buf, s->desc,
                          FI_ADDR_UNSPEC, &s->rx_ctx[i])) == -FI_EAGAIN)
        reap_tx(s);
    check("fi_recv", (int)ret);
}

static void send_one(struct side *s, const void *buf, size_t len)
{
    while (s->tx_out >= TX_SLOTS)
        reap_tx(s);
    ssize_t ret;
    struct fi_context2 *ctx = &s->tx_ctx[s->tx_next++ % TX_SLOTS];
    while ((ret = fi_send(s->ep, buf, len, s->desc, s->peer, ctx)) == -FI_EAGAIN)
        reap_tx(s);
    check("fi_send", (int)ret);
    s->tx_out++;
}

/* Receive completions read: each buffer posted again. */
static unsigned take_rx(struct side *s)
{
    struct fi_cq_entry c[64];
    ssize_t k = fi_cq_read(s->rxcq, c, 64);
    if (k == -FI_EAVAIL)
        fail_cq(s->rxcq, "receive");
    if (k <= 0)
        return 0;
    for (ssize_t i = 0; i < k; i++)
        post_rx(s, (unsigned)((struct fi_context2 *)c[i].op_context - s->rx_ctx));
    return (unsigned)k;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The receiver: n messages a run, an acknowledgement after every
   ACK_EVERY, for runs runs. */
static void receive(struct side *s, uint64_t n, int runs)
{
    uint8_t *ack = s->mem + (size_t)RX_BUFS * s->buf;
    for (int r = 0; r < runs; r++) {
        uint64_t got = 0, since = 0;
        while (got < n) {
            unsigned k = take_rx(s);
            got += k;
            since += k;
            while (since >= ACK_EVERY) {
                send_one(s, ack, 8);
                since -= ACK_EVERY;
            }
            reap_tx(s);
        }
    }
    while (s->tx_out)
        reap_tx(s);
}

/* The sender: n messages of size bytes, at most WINDOW unacknowledged;
   the nanoseconds from the first send to the last acknowledgement. */
static uint64_t flood(struct side *s, size_t size, uint64_t n)
{
    const uint8_t *data = s->mem + (size_t)ACK_BUFS * s->buf;
    uint64_t sent = 0, acked = 0, t0 = now_ns();
    while (acked < n) {
        while (sent < n && sent - acked < WINDOW)
            send_one(s, data, size), sent++;
        acked += (uint64_t)take_rx(s) * ACK_EVERY;
        reap_tx(s);
    }
    return now_ns() - t0;
}

/* ---- --put-pingpong ---- */

/* The word the peer writes, exposed; its key and address told to the peer
   over fd, the peer's learned. */
static void expose_flag(struct side *s, int fd)
{
    if (posix_memalign((void **)&s->flag, 64, 64) != 0)
        die("posix_memalign", -FI_ENOMEM);
    memset((void *)s->flag, 0, 64);
    uint64_t mode = s->info->domain_attr->mr_mode;
    /* FI_WRITE too: with FI_MR_LOCAL the source of our own writes (the
       word after it) needs it */
    check("fi_mr_reg (flag)",
          fi_mr_reg(s->domain, (void *)s->flag, 64, FI_REMOTE_WRITE | FI_WRITE, 0, 2, 0,
                    &s->flag_mr, NULL));
    if (mode & FI_MR_ENDPOINT) {
        check("fi_mr_bind", fi_mr_bind(s->flag_mr, &s->ep->fid, 0));
        check("fi_mr_enable", fi_mr_enable(s->flag_mr));
    }
    uint64_t mine[2] = {fi_mr_key(s->flag_mr),
                        mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)s->flag : 0};
    uint64_t theirs[2];
    full_io(fd, mine, sizeof mine, true);
    full_io(fd, theirs, sizeof theirs, false);
    s->their_key = theirs[0];
    s->their_addr = theirs[1];
}

/* seq into the peer's word: one write, injected, as flit's small puts. */
static void write_seq(struct side *s, uint64_t seq)
{
    uint64_t *src = (uint64_t *)(uintptr_t)(s->flag + 1); /* registered with it */
    *src = seq;
    void *desc = fi_mr_desc(s->flag_mr);
    struct iovec iov = {.iov_base = src, .iov_len = 8};
    struct fi_rma_iov at = {.addr = s->their_addr, .len = 8, .key = s->their_key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &desc,
                             .iov_count = 1,
                             .addr = s->peer,
                             .rma_iov = &at,
                             .rma_iov_count = 1,
                             .context = &s->tx_ctx[s->tx_next++ % TX_SLOTS]};
    while (s->tx_out >= TX_SLOTS)
        reap_tx(s);
    ssize_t ret;
    while ((ret = fi_writemsg(s->ep, &msg,
                              FI_INJECT | FI_TRANSMIT_COMPLETE | FI_COMPLETION)) ==
           -FI_EAGAIN)
        reap_tx(s);
    check("fi_writemsg", (int)ret);
    s->tx_out++;
}

/* Until our word says seq, reading both completion queues meanwhile. */
static void watch_seq(struct side *s, uint64_t seq)
{
    while (atomic_load_explicit(s->flag, memory_order_acquire) != seq) {
        reap_tx(s);
        take_rx(s);
    }
}

/* n round trips, this side first (first) or second: the nanoseconds. */
static uint64_t putpong(struct side *s, uint64_t n, bool first, uint64_t *seq)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        if (first) {
            write_seq(s, ++*seq);
            watch_seq(s, ++*seq);
        } else {
            watch_seq(s, ++*seq);
            write_seq(s, ++*seq);
        }
    }
    return now_ns() - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s PROVIDER [--size B] [--count N] [--reps R] [--put-pingpong]\n"
            "  N a multiple of %u; R at most %d\n",
            prog, ACK_EVERY, MAX_REPS);
    exit(2);
}

/* The median of reps runs' nanoseconds (sorted). */
static double median_ns(uint64_t *ns, int reps)
{
    qsort(ns, (size_t)reps, sizeof ns[0], cmp_u64);
    return reps % 2 ? (double)ns[reps / 2] : (ns[reps / 2 - 1] + ns[reps / 2]) / 2.0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        usage();
    const char *prov = argv[1];
    size_t size = 8;
    uint64_t count = 51200;
    int reps = 5;
    bool pong = false;
    for (int i = 2; i < argc; i += 2) {
        if (strcmp(argv[i], "--put-pingpong") == 0) {
            pong = true;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        char *end;
        unsigned long long v = strtoull(argv[i + 1], &end, 10);
        if (*end || v == 0)
            usage();
        if (strcmp(argv[i], "--size") == 0 && v <= (1u << 20))
            size = (size_t)v;
        else if (strcmp(argv[i], "--count") == 0 && v % ACK_EVERY == 0 && v <= 1u << 30)
            count = v;
        else if (strcmp(argv[i], "--reps") == 0 && v <= MAX_REPS)
            reps = (int)v;
        else
            usage();
    }
    if (pong && size != 8)
        usage(); /* the ping-pong writes one 8-byte word */
    struct fi_info *probe = find(prov, pong);
    if (!probe) {
        fprintf(stderr,
                "%s: no provider '%s' offers FI_EP_RDM with FI_MSG%s here (fi_info -p "
                "%s)\n",
                prog, prov, pong ? " and FI_RMA" : "", prov);
        return 1;
    }
    fi_freeinfo(probe);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("ofi_flood: socketpair");
        return 1;
    }
    uint64_t warm = count / 10 / ACK_EVERY * ACK_EVERY + ACK_EVERY;
    pid_t child = fork();
    if (child < 0) {
        perror("ofi_flood: fork");
        return 1;
    }
    alarm(120); /* neither side waits for ever */
    struct side s = {0};
    uint64_t seq = 0;
    if (child == 0) {
        close(sv[0]);
        open_side(&s, prov, size, RX_BUFS, pong);
        for (unsigned i = 0; i < RX_BUFS; i++)
            post_rx(&s, i);
        exchange(&s, sv[1]);
        if (pong)
            expose_flag(&s, sv[1]);
        /* warm-up run, then reps; each run's buffers are posted before
           the sender is told to go */
        char go = 1;
        full_io(sv[1], &go, 1, true);
        if (pong) {
            putpong(&s, warm + count * (uint64_t)reps, false, &seq);
        } else {
            receive(&s, warm, 1);
            receive(&s, count, reps);
        }
        while (s.tx_out)
            reap_tx(&s);
        full_io(sv[1], &go, 1, false); /* the sender is done with us */
        close_side(&s);
        _exit(0);
    }
    close(sv[1]);
    open_side(&s, prov, size < 8 ? 8 : size, ACK_BUFS, pong);
    for (unsigned i = 0; i < ACK_BUFS; i++)
        post_rx(&s, i);
    exchange(&s, sv[0]);
    if (pong)
        expose_flag(&s, sv[0]);
    char go;
    full_io(sv[0], &go, 1, false);
    uint64_t ns[MAX_REPS];
    if (pong) {
        putpong(&s, warm, true, &seq);
        for (int r = 0; r < reps; r++)
            ns[r] = putpong(&s, count, true, &seq);
    } else {
        flood(&s, size, warm);
        for (int r = 0; r < reps; r++)
            ns[r] = flood(&s, size, count);
    }
    while (s.tx_out)
        reap_tx(&s);
    full_io(sv[0], &go, 1, true);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: the receiving process failed\n", prog);
        return 1;
    }
    double med = median_ns(ns, reps);
    if (pong)
        printf("%s: %s, 8 B writes ping-pong (FI_INJECT, FI_TRANSMIT_COMPLETE), one "
               "way: %.3f us (median of %d runs of %llu round trips; min %.3f, max "
               "%.3f)\n",
               prog, s.info->fabric_attr->prov_name, med / (2e3 * (double)count), reps,
               (unsigned long long)count, (double)ns[0] / (2e3 * (double)count),
               (double)ns[reps - 1] / (2e3 * (double)count));
    else
        printf("%s: %s, %zu B messages, %u in flight, acknowledged every %u: "
               "%.3f M/s (median of %d runs of %llu; min %.3f, max %.3f)\n",
               prog, s.info->fabric_attr->prov_name, size, WINDOW, ACK_EVERY,
               (double)count * 1e3 / med, reps, (unsigned long long)count,
               (double)count * 1e3 / (double)ns[reps - 1],
               (double)count * 1e3 / (double)ns[0]);
    close_side(&s);
    return 0;
}
