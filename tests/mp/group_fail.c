/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A group of 3 where one member cannot queue or send one kind of message
 * for a while (a local shortage: no memory for the queue item, a send that
 * answers FLIT_ERR_NO_MEMORY or FLIT_ERR_SYSTEM): the group must still
 * deliver every message everywhere and be destroyed by every member. A
 * message lost to the shortage leaves a member waiting for ever, which
 * flitrun's --timeout turns into a failure.
 *
 * The failures are injected with the linker (--wrap, see CMakeLists.txt):
 * the group layer's calls that queue a control message (fl_grp_ctl_push),
 * any message (fl_grp_out_push), and the endpoint's sends (flit_am_short,
 * flit_am_medium) go through the wrappers below, which fail the first
 * --times calls of the chosen opcode on the chosen rank, as a shortage
 * would, and count them: a case whose failures never happened fails (it
 * would prove nothing). The sanitizers' allocators are not involved, so the
 * test runs under ASan and TSan alike.
 *
 * --case: join, credreq (a member's credit request), leave, fin, ack; the
 * sequencer's ready, seq (a large message's number), credit (a grant),
 * done, closed; send (a member's own message: the send answers
 * FLIT_ERR_NO_MEMORY, sent nothing, and is made again), forward (the
 * sequencer's fragments down the tree and a sender's multicast of its large
 * message), drain (sends of data and of an ACK that answer NO_MEMORY or
 * SYSTEM), deliver (no memory for a delivery's message handle).
 */
#include <flit/group.h>

#include "../../src/group/internal.h"
#include "mp.h"

#define GROUP_ID 11
#define COUNT    12 /* messages per member */

/* What to fail: the first `times` calls of `what` for opcode `op` here. */
enum what { W_CTL, W_PUSH, W_SHORT, W_MEDIUM, W_HANDLE };
struct inject {
    enum what what;
    enum op op;
    flit_status st; /* for W_SHORT, W_MEDIUM */
    unsigned times, done;
};

static struct inject inj[2];
static unsigned ninj;

static bool take(enum what what, enum op op, flit_status *st)
{
    for (unsigned k = 0; k < ninj; k++)
        if (inj[k].what == what && inj[k].op == op && inj[k].done < inj[k].times) {
            inj[k].done++;
            if (st)
                *st = inj[k].st;
            return true;
        }
    return false;
}

/* The group's own words: its version in the first. */
static bool group_op(const uint32_t *args, unsigned nargs, enum op *op)
{
    if (!args || nargs < 3 || args[0] >> 24 != WIRE_VERSION)
        return false;
    *op = (enum op)(args[0] & 0xff);
    return true;
}

bool __real_fl_grp_ctl_push(struct flit_group *g, uint32_t i, enum op op,
                            const uint32_t *rest, unsigned nrest);
bool __wrap_fl_grp_ctl_push(struct flit_group *g, uint32_t i, enum op op,
                            const uint32_t *rest, unsigned nrest);
bool __wrap_fl_grp_ctl_push(struct flit_group *g, uint32_t i, enum op op,
                            const uint32_t *rest, unsigned nrest)
{
    if (take(W_CTL, op, NULL)) {
        /* What the real one does when its item's malloc fails. */
        atomic_store(&g->gs->owed, true);
        atomic_store(&g->gs->work, true);
        return false;
    }
    return __real_fl_grp_ctl_push(g, i, op, rest, nrest);
}

bool __real_fl_grp_out_push(struct flit_groups *gs, struct flit_group *g, uint32_t dest,
                            const uint32_t *args, unsigned nargs, struct gmsg *msg,
                            size_t off, size_t len);
bool __wrap_fl_grp_out_push(struct flit_groups *gs, struct flit_group *g, uint32_t dest,
                            const uint32_t *args, unsigned nargs, struct gmsg *msg,
                            size_t off, size_t len);
bool __wrap_fl_grp_out_push(struct flit_groups *gs, struct flit_group *g, uint32_t dest,
                            const uint32_t *args, unsigned nargs, struct gmsg *msg,
                            size_t off, size_t len)
{
    enum op op;
    if (group_op(args, nargs, &op) && take(W_PUSH, op, NULL)) {
        atomic_store(&gs->owed, true);
        atomic_store(&gs->work, true);
        return false;
    }
    return __real_fl_grp_out_push(gs, g, dest, args, nargs, msg, off, len);
}

flit_status __real_flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                 const uint32_t *args, unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                 const uint32_t *args, unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_short(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                 const uint32_t *args, unsigned nargs, unsigned flags)
{
    enum op op;
    flit_status st;
    if (group_op(args, nargs, &op) && take(W_SHORT, op, &st))
        return st;
    return __real_flit_am_short(ep, dest, h, args, nargs, flags);
}

flit_status __real_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t n, const uint32_t *args,
                                  unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t n, const uint32_t *args,
                                  unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t n, const uint32_t *args,
                                  unsigned nargs, unsigned flags)
{
    enum op op;
    flit_status st;
    if (group_op(args, nargs, &op) && take(W_MEDIUM, op, &st))
        return st;
    return __real_flit_am_medium(ep, dest, h, buf, n, args, nargs, flags);
}

