/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory datagram transport of the fuzz targets; see memdgram.h. */
#include "memdgram.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "am/wire.h"
#include "channel/config.h"
#include "channel/wire.h"
#include "core/packet.h"
#include "fuzz.h"
#include "platform/le.h"
#include "transport/fault/fault.h"
#include "util/config.h"

#define QCAP 64u

struct queued {
    uint8_t *data;
    size_t len;
    uint32_t src;
    unsigned path;
};

static struct mem {
    size_t mtu;
    struct queued q[QCAP];
    unsigned head, tail;
    uint64_t key;
    bool have_key;
    int fd;
    struct fl_chan_counters counters;
    unsigned peers_down; /* the channel gave up on a peer */
    unsigned refuse;     /* sends to refuse (a full socket) */
} mem = {.fd = -1};

/* The descriptor is readable while datagrams are queued, as a socket is. */
static void readable(bool yes)
{
    uint64_t v = 1;
    ssize_t r = yes ? write(mem.fd, &v, sizeof v) : read(mem.fd, &v, sizeof v);
    (void)r;
}

static flit_status m_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    (void)a;
    *out = (struct fl_dgram *)(void *)&mem;
    return FLIT_OK;
}

static flit_status m_address(struct fl_dgram *d, void *buf, size_t *len)
{
    (void)d;
    if (*len < 8)
        return FLIT_ERR_INVALID_ARG;
    memset(buf, 0, 8);
    *len = 8;
    return FLIT_OK;
}

static bool m_reachable(struct fl_dgram *d, uint32_t rank, const void *blob, size_t len)
{
    (void)d, (void)blob, (void)len;
    return rank != 0;
}

static flit_status m_connect(struct fl_dgram *d, uint32_t rank, const void *blob,
                             size_t len)
{
    (void)d, (void)rank, (void)blob, (void)len;
    return FLIT_OK;
}

static size_t m_max_payload(struct fl_dgram *d, uint32_t rank)
{
    (void)d, (void)rank;
    return mem.mtu;
}

void (*memdgram_on_send)(uint32_t dst, const uint8_t *dgram, size_t len);
unsigned memdgram_paths = 1, memdgram_sent_path, memdgram_rx_path;

static unsigned m_paths(struct fl_dgram *d, uint32_t rank)
{
    (void)d, (void)rank;
    return memdgram_paths;
}

/* Everything goes (but what memdgram_refuse_sends refuses); the first
   header tells us the job key. */
static int m_send(struct fl_dgram *d, const struct fl_dgram_out *v, int n)
{
    (void)d;
    static uint8_t flat[65536];
    if (mem.refuse) {
        mem.refuse--;
        return -EAGAIN;
    }
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(v[i].dst > 0 && v[i].dst < FUZZ_RANKS && v[i].iovcnt > 0);
        size_t total = 0;
        for (int k = 0; k < v[i].iovcnt; k++) {
            FUZZ_CHECK(v[i].iov[k].iov_len <= mem.mtu - total);
            memcpy(flat + total, v[i].iov[k].iov_base, v[i].iov[k].iov_len);
            total += v[i].iov[k].iov_len;
        }
        FUZZ_CHECK(v[i].iov[0].iov_len >= FL_CHAN_HDR);
        FUZZ_CHECK(v[i].path < memdgram_paths);
        memdgram_sent_path = v[i].path;
        if (memdgram_on_send)
            memdgram_on_send(v[i].dst, flat, total);
        if (!mem.have_key) {
            mem.key = fl_get64((const uint8_t *)v[i].iov[0].iov_base + 8);
            mem.have_key = true;
        }
    }
    return n;
}

/* Receive buffers per nesting slot, as a real datagram transport keeps. */
static _Alignas(64) uint8_t rx_mem[FL_DGRAM_SLOTS][FL_DGRAM_BATCH][65536];
static struct fl_dgram_in rx_in[FL_DGRAM_SLOTS][FL_DGRAM_BATCH];

static int m_recv(struct fl_dgram *d, unsigned slot, struct fl_dgram_in **in)
{
    (void)d;
    int k = 0;
    while (k < FL_DGRAM_BATCH && mem.head < mem.tail) {
        struct queued *q = &mem.q[mem.head++];
        struct fl_dgram_in *r = &rx_in[slot][k];
        size_t len = q->len < sizeof rx_mem[0][0] ? q->len : sizeof rx_mem[0][0];
        r->buf = rx_mem[slot][k];
        memcpy(r->buf, q->data, len);
        r->len = len;
        r->src = q->src;
        r->path = q->path;
        free(q->data);
        q->data = NULL;
        k++;
    }
    if (mem.head == mem.tail) {
        if (mem.tail)
            readable(false);
        mem.head = mem.tail = 0;
    }
    *in = rx_in[slot];
    return k;
}

