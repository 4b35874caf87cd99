/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Dead processes. flit tells every endpoint of a peer that died or stopped
 * answering (a listener's peer_down, in handler context: noted here, acted
 * on in progress by mpi_p2p.c); from then on every receive that waits for
 * that rank (by name, or MPI_ANY_SOURCE on a communicator it belongs to),
 * every collective's receive on a communicator it belongs to, and every
 * synchronous send to it complete with MPI_ERR_PROC_FAILED, so a
 * collective on such a communicator returns that error on every rank that
 * knows of the death (MPI_ERRORS_RETURN) and nothing hangs. Messages to it
 * that come back are counted, never fatal (flit's default returned-message
 * handler aborts the process).
 */
#include <stdio.h>
#include <stdlib.h>

#include <flit/am.h>

#include "mpi_internal.h"

static unsigned char *dead; /* by world rank */
static int news;            /* a death not yet acted on */
static unsigned long returned;

static void peer_down(flit_ep_t *ep, flit_rank_t peer, flit_status reason, void *user)
{
    (void)ep, (void)reason, (void)user;
    if (dead && peer.idx < flit_job_size()) {
        dead[peer.idx] = 1;
        news = 1;
    }
}

static void came_back(flit_ep_t *ep, const flit_returned_t *info, void *user)
{
    (void)ep, (void)user;
    if (returned++ == 0)
        fprintf(stderr,
                "flit-mpi: rank %u: a message to rank %u came back (%s); dropped\n",
                flit_job_rank().idx, info->peer.idx, flit_strerror(info->reason));
}

static const flit_ep_listener_t listener = {.peer_down = peer_down};

int mp_fault_init(void)
{
    dead = calloc(flit_job_size(), 1);
    if (!dead)
        return MPI_ERR_NO_MEM;
    if (flit_ep_listen(mp_ep, &listener, NULL) != FLIT_OK ||
        flit_am_set_returned_handler(mp_ep, came_back, NULL) != FLIT_OK)
        return MPI_ERR_INTERN;
    return MPI_SUCCESS;
}

void mp_fault_fini(void)
{
    free(dead);
    dead = NULL;
    news = 0;
}

int mp_fault_news(void)
{
    int n = news;
    news = 0;
    return n;
}

int mp_peer_dead(int world_rank)
{
    return dead && dead[world_rank];
}

/* Whether a receive from src (a rank of comm, or MPI_ANY_SOURCE) waits
   for a dead process. */
int mp_source_dead(MPI_Comm comm, int src)
{
    if (src >= 0)
        return mp_peer_dead(comm->world[src]);
    for (int i = 0; src == MPI_ANY_SOURCE && i < comm->size; i++)
        if (mp_peer_dead(comm->world[i]))
            return 1;
    return 0;
}
