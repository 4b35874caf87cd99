/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opening and closing a libfabric endpoint (ofi.h, ep.h): the provider,
 * its fabric, domain, address vector, completion queues and memory, and
 * the address blob peers receive through the boot exchange.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "platform/le.h"
#include "platform/os.h"
#include "transport/ofi/ep.h"
#include "transport/ofi/ofi.h"
#include "util/log.h"

#define OFI_BLOB_HEAD 8u         /* magic, provider hash, name length */
#define OFI_MAGIC     0x4f46u    /* "OF" */
#define OFI_PAYLOAD   (8u << 10) /* a datagram, at most: eager on every provider */

/* The transport's settings (util/config.h), read at flit_init. */
static char provider_name[FL_CONFIG_WORD];
static int64_t multi_recv;
static int64_t early_puts = 1;
static int64_t mr_local;
static int64_t bounce_bytes = 16 << 10;
static int64_t rndv_bytes = 64 << 10;
enum { OFI_WAIT_AUTO, OFI_WAIT_FD, OFI_WAIT_POLL };
static const char *const wait_choices[] = {"auto", "fd", "poll", NULL};
static int64_t wait_mode = OFI_WAIT_AUTO;

const struct fl_setting fl_ofi_settings[] = {
    {"FLIT_OFI_PROVIDER", FL_SET_TEXT, NULL, 0, 0, 0, NULL,
     "libfabric's provider for FLIT_TRANSPORT=ofi (tcp, udp, verbs, efa, cxi, psm2, "
     "...; its utility provider is added by libfabric); unset: the first that offers "
     "what flit needs",
     .text = provider_name},
    {"FLIT_OFI_MULTI_RECV", FL_SET_BOOL, &multi_recv, 0, 0, 1, NULL,
     "1: receive into a few large buffers that take many datagrams each "
     "(FI_MULTI_RECV) where the provider offers it, for providers that report "
     "every message's completion before the buffer's release (tcp;ofi_rxm does, "
     "udp;ofi_rxd does not: docs/ofi.md); 0: a buffer per datagram"},
    {"FLIT_OFI_EARLY_PUTS", FL_SET_BOOL, &early_puts, 1, 0, 1, NULL,
     "1: a put no larger than the provider's inject size returns once it is "
     "posted (FI_INJECT), its landing waited for by the next flush or a put "
     "with FLIT_RMA_REMOTE_DONE, where the provider keeps writes and reads "
     "after writes in order; 0: every put waits until its bytes are in place "
     "at the owner (FI_DELIVERY_COMPLETE); puts larger than that and no larger "
     "than FLIT_OFI_BOUNCE_KB return at once too, their bytes copied into a "
     "bounce buffer"},
    {"FLIT_OFI_BOUNCE_KB", FL_SET_KB, &bounce_bytes, 16, 0, 256, "KiB",
     "puts and gets this size or smaller go through bounce buffers registered "
     "once (64 of them): an early put larger than the inject size returns once "
     "its bytes are copied, and where the provider asks for the program's memory "
     "to be registered (FI_MR_LOCAL) none is registered for them; 0: none"},
    {"FLIT_OFI_RNDV_KB", FL_SET_KB, &rndv_bytes, 64, 0, 1 << 20, "KiB",
     "stream and tagged messages this size or larger go by rendezvous where the "
     "provider offers one-sided operations: the sender registers its buffer for "
     "reading and the receiver takes the bytes with fi_read straight into the "
     "buffer its handler gives, instead of in datagrams through the channel; "
     "0: never"},
    {"FLIT_OFI_WAIT", FL_SET_ENUM, &wait_mode, OFI_WAIT_AUTO, 0, 2, NULL,
     "how a sleeping endpoint learns of a message: fd (the receive queue's wait "
     "object, FI_WAIT_FD: woken at once, but every message costs more: on "
     "tcp;ofi_rxm about 1.3 us, a write and a read of the provider's signalling "
     "socket), poll (no wait object: a sleeper looks every millisecond), auto "
     "(fd where this host's ranks outnumber its cores, so sleep soon and often; "
     "else poll)",
     .choices = wait_choices},
    {"FLIT_OFI_MR_LOCAL", FL_SET_BOOL, &mr_local, 0, 0, 1, NULL,
     "1: register memory for the endpoint's own side of sends, receives, puts "
     "and gets as a provider that asks for it (FI_MR_LOCAL: verbs, EFA, CXI) "
     "has flit do, even where the provider does not ask: how the tests run that "
     "path on tcp and udp; 0: only where the provider asks"},
    {NULL},
};

