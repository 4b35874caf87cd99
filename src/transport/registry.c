/* The transports this build has, in preference order; ops checked once. */
#include <stdio.h>
#include <stdlib.h>

#include "transport/transport.h"

extern const struct fl_transport fl_tp_self;
extern const struct fl_transport fl_tp_shm;
extern const struct fl_transport fl_tp_udp;

static const struct fl_transport *const all[] = {
    &fl_tp_self,    /* a rank to itself */
    &fl_tp_shm,     /* ranks on this host */
    &fl_tp_udp,     /* everyone else (or everyone, FLIT_TRANSPORT=udp) */
    NULL,
};

/* Every op is required: a missing one is our bug, caught at first use. */
static void validate(const struct fl_transport *t)
{
    bool ok = t->name && t->open && t->address && t->reachable && t->connect &&
              t->connected && t->max_packet && t->reserve && t->commit && t->cancel &&
              t->poll && t->arm && t->disarm && t->fd && t->want_room &&
              t->check_peers && t->reclaim && t->settled && t->peer_address && t->dump_peer &&
              t->close &&
              (!(t->caps & FL_TP_PUT) || (t->put && t->set_tag));
    if (!ok) {
        fprintf(stderr, "flit: transport %s lacks a required op\n",
                t->name ? t->name : "?");
        abort();
    }
}

const struct fl_transport *const *fl_transports(void)
{
    static _Atomic int checked;
    if (!checked) {
        for (int i = 0; all[i]; i++)
            validate(all[i]);
        checked = 1;
    }
    return all;
}
