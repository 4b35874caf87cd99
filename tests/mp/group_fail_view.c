/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Linked into mp_group (as mp_group_fail_view, with the linker's --wrap,
 * see CMakeLists.txt): on every rank the first MP_GROUP_FAIL_TIMES
 * queueings of each message of a view change (STATE, QUERY, NEWVIEW,
 * CATCHUP, CAUGHT, INSTALL) and of data fragments (forwards, a catch-up's
 * fragments) fail, as when there is no memory for the queue item. The kill
 * tests' survivors must still agree on the new view and finish; a message
 * lost to the shortage hangs them until flitrun's --timeout. The first
 * failure injected on a rank is said on its standard error, so that the
 * test can check that failures happened.
 *
 * MP_GROUP_DEAF=R,R,... makes the groups of those ranks deaf to their own
 * endpoint: a death there starts no view change, and the rank learns of
 * it only from another survivor's messages (a QUERY, a STATE), as a
 * member that never talked to the dead one, or whose endpoint notices
 * late, does. The first death its endpoint reports there is said on
 * standard error (seen by wrapping flit_ep_listen: the report may come
 * after the others' messages made the view without the dead rank, when no
 * view change is left to start).
 *
 * MP_GROUP_LATE_VIEW=R makes rank R hear of a new view late: its group
 * ignores the first INSTALL it gets, and the fragments a tree brings it in
 * a view newer than its own while it is in a view change (only a
 * catch-up's reach it), as when the coordinator installed the view and
 * died before R took those messages. MP_GROUP_DIE_IN_VIEW=R:W kills rank
 * R as it sends its W-th data fragment in a view after its first: with
 * the two, the coordinator of a first view change numbers messages in the
 * view it installed, one survivor delivers them and the late one learns
 * of them only from the next round's catch-up.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/group/internal.h"

static unsigned left[OP_COUNT], injected;
static int armed = -1;

static bool fail_now(enum op op)
{
    if (armed < 0) {
        const char *s = getenv("MP_GROUP_FAIL_TIMES");
        armed = s ? atoi(s) : 0;
        for (unsigned i = OP_QUERY; i <= OP_INSTALL; i++)
            left[i] = (unsigned)armed;
        left[OP_DATA] = (unsigned)armed;
    }
    if ((unsigned)op >= OP_COUNT || !left[op])
        return false;
    left[op]--;
    if (injected++ == 0)
        fprintf(stderr,
                "group_fail_view: failing the first %d of each view change "
                "message here\n",
                armed);
    return true;
}

static void owed(struct flit_groups *gs)
{
    atomic_store(&gs->owed, true);
    atomic_store(&gs->work, true);
}

bool __real_fl_grp_ctl_to(struct flit_group *g, uint32_t rank, enum op op, uint32_t view,
                          const uint32_t *rest, unsigned nrest);
bool __wrap_fl_grp_ctl_to(struct flit_group *g, uint32_t rank, enum op op, uint32_t view,
                          const uint32_t *rest, unsigned nrest);
bool __wrap_fl_grp_ctl_to(struct flit_group *g, uint32_t rank, enum op op, uint32_t view,
                          const uint32_t *rest, unsigned nrest)
{
    if (op >= OP_QUERY && fail_now(op)) {
        owed(g->gs);
        return false;
    }
    return __real_fl_grp_ctl_to(g, rank, op, view, rest, nrest);
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
    if (g && g->views + g->rec.on > 0 && nargs == DATA_ARGS &&
        (args[0] & 0xff) == OP_DATA && fail_now(OP_DATA)) {
        owed(gs);
        return false;
    }
    return __real_fl_grp_out_push(gs, g, dest, args, nargs, msg, off, len);
}

static bool deaf_here(uint32_t me)
{
    const char *s = getenv("MP_GROUP_DEAF");
    for (char *end; s && *s; s = *end ? end + 1 : end) {
        unsigned long r = strtoul(s, &end, 10);
        if (end == s)
            return false;
        if (r == me)
            return true;
    }
    return false;
}

void __real_fl_grp_start_view_change(struct flit_group *g, uint32_t i);
void __wrap_fl_grp_start_view_change(struct flit_group *g, uint32_t i);
/* Reached from the endpoint's peer-down notice only: the group's own
   messages start view changes inside view.c, which this does not wrap. */
void __wrap_fl_grp_start_view_change(struct flit_group *g, uint32_t i)
{
    if (!deaf_here(g->gs->me))
        __real_fl_grp_start_view_change(g, i);
}

/* The group layer's endpoint listener (the only one in this program),
   passed on with its peer_down seen first. */
static const flit_ep_listener_t *group_listener;
static flit_ep_listener_t spy;

static void spy_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    static bool said;
    uint32_t me = flit_job_rank().idx;
    if (!said && deaf_here(me))
        fprintf(stderr, "group_fail_view: rank %u deaf to rank %u's death\n", me,
                peer.idx);
    said = true;
    group_listener->peer_down(ep, peer, reason, user);
}

