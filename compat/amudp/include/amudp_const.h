/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AMUDP's constants, on flit (library flit-amudp): the version, the limits,
 * the AM-2 constants and status codes and the macros made of them, in a
 * header of their own as AMUDP has it, so that a client (a runtime's
 * conduit) may include them alone. <amudp.h> includes this header.
 * Only AM_*, AMUDP_*, AMX_*, amudp_* names and <amx_portable_platform.h>'s
 * PLATFORM_* are declared.
 */
#ifndef __AMUDP_CONST_H
#define __AMUDP_CONST_H

#include <amx_portable_platform.h>

#ifndef AMUDP
#define AMUDP 1
#endif

#ifndef AMX_STRINGIFY
#define _AMX_STRINGIFY_HELPER(x) #x
#define AMX_STRINGIFY(x)         _AMX_STRINGIFY_HELPER(x)
#endif
#ifndef AMX_CONCAT
#define _AMX_CONCAT_HELPER(a, b) a##b
#define AMX_CONCAT(a, b)         _AMX_CONCAT_HELPER(a, b)
#endif

/* The AMUDP release whose API this library follows: AMUDP 3.16, as GASNet
   ships it (amudp_spawnfn_t aside: <amudp_spmd.h>). */
#define AMUDP_LIBRARY_VERSION_MAJOR 3
#define AMUDP_LIBRARY_VERSION_MINOR 16
#define AMUDP_LIBRARY_VERSION       AMUDP_LIBRARY_VERSION_MAJOR.AMUDP_LIBRARY_VERSION_MINOR
#define AMUDP_LIBRARY_VERSION_STR   AMX_STRINGIFY(AMUDP_LIBRARY_VERSION)

/* ---------------------------------------------------------------- limits */

#define AMUDP_MAX_SHORT            16    /* handler arguments */
#define AMUDP_MAX_LONG             65000 /* bytes of one Xfer */
#define AMUDP_MAX_MEDIUM           AMUDP_MAX_LONG
#define AMUDP_MAX_NUMHANDLERS      256
#define AMUDP_INIT_NUMTRANSLATIONS 256
#define AMUDP_MAX_NUMTRANSLATIONS  (1U << 20)
#define AMUDP_MAX_SEGLENGTH        ((uintptr_t)-1)
#define AMUDP_MAX_BUNDLES          255
#define AMUDP_MAX_NETWORKDEPTH     1024
#define AMUDP_MAX_RECVDEPTH        65534 /* AMUDP's receive queue; flit sizes its own */
#define AMUDP_MAX_SPMDPROCS        AMUDP_MAX_NUMTRANSLATIONS

#define AM_MaxShort()       AMUDP_MAX_SHORT
#define AM_MaxMedium()      AMUDP_MAX_MEDIUM
#define AM_MaxLong()        AMUDP_MAX_LONG
#define AM_MaxNumHandlers() AMUDP_MAX_NUMHANDLERS
#define AM_GetNumHandlers(ep, pnhandlers)                                                \
    ((ep) ? ((*(pnhandlers) = AMUDP_MAX_NUMHANDLERS), AM_OK) : AM_ERR_BAD_ARG)
#define AM_SetNumHandlers(ep, nhandlers)                                                 \
    ((ep) ? ((nhandlers) == AMUDP_MAX_NUMHANDLERS ? AM_OK : AM_ERR_RESOURCE)             \
          : AM_ERR_BAD_ARG)
#define AM_MaxNumTranslations(trans) (*(trans) = AMUDP_MAX_NUMTRANSLATIONS, AM_OK)

/* ---------------------------------------------------------------- constants */

#define AM_ALL  1 /* tags: AM-2's names, not wildcards here (docs/compat.md) */
#define AM_NONE 0

typedef enum {
    AM_NOEVENTS, /* no event wakes AM_WaitSema */
    AM_NOTEMPTY, /* a message waiting wakes it */
    AM_NUMEVENTMASKS
} amudp_eventmask_t;

typedef enum {
    AM_SEQ, /* one thread at a time */
    AM_PAR, /* any thread */
    AM_NUM_BUNDLE_MODES
} amudp_bundle_mode_t;

/* What every call returns. */
#define AM_OK           0
#define AM_ERR_NOT_INIT 1 /* AM_Init not called, or AM_Terminate was */
#define AM_ERR_BAD_ARG  2 /* a parameter is invalid */
#define AM_ERR_RESOURCE 3 /* out of a resource, or the job cannot do it */
#define AM_ERR_NOT_SENT 4 /* the message could not be sent */
#define AM_ERR_IN_USE   5 /* the resource is busy */

/* Returned messages: the opcode handler 0 receives (an op_t, <amudp.h>). */
#define AM_REQUEST_M      1
#define AM_REQUEST_IM     2
#define AM_REQUEST_XFER_M 3
#define AM_REPLY_M        4
#define AM_REPLY_IM       5
#define AM_REPLY_XFER_M   6

#endif /* __AMUDP_CONST_H */