static uint32_t delivered_here; /* deliveries so far at this rank */

/* A delivery's message handle (the table of fl_grp_msgs): no memory, for
   the last message only (nothing comes after it to deliver it). */
flit_status __real_flit_handle_new(flit_handles_t **table, void *obj, void **handle);
flit_status __wrap_flit_handle_new(flit_handles_t **table, void *obj, void **handle);
flit_status __wrap_flit_handle_new(flit_handles_t **table, void *obj, void **handle)
{
    if (table == &fl_grp_msgs && delivered_here + 1 == 3 * COUNT &&
        take(W_HANDLE, OP_DATA, NULL))
        return FLIT_ERR_NO_MEMORY;
    return __real_flit_handle_new(table, obj, handle);
}

/* The case's failures at this rank (rank 0 is the sequencer). */
static void arm(const char *c, uint32_t me, unsigned times)
{
    struct inject none = {.times = 0};
    inj[0] = inj[1] = none;
    ninj = 0;
#define ADD(rank, w, o, s)                                                               \
    do {                                                                                 \
        if (me == (rank))                                                                \
            inj[ninj++] =                                                                \
                (struct inject){.what = (w), .op = (o), .st = (s), .times = times};      \
    } while (0)
    if (!strcmp(c, "credreq"))
        ADD(1, W_CTL, OP_CREDREQ, FLIT_OK);
    else if (!strcmp(c, "leave"))
        ADD(1, W_CTL, OP_LEAVE, FLIT_OK);
    else if (!strcmp(c, "fin"))
        ADD(2, W_CTL, OP_FIN, FLIT_OK);
    else if (!strcmp(c, "ack"))
        ADD(2, W_CTL, OP_ACK, FLIT_OK);
    else if (!strcmp(c, "credit"))
        ADD(0, W_CTL, OP_CREDIT, FLIT_OK);
    else if (!strcmp(c, "deliver")) /* its last delivery put off: nothing follows */
        ADD(2, W_HANDLE, OP_DATA, FLIT_OK);
    else if (!strcmp(c, "join"))
        ADD(1, W_CTL, OP_JOIN, FLIT_OK);
    else if (!strcmp(c, "ready"))
        ADD(0, W_CTL, OP_READY, FLIT_OK);
    else if (!strcmp(c, "seq"))
        ADD(0, W_CTL, OP_SEQ, FLIT_OK);
    else if (!strcmp(c, "done"))
        ADD(0, W_CTL, OP_DONE, FLIT_OK);
    else if (!strcmp(c, "closed"))
        ADD(0, W_CTL, OP_CLOSED, FLIT_OK);
    else if (!strcmp(c, "send")) {
        ADD(1, W_PUSH, OP_SMALL, FLIT_OK);
        ADD(2, W_PUSH, OP_SEQREQ, FLIT_OK);
    } else if (!strcmp(c, "forward")) {
        ADD(0, W_PUSH, OP_DATA, FLIT_OK); /* small messages, down the tree */
        ADD(1, W_PUSH, OP_DATA, FLIT_OK); /* its large message's multicast */
    } else if (!strcmp(c, "drain")) {
        ADD(1, W_MEDIUM, OP_SMALL, FLIT_ERR_NO_MEMORY);
        ADD(1, W_SHORT, OP_ACK, FLIT_ERR_SYSTEM);
        ADD(0, W_MEDIUM, OP_DATA, FLIT_ERR_NO_MEMORY);
        ADD(2, W_MEDIUM, OP_DATA, FLIT_ERR_SYSTEM); /* its large message */
    } else
        FAIL("unknown --case %s", c);
#undef ADD
}

