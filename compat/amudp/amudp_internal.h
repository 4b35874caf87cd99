/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inside flit-amudp: one flit endpoint per AM-2 endpoint, built on the
 * public API alone (<flit/...>).
 *
 * Handler indices on the flit endpoint. An AM-2 handler h (0..255) is
 * installed at twelve indices, one per way a message may reach it, so that
 * the receiving side knows from the index alone which prototype to call
 * and whether the message is a request or a reply:
 *   h            short request (AM_RequestN)
 *   256 + h      medium request (AM_RequestIN)
 *   512 + h      long request (Xfer) carried as a medium, with up to 14
 *                arguments: the destination offset rides in two more
 *   768 + h      the same with 15 or 16: the offset leads the payload
 *   1024 + h     long request whose data was put into the segment already
 *                (see below), up to 13 arguments: offset and length ride
 *                in three more
 *   1280 + h     the same with 14 to 16: offset and length as a payload
 *   1536 + ...   the same six for replies
 * and above them the library's own: a request the receiver refused, sent
 * back, the two halves of AMUDP_SPMDAllGather, and the question for a
 * peer's segment and its answer. A message to an index where no handler is
 * installed comes back through flit's returned-message handler, which
 * hands it to AM-2's handler 0 as EBADHANDLER.
 *
 * Long messages. A flit endpoint's segment is fixed when it is created, an
 * AM-2 segment is set afterwards; so AM_SetSeg exports the segment with
 * flit's one-sided layer (<flit/rma.h>), and again whenever the segment or
 * the endpoint's tag changes, which revokes the previous export. A sender
 * asks the destination once for its export (its id and the tag it holds,
 * AMX_H_SEGQ / AMX_H_SEGA), imports it, and from then on, when the import
 * lets it copy into the segment itself (flit_rma_alloc memory mapped here,
 * or its own: FLIT_RMA_PATH_COPY), sends a request Xfer of at least
 * AMX_PUT_MIN bytes as a put straight into the segment (one copy: the
 * sender's) followed by a short message that runs the
 * handler: flit hands that message over only after the put's data is in
 * place, in order with the sender's other requests. The sender puts only
 * when the tag it holds for the destination is the one the destination
 * answered with, so a message the destination would refuse for its tag
 * never lands. Anything the put path cannot take (a small payload, a
 * reply — flit makes no put inside a handler —, no segment there, a
 * segment reached only by cross-memory attach or packets — slower than two
 * copies through the rings at every AM-2 size on shared memory, and the
 * same packets over UDP —, an offset or a length outside it) travels as a
 * medium message that the
 * receiver checks and copies into the segment itself, refusing it with
 * AM-2's status when it does not fit.
 */
#ifndef FLIT_COMPAT_AMUDP_INTERNAL_H
#define FLIT_COMPAT_AMUDP_INTERNAL_H

#include <flit/flit.h>
#include <flit/handle.h>
#include <flit/rma.h>

#include <sys/types.h>

#include "amudp.h"
#include "amudp_spmd.h"

enum amx_kind {
    AMX_SHORT = 0,
    AMX_MEDIUM = 1,
    AMX_LONG = 2,    /* carried: offset in the arguments */
    AMX_LONGHDR = 3, /* carried: offset before the payload */
    AMX_PUT = 4,     /* put: offset and length in the arguments */
    AMX_PUTHDR = 5,  /* put: offset and length as the payload */
    AMX_KINDS = 6
};
#define AMX_H_INDEX(kind, is_reply, h)                                                   \
    ((((is_reply) ? (unsigned)AMX_KINDS : 0u) + (kind)) * 256u + (h))
#define AMX_H_KIND(idx)     (((idx) >> 8) % AMX_KINDS)
#define AMX_H_IS_REPLY(idx) (((idx) >> 8) >= AMX_KINDS)
#define AMX_H_REFUSED       (2u * AMX_KINDS * 256u) /* a refused request, sent back */
#define AMX_H_GATHER        (AMX_H_REFUSED + 1) /* AllGather: a worker's part, to rank 0 */
#define AMX_H_SCATTER       (AMX_H_REFUSED + 2) /* AllGather: the whole, from rank 0 */
#define AMX_H_SEGQ          (AMX_H_REFUSED + 3) /* which export is your segment? */
#define AMX_H_SEGA          (AMX_H_REFUSED + 4) /* its answer */
#define AMX_H_AUTO          (AMX_H_REFUSED + 5) /* automatic replies owed: [count] */
#define AMX_H_AUTO_ACK      (AMX_H_REFUSED + 6) /* their receipt: [count] */
#define AMX_H_ARRIVE        (AMX_H_REFUSED + 7) /* SPMD barrier: [epoch], to rank 0 */
#define AMX_H_RELEASE       (AMX_H_REFUSED + 8) /* SPMD barrier: [epoch], from rank 0 */
#define AMX_H_COUNT         (AMX_H_REFUSED + 9)

/* Xfer with more arguments than this carries its offset in the payload. */
#define AMX_LONG_ARGS (FLIT_AM_MAX_ARGS - 2)
#define AMX_LONG_HDR  8u /* the offset, little-endian, before the payload */
/* A put's notification with more arguments than this carries offset and
   length as its payload. */
#define AMX_PUT_ARGS (FLIT_AM_MAX_ARGS - 3)
#define AMX_PUT_HDR  12u /* offset (8 bytes), length (4), little-endian */
/* Smaller Xfers travel as medium messages: copying a few pages twice costs
   less than a put (a system call on shared memory, for program memory) and
   its notification (amudp-bench: at 4 KiB the medium took 0.4-0.5 of
   flit_am_long's time, the put 1.0-1.3; from 32 KiB on the put wins). */
#define AMX_PUT_MIN 16384u

struct amx_xlat {
    int inuse;
    en_t name;
    tag_t tag;
    uint32_t rank;
};

/* A destination's segment, as this sender knows it (the put path). */
struct amx_peer {
    flit_rma_remote_t *remote; /* NULL: not imported (or revoked) */
    uint64_t seg_tag;          /* the tag the destination held when it answered */
    uint64_t send_tag;         /* the tag this endpoint sends it (AM_Map) */
    int has_send_tag;
    uint32_t asked; /* serial of the last question */
    int answered;
    uint64_t seg_id; /* its answer: the export's id, 0 for none */
    uint32_t owed;   /* automatic replies owed it, not told yet */
    uint32_t unacked;   /* told it, not acknowledged yet */
    uint32_t owed_next; /* the next peer owed some (AMX_NONE: none) */
};
#define AMX_NONE UINT32_MAX

/* What a flit handler needs to find its AM-2 handler. */
struct amx_slot {
    struct amudp_ep *ep;
    uint16_t index; /* flit handler index */
};

struct amudp_ep {
    ep_t self; /* the handle the program holds (<flit/handle.h>) */
    flit_ep_t *fep;
    struct amudp_eb *eb;
    unsigned serial; /* creation order: the n-th endpoint of every rank */
    en_t name;
    tag_t tag;
    void *seg;
    uintptr_t seglen;
    flit_rma_region_t *seg_region; /* the segment, exported; NULL: none */
    struct amx_peer *peers;        /* [job size], made on first use */
    uint32_t next_question;
    struct amx_xlat *xl;
    int nxl;
    int depth;
    amudp_handler_fn_t handler[AMUDP_MAX_NUMHANDLERS];
    struct amx_slot slot[AMX_H_COUNT];
    uint64_t handled; /* AM-2 handlers run: AM_WaitSema's event */
    amudp_stats_t stats;
    uint64_t retransmits_before; /* flit's count at the last reset */
    AMUDP_preHandlerCallback_t pre; /* AMUDP_SetHandlerCallbacks */
    AMUDP_postHandlerCallback_t post;
    /* Automatic replies (amudp_auto.c): the first peer owed some (a list
       through peers[].owed_next), the counts told and not acknowledged */
    uint32_t owed_head;
    uint64_t auto_unacked;
    uint64_t peers_down; /* peers gone so far: a wait for one of them ends */
};

struct amudp_eb {
    eb_t self; /* the handle the program holds */
    int type;
    int mask;
    struct amudp_ep **eps;
    int n, cap;
};

/* The token an AM-2 handler receives: lives on the dispatcher's stack. */
struct amx_token {
    void *self; /* its handle (amx_tokens) while its handler runs */
    struct amudp_ep *ep;
    flit_token_t *ft; /* NULL for a returned message */
    flit_rank_t peer; /* a returned message's destination (else: amx_token_peer) */
    int is_request;
    int replied; /* a request's handler replied (else AMUDP replies for it) */
};

/* The sender of the message a token stands for; for a returned message, the
   rank it was sent to. Asked for only when needed: most handlers never do. */
static inline flit_rank_t amx_token_peer(const struct amx_token *t)
{
    return t->ft ? flit_token_rank(t->ft) : t->peer;
}

/* n bytes of v, little-endian, at p; and back. */
static inline void amx_put_le(unsigned char *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t amx_get_le(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* amudp_ep.c */
int amx_err(int code, const char *fn, const char *why);
int amx_status_slow(flit_status st, const char *fn);
en_t amx_name(uint32_t rank, unsigned serial);

/* Checks and look-ups every call makes: inline, they cost a compare or
   two, where a call into the library cost as much as the rest of a short
   request (the wrapper must stay within a few percent of flit). */

/* AM-2's code for a flit status; fn names the call in the message. */
static inline int amx_status(flit_status st, const char *fn)
{
    return __builtin_expect(st == FLIT_OK, 1) ? AM_OK : amx_status_slow(st, fn);
}

/* Endpoints and bundles are handed out as handles of these tables
   (amudp_ep.c), never as pointers: one freed answers AM_ERR_BAD_ARG, also
   once its block holds a new one. The endpoint or bundle a handle names;
   NULL for any other value. */
extern flit_handles_t *amx_eps, *amx_ebs;
/* Handlers get their token as a handle of this table, freed when they
   return: one kept past that is refused (AM_ERR_BAD_ARG), also in the next
   handler, whose token sits in the same place on the dispatcher's stack. */
extern flit_handles_t *amx_tokens;

static inline struct amudp_ep *amx_ep_of(ep_t h)
{
    return (struct amudp_ep *)flit_handle_get(&amx_eps, h);
}

static inline struct amudp_eb *amx_eb_of(eb_t h)
{
    return (struct amudp_eb *)flit_handle_get(&amx_ebs, h);
}

static inline struct amx_token *amx_token_of(void *token)
{
    return (struct amx_token *)flit_handle_get(&amx_tokens, token);
}

/* The rank behind translation index; 0 when that entry is not in use. */
static inline int amx_translate(const struct amudp_ep *ep, amudp_node_t index,
                                flit_rank_t *rank_out)
{
    if (index >= (amudp_node_t)ep->nxl || !ep->xl[index].inuse)
        return 0;
    *rank_out = flit_rank(ep->xl[index].rank);
    return 1;
}
extern int amx_initialized;
flit_status amx_set_peer_tag(struct amudp_ep *ep, uint32_t rank, tag_t tag);

/* amudp_spmd.c: 1 once AMUDP_SPMDExit's protocol started in this process:
   from then on peers end, and that is no news. */
int amx_spmd_exiting(void);
/* amudp_spmd.c: how a process ends flit. AM_Init says whether it joined
   flit's job (flit_init answered FLIT_OK) and registers, once, the exit
   handler that ends AM for a program that exits 0 without AM_Terminate;
   AM_Terminate's last call ends flit's job (flit_finalize) if AM_Init
   joined it. */
void amx_end_joined(int joined);
void amx_end_flit(void);

/* amudp_msg.c */
void amx_dispatch(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                  unsigned nargs, void *user);
void amx_returned(flit_ep_t *fep, const flit_returned_t *info, void *user);
void amx_refused(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                 unsigned nargs, void *user);

/* amudp_auto.c: AMUDP's automatic reply to a request its handler left
   unanswered, counted as a short reply sent by the receiver and received
   by the sender. The receiver counts at once; the sender learns of them in
   batches (AMX_H_AUTO), sent when the program next polls, requests or
   waits, each acknowledged, so that SPMD barriers can wait until every
   count told has arrived. */
void amx_auto_owe(struct amudp_ep *ep, flit_rank_t sender);
void amx_auto_peer_down(struct amudp_ep *ep, uint32_t rank);
void amx_auto_refused(struct amudp_ep *ep, uint32_t rank, uint32_t count);
void amx_auto_flush(struct amudp_ep *ep);
/* Flushes, then waits until every count told was acknowledged. */
int amx_auto_settle(struct amudp_ep *ep, const char *fn);
void amx_auto_told(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                   unsigned nargs, void *user);
void amx_auto_acked(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user);

/* amudp_ep.c: waits (AMUDP_PoliteSync). amx_polite_sleep sleeps until the
   endpoint has work (0), or answers 1 when it has some already, -1 when it
   cannot sleep. amx_wait_until makes progress until done(arg), as
   AMUDP_PoliteSync says: polling between sleeps, or only sleeping; an AM
   status (AM_ERR_RESOURCE once a peer went down meanwhile). */
int amx_polite_sleep(struct amudp_ep *ep);
/* A message of the library's own, a request (buf NULL: a short), waiting
   for room as AMUDP_PoliteSync says. */
flit_status amx_send_own(struct amudp_ep *ep, flit_rank_t to, unsigned h, const void *buf,
                         size_t len, const uint32_t *args, unsigned nargs);
int amx_wait_until(struct amudp_ep *ep, int (*done)(void *), void *arg, const char *fn);

/* amudp_xfer.c */
void amx_seg_export(struct amudp_ep *ep);
struct amx_peer *amx_peer_of(struct amudp_ep *ep, uint32_t rank);
int amx_put_xfer(struct amudp_ep *ep, flit_rank_t dest, handler_t h, const void *src,
                 size_t nbytes, uint64_t off, const uint32_t *args, unsigned nargs,
                 flit_status *st);
int amx_seg_returned(struct amudp_ep *ep, const flit_returned_t *info);
void amx_seg_question(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user);
void amx_seg_answer(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                    unsigned nargs, void *user);

/* amudp_spawn.c: spawn functions of the program's own */
#define AMX_WORKER_ARG "__AMUDP_WORKER__" /* argv[1] of their workers */
#define AMX_RELAY_ARG  "__AMUDP_RELAY__"  /* argv[1] of flitrun's launchers */
int amx_spawn_custom(int nproc, int argc, char **argv, int (*fn)(int, int, char **));
__attribute__((noreturn)) void amx_spawn_relay(char **argv);
int amx_spawn_worker(int *argc, char ***argv);
void amx_spawn_inherit(void);
void amx_spawn_exit(int code);

/* amudp_flitrun.c: the flitrun that starts the workers (the order is
   explained there); a path, or "flitrun" for execvp to find on $PATH */
const char *amx_flitrun_path(void);

/* amudp_master.c: the master (`prog NPROCS [SPAWNFN] args`) */
#define AMX_ENV_DEPTH   "AMUDP_NETWORKDEPTH" /* the master's networkdepth */
#define AMX_ENV_ARGV0   "AMUDP_ARGV0"        /* argv[0] as the master got it */
#define AMX_ENV_EXIT_FD "AMUDP_EXIT_FD"      /* where a worker says it ended */
int amx_master_start(int argc, char **argv, int nproc, int depth, amudp_spawnfn_t fn);
/* Starts flitrun with arguments fa (fa[0] the program), in a child that
   ends with this process; its pid, or -1. */
pid_t amx_start_flitrun(char **fa);
/* Waits for that child, reading the workers' exit words from fd (-1:
   none); the job's exit status, AMUDP's way (amudp_master.c). */
int amx_wait_job(pid_t pid, int fd);

/* amudp_spmd.c */
void amx_gather_part(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                     unsigned nargs, void *user);
void amx_barrier_arrive(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                        unsigned nargs, void *user);
void amx_barrier_release(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                         unsigned nargs, void *user);
void amx_gather_whole(flit_token_t *ft, void *buf, size_t nbytes, const uint32_t *args,
                      unsigned nargs, void *user);

#endif /* FLIT_COMPAT_AMUDP_INTERNAL_H */