/* What flit's settings say about libfabric. */
struct ofi_settings {
    const char *provider; /* FLIT_OFI_PROVIDER, NULL: libfabric's first match */
    bool multi_recv;      /* FLIT_OFI_MULTI_RECV */
};

static struct ofi_settings settings(void)
{
    return (struct ofi_settings){.provider = provider_name[0] ? provider_name : NULL,
                                 .multi_recv = multi_recv != 0};
}

flit_status fl_ofi_fail(const struct fl_dgram *d, const char *what, int ret)
{
    fl_error("ofi (%s): %s: %s", d->prov[0] ? d->prov : "no provider", what,
             fi_strerror(ret < 0 ? -ret : ret));
    return ret == -FI_ENOMEM ? FLIT_ERR_NO_MEMORY : FLIT_ERR_SYSTEM;
}

/* A hash of the provider's name: peers on another provider are not ours. */
static uint16_t prov_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return (uint16_t)(h ^ h >> 16);
}

/* ---- choosing the provider ---- */

/* One-sided operations (rma.c) ask for remote memory access, and for
   sends kept behind the writes before them. */
#define RMA_CAPS  (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define RMA_ORDER FI_ORDER_SAW

static struct fi_info *hints_for(const struct ofi_settings *s, bool rma, bool multi)
{
    struct fi_info *h = fi_allocinfo();
    if (!h)
        return NULL;
    h->caps = FI_MSG | (rma ? RMA_CAPS : 0) | (multi ? FI_MULTI_RECV : 0);
    if (rma)
        h->tx_attr->msg_order = h->rx_attr->msg_order = RMA_ORDER;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->threading = FI_THREAD_DOMAIN; /* the endpoint serialises */
    h->domain_attr->av_type = FI_AV_TABLE;
    /* The modes handled: local buffers are registered when asked. */
    h->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    if (s->provider && !(h->fabric_attr->prov_name = strdup(s->provider))) {
        fi_freeinfo(h);
        return NULL;
    }
    return h;
}

/* The provider: the first that offers one-sided operations too, else the
   first that offers messages (puts and gets then go in packets); of each,
   with multi-receive buffers where offered (and not turned off). */
static flit_status choose(struct fl_dgram *d)
{
    struct ofi_settings s = settings();
    int ret = -FI_ENODATA;
    for (int rma = 1; rma >= 0 && ret == -FI_ENODATA; rma--) {
        for (int multi = s.multi_recv; multi >= 0 && ret == -FI_ENODATA; multi--) {
            struct fi_info *h = hints_for(&s, rma, multi);
            if (!h)
                return FLIT_ERR_NO_MEMORY;
            ret = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &d->info);
            fi_freeinfo(h);
            d->rma = rma && ret == 0;
            d->multi = multi && ret == 0;
        }
    }
    if (ret == -FI_ENODATA) {
        fl_error("ofi: no libfabric provider offers reliable datagrams (FI_EP_RDM, "
                 "FI_MSG)%s%s (fi_info -t FI_EP_RDM lists them)",
                 s.provider ? " named " : "", s.provider ? s.provider : "");
        return FLIT_ERR_NOT_SUPPORTED;
    }
    if (ret != 0)
        return fl_ofi_fail(d, "fi_getinfo", ret);
    snprintf(d->prov, sizeof d->prov, "%s", d->info->fabric_attr->prov_name);
    return FLIT_OK;
}

/* ---- memory and queues ---- */

