/* SPDX-License-Identifier: BSD-3-Clause */
/* SPSC packet ring; see ring.h for the layout and the protocol. */
#include "transport/ring.h"

#include "platform/fence.h"
#include "platform/os.h"

#include <assert.h>
#include <string.h>
#include <unistd.h>

#define PAD_LEN FL_RING_PAD_LEN
#define rec_hdr fl_ring_rec
#define marker  fl_ring_marker

static void attach(struct fl_ring_ctl **ctl, uint8_t **data, uint64_t *sz, uint64_t *mask,
                   void *mem, size_t size)
{
    assert(size >= FL_RING_MIN_SIZE && (size & (size - 1)) == 0);
    assert(((uintptr_t)mem & (FL_RING_LINE - 1)) == 0);
    *ctl = mem;
    *data = (uint8_t *)mem + sizeof(struct fl_ring_ctl);
    *sz = size;
    *mask = size - 1;
}

void fl_ring_tx_attach(struct fl_ring_tx *tx, void *mem, size_t size)
{
    memset(tx, 0, sizeof *tx);
    attach(&tx->ctl, &tx->data, &tx->size, &tx->mask, mem, size);
    tx->dirty = (uint64_t *)(tx->data + size);
    /* Relaxed: nothing is published before setup's barrier. */
    uint64_t head = atomic_load_explicit(&tx->ctl->head, memory_order_relaxed);
    atomic_store_explicit(&tx->tail, head, memory_order_relaxed);
    tx->head_cache = head;
    tx->backed = size;
}

void fl_ring_rx_attach(struct fl_ring_rx *rx, void *mem, size_t size)
{
    memset(rx, 0, sizeof *rx);
    attach(&rx->ctl, &rx->data, &rx->size, &rx->mask, mem, size);
    uint64_t head = atomic_load_explicit(&rx->ctl->head, memory_order_relaxed);
    atomic_store_explicit(&rx->head, head, memory_order_relaxed);
    fl_ring_watch(rx, head);
    rx->backed = size;
}

/* What a broken ring watches: never its marker (expect is set to 0). */
static const _Atomic uint32_t never_published = 1;

static void break_ring(struct fl_ring_rx *rx)
{
    rx->broken = true;
    rx->watch = &never_published;
    rx->expect = 0;
}

/* The producer's map of lines: after the data. */
static size_t map_bytes(size_t size)
{
    return fl_ring_footprint(size) - sizeof(struct fl_ring_ctl) - size;
}

void fl_ring_sparse_first(size_t size, uint64_t off[2], uint64_t len[2])
{
    off[0] = 0; /* the control line and the first data bytes */
    len[0] = sizeof(struct fl_ring_ctl) + FL_RING_SPARSE_FIRST;
    off[1] = sizeof(struct fl_ring_ctl) + size; /* the producer's map */
    len[1] = map_bytes(size);
}

/* Data bytes [0, want) taken: the pages around them, whole; false when the
   system has none to give. */
static bool back(uint8_t *data, uint64_t size, uint64_t *backed, uint64_t want)
{
    if (want <= *backed)
        return true;
    if (fl_shm_populate(data + *backed, want - *backed) != 0)
        return false;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t end = ((uintptr_t)data + want + page - 1) & ~(page - 1);
    *backed = end - (uintptr_t)data < size ? end - (uintptr_t)data : size;
    return true;
}

void fl_ring_tx_attach_sparse(struct fl_ring_tx *tx, void *mem, size_t size)
{
    fl_ring_tx_attach(tx, mem, size);
    tx->backed = FL_RING_SPARSE_FIRST;
}

void fl_ring_rx_attach_sparse(struct fl_ring_rx *rx, void *mem, size_t size)
{
    fl_ring_rx_attach(rx, mem, size);
    rx->backed = FL_RING_SPARSE_FIRST;
    uint64_t head = atomic_load_explicit(&rx->head, memory_order_relaxed);
    if ((head & rx->mask) + FL_RING_LINE > rx->backed)
        fl_ring_rx_back(rx, head);
}

void fl_ring_rx_back(struct fl_ring_rx *rx, uint64_t head)
{
    if (back(rx->data, rx->size, &rx->backed, (head & rx->mask) + FL_RING_LINE))
        fl_ring_watch(rx, head);
    else
        break_ring(rx);
}

static inline struct rec_hdr *rec_at(uint8_t *data, uint64_t mask, uint64_t pos)
{
    return (struct rec_hdr *)(data + (pos & mask));
}

/* Room for `need` bytes at tail? Re-reads the shared head only when the
   cached one says no. */
