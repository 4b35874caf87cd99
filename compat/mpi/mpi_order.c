/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The order of sends behind a synchronous one (mpi_internal.h).
 *
 * A receive with a source, a tag and a contiguous type is posted in the
 * tagged layer itself (mpi_p2p.c), on the flit tag of a standard send
 * (K_DATA): the tagged layer puts such a message straight into its buffer.
 * A synchronous send's message carries another flit tag (K_SYNC, with the
 * id its acknowledgement names), so it reaches such a receive through this
 * library's progress engine instead. Were a standard send to the same
 * (destination, context, tag) to follow it before it matched, the tagged
 * layer could hand that later message to the receive first: MPI's
 * non-overtaking rule broken. So it does not follow: a send to a key on
 * which a synchronous send waits for its acknowledgement is held here (its
 * request incomplete, its buffer the program's until then), and so is any
 * send behind one held for the same key; acknowledgements release them in
 * the order they were made. MPI allows it: a standard send may wait until
 * its receive is posted, and this one's receive comes after the
 * synchronous send's.
 */
#include "mpi_internal.h"

static MPI_Request syncs;                              /* awaiting acknowledgement */
static MPI_Request held_head, *held_tail = &held_head; /* in the order made */

static int dest_of(MPI_Request r)
{
    return r->comm->world[r->peer];
}

static int same_key(MPI_Request a, MPI_Request b)
{
    return a->ctx == b->ctx && a->tag == b->tag && dest_of(a) == dest_of(b);
}

/* Whether list (linked by order_next, up to stop) holds r's key. */
static int key_in(MPI_Request list, MPI_Request stop, MPI_Request r)
{
    for (MPI_Request s = list; s && s != stop; s = s->order_next)
        if (same_key(s, r))
            return 1;
    return 0;
}

int mp_order_idle(void)
{
    return !held_head && !syncs;
}

int mp_order_must_hold(MPI_Request r)
{
    if (mp_order_idle())
        return 0;
    return key_in(held_head, NULL, r) || (!r->sync && key_in(syncs, NULL, r));
}

void mp_order_hold(MPI_Request r)
{
    r->order_next = NULL;
    *held_tail = r;
    held_tail = &r->order_next;
}

void mp_order_sync_sent(MPI_Request r)
{
    r->order_next = syncs;
    syncs = r;
}

/* Takes r out of the list at *head; whether it was there. */
static int unlink_from(MPI_Request *head, MPI_Request r)
{
    for (MPI_Request *p = head; *p; p = &(*p)->order_next) {
        if (*p != r)
            continue;
        *p = r->order_next;
        return 1;
    }
    return 0;
}

void mp_order_forget(MPI_Request r)
{
    if (unlink_from(&held_head, r)) {
        held_tail = &held_head;
        while (*held_tail)
            held_tail = &(*held_tail)->order_next;
    }
    unlink_from(&syncs, r);
}

MPI_Request mp_order_next(void)
{
    for (MPI_Request h = held_head; h; h = h->order_next) {
        if (key_in(held_head, h, h) || (!h->sync && key_in(syncs, NULL, h)))
            continue;
        mp_order_forget(h);
        return h;
    }
    return NULL;
}
