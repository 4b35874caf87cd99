/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit groups: totally-ordered multicast, after Panda's (the runtime under
 * Orca), built on <flit/flit.h> and <flit/am.h> alone.
 *
 * A group is the whole job or any subset of it, created collectively by its
 * members; a rank may be in several groups at once. flit_group_send hands a
 * message, given as pieces from anywhere in memory, to every member, the
 * sender included: each runs the group's delivery handler for it. All
 * members deliver the group's messages in one total order, which respects
 * each sender's own order (a sender's earlier message is delivered first,
 * everywhere). The delivery handler receives the message piecewise, like a
 * stream's handler: a header first, then the payload where it belongs.
 *
 *     static void on_msg(flit_group_t *g, flit_group_msg_t *m, size_t total,
 *                        void *user)
 *     {
 *         struct hdr h;
 *         flit_group_recv(m, &h, sizeof h);
 *         flit_group_recv(m, place_for(&h), total - sizeof h);
 *     }
 *
 * How (docs/groups.md has the whole protocol): one member, the sequencer
 * (the lowest rank unless chosen), numbers the messages; small ones travel
 * to it and it numbers and multicasts them, large ones get a number from it
 * and their sender multicasts them. Data travels down a binary spanning
 * tree, forwarded by each member's progress engine (no program code runs
 * to forward); a member holds back what arrives out of order. A credit
 * stands for one fragment of buffer space at every member: senders spend
 * credits and get more from a credit manager beside the sequencer, which
 * recycles them once every member has delivered the messages they paid
 * for. A slow member slows the senders; nothing is dropped, and the bytes
 * any member holds for a group stay under flit_group_stats' buffer_bound.
 *
 * Progress: deliveries and forwarding happen while the endpoint makes
 * progress (flit_poll, flit_wait, any blocking flit call, the progress
 * thread). A member that stops making progress stops the group.
 *
 * Handlers: the delivery handler runs in handler context; it may receive
 * its message and call flit_group_stats, nothing else of this header.
 * send, create and destroy answer FLIT_ERR_IN_HANDLER from any handler (a
 * send that would not have to wait for credits goes out from a handler of
 * another layer, but a program should not count on it).
 *
 * Failure: when a member dies (the sequencer too), the survivors form a
 * new view without it (within a few message times of hearing of the death,
 * which takes up to FLIT_PEER_TIMEOUT over UDP), and each runs the
 * view-change handler naming it. A message delivered by any survivor is
 * delivered by all, at the same place; a dead member's messages by all or
 * none; a survivor's messages in flight are ordered in the new view, never
 * lost or doubled; the lowest survivor takes over as sequencer when the
 * sequencer died. Messages the groups had in flight to the dead rank come
 * back to the returned-message handler with FLIT_ERR_PEER_DOWN.
 *
 * Setting up: the groups are a layer of the endpoint (flit/layer.h).
 * Name "group" among the endpoint's layers (flit_ep_params_t.layers) and
 * the endpoint is created with its group machinery; then flit_group_open
 * creates groups on it. flit_groups_create / flit_groups_destroy and
 * flit_group_create, which took a group set the program made first, still
 * work and are deprecated: they go in the next release.
 *
 * Threads: a group may be used from every thread that may use its endpoint.
 */
#ifndef FLIT_GROUP_H
#define FLIT_GROUP_H

#include <sys/uio.h>

#include <flit/flit.h>
#include <flit/layer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The groups of one endpoint: takes one active-message handler index.
   Deprecated: the "group" layer of the endpoint holds them. */
typedef struct flit_groups flit_groups_t;
typedef struct flit_group flit_group_t;
/* A message being delivered; valid while the delivery handler runs. */
typedef struct flit_group_msg flit_group_msg_t;

/*
 * The group layer (flit/layer.h): name "group", opened on request. An
 * endpoint created with "group" in flit_ep_params_t.layers makes, during
 * that collective call, what flit_groups_create makes (a handler index
 * reserved on every rank, a barrier); flit_ep_destroy frees it, once the
 * program destroyed its groups (one left live is logged, and its memory
 * kept). Counters (flit_layer_counter): group.unknown, messages for a group
 * not here; group.refused, malformed ones or ones for another role;
 * group.live, the groups on the endpoint now.
 */
FLIT_API extern const flit_layer_t flit_group_layer;

