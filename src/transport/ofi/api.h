/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libfabric, loaded when the transport is first opened (load.c), never
 * linked: a program that does not ask for FLIT_TRANSPORT=ofi never maps
 * it, nor what it links (verbs, rdmacm, PSM, whose constructors install
 * handlers for SIGSEGV and SIGABRT that turn an abort into exit 1). The
 * files of this folder include libfabric's headers through this one: its
 * few exported functions are called through fl_ofi (the rest of its API is
 * inline, through the ops tables of the objects it hands out).
 */
#ifndef FL_TRANSPORT_OFI_API_H
#define FL_TRANSPORT_OFI_API_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "flit/flit.h"

struct fl_ofi_api {
    int (*getinfo)(uint32_t version, const char *node, const char *service,
                   uint64_t flags, const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
};

/* Set by fl_ofi_load. */
extern struct fl_ofi_api fl_ofi;

/* Loads libfabric once (later calls answer the first's status), keeping
   the process's handlers of fatal signals as they were; FLIT_ERR_NOT_SUPPORTED,
   said once, where it cannot be loaded. Thread-safe. */
flit_status fl_ofi_load(void);

#define fi_getinfo     fl_ofi.getinfo
#define fi_freeinfo    fl_ofi.freeinfo
#define fi_dupinfo     fl_ofi.dupinfo
#define fi_fabric      fl_ofi.fabric
#define fi_strerror    fl_ofi.strerror
#define fi_allocinfo() fl_ofi.dupinfo(NULL)

#endif /* FL_TRANSPORT_OFI_API_H */
