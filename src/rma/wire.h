/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one-sided communication packet (opcode FL_OP_RMA), little-endian:
 *
 *   off  size
 *    0    1   version (FL_WIRE_VERSION)
 *    1    1   op (FL_OP_RMA)
 *    2    1   kind (enum fl_rma_kind)
 *    3    1   flags (FL_RMAF_*)
 *    4    4   operation id: the initiator's number for the put, get or import
 *    8    8   export id: the owner's number for the region
 *   16    8   base: offset in the region where the operation starts
 *   24    8   total: the operation's length (IMPORT_REP: the region's)
 *   32    8   piece: offset of this packet's payload within the operation
 *   40    4   len: payload bytes in this packet
 *   44    2   status (answers: a flit_status; requests: 0)
 *   46    2   access (IMPORT_REP: FLIT_RMA_READ / WRITE; else 0)
 *   48        payload (8-byte aligned)
 *
 * Requests travel on the request lane: IMPORT_REQ, PUT (one packet per
 * piece, in order, FIRST on the first and LAST on the last), GET_REQ,
 * NOTIFY (a put that went straight into memory asks for its notification)
 * and FLUSH_REQ. Answers travel on the reply lane, so that they never wait
 * behind requests: IMPORT_REP (its payload, when the status is FLIT_OK, is
 * the struct fl_rma_info below), ACK (the verdict on a put, after its last
 * piece: always for a put marked ACK, else only for a refused one, with the
 * put's operation id, 0 for a put nobody tracks), GET_DATA (the region's
 * bytes, in pieces, or one empty packet with the refusal) and FLUSH_REP.
 * Lanes are FIFO: a FLUSH_REP comes after the answers to every request
 * sent before its FLUSH_REQ. An owner unexporting a region whose key it
 * gave (FL_RMA_INFO_KEY) sends WITHDRAW, a request, to each importer
 * given it, and each answers WITHDRAWN once it will use the key no more.
 * Both name the region (id) and carry nothing else.
 *
 * IMPORT_REP payload, 40 bytes:
 *    0    8   the region's address in the owner's process (FL_RMA_INFO_KEY:
 *             its first byte's address for the importer's transport)
 *    8    8   the flit_rma_alloc block holding it: its number (0: none)
 *             (FL_RMA_INFO_KEY: the key the transport gave it)
 *   16    8   the region's offset in the block's file (FL_RMA_INFO_KEY: 0)
 *   24    8   the block's length (FL_RMA_INFO_KEY: 0)
 *   32    4   FL_RMA_INFO_* flags
 *   36    4   0
 */
#ifndef FL_RMA_WIRE_H
#define FL_RMA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/packet.h"
#include "flit/flit.h"

#define FL_OP_RMA 8 /* the layer's opcode (core/packet.h) */

#define FL_RMA_HDR      48u
#define FL_RMA_INFO_LEN 40u

enum fl_rma_kind {
    FL_RMA_IMPORT_REQ = 1,
    FL_RMA_IMPORT_REP = 2,
    FL_RMA_PUT = 3,
    FL_RMA_ACK = 4,
    FL_RMA_GET_REQ = 5,
    FL_RMA_GET_DATA = 6,
    FL_RMA_NOTIFY = 7,
    FL_RMA_FLUSH_REQ = 8,
    FL_RMA_FLUSH_REP = 9,
    FL_RMA_WITHDRAW = 10,  /* owner: the region's key (FL_RMA_INFO_KEY) is withdrawn */
    FL_RMA_WITHDRAWN = 11, /* importer: it will not use it again */
    FL_RMA_KINDS
};

#define FL_RMAF_FIRST  0x01u /* PUT: the operation's first piece */
#define FL_RMAF_LAST   0x02u /* PUT, GET_DATA: its last */
#define FL_RMAF_NOTIFY 0x04u /* PUT: notify the owner after the last piece */
#define FL_RMAF_ACK    0x08u /* PUT: acknowledge it even when it lands */

/* IMPORT_REP: the owner's control file (src/rma/rma.h) is shared: an
   importer on its host may map it and reach the region directly. */
#define FL_RMA_INFO_CTL 0x01u
/* IMPORT_REP: the transport serving the importer exposed the region
   (->expose): block is the key, vaddr the address of its first byte. */
#define FL_RMA_INFO_KEY 0x02u

struct fl_rma_info {
    uint64_t vaddr;
    uint64_t block; /* 0: not in flit_rma_alloc memory */
    uint64_t file_off, file_len;
    uint32_t flags;
};

/* A packet's header in host order: what encode writes, what decode found. */
struct fl_rma_pkt {
    uint8_t kind, flags;
    uint16_t status, access;
    uint32_t op;
    uint64_t id, base, total, piece;
    uint32_t len;            /* payload bytes (IMPORT_REP: set by encode) */
    struct fl_rma_info info; /* IMPORT_REP with status FLIT_OK */
    uint8_t *payload;        /* decode: into the packet */
};

/* The lane a kind travels on. */
static inline unsigned fl_rma_lane(unsigned kind)
{
    return kind == FL_RMA_IMPORT_REP || kind == FL_RMA_ACK || kind == FL_RMA_GET_DATA ||
                   kind == FL_RMA_FLUSH_REP || kind == FL_RMA_WITHDRAWN
               ? 1u
               : 0u; /* FL_LANE_REP : FL_LANE_REQ */
}

/* Bytes the packet takes besides a PUT's or GET_DATA's payload. */
static inline size_t fl_rma_fixed_len(const struct fl_rma_pkt *p)
{
    return FL_RMA_HDR +
           (p->kind == FL_RMA_IMPORT_REP && p->status == FLIT_OK ? FL_RMA_INFO_LEN : 0u);
}

/*
 * Writes p's header at buf (and, for an IMPORT_REP with status FLIT_OK, its
 * info, setting p->len); returns where a payload starts (FL_RMA_HDR, or
 * the packet's whole length for an IMPORT_REP).
 */
size_t fl_rma_encode(uint8_t *buf, struct fl_rma_pkt *p);

/*
 * Decodes and validates a whole packet (8-byte aligned) that arrived on
 * lane: known version, op, kind and flags, the kind's lane, sizes that add
 * up, a piece inside its operation (FIRST exactly at its start, LAST
 * exactly at its end), offsets that do not wrap, statuses that are
 * statuses. FLIT_ERR_BAD_PACKET on anything else. p->payload points into
 * pkt. Says nothing about whether the region exists or may be touched:
 * that is the owner's judgement (src/rma/recv.c).
 */
flit_status fl_rma_decode(void *pkt, size_t len, unsigned lane, struct fl_rma_pkt *p);

#endif /* FL_RMA_WIRE_H */