int fl_ofi_reg(struct fl_dgram *d, const void *mem, size_t len, uint64_t access,
               uint64_t key, struct fid_mr **mr)
{
    int ret = fi_mr_reg(d->domain, mem, len, access, 0, key, 0, mr, NULL);
    if (ret == 0 && (d->info->domain_attr->mr_mode & FI_MR_ENDPOINT)) {
        ret = fi_mr_bind(*mr, &d->ep->fid, 0);
        if (ret == 0)
            ret = fi_mr_enable(*mr);
        if (ret != 0) {
            fi_close(&(*mr)->fid);
            *mr = NULL;
        }
    }
    return ret;
}

/* Registers [mem, mem + len) for local use where the provider asks
   (FI_MR_LOCAL), under key where the provider does not pick keys (0 and 1:
   the one-sided operations' keys are drawn, and drawn again if in use). */
static int reg_local(struct fl_dgram *d, void *mem, size_t len, uint64_t key,
                     struct fid_mr **mr, void **desc)
{
    if (!d->mr_local)
        return 0;
    int ret = fl_ofi_reg(d, mem, len, FI_SEND | FI_RECV, key, mr);
    if (ret == 0)
        *desc = fi_mr_desc(*mr);
    return ret;
}

/* Whether the receive queue is to have a wait object (FLIT_OFI_WAIT):
   under auto, where this host's ranks outnumber its cores (they sleep
   after a spin of microseconds, FLIT_SPIN_US); there a millisecond's
   look would cost every exchange with a sleeper that much, where
   elsewhere the object costs every message (open_queues). */
static bool wants_wait_fd(const struct fl_tp_open_args *a)
{
    if (wait_mode != OFI_WAIT_AUTO)
        return wait_mode == OFI_WAIT_FD;
    uint32_t here = 0;
    for (uint32_t r = 0; a->host_of && r < a->size; r++)
        here += a->host_of[r] == a->host_of[a->rank];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && here > (uint32_t)cpus;
}

/* The receive queue's wait object (FI_WAIT_FD), or a 1 ms timer when the
   provider has none or it is not wanted: a sleeper then looks every
   millisecond. A wait object costs every message: the provider signals
   it (tcp;ofi_rxm: a write to a socket pair) at each completion, and
   clears it as the queue is read (a read), ~1.3 us a message of an 8 B
   round trip's ~8 us on tcp;ofi_rxm here (fi_pingpong has none). */
static flit_status open_queues(struct fl_dgram *d, bool wait_fd)
{
    /* Room for every receive that can complete unread: one per posted
       buffer, or as many of the smallest datagram (a head and a channel
       header, padded) as the multi-receive buffers hold. */
    size_t rx_size =
        d->multi ? OFI_MULTI_BUFS * d->multi_size / OFI_MIN_DGRAM : OFI_RX_BUFS;
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA,
                              .size = rx_size,
                              .wait_obj = wait_fd ? FI_WAIT_FD : FI_WAIT_NONE};
    int ret = fi_cq_open(d->domain, &attr, &d->rxcq, NULL);
    if (ret == 0 && !wait_fd) {
        d->wait_fd = -1;
    } else if (ret == 0 && fi_control(&d->rxcq->fid, FI_GETWAIT, &d->wait_fd) != 0) {
        fi_close(&d->rxcq->fid);
        ret = -FI_ENOSYS;
    }
    if (ret != 0) {
        d->wait_fd = -1;
        attr.wait_obj = FI_WAIT_NONE;
        ret = fi_cq_open(d->domain, &attr, &d->rxcq, NULL);
    }
    if (ret != 0)
        return fl_ofi_fail(d, "fi_cq_open", ret);
    attr.wait_obj = FI_WAIT_NONE;
    attr.format = FI_CQ_FORMAT_MSG;
    attr.size = OFI_TX_BUFS + OFI_RMA_SLOTS;
    if ((ret = fi_cq_open(d->domain, &attr, &d->txcq, NULL)) != 0)
        return fl_ofi_fail(d, "fi_cq_open", ret);
    d->polling = d->wait_fd < 0;
    if (d->polling && wait_fd)
        fl_info("ofi (%s): no wait object on the completion queue: a sleeping "
                "endpoint looks every millisecond",
                d->prov);
    d->kick = d->polling ? timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)
                         : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN};
    struct itimerspec ms = {{0, 1000000}, {0, 1000000}};
    if (d->kick < 0 || d->epfd < 0 || epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->kick, &ev) ||
        (d->wait_fd >= 0 && epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->wait_fd, &ev)) ||
        (d->polling && timerfd_settime(d->kick, 0, &ms, NULL))) {
        fl_error("ofi (%s): cannot set up the wake-up descriptors: %s", d->prov,
                 strerror(errno));
        return FLIT_ERR_SYSTEM;
    }
    return FLIT_OK;
}

