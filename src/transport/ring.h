/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Single-producer / single-consumer ring of variable-size packets.
 *
 * The ring lives in memory the consumer owns (its shared file, or private
 * memory for the self transport). Each packet is a record that starts on a
 * 64-byte line:
 *
 *     u32 seq | u32 len | packet bytes ... | padding to the next line
 *
 * The producer writes len and the packet, then publishes the record by
 * storing seq last. seq is a function of the record's position, so the
 * consumer learns that a record is there by reading the record itself: it
 * never reads the producer's tail, and a record from an earlier lap can never
 * pass for a new one. Packet bytes of an earlier lap could (an inner line of
 * a record becomes a record start in a later lap), so the producer keeps one
 * bit per line -- "my last write at the start of this line was packet bytes"
 * -- and before publishing a record it clears the seq word of the line after
 * it when that bit is set: the consumer's next look then finds 0, an old
 * marker or the real one. A stream of same-sized messages never needs a
 * clear, so the producer does not touch the line the consumer watches. Only the
 * consumer's head is shared, on a line of its own, and the producer re-reads it only when
 * its cached copy says full: credits that cost nothing while there is room.
 *
 * A short message of a few arguments is one record of one line: one cache
 * line moves from producer to consumer, nothing else.
 *
 * In sparse memory (a shared file whose pages are taken on first need,
 * where a store into a page a full /dev/shm cannot give is a SIGBUS) only
 * the first `backed` bytes of the data have their pages. The producer
 * takes more (fl_shm_populate) before it writes, or lets the consumer
 * watch, a byte past them, doubling, so that a pair that carries a few
 * small messages holds a few pages, not the whole ring. When the system
 * has no more to give, the ring wraps early: a pad record skips the rest
 * of the lap, and it goes on as a ring of its backed bytes; only a packet
 * larger than those fails (fl_ring_reserve answers NULL and sets short).
 * The consumer takes the pages it reads too: where the producer took them
 * first that costs nothing, and a producer that did not cannot hand it a
 * SIGBUS (the ring is broken instead).
 */
#ifndef FL_TRANSPORT_RING_H
#define FL_TRANSPORT_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define FL_RING_LINE     64u
#define FL_RING_HDR      8u /* seq + len before each packet */
#define FL_RING_MIN_SIZE 4096u

/* Shared part, in the consumer's memory. */
struct fl_ring_ctl {
    _Alignas(64) _Atomic uint64_t head;             /* consumer: bytes consumed */
    _Alignas(64) _Atomic uint32_t producer_waiting; /* producer: wake me on room */
    char pad_[60];
};

/* Bytes a ring of `size` data bytes occupies: control, data, and the
   producer's bitmap of lines holding packet bytes (see above). */
static inline size_t fl_ring_footprint(size_t size)
{
    size_t bitmap =
        (size / FL_RING_LINE / 8 + FL_RING_LINE - 1) & ~(size_t)(FL_RING_LINE - 1);
    return sizeof(struct fl_ring_ctl) + size + bitmap; /* rings stay line-aligned */
}

/* Largest packet a ring of `size` bytes carries. */
static inline size_t fl_ring_max_packet(size_t size)
{
    return size / 2 - FL_RING_HDR;
}

/* Producer side: private to the sending process. */
struct fl_ring_tx {
    struct fl_ring_ctl *ctl;
    uint8_t *data;
    uint64_t *dirty; /* bit per line: its first word is packet bytes */
    uint64_t size, mask;
    _Atomic uint64_t tail; /* bytes produced; atomic only for dumps */
    uint64_t head_cache;
    uint64_t backed; /* data bytes with their pages (size: all) */
    bool short_;     /* the last reserve met a shortage of pages */
};

/* Consumer side: private to the receiving process. */
struct fl_ring_rx {
    /* What fl_ring_pending reads: the seq word where the next record
       starts, and the marker that publishes it there. Kept with the head,
       so that a look at an idle ring is two loads of this line and one of
       the word. A broken ring watches a word that never holds its marker. */
    const _Atomic uint32_t *watch;
    uint32_t expect;
    struct fl_ring_ctl *ctl;
    uint8_t *data;
    uint64_t size, mask;
    _Atomic uint64_t head; /* bytes consumed; atomic only for dumps */
    uint64_t cur_rec;      /* record size of the packet peeked, 0 if none */
    uint64_t backed;       /* data bytes with their pages (size: all) */
    bool busy;             /* a packet of this ring is being handled */
    bool broken;           /* the producer wrote garbage; ring abandoned */
};

/* size is a power of two >= FL_RING_MIN_SIZE; mem is 64-byte aligned and
   fl_ring_footprint(size) bytes, zeroed by whoever created it. */
void fl_ring_tx_attach(struct fl_ring_tx *tx, void *mem, size_t size);
void fl_ring_rx_attach(struct fl_ring_rx *rx, void *mem, size_t size);

/* In sparse memory: the control line, the producer's map and the first
   FL_RING_SPARSE_FIRST bytes of the data have their pages (fl_ring_sparse
   says which bytes those are), the rest are taken as they are needed. */
