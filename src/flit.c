/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What this build of flit is made of: its transports, in the order they
 * are preferred, and the layers above the progress engine, bottom up. The
 * core walks both lists and names nothing in them.
 *
 * Adding a layer: a folder under src/ with its state and its struct
 * fl_layer (core/layer.h), its public header under include/flit/, and one
 * line in `layers` below. A layer built on the public API alone describes
 * itself in a flit_layer_t (flit/layer.h) its public header declares, and
 * takes one line in `public_layers`. Adding a transport: its ops table
 * (transport/transport.h) and one line in `transports`; an unreliable one
 * is a datagram transport (transport/dgram.h) with the reliability
 * channel composed over it here, as UDP is (with the fault interposer,
 * transport/fault, between them when a FLIT_*_RATE is set).
 */
#include "am/am.h"
#include "channel/channel.h"
#include "core/job.h"
#include "core/packet.h"
#include "core/pub_layer.h"
#include "flit/group.h"
#include "flit/object.h"
#include "rma/rma.h"
#include "stream/stream.h"
#include "transport/fault/fault.h"
#include "transport/self/self.h"
#include "transport/shm/shm.h"
#include "transport/udp/udp.h"

static flit_status udp_faulty_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    struct fl_fault_params p;
    fl_fault_from_config(a->rank, &p);
    return fl_fault_open(&fl_dgram_udp, &p, a, out);
}

/* UDP under the seeded fault interposer (FLIT_DROP_RATE and friends). */
static const struct fl_dgram_ops udp_faulty = FL_FAULT_DGRAM("udp", udp_faulty_open);

static flit_status udp_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    struct fl_fault_params p;
    return fl_chan_open(fl_fault_from_config(a->rank, &p) ? &udp_faulty : &fl_dgram_udp,
                        a, out);
}

/* The reliability channel over UDP datagrams. */
static const struct fl_transport udp = FL_CHANNEL_TRANSPORT("udp", 3, udp_open);

static const struct fl_transport *const transports[] = {
    &fl_tp_self, /* a rank to itself */
    &fl_tp_shm,  /* ranks on this host */
    &udp,        /* everyone else (or everyone, FLIT_TRANSPORT=udp) */
    NULL,
};

static struct fl_layer *const layers[] = {
    &fl_am_layer,     /* active messages: handlers, request / reply */
    &fl_stream_layer, /* messages as byte streams (FM 2.x) */
    &fl_rma_layer,    /* one-sided communication (VMMC) */
    NULL,
};

/* Layers on the public API, bottom up; a program may add its own
   (flit_layer_register). */
static const flit_layer_t *const public_layers[] = {
    &flit_group_layer,  /* totally-ordered group multicast (Panda) */
    &flit_object_layer, /* shared objects (Orca) */
    NULL,
};

flit_status flit_init(const flit_init_params_t *params)
{
    flit_status st = fl_pub_builtin(public_layers);
    return st == FLIT_OK ? fl_job_init(params, transports, layers) : st;
}