/* The datagrams' sizes, from the provider's largest message. */
static void sizes(struct fl_dgram *d)
{
    size_t max_msg = d->info->ep_attr->max_msg_size;
    d->payload = max_msg > OFI_PAYLOAD ? OFI_PAYLOAD - OFI_HEAD : max_msg - OFI_HEAD;
    d->payload &= ~(size_t)7; /* padded to 8, a datagram still fits */
    d->buf_size =
        (d->payload + OFI_HEAD + OFI_BUF_ALIGN - 1) & ~(size_t)(OFI_BUF_ALIGN - 1);
    d->multi_size = d->buf_size * OFI_MULTI_DGRAMS;
}

/* Multi-receive buffers are released when less than a datagram's room is
   left in them: set once the endpoint is enabled, before any receive is
   posted (fi_endpoint(3) allows it then; libfabric 1.17's shm provider
   crashed in fi_setopt before fi_enable). A provider that refuses the
   option gets a buffer per datagram. */
static void min_multi_recv(struct fl_dgram *d)
{
    if (!d->multi)
        return;
    size_t min = d->buf_size;
    int ret =
        fi_setopt(&d->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof min);
    if (ret != 0) {
        fl_info("ofi (%s): FI_OPT_MIN_MULTI_RECV refused (%s): a receive buffer per "
                "datagram",
                d->prov, fi_strerror(-ret));
        d->multi = false;
    }
}

static flit_status open_ep(struct fl_dgram *d, bool wait_fd)
{
    struct fi_av_attr av = {.type = FI_AV_TABLE, .count = d->size};
    int ret;
    sizes(d);
    const char *what = "fi_fabric";
    if ((ret = fi_fabric(d->info->fabric_attr, &d->fabric, NULL)) ||
        (what = "fi_domain", ret = fi_domain(d->fabric, d->info, &d->domain, NULL)) ||
        (what = "fi_av_open", ret = fi_av_open(d->domain, &av, &d->av, NULL)) ||
        (what = "fi_endpoint", ret = fi_endpoint(d->domain, d->info, &d->ep, NULL)))
        return fl_ofi_fail(d, what, ret);
    flit_status st = open_queues(d, wait_fd);
    if (st != FLIT_OK)
        return st;
    if ((what = "fi_ep_bind", ret = fi_ep_bind(d->ep, &d->av->fid, 0)) ||
        (ret = fi_ep_bind(d->ep, &d->txcq->fid, FI_TRANSMIT)) ||
        (ret = fi_ep_bind(d->ep, &d->rxcq->fid, FI_RECV)) ||
        (what = "fi_enable", ret = fi_enable(d->ep)))
        return fl_ofi_fail(d, what, ret);
    min_multi_recv(d);
    d->namelen = sizeof d->name;
    if ((ret = fi_getname(&d->ep->fid, d->name, &d->namelen)) != 0)
        return fl_ofi_fail(d, "fi_getname", ret);
    return FLIT_OK;
}