static bool has_room(struct fl_ring_tx *tx, uint64_t tail, uint64_t need)
{
    if (tail + need - tx->head_cache <= tx->size)
        return true;
    /* Acquire: the consumer finished reading the records before it
       released them, so we may overwrite them. */
    tx->head_cache = atomic_load_explicit(&tx->ctl->head, memory_order_acquire);
    return tail + need - tx->head_cache <= tx->size;
}

/* Bytes of padding needed at tail before a record of rec bytes. */
static inline uint64_t pad_before(const struct fl_ring_tx *tx, uint64_t tail,
                                  uint64_t rec)
{
    uint64_t off = tail & tx->mask;
    return off + rec > tx->size ? tx->size - off : 0;
}

bool fl_ring_has_room(struct fl_ring_tx *tx, size_t len)
{
    uint64_t tail = atomic_load_explicit(&tx->tail, memory_order_relaxed);
    uint64_t rec = fl_ring_record(len);
    return has_room(tx, tail, pad_before(tx, tail, rec) + rec);
}

static inline bool line_dirty(const struct fl_ring_tx *tx, uint64_t line)
{
    return (tx->dirty[line / 64] >> (line % 64)) & 1;
}

static inline void set_line(struct fl_ring_tx *tx, uint64_t line, bool dirty)
{
    uint64_t bit = (uint64_t)1 << (line % 64);
    tx->dirty[line / 64] =
        dirty ? tx->dirty[line / 64] | bit : tx->dirty[line / 64] & ~bit;
}

/* A record's lines after its first now hold packet bytes (or old ones).
   A word of the map at a time: a 64 KiB record has a thousand lines, and
   setting them bit by bit cost more than copying its bytes. A record never
   wraps (pad_before), so its lines are one run. */
static void mark_inner_lines(struct fl_ring_tx *tx, uint64_t pos, uint64_t rec)
{
    uint64_t l = (pos & tx->mask) / FL_RING_LINE + 1;
    uint64_t end = l - 1 + rec / FL_RING_LINE;
    while (l < end) {
        uint64_t bit = l % 64, n = end - l < 64 - bit ? end - l : 64 - bit;
        uint64_t run = n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1) << bit;
        tx->dirty[l / 64] |= run;
        l += n;
    }
}

/*
 * A record of rec bytes after pad at tail reaches past the bytes with pages
 * (with the line after it, which the consumer watches next): takes more,
 * doubling. Where the system has none, the lap ends here (a pad to its end)
 * if the record fits in what has pages; else none fits: short. Returns the
 * pad to use, or UINT64_MAX.
 */
static __attribute__((noinline)) uint64_t
reserve_sparse(struct fl_ring_tx *tx, uint64_t tail, uint64_t pad, uint64_t rec)
{
    uint64_t want = ((tail + pad) & tx->mask) + rec + FL_RING_LINE;
    if (want > tx->size)
        want = tx->size; /* the line after it starts the next lap */
    uint64_t to = 2 * tx->backed;
    if (to < want)
        to = want;
    if (back(tx->data, tx->size, &tx->backed, to < tx->size ? to : tx->size) ||
        back(tx->data, tx->size, &tx->backed, want))
        return pad;
    if (rec + FL_RING_LINE > tx->backed) {
        tx->short_ = true;
        return UINT64_MAX;
    }
    return tx->size - (tail & tx->mask); /* (tail & mask) > 0: it did not fit */
}

void *fl_ring_reserve(struct fl_ring_tx *tx, size_t len)
{
    uint64_t tail = atomic_load_explicit(&tx->tail, memory_order_relaxed);
    uint64_t rec = fl_ring_record(len);
    uint64_t pad = pad_before(tx, tail, rec);
    if (!has_room(tx, tail, pad + rec))
        return NULL;
    if (__builtin_expect(((tail + pad) & tx->mask) + rec + FL_RING_LINE > tx->backed,
                         0) &&
        tx->backed < tx->size) {
        pad = reserve_sparse(tx, tail, pad, rec);
        if (pad == UINT64_MAX || !has_room(tx, tail, pad + rec))
            return NULL;
    }
    if (pad) { /* published now: the consumer just skips it */
        struct rec_hdr *h = rec_at(tx->data, tx->mask, tail);
        h->len = PAD_LEN;
        set_line(tx, (tail & tx->mask) / FL_RING_LINE, false);
        /* Release: len is visible before the marker that publishes it. */
        atomic_store_explicit(&h->seq, marker(tail), memory_order_release);
        tail += pad;
        atomic_store_explicit(&tx->tail, tail, memory_order_relaxed);
    }
    return rec_at(tx->data, tx->mask, tail) + 1;
}