struct state {
    uint32_t next[3]; /* per sender: the index of its next message */
    uint32_t delivered;
};

static void on_deliver(flit_group_t *g, flit_group_msg_t *m, size_t total, void *user)
{
    (void)g;
    struct state *s = user;
    uint32_t h[2];
    CHECK(total >= sizeof h);
    CHECK_OK(flit_group_recv(m, h, sizeof h));
    uint32_t src = flit_group_msg_sender(m).idx;
    CHECK(src < 3 && h[0] == src);
    if (h[1] != s->next[src])
        FAIL("rank %u's message %u came where %u was due", src, h[1], s->next[src]);
    s->next[src]++;
    s->delivered++;
    delivered_here = s->delivered;
}

/* Sends message j of this member: every third one larger than a fragment
   (numbered by a sequence request, multicast by its sender), costing more
   credits than a member's allowance. A send that meets the shortage sent
   nothing and is made again. */
static unsigned send_one(flit_group_t *g, uint32_t me, uint32_t j, uint8_t *buf,
                         size_t frag)
{
    size_t len = j % 3 == 1 ? 3 * frag + 1 : 64 + j;
    uint32_t h[2] = {me, j};
    memcpy(buf, h, sizeof h);
    unsigned refused = 0;
    flit_status st;
    while ((st = flit_group_send(g, buf, len)) == FLIT_ERR_NO_MEMORY && refused < 100)
        refused++;
    CHECK_OK(st);
    return refused;
}

int main(int argc, char **argv)
{
    const char *c = mp_arg_str(argc, argv, "--case", "leave");
    unsigned times = (unsigned)mp_arg_u64(argc, argv, "--times", 3);
    CHECK_OK(flit_init(NULL));
    uint32_t me = flit_job_rank().idx;
    CHECK(flit_job_size() == 3);
    flit_ep_t *ep;
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    flit_groups_t *gs;
    CHECK_OK(flit_groups_create(ep, &gs));
    /* A small window: allowance 2 credits, so credits run out and are
       asked for; a large message costs 4. */
    flit_group_params_t p = {.field_mask =
                                 FLIT_GROUP_PARAM_SEQUENCER | FLIT_GROUP_PARAM_WINDOW,
                             .sequencer = flit_rank(0),
                             .window = 16};
    struct state s = {{0}};
    flit_group_t *g;
    arm(c, me, times);
    CHECK_OK(flit_group_create(gs, GROUP_ID, NULL, 0, &p, on_deliver, &s, &g));
    flit_group_stats_t gst = {.struct_size = sizeof gst};
    CHECK_OK(flit_group_stats(g, &gst));
    uint8_t *buf = calloc(1, 3 * gst.frag + 1);
    CHECK(buf);
    unsigned refused = 0;
    for (uint32_t j = 0; j < COUNT; j++)
        refused += send_one(g, me, j, buf, gst.frag);
    CHECK_OK(flit_group_destroy(g));
    for (uint32_t r = 0; r < 3; r++)
        if (s.next[r] != COUNT)
            FAIL("%u of rank %u's %u messages delivered by destroy", s.next[r], r, COUNT);
    for (unsigned k = 0; k < ninj; k++)
        if (inj[k].done != inj[k].times)
            FAIL("case %s: %u of %u injected failures (%u) happened", c, inj[k].done,
                 inj[k].times, k);
    if (!strcmp(c, "send") && ninj && refused != times)
        FAIL("case send: %u sends answered FLIT_ERR_NO_MEMORY, %u expected", refused,
             times);
    free(buf);
    CHECK_OK(flit_groups_destroy(gs));
    CHECK_OK(flit_barrier(ep));
    printf("group_fail %s: rank %u OK (%u failures injected, %u sends refused)\n", c, me,
           ninj ? inj[0].done + inj[1].done : 0, refused);
    CHECK_OK(flit_ep_destroy(ep));
    CHECK_OK(flit_finalize());
    return 0;
}