/* The buffers, registered where asked, receive ones posted. */
static flit_status open_buffers(struct fl_dgram *d)
{
    size_t rx_bytes =
        d->multi ? d->multi_size * OFI_MULTI_BUFS : d->buf_size * OFI_RX_BUFS;
    d->rx_mem = aligned_alloc(OFI_BUF_ALIGN, rx_bytes);
    d->tx_mem = aligned_alloc(OFI_BUF_ALIGN, d->buf_size * OFI_TX_BUFS);
    if (!d->rx_mem || !d->tx_mem)
        return FLIT_ERR_NO_MEMORY;
    int ret = reg_local(d, d->rx_mem, rx_bytes, 0, &d->rx_mr, &d->rx_desc);
    if (ret == 0)
        ret =
            reg_local(d, d->tx_mem, d->buf_size * OFI_TX_BUFS, 1, &d->tx_mr, &d->tx_desc);
    if (ret != 0)
        return fl_ofi_fail(d, "fi_mr_reg", ret);
    for (unsigned i = 0; i < OFI_TX_BUFS; i++) {
        d->tx[i].mem = d->tx_mem + i * d->buf_size;
        d->tx[i].next = d->tx_free;
        d->tx_free = &d->tx[i];
    }
    for (unsigned i = 0; d->multi && i < OFI_MULTI_BUFS; i++) {
        d->multis[i].mem = d->rx_mem + i * d->multi_size;
        if (!fl_ofi_post(d, &d->multis[i]))
            return FLIT_ERR_SYSTEM;
    }
    for (unsigned i = 0; !d->multi && i < OFI_RX_BUFS; i++) {
        d->rx[i].mem = d->rx_mem + i * d->buf_size;
        if (!fl_ofi_post(d, &d->rx[i]))
            return FLIT_ERR_SYSTEM;
    }
    return FLIT_OK;
}

/* ---- the datagram ops ---- */

static void ofi_close(struct fl_dgram *d);

static flit_status ofi_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    if (fl_ofi_load() != FLIT_OK)
        return FLIT_ERR_NOT_SUPPORTED; /* said; the peers are then unreachable */
    struct fl_dgram *d = calloc(1, sizeof *d);
    if (!d)
        return FLIT_ERR_NO_MEMORY;
    d->rank = a->rank;
    d->size = a->size;
    d->job_tag = (uint32_t)(a->job_id ^ a->job_id >> 32);
    d->counters = a->counters;
    d->wait_fd = d->kick = d->epfd = -1;
    d->peers = calloc(a->size, sizeof *d->peers);
    flit_status st = d->peers ? choose(d) : FLIT_ERR_NO_MEMORY;
    if (st == FLIT_OK) {
        d->mr_local = mr_local || (d->info->domain_attr->mr_mode & FI_MR_LOCAL);
        st = open_ep(d, wants_wait_fd(a));
    }
    if (st == FLIT_OK)
        st = open_buffers(d);
    if (st != FLIT_OK) {
        ofi_close(d);
        return st;
    }
    for (uint32_t r = 0; r < a->size; r++)
        d->peers[r].addr = FI_ADDR_NOTAVAIL;
    d->rma_max = d->info->ep_attr->max_msg_size ? d->info->ep_attr->max_msg_size : 1;
    if (d->rma_max > ((size_t)1 << 30))
        d->rma_max = (size_t)1 << 30;
    /* Early puts (rma.c) where later writes and reads keep behind them. */
    uint64_t order = FI_ORDER_WAW | FI_ORDER_RAW;
    d->bounce_size = d->rma ? (size_t)bounce_bytes : 0;
    if (d->rma && early_puts && (d->info->tx_attr->msg_order & order) == order) {
        d->early_max = d->info->tx_attr->inject_size;
        d->early_bounce = d->bounce_size > d->early_max;
    }
    d->pull_min = d->rma ? (size_t)rndv_bytes : 0;
    if (d->rma && fl_random_bytes(&d->next_key, sizeof d->next_key) != 0)
        d->next_key = fl_now_ns() ^ (uint64_t)(uintptr_t)d;
    if (a->rank == 0 && a->ep_index == 0)
        fl_info("ofi: provider %s, fabric %s, domain %s, %zu-byte datagrams%s, %s, %s%s",
                d->prov, d->info->fabric_attr->name, d->info->domain_attr->name,
                d->payload, d->multi ? " into multi-receive buffers" : "",
                d->polling ? "polled every ms" : "wait fd",
                d->rma ? "puts and gets by fi_write / fi_read"
                       : "puts and gets in packets",
                d->mr_local ? ", local memory registered (FI_MR_LOCAL)" : "");
    *out = d;
    return FLIT_OK;
}