flit_status __real_flit_ep_listen(flit_ep_t *ep, const flit_ep_listener_t *l, void *user);
flit_status __wrap_flit_ep_listen(flit_ep_t *ep, const flit_ep_listener_t *l, void *user);
flit_status __wrap_flit_ep_listen(flit_ep_t *ep, const flit_ep_listener_t *l, void *user)
{
    if (l && l->peer_down && (!group_listener || group_listener == l)) {
        group_listener = l;
        spy = *l;
        spy.peer_down = spy_down;
        l = &spy;
    }
    return __real_flit_ep_listen(ep, l, user);
}

flit_status __real_flit_ep_unlisten(flit_ep_t *ep, const flit_ep_listener_t *l,
                                    void *user);
flit_status __wrap_flit_ep_unlisten(flit_ep_t *ep, const flit_ep_listener_t *l,
                                    void *user);
flit_status __wrap_flit_ep_unlisten(flit_ep_t *ep, const flit_ep_listener_t *l,
                                    void *user)
{
    return __real_flit_ep_unlisten(ep, l && l == group_listener ? &spy : l, user);
}

/* The rank an MP_GROUP_ variable names ("R" or "R:W"); -1: none. */
static long env_rank(const char *name, unsigned long *w)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return -1;
    unsigned long r = strtoul(s, &end, 10);
    if (w)
        *w = *end == ':' ? strtoul(end + 1, NULL, 10) : 1;
    return (long)r;
}

void __real_fl_grp_on_install(struct flit_group *g, const uint32_t *a);
void __wrap_fl_grp_on_install(struct flit_group *g, const uint32_t *a);
void __wrap_fl_grp_on_install(struct flit_group *g, const uint32_t *a)
{
    static bool ignored;
    if (!ignored && env_rank("MP_GROUP_LATE_VIEW", NULL) == (long)g->gs->me) {
        ignored = true;
        fprintf(stderr, "group_fail_view: rank %u ignores the install of view %u\n",
                g->gs->me, a[2]);
        return;
    }
    __real_fl_grp_on_install(g, a);
}

void __real_fl_grp_take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                                 size_t len);
void __wrap_fl_grp_take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                                 size_t len);
void __wrap_fl_grp_take_fragment(struct flit_group *g, const uint32_t *a, const void *buf,
                                 size_t len)
{
    if (g->rec.on && a[2] > g->view && a[5] != NO_RANK &&
        env_rank("MP_GROUP_LATE_VIEW", NULL) == (long)g->gs->me)
        return;
    __real_fl_grp_take_fragment(g, a, buf, len);
}

flit_status __real_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t nbytes, const uint32_t *args,
                                  unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t nbytes, const uint32_t *args,
                                  unsigned nargs, unsigned flags);
flit_status __wrap_flit_am_medium(flit_ep_t *ep, flit_rank_t dest, flit_handler_t h,
                                  const void *buf, size_t nbytes, const uint32_t *args,
                                  unsigned nargs, unsigned flags)
{
    static uint32_t first = UINT32_MAX;
    static unsigned long sent;
    unsigned long w;
    long me = (long)flit_job_rank().idx;
    if (nargs == DATA_ARGS && (args[0] & 0xff) == OP_DATA &&
        env_rank("MP_GROUP_DIE_IN_VIEW", &w) == me) {
        if (first == UINT32_MAX)
            first = args[2];
        if (args[2] > first && ++sent == w) {
            fprintf(stderr, "group_fail_view: rank %ld dies in view %u\n", me, args[2]);
            raise(SIGKILL);
        }
    }
    return __real_flit_am_medium(ep, dest, h, buf, nbytes, args, nargs, flags);
}