#define FL_RING_SPARSE_FIRST 4096u
void fl_ring_tx_attach_sparse(struct fl_ring_tx *tx, void *mem, size_t size);
void fl_ring_rx_attach_sparse(struct fl_ring_rx *rx, void *mem, size_t size);

/* The byte ranges of a ring's footprint (from mem) that must have their
   pages before a sparse attach: [off[i], off[i] + len[i]), i < 2. */
void fl_ring_sparse_first(size_t size, uint64_t off[2], uint64_t len[2]);

/*
 * Sending in two steps, so that a packet is built in place. fl_ring_reserve
 * returns where to write a packet of len bytes, or NULL when there is no
 * room now (nothing written). fl_ring_commit publishes it (release). A
 * reservation not committed is simply given up: the next one reuses it.
 * A caller that reads the consumer's "sleeping" flag after committing puts
 * fl_fence_fast() in between.
 */
void *fl_ring_reserve(struct fl_ring_tx *tx, size_t len);
void fl_ring_commit(struct fl_ring_tx *tx, void *pkt, size_t len);

/* Both steps for a packet gathered from iov (total len bytes). */
bool fl_ring_send(struct fl_ring_tx *tx, const struct iovec *iov, int iovcnt, size_t len);

/* Whether a packet of len bytes fits now (re-reads the consumer's head). */
bool fl_ring_has_room(struct fl_ring_tx *tx, size_t len);

/* Bytes a packet of len bytes occupies, padding included. */
static inline uint64_t fl_ring_record(size_t len)
{
    return ((uint64_t)len + FL_RING_HDR + FL_RING_LINE - 1) &
           ~(uint64_t)(FL_RING_LINE - 1);
}

/* The record header before every packet. */
struct fl_ring_rec {
    _Atomic uint32_t seq;
    uint32_t len;
};

#define FL_RING_PAD_LEN 0xffffffffu

/* The seq that publishes a record at pos; never 0 on the first lap, so
   zeroed memory is never a record. */
static inline uint32_t fl_ring_marker(uint64_t pos)
{
    return (uint32_t)(pos / FL_RING_LINE) + 1;
}

/* Points rx's watch at the record that would start at head. */
static inline void fl_ring_watch(struct fl_ring_rx *rx, uint64_t head)
{
    rx->watch = &((const struct fl_ring_rec *)(rx->data + (head & rx->mask)))->seq;
    rx->expect = fl_ring_marker(head);
}

/* Whether a packet is published at the head (no side effects). Inline: the
   polling loop runs it on every pass. */
static inline bool fl_ring_pending(const struct fl_ring_rx *rx)
{
    /* Acquire: the packet bytes are read after the marker. */
    return atomic_load_explicit(rx->watch, memory_order_acquire) == rx->expect;
}

/* The slow part of fl_ring_peek: a record is there; validate it. */
void *fl_ring_peek_slow(struct fl_ring_rx *rx, size_t *len);

/*
 * The packet at the head, or NULL when none is published. Sets rx->broken
 * (and returns NULL) when the record is malformed.
 */
static inline void *fl_ring_peek(struct fl_ring_rx *rx, size_t *len)
{
    if (__builtin_expect(!fl_ring_pending(rx), 1))
        return NULL;
    return fl_ring_peek_slow(rx, len);
}

/* The consumer's look at bytes past rx->backed: their pages taken first
   (a broken ring if they cannot be). */
void fl_ring_rx_back(struct fl_ring_rx *rx, uint64_t head);

/* Consumes the packet fl_ring_peek returned, giving its room back. */
static inline void fl_ring_release(struct fl_ring_rx *rx)
{
    uint64_t head = atomic_load_explicit(&rx->head, memory_order_relaxed) + rx->cur_rec;
    rx->cur_rec = 0;
    atomic_store_explicit(&rx->head, head, memory_order_relaxed);
    if (__builtin_expect((head & rx->mask) + FL_RING_LINE > rx->backed, 0))
        fl_ring_rx_back(rx, head);
    else
        fl_ring_watch(rx, head);
    /* Release: we are done reading the record before the producer may
       overwrite it. */
    atomic_store_explicit(&rx->ctl->head, head, memory_order_release);
}

/*
 * After releases: true (and the flag cleared) when the producer asked to be
 * woken for room. Call it once per poll pass.
 */
bool fl_ring_take_waiter(struct fl_ring_rx *rx);

/* Producer: asks to be woken on room; then true if room for len appeared. */
bool fl_ring_want_room(struct fl_ring_tx *tx, size_t len);

/* Producer: whether its request to be woken on room is still standing (the
   consumer has not taken it: it made no room since). */
static inline bool fl_ring_room_asked(const struct fl_ring_tx *tx)
{
    return atomic_load_explicit(&tx->ctl->producer_waiting, memory_order_relaxed) != 0;
}

/* Producer, when the consumer is gone: walks the records it never consumed. */
typedef void (*fl_ring_walk_fn)(void *ctx, void *pkt, size_t len);
void fl_ring_walk_unconsumed(struct fl_ring_tx *tx, fl_ring_walk_fn fn, void *ctx);

/* Bytes the producer could still write (racy; for dumps). */
uint64_t fl_ring_tx_inflight(struct fl_ring_tx *tx);

#endif /* FL_TRANSPORT_RING_H */