static int m_fd(struct fl_dgram *d)
{
    (void)d;
    return mem.fd;
}

static void m_describe(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    (void)d;
    snprintf(buf, len, "memory rank %u", rank);
}

static void m_address_of(struct fl_dgram *d, uint32_t rank, char *buf, size_t len)
{
    m_describe(d, rank, buf, len);
}

static void m_close(struct fl_dgram *d)
{
    (void)d;
}

static const struct fl_dgram_ops mem_ops = {
    .name = "memory",
    .open = m_open,
    .address = m_address,
    .reachable = m_reachable,
    .connect = m_connect,
    .paths = m_paths,
    .max_payload = m_max_payload,
    .send = m_send,
    .recv = m_recv,
    .fd = m_fd,
    .address_of = m_address_of,
    .describe = m_describe,
    .close = m_close,
};

void memdgram_send(struct fl_tp_ep *t, uint32_t dst, unsigned lane, size_t len,
                   unsigned flags)
{
    flit_status st;
    uint8_t *p = fl_chan_reserve(t, dst, lane, len, &st);
    if (!p) {
        FUZZ_CHECK(st == FLIT_ERR_AGAIN || st == FLIT_ERR_PEER_DOWN);
        return;
    }
    uint32_t args[2] = {(uint32_t)len, dst};
    fl_am_encode_short(p, lane == FL_LANE_REP, 1, 0, args, 2);
    memset(p + 32, 0xa5, len - 32);
    fl_chan_commit(t, dst, lane, p, len, flags);
}

unsigned memdgram_setup(uint8_t setup)
{
    static long mask = -1;
    if (mask < 0) {
        const char *s = getenv("FUZZ_SETUP_MASK");
        mask = s ? strtol(s, NULL, 16) & 0xff : 0;
    }
    return setup & ~(unsigned)mask;
}

/* The memory transport under the seeded fault interposer, as src/flit.c
   composes UDP under it when a FLIT_*_RATE is set. */
static struct fl_fault_params faults;

static flit_status faulty_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    return fl_fault_open(&mem_ops, &faults, a, out);
}

static const struct fl_dgram_ops faulty_ops = FL_FAULT_DGRAM("memory", faulty_open);

static void saw_down(void *ctx, uint32_t rank, flit_status reason)
{
    (void)ctx, (void)rank, (void)reason;
    mem.peers_down++;
}

struct fl_tp_ep *memdgram_open(unsigned setup)
{
    static bool configured;
    if (!configured) {
        FUZZ_CHECK(fl_config_add(fl_chan_settings) == FLIT_OK);
        FUZZ_CHECK(fl_config_load() == FLIT_OK);
        fl_chan_cfg.window = 0; /* the channel's smallest window: less to allocate */
        mem.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        FUZZ_CHECK(mem.fd >= 0);
        configured = true;
    }
    faults = (struct fl_fault_params){
        .seed = 1,
        .drop_ppm = setup & FUZZ_SETUP_DROP ? 200000 : 0,
        .dup_ppm = setup & FUZZ_SETUP_DUP ? 333333 : 0,
        .reorder_ppm = setup & FUZZ_SETUP_REORDER ? 500000 : 0,
    };
    mem.mtu = setup & FUZZ_SETUP_SMALL_MTU ? 1472 : 65507;
    if (mem.tail)
        readable(false);
    mem.head = mem.tail = 0;
    mem.refuse = 0;
    mem.have_key = false;
    memset(&mem.counters, 0, sizeof mem.counters);
    mem.peers_down = 0;

    static const uint32_t host_of[FUZZ_RANKS];
    struct fl_tp_open_args a = {.job_id = 0x1234567890abcdefull,
                                .rank = 0,
                                .size = FUZZ_RANKS,
                                .segment_fd = -1,
                                .host_of = host_of,
                                .max_packet = FL_PACKET_MAX,
                                .counters = &mem.counters,
                                .peer_down = saw_down};
    struct fl_tp_ep *t;
    bool faulty = faults.drop_ppm || faults.dup_ppm || faults.reorder_ppm;
    FUZZ_CHECK(fl_chan_open(faulty ? &faulty_ops : &mem_ops, &a, &t) == FLIT_OK);
    uint8_t blob[16] = {0};
    size_t blen = sizeof blob;
    FUZZ_CHECK(fl_chan_address(t, blob, &blen) == FLIT_OK);
    for (uint32_t r = 1; r < FUZZ_RANKS; r++) {
        FUZZ_CHECK(fl_chan_reachable(t, r, blob, blen));
        FUZZ_CHECK(fl_chan_connect(t, r, blob, blen) == FLIT_OK);
    }
    fl_chan_connected(t);
    memdgram_send(t, 1, FL_LANE_REQ, 64, 0);
    FUZZ_CHECK(mem.have_key);
    return t;
}

