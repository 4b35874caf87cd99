/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside flit-amudp: one flit endpoint per AM-2 endpoint, built on the
 * public API alone (<flit/...>).
 *
 * Handler indices on the flit endpoint. An AM-2 handler h (0..255) is
 * installed at eight indices, one per way a message may reach it, so that
 * the receiving side knows from the index alone which prototype to call
 * and whether the message is a request or a reply:
 *   h            short request (AM_RequestN)
 *   256 + h      medium request (AM_RequestIN)
 *   512 + h      long request (Xfer) with up to 14 arguments: the
 *                destination offset rides in two more arguments
 *   768 + h      long request with 15 or 16: the offset leads the payload
 *   1024 + ...   the same four for replies
 * and above them the library's own: a request the receiver refused, sent
 * back, and the two halves of AMUDP_SPMDAllGather. A message to an index
 * where no handler is installed comes back through flit's returned-message
 * handler, which hands it to AM-2's handler 0 as EBADHANDLER.
 *
 * Long messages travel as flit medium messages and are copied into the
 * segment of AM_SetSeg by the receiver, which checks the bounds itself: a
 * flit endpoint's segment is fixed when it is created, an AM-2 segment is
 * set afterwards.
 */
#ifndef FLIT_COMPAT_AMUDP_INTERNAL_H
#define FLIT_COMPAT_AMUDP_INTERNAL_H

#include <flit/flit.h>

#include "amudp.h"

enum amx_kind { AMX_SHORT = 0, AMX_MEDIUM = 1, AMX_LONG = 2, AMX_LONGHDR = 3 };
#define AMX_H_INDEX(kind, is_reply, h) ((((is_reply) ? 4u : 0u) + (kind)) * 256u + (h))
#define AMX_H_REFUSED                  2048u /* a request refused by the receiver, sent back */
#define AMX_H_GATHER                   2049u /* AllGather: a worker's part, to rank 0 */
#define AMX_H_SCATTER                  2050u /* AllGather: the whole, from rank 0 */
#define AMX_H_COUNT                    2051u

/* Xfer with more arguments than this carries its offset in the payload. */
#define AMX_LONG_ARGS (FLIT_AM_MAX_ARGS - 2)
#define AMX_LONG_HDR  8u /* the offset, little-endian, before the payload */

struct amx_xlat {
    int inuse;
    en_t name;
    tag_t tag;
    uint32_t rank;
};

/* What a flit handler needs to find its AM-2 handler. */
struct amx_slot {
    struct amudp_ep *ep;
    uint16_t index; /* flit handler index */
};

struct amudp_ep {
    uint64_t magic;
    flit_ep_t *fep;
    struct amudp_eb *eb;
    unsigned serial; /* creation order: the n-th endpoint of every rank */
    en_t name;
    tag_t tag;
    void *seg;
    uintptr_t seglen;
    struct amx_xlat *xl;
    int nxl;
    int depth;
    amudp_handler_fn_t handler[AMUDP_MAX_NUMHANDLERS];
    struct amx_slot slot[AMX_H_COUNT];
    uint64_t handled; /* AM-2 handlers run: AM_WaitSema's event */
    amudp_stats_t stats;
    uint64_t retransmits_before; /* flit's count at the last reset */
};

struct amudp_eb {
    uint64_t magic;
    int type;
    int mask;
    struct amudp_ep **eps;
    int n, cap;
};

/* The token an AM-2 handler receives: lives on the dispatcher's stack. */
struct amx_token {
    uint64_t magic;
    struct amudp_ep *ep;
    flit_token_t *ft; /* NULL for a returned message */
    flit_rank_t peer; /* sender; for a returned message, its destination */
    int is_request;
};

#define AMX_EP_MAGIC  0x616d7564705f6570ull /* "amudp_ep" */
#define AMX_EB_MAGIC  0x616d7564705f6562ull /* "amudp_eb" */
#define AMX_TOK_MAGIC 0x616d7564705f746bull /* "amudp_tk" */

/* amudp_ep.c */
int amx_err(int code, const char *fn, const char *why);
int amx_status(flit_status st, const char *fn);
int amx_ep_ok(const struct amudp_ep *ep);
int amx_eb_ok(const struct amudp_eb *eb);
struct amx_token *amx_token_of(void *token);
en_t amx_name(uint32_t rank, unsigned serial);
int amx_translate(struct amudp_ep *ep, amudp_node_t index, flit_rank_t *rank_out);
extern int amx_initialized;

/* amudp_msg.c */
void amx_dispatch(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user);
void amx_returned(flit_ep_t *fep, const flit_returned_t *info, void *user);
void amx_refused(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                 unsigned nargs, void *user);

/* amudp_spmd.c */
void amx_gather_part(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user);
void amx_gather_whole(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user);

#endif /* FLIT_COMPAT_AMUDP_INTERNAL_H */
