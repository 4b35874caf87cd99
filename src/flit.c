/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What this build of flit is made of: its transports, in the order they
 * are preferred, and the layers above the progress engine, bottom up. The
 * core walks both lists and names nothing in them.
 *
 * Adding a layer: a folder under src/ with its state and its struct
 * fl_layer (core/layer.h: its ops, counters and settings), its public
 * header under include/flit/, and one line in `layers` below. A layer built
 * on the public API alone describes itself in a flit_layer_t (flit/layer.h)
 * its public header declares, and takes one line in `public_layers`.
 * Adding a transport: a folder under src/transport/ with its descriptor
 * (struct fl_transport, transport/transport.h: name, the peers it may
 * reach, whether it serves by default, its settings tables, its counters,
 * its ops and the optional one-sided ones), and one line in `transports`;
 * FLIT_TRANSPORT then knows its name. An unreliable one is a datagram
 * transport (transport/dgram.h) with the reliability channel composed over
 * it here, as UDP is (with the fault interposer, transport/fault, between
 * them when a FLIT_*_RATE is set). No other file names a transport.
 */
#include "build.h"

#include "am/am.h"
#include "channel/channel.h"
#include "channel/config.h"
#include "core/ep.h"
#include "core/job.h"
#include "core/packet.h"
#include "core/pub_layer.h"
#include "flit/group.h"
#include "flit/object.h"
#include "flit/rpc.h"
#include "flit/tagged.h"
#include "rma/rma.h"
#include "stream/stream.h"
#include "transport/fault/fault.h"
#include "transport/self/self.h"
#include "transport/shm/shm.h"
#include "transport/udp/config.h"
#include "transport/udp/udp.h"
#include "util/config.h"
#include "util/log.h"
#ifdef FLIT_HAVE_XDP
#include "transport/xdp/xdp.h"
#endif
#ifdef FLIT_HAVE_OFI
#include "transport/ofi/ofi.h"
#endif

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

static const struct fl_setting *const udp_settings[] = {
    fl_udp_settings,
    fl_chan_settings,
    fl_fault_settings,
    NULL,
};

/* The reliability channel over UDP datagrams: every peer but ourselves. */
static const struct fl_transport udp = {
    .name = "udp",
    .reach = FL_REACH_HOST | FL_REACH_REMOTE,
    .by_default = true,
    .settings = udp_settings,
    .open = udp_open,
    FL_CHANNEL_OPS,
    FL_CHANNEL_COUNTERS,
};

#ifdef FLIT_HAVE_XDP
/* AF_XDP over UDP: UDP keeps the port and serves where AF_XDP cannot. */
static flit_status xdp_udp_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    return fl_xdp_open(&fl_dgram_udp, a, out);
}

static const struct fl_dgram_ops xdp_udp = FL_XDP_DGRAM(xdp_udp_open);

static flit_status xdp_faulty_open(const struct fl_tp_open_args *a, struct fl_dgram **out)
{
    struct fl_fault_params p;
    fl_fault_from_config(a->rank, &p);
    return fl_fault_open(&xdp_udp, &p, a, out);
}

static const struct fl_dgram_ops xdp_faulty = FL_FAULT_DGRAM("xdp", xdp_faulty_open);

static flit_status xdp_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    struct fl_fault_params p;
    return fl_chan_open(fl_fault_from_config(a->rank, &p) ? &xdp_faulty : &xdp_udp, a,
                        out);
}

/* The reliability channel over AF_XDP frames: other hosts, when
   FLIT_TRANSPORT names it (attaching to a NIC is for the user to ask). */
static const struct fl_transport xdp = {
    .name = "xdp",
    .reach = FL_REACH_REMOTE,
    .settings = udp_settings,
    .open = xdp_open,
    FL_CHANNEL_OPS,
    FL_CHANNEL_COUNTERS,
};
#endif

#ifdef FLIT_HAVE_OFI
static flit_status ofi_open(const struct fl_tp_open_args *a, struct fl_tp_ep **out)
{
    return fl_chan_open(&fl_dgram_ofi, a, out);
}

static const struct fl_setting *const ofi_settings[] = {fl_ofi_settings, fl_chan_settings,
                                                        NULL};

/* The reliability channel over libfabric's reliable datagrams (ofi.h): to
   every other rank, this host's too, when FLIT_TRANSPORT names it (a job
   that asks for libfabric gets it everywhere, which is also how one host
   tests it). */
static const struct fl_transport ofi = {
    .name = "ofi",
    .reach = FL_REACH_HOST | FL_REACH_REMOTE,
    .settings = ofi_settings,
    .open = ofi_open,
    FL_CHANNEL_OPS,
    FL_CHANNEL_ONESIDED, /* fi_write / fi_read where the provider has them */
};
#endif

/* A test's build of this list (tests/toy) adds a transport defined outside
   src/, last, under the name given here. */
#ifdef FLIT_EXTRA_TRANSPORT
extern const struct fl_transport FLIT_EXTRA_TRANSPORT;
#endif

static const struct fl_transport *const transports[] = {
    &fl_tp_self, /* a rank to itself */
    &fl_tp_shm,  /* ranks on this host */
#ifdef FLIT_HAVE_XDP
    &xdp, /* other hosts, FLIT_TRANSPORT=xdp */
#endif
#ifdef FLIT_HAVE_OFI
    &ofi, /* everyone, FLIT_TRANSPORT=ofi */
#endif
    &udp, /* everyone else (or everyone, FLIT_TRANSPORT=udp) */
#ifdef FLIT_EXTRA_TRANSPORT
    &FLIT_EXTRA_TRANSPORT,
#endif
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
    &flit_tagged_layer, /* MPI-style tagged messages */
    &flit_rpc_layer,    /* remote procedure calls (Panda) */
    NULL,
};

flit_status fl_build_settings(void)
{
    static const char *names[FL_MAX_TRANSPORTS + 1];
    flit_status st = fl_config_add(fl_core_settings);
    for (int i = 0; transports[i] && i < FL_MAX_TRANSPORTS; i++) {
        names[i] = transports[i]->name;
        for (int k = 0; transports[i]->settings && transports[i]->settings[k]; k++)
            if (st == FLIT_OK)
                st = fl_config_add(transports[i]->settings[k]);
    }
    fl_config_set_transports(names);
    for (int i = 0; layers[i]; i++)
        if (layers[i]->settings && st == FLIT_OK)
            st = fl_config_add(layers[i]->settings);
    return st;
}

flit_status flit_init(const flit_init_params_t *params)
{
    flit_status st = fl_build_settings();
    if (st == FLIT_OK)
        st = fl_pub_builtin(public_layers);
    return st == FLIT_OK ? fl_job_init(params, transports, layers) : st;
}