void memdgram_close(struct fl_tp_ep *t)
{
    fl_chan_close(t);
    for (unsigned k = mem.head; k < mem.tail; k++)
        free(mem.q[k].data);
    if (mem.tail)
        readable(false);
    mem.head = mem.tail = 0;
}

bool memdgram_queue(uint32_t src, const uint8_t *data, size_t len, bool fix)
{
    if (mem.tail == QCAP)
        return false;
    if (mem.tail == mem.head)
        readable(true);
    struct queued *q = &mem.q[mem.tail++];
    q->src = src;
    q->path = memdgram_rx_path;
    q->len = len;
    q->data = malloc(len ? len : 1);
    FUZZ_CHECK(q->data != NULL);
    memcpy(q->data, data, len);
    if (fix) {
        uint8_t *b = q->data;
        if (len >= 1)
            b[0] = FL_CHAN_VERSION;
        if (len >= 8)
            fl_put32(b + 4, src == FL_DGRAM_STRANGER ? 1 : src);
        if (len >= 16)
            fl_put64(b + 8, mem.key);
        if (len >= 20)
            fl_put32(b + 16, 0);
    }
    return true;
}

void memdgram_from_1(uint32_t next, uint32_t echo, bool with_chunk, uint32_t seq,
                     uint8_t flags)
{
    uint8_t d[FL_CHAN_MAX_HDR + FL_CHAN_CHUNK_HDR + 32] = {0};
    struct fl_chan_hdr h = {.kind = FL_CHAN_DATA,
                            .nchunks = with_chunk ? 1 : 0,
                            .src = 1,
                            .dst = 0,
                            .key = mem.key,
                            .ts = 1,
                            .ts_echo = echo};
    h.ack[FL_LANE_REQ].next = next;
    size_t len = fl_chan_encode_hdr(d, &h);
    if (with_chunk) {
        struct fl_chan_chunk c = {
            .lane = FL_LANE_REQ, .flags = flags, .len = 32, .seq = seq};
        fl_chan_encode_chunk(d + len, &c);
        len += FL_CHAN_CHUNK_HDR + 32;
    }
    FUZZ_CHECK(memdgram_queue(1, d, len, false));
}

unsigned memdgram_pending(void)
{
    return mem.tail - mem.head;
}

size_t memdgram_op_send(struct fl_tp_ep *t, const uint8_t *in, size_t left,
                        size_t max_len)
{
    enum { MIN_PACKET = 32 }; /* the AM short request memdgram_send writes */
    if (left < 5)
        return 0;
    uint32_t dst = 1 + in[0] % 2u;
    unsigned lane = in[1] % 2u;
    size_t len = MIN_PACKET + fl_get16(in + 2) % (max_len - MIN_PACKET + 1);
    memdgram_send(t, dst, lane, len, in[4] & 1u ? FL_COMMIT_MORE : 0);
    return 5;
}

void memdgram_op_state(struct fl_tp_ep *t)
{
    (void)fl_chan_arm(t, FL_LANES_ALL);
    fl_chan_disarm(t);
    (void)fl_chan_settled(t);
}

void memdgram_poll_all(struct fl_tp_ep *t, unsigned mask, fl_tp_recv_fn cb, void *ctx,
                       unsigned *depth)
{
    for (int i = 0; i < 8 && (i == 0 || memdgram_pending()); i++) {
        *depth = 0;
        fl_chan_poll(t, mask, cb, ctx, 64);
    }
}

void memdgram_refuse_sends(unsigned n)
{
    mem.refuse = n;
}

const struct fl_tp_counters *memdgram_counters(void)
{
    return &mem.counters.tp;
}

const struct fl_chan_counters *memdgram_chan_counters(void)
{
    return &mem.counters;
}

unsigned memdgram_peers_down(void)
{
    return mem.peers_down;
}

uint64_t memdgram_key(void)
{
    return mem.key;
}

void memdgram_sleep_poll(struct fl_tp_ep *t, fl_tp_recv_fn cb, void *ctx)
{
    if (!fl_chan_arm(t, FL_LANES_ALL)) {
        struct pollfd p = {.fd = fl_chan_fd(t), .events = POLLIN};
        poll(&p, 1, 1000);
    }
    fl_chan_disarm(t);
    fl_chan_poll(t, FL_LANES_ALL, cb, ctx, 64);
}