void fl_ring_commit(struct fl_ring_tx *tx, void *pkt, size_t len)
{
    struct rec_hdr *h = (struct rec_hdr *)pkt - 1;
    uint64_t tail = atomic_load_explicit(&tx->tail, memory_order_relaxed);
    uint64_t rec = fl_ring_record(len);
    h->len = (uint32_t)len;
    uint64_t first = (tail & tx->mask) / FL_RING_LINE;
    if (__builtin_expect(line_dirty(tx, first), 0))
        set_line(tx, first, false); /* a header now */
    if (rec > FL_RING_LINE)
        mark_inner_lines(tx, tail, rec);
    /* The consumer looks for the next record at tail + rec. If our last
       write there was packet bytes, they could pass for its marker. */
    uint64_t next = ((tail + rec) & tx->mask) / FL_RING_LINE;
    if (__builtin_expect(line_dirty(tx, next), 0)) {
        atomic_store_explicit(&rec_at(tx->data, tx->mask, tail + rec)->seq, 0,
                              memory_order_relaxed);
        set_line(tx, next, false);
    }
    /* Release: len, the packet and the cleared word are visible before the
       marker. */
    atomic_store_explicit(&h->seq, marker(tail), memory_order_release);
    atomic_store_explicit(&tx->tail, tail + rec, memory_order_relaxed);
}

bool fl_ring_send(struct fl_ring_tx *tx, const struct iovec *iov, int iovcnt, size_t len)
{
    uint8_t *dst = fl_ring_reserve(tx, len);
    if (!dst)
        return false;
    uint8_t *p = dst;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(p, iov[i].iov_base, iov[i].iov_len);
        p += iov[i].iov_len;
    }
    fl_ring_commit(tx, dst, len);
    return true;
}

void *fl_ring_peek_slow(struct fl_ring_rx *rx, size_t *len)
{
    for (int laps = 0; laps < 2; laps++) {
        if (!fl_ring_pending(rx))
            return NULL;
        uint64_t head = atomic_load_explicit(&rx->head, memory_order_relaxed);
        struct rec_hdr *h = rec_at(rx->data, rx->mask, head);
        uint32_t n = h->len;
        uint64_t off = head & rx->mask;
        if (n == PAD_LEN) {
            if (off == 0)
                break; /* a pad never starts a lap */
            rx->cur_rec = rx->size - off;
            fl_ring_release(rx);
            continue;
        }
        uint64_t rec = fl_ring_record(n);
        if (n > fl_ring_max_packet(rx->size) || off + rec > rx->size)
            break;
        if (off + rec > rx->backed && !back(rx->data, rx->size, &rx->backed, off + rec))
            break; /* its producer did not take the pages it wrote */
        rx->cur_rec = rec;
        *len = n;
        return h + 1;
    }
    break_ring(rx);
    return NULL;
}

bool fl_ring_take_waiter(struct fl_ring_rx *rx)
{
    /* Our head store is ordered before the load of the flag, pairing with
       the slow fence in fl_ring_want_room (Dekker; see platform/fence.h). */
    fl_fence_fast();
    if (!atomic_load_explicit(&rx->ctl->producer_waiting, memory_order_relaxed))
        return false;
    return atomic_exchange_explicit(&rx->ctl->producer_waiting, 0,
                                    memory_order_relaxed) != 0;
}

bool fl_ring_want_room(struct fl_ring_tx *tx, size_t len)
{
    atomic_store_explicit(&tx->ctl->producer_waiting, 1, memory_order_relaxed);
    /* The flag is visible before we re-read head, pairing with the fast
       fence in fl_ring_take_waiter. */
    fl_fence_slow();
    return fl_ring_has_room(tx, len);
}

void fl_ring_walk_unconsumed(struct fl_ring_tx *tx, fl_ring_walk_fn fn, void *ctx)
{
    uint64_t pos = atomic_load_explicit(&tx->ctl->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&tx->tail, memory_order_relaxed);
    if (tail - pos > tx->size)
        pos = tail; /* head is garbage: a dead peer may have scribbled */
    while (pos < tail) {
        struct rec_hdr *h = rec_at(tx->data, tx->mask, pos);
        uint32_t n = h->len;
        uint64_t off = pos & tx->mask;
        if (n == PAD_LEN) {
            pos += tx->size - off;
            continue;
        }
        if (n > fl_ring_max_packet(tx->size) || off + fl_ring_record(n) > tx->size)
            break; /* scribbled on: stop rather than read wild memory */
        fn(ctx, h + 1, n);
        pos += fl_ring_record(n);
    }
    /* Forget them: they will not be handed out twice. */
    atomic_store_explicit(&tx->ctl->head, tail, memory_order_relaxed);
    tx->head_cache = tail;
}

uint64_t fl_ring_tx_inflight(struct fl_ring_tx *tx)
{
    uint64_t tail = atomic_load_explicit(&tx->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&tx->ctl->head, memory_order_relaxed);
    return tail - head <= tx->size ? tail - head : tx->size;
}