/*
 * Deprecated (flit_ep_params_t.layers "group" instead; it goes in the next
 * release). Collective over the job (it reserves a handler index on every
 * rank with flit_ep_reserve_handlers, and ends with a barrier): the group
 * machinery of ep. FLIT_ERR_INVALID_ARG for a NULL ep or out; from inside a handler,
 * the status of the reservation (FLIT_ERR_IN_HANDLER).
 */
FLIT_API flit_status flit_groups_create(flit_ep_t *ep, flit_groups_t **out);
/*
 * Deprecated, as flit_groups_create. Frees gs, once every group of it was
 * destroyed (FLIT_ERR_AGAIN, nothing
 * freed, while one lives); not collective. The handler index stays taken
 * by a handler that drops whatever still arrives for the groups.
 */
FLIT_API flit_status flit_groups_destroy(flit_groups_t *gs);

/* Runs once per message, in the group's total order. total: its length. */
typedef void (*flit_group_deliver_fn)(flit_group_t *g, flit_group_msg_t *m, size_t total,
                                      void *user);
/* A member left the group (it died or stopped answering); the survivors
   installed a view without it. Runs once per member that left, during
   progress, outside any handler. */
typedef void (*flit_group_view_fn)(flit_group_t *g, flit_rank_t left, void *user);

#define FLIT_GROUP_PARAM_SEQUENCER (1u << 0)
#define FLIT_GROUP_PARAM_WINDOW    (1u << 1)
#define FLIT_GROUP_PARAM_SMALL_MAX (1u << 2)
#define FLIT_GROUP_PARAM_VIEW_FN   (1u << 3)

#define FLIT_GROUP_WINDOW_DEFAULT 512u /* credits, one fragment each */
#define FLIT_GROUP_WINDOW_MIN     2u
#define FLIT_GROUP_WINDOW_MAX     65536u
#define FLIT_GROUP_SMALL_DEFAULT  4096u /* bytes sent through the sequencer */

typedef struct flit_group_params {
    uint64_t field_mask; /* FLIT_GROUP_PARAM_* bits of the fields set */
    /* Who numbers the messages and manages the credits; a member. Default:
       the lowest rank of the group. */
    flit_rank_t sequencer;
    /* Credits of the group, FLIT_GROUP_WINDOW_MIN .. _MAX; each stands for
       one fragment (flit_group_stats' frag bytes) at every member. The
       largest message is window / 2 fragments. */
    uint32_t window;
    /* Messages up to this many bytes (at most one fragment) travel through
       the sequencer, which numbers and multicasts them; larger ones get a
       number first and their sender multicasts them. */
    uint32_t small_max;
    flit_group_view_fn view_fn; /* with FLIT_GROUP_PARAM_VIEW_FN */
    void *view_user;
} flit_group_params_t;

/*
 * Deprecated: flit_group_open below takes the endpoint. Collective over
 * the members: every member calls it with the same id (a
 * number of the program's choosing, unique among the live groups of gs
 * that share a member), the same members (any order, no repeats; NULL and
 * 0 for the whole job) and the same sequencer and window; it returns once
 * every member has joined. fn (not NULL) delivers the group's messages.
 * params may be NULL. FLIT_ERR_INVALID_ARG: NULL gs, fn or out, members
 * NULL with n > 0, a repeated member, this rank not a member, an id in use
 * here, the sequencer not a member, a bit of field_mask unknown, a window
 * out of range, small_max above a fragment; FLIT_ERR_RANK: a member (or the
 * sequencer) outside the job; FLIT_ERR_PEER_DOWN: a member died before all
 * had joined. Members that returned first may already send, so fn may run
 * (on a progress thread, or in a wait this call makes) before *out is set;
 * it is handed the group as its first argument.
 */
FLIT_API flit_status flit_group_create(flit_groups_t *gs, uint32_t id,
                                       const flit_rank_t *members, unsigned n,
                                       const flit_group_params_t *params,
                                       flit_group_deliver_fn fn, void *user,
                                       flit_group_t **out);
/*
 * flit_group_create on the group layer of ep (the call to use:
 * flit_group_create, which takes a flit_groups_t, is deprecated): the same
 * arguments, collective over the members, the same statuses, and
 * FLIT_ERR_INVALID_ARG for an ep created without "group" among its layers.
 */
FLIT_API flit_status flit_group_open(flit_ep_t *ep, uint32_t id,
                                     const flit_rank_t *members, unsigned n,
                                     const flit_group_params_t *params,
                                     flit_group_deliver_fn fn, void *user,
                                     flit_group_t **out);