static flit_status ofi_address(struct fl_dgram *d, void *buf, size_t *len)
{
    if (*len < OFI_BLOB_HEAD + d->namelen)
        return FLIT_ERR_INVALID_ARG;
    uint8_t *b = buf;
    fl_put16(b, OFI_MAGIC);
    fl_put16(b + 2, prov_hash(d->prov));
    fl_put32(b + 4, (uint32_t)d->namelen);
    memcpy(b + OFI_BLOB_HEAD, d->name, d->namelen);
    *len = OFI_BLOB_HEAD + d->namelen;
    return FLIT_OK;
}

/* A blob of our provider, with a name of our name's length. */
static bool ofi_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len)
{
    const uint8_t *b = blob;
    return rank != d->rank && rank < d->size && len == OFI_BLOB_HEAD + d->namelen &&
           fl_get16(b) == OFI_MAGIC && fl_get16(b + 2) == prov_hash(d->prov) &&
           fl_get32(b + 4) == d->namelen;
}

/* Kept; inserted in the address vector at first contact (io.c). */
static flit_status ofi_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                               size_t len)
{
    if (!ofi_reachable(d, rank, blob, len))
        return FLIT_ERR_UNREACHABLE;
    struct ofi_peer *p = &d->peers[rank];
    memcpy(p->name, (const uint8_t *)blob + OFI_BLOB_HEAD, d->namelen);
    p->namelen = d->namelen;
    return FLIT_OK;
}

static size_t ofi_max_payload(struct fl_dgram *d, uint32_t rank)
{
    (void)rank;
    return d->payload;
}

static void ofi_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    const uint8_t *name = rank == d->rank ? d->name : d->peers[rank].name;
    size_t n = rank == d->rank ? d->namelen : d->peers[rank].namelen;
    size_t got = len;
    buf[0] = '\0';
    if (n && !fi_av_straddr(d->av, name, buf, &got))
        buf[0] = '\0';
}

static void ofi_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    char addr[96];
    ofi_address_of(d, rank, addr, sizeof addr);
    bool contacted = rank != d->rank && d->peers[rank].contacted;
    snprintf(buf, len, "ofi %s %s, %s", d->prov, addr,
             contacted ? "in the address vector" : "not contacted");
}

static void close_fid(struct fid *f)
{
    if (f)
        fi_close(f);
}

static void ofi_close(struct fl_dgram *d)
{
    fl_ofi_rma_close(d);
    close_fid(d->ep ? &d->ep->fid : NULL);
    close_fid(d->rx_mr ? &d->rx_mr->fid : NULL);
    close_fid(d->tx_mr ? &d->tx_mr->fid : NULL);
    /* After the endpoint, as its memory below: an operation abandoned after
       FLIT_PEER_TIMEOUT may use a bounce buffer until then. */
    close_fid(d->bounce_mr ? &d->bounce_mr->fid : NULL);
    close_fid(d->rxcq ? &d->rxcq->fid : NULL);
    close_fid(d->txcq ? &d->txcq->fid : NULL);
    close_fid(d->av ? &d->av->fid : NULL);
    close_fid(d->domain ? &d->domain->fid : NULL);
    close_fid(d->fabric ? &d->fabric->fid : NULL);
    if (d->info)
        fi_freeinfo(d->info);
    if (d->epfd >= 0)
        close(d->epfd);
    if (d->kick >= 0)
        close(d->kick);
    free(d->rx_mem);
    free(d->tx_mem);
    free(d->bounce_mem);
    free(d->unaligned);
    free(d->peers);
    free(d);
}

const struct fl_dgram_ops fl_dgram_ofi = {
    .name = "ofi",
    .open = ofi_open,
    .address = ofi_address,
    .reachable = ofi_reachable,
    .connect = ofi_connect,
    .max_payload = ofi_max_payload,
    .send = fl_ofi_send,
    .recv = fl_ofi_recv,
    .fd = fl_ofi_fd,
    .address_of = ofi_address_of,
    .describe = ofi_describe,
    .close = ofi_close,
    .rma = &fl_ofi_rma,
};
