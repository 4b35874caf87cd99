/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ofi_flood: libfabric's own message rate, the floor beside flit's over
 * FLIT_TRANSPORT=ofi (bench/ofi_bench.sh, make bench-ofi).
 *
 *     ofi_flood PROVIDER [--size B] [--count N] [--reps R]
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
 */
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
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

/* The provider's RDM endpoint with messages, or NULL. */
static struct fi_info *find(const char *prov)
{
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    if (!hints)
        die("fi_allocinfo", -FI_ENOMEM);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
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

static void open_side(struct side *s, const char *prov, size_t size, unsigned nbufs)
{
    if (!(s->info = find(prov)))
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

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s PROVIDER [--size B] [--count N] [--reps R]\n"
            "  N a multiple of %u; R at most %d\n",
            prog, ACK_EVERY, MAX_REPS);
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        usage();
    const char *prov = argv[1];
    size_t size = 8;
    uint64_t count = 51200;
    int reps = 5;
    for (int i = 2; i < argc; i += 2) {
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
    struct fi_info *probe = find(prov);
    if (!probe) {
        fprintf(
            stderr,
            "%s: no provider '%s' offers FI_EP_RDM with FI_MSG here (fi_info -p %s)\n",
            prog, prov, prov);
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
    if (child == 0) {
        close(sv[0]);
        open_side(&s, prov, size, RX_BUFS);
        for (unsigned i = 0; i < RX_BUFS; i++)
            post_rx(&s, i);
        exchange(&s, sv[1]);
        /* warm-up run, then reps; each run's buffers are posted before
           the sender is told to go */
        char go = 1;
        full_io(sv[1], &go, 1, true);
        receive(&s, warm, 1);
        receive(&s, count, reps);
        full_io(sv[1], &go, 1, false); /* the sender is done with us */
        close_side(&s);
        _exit(0);
    }
    close(sv[1]);
    open_side(&s, prov, size < 8 ? 8 : size, ACK_BUFS);
    for (unsigned i = 0; i < ACK_BUFS; i++)
        post_rx(&s, i);
    exchange(&s, sv[0]);
    char go;
    full_io(sv[0], &go, 1, false);
    flood(&s, size, warm);
    uint64_t ns[MAX_REPS];
    for (int r = 0; r < reps; r++)
        ns[r] = flood(&s, size, count);
    while (s.tx_out)
        reap_tx(&s);
    full_io(sv[0], &go, 1, true);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: the receiving process failed\n", prog);
        return 1;
    }
    qsort(ns, (size_t)reps, sizeof ns[0], cmp_u64);
    double med =
        reps % 2 ? (double)ns[reps / 2] : (ns[reps / 2 - 1] + ns[reps / 2]) / 2.0;
    printf("%s: %s, %zu B messages, %u in flight, acknowledged every %u: "
           "%.3f M/s (median of %d runs of %llu; min %.3f, max %.3f)\n",
           prog, s.info->fabric_attr->prov_name, size, WINDOW, ACK_EVERY,
           (double)count * 1e3 / med, reps, (unsigned long long)count,
           (double)count * 1e3 / (double)ns[reps - 1],
           (double)count * 1e3 / (double)ns[0]);
    close_side(&s);
    return 0;
}