/*
 * Collective over the members: waits until this member's messages are
 * delivered here, then until every member has called it and every message
 * of the group is delivered here, and frees g. A group stopped while it
 * was created (a member died) is freed at once and answers
 * FLIT_ERR_PEER_DOWN. Any later call with g (while gs lives) answers
 * FLIT_ERR_INVALID_ARG. Once it returns, the id may name a new group here,
 * even while other members are still in their destroy.
 */
FLIT_API flit_status flit_group_destroy(flit_group_t *g);

/*
 * Sends the iovcnt pieces of iov, in order, as one message to the group.
 * The pieces are copied before it returns. Waits (making progress) while
 * the sender has no credits: the group's slowest member sets its pace.
 * While a view change is under way it waits for the new view.
 * FLIT_ERR_TOO_LARGE above the largest message (params' window);
 * FLIT_ERR_NO_MEMORY when this process has no memory to copy or queue it:
 * nothing was sent, and the same call may be made again;
 * FLIT_ERR_PEER_DOWN for a group stopped while created; FLIT_ERR_INVALID_ARG for a
 * NULL or destroyed g, iovcnt < 0, a NULL iov with iovcnt > 0 or a NULL
 * base with a length, or a group being destroyed.
 */
FLIT_API flit_status flit_group_sendv(flit_group_t *g, const struct iovec *iov,
                                      int iovcnt);
/* The same for one buffer (buf may be NULL when n is 0). */
FLIT_API flit_status flit_group_send(flit_group_t *g, const void *buf, size_t n);

/* ---- inside the delivery handler ---- */

/* Takes the next n bytes of the message into buf. FLIT_ERR_TOO_LARGE, with
   nothing taken, when fewer than n remain; FLIT_ERR_BAD_TOKEN for a handle
   whose handler returned; FLIT_ERR_INVALID_ARG for a NULL m, or a NULL buf
   with n > 0. */
FLIT_API flit_status flit_group_recv(flit_group_msg_t *m, void *buf, size_t n);
/* The same, scattered over iovcnt buffers in order; FLIT_ERR_INVALID_ARG
   also for iovcnt < 0, a NULL iov with iovcnt > 0, a NULL base with a
   length. */
FLIT_API flit_status flit_group_recvv(flit_group_msg_t *m, const struct iovec *iov,
                                      int iovcnt);
/* Passes over the next n bytes; the statuses of flit_group_recv. */
FLIT_API flit_status flit_group_skip(flit_group_msg_t *m, size_t n);
/* Bytes not taken yet; 0 for a dead handle. */
FLIT_API size_t flit_group_remaining(const flit_group_msg_t *m);
/* The sender; flit_rank(UINT32_MAX) for a dead handle. */
FLIT_API flit_rank_t flit_group_msg_sender(const flit_group_msg_t *m);
/* The message's place in the group's order: 0, 1, 2, ... on every member;
   UINT64_MAX for a dead handle. */
FLIT_API uint64_t flit_group_msg_seq(const flit_group_msg_t *m);

/* ---- introspection ---- */

typedef struct flit_group_stats {
    size_t struct_size;     /* set to sizeof(flit_group_stats_t) first */
    uint32_t size;          /* members */
    flit_rank_t sequencer;  /* now */
    size_t frag;            /* bytes a credit stands for */
    uint64_t sent;          /* messages this member sent */
    uint64_t sent_small;    /* ... of which through the sequencer */
    uint64_t delivered;     /* messages delivered here */
    uint64_t forwarded;     /* fragments this member passed down the tree */
    uint64_t forward_waits; /* forwards that found no room and were queued */
    uint64_t credit_waits;  /* sends that waited for credits */
    uint64_t buffered;      /* bytes of messages held here now */
    uint64_t buffered_max;  /* the most ever held here */
    uint64_t buffer_bound;  /* what credits let it reach (docs/groups.md) */
    uint64_t views;         /* members that left, as views installed here */
    int stopped;            /* a member left before the group was formed */
    uint64_t refused;       /* malformed messages (or ones for another
                               member's role) the groups of this endpoint
                               dropped; the first is logged */
} flit_group_stats_t;

/* FLIT_ERR_INVALID_ARG for NULL arguments or a struct_size no release had;
   one of an earlier release (ending at stopped) gets the fields it has. */

FLIT_API flit_status flit_group_stats(flit_group_t *g, flit_group_stats_t *out);

#ifdef __cplusplus
}
#endif

#endif /* FLIT_GROUP_H */
