/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * AM-2 as AMUDP 3.x presents it, on flit (library flit-amudp).
 *
 * A program written for AMUDP builds against this header by changing only
 * its include path and link line: the names, types, constants and macro
 * families below are AMUDP's. What differs, and why, is listed in flit's
 * docs/compat.md (section "AMUDP"). In short: endpoints are flit endpoints, so
 * allocating and freeing one is collective over the job, and an endpoint
 * name (en_t) stands for a rank and an endpoint of the job rather than a
 * UDP address; long messages (Xfer) land in the segment set with AM_SetSeg.
 *
 * Only AM-2 and AMUDP names are declared here (AM_*, AMUDP_*, AMX_*, amudp_*,
 * amx_*, the AM-2 handle types and returned-message status codes, and the
 * PLATFORM_* macros of <amx_portable_platform.h>); the fixed-width integer
 * types are made visible as AMUDP's header does.
 */
#ifndef __AMUDP_H
#define __AMUDP_H

#include <amudp_const.h>           /* constants, limits, status codes; as AMUDP's */
#include <amx_portable_platform.h> /* AMUDP's header includes it too */
#include <inttypes.h>
#include <netinet/in.h> /* en_t is a struct sockaddr_in */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Returned messages: the status handler 0 receives. */
#define EBADARGS       1  /* arguments of the request or reply invalid */
#define EBADENTRY      2  /* translation-table entry not in use */
#define EBADTAG        3  /* the sender's tag is not the receiver's */
#define EBADHANDLER    4  /* no handler at that index at the receiver */
#define EBADSEGOFF     5  /* offset outside the receiver's segment */
#define EBADLENGTH     6  /* transfer runs past the segment's end */
#define EBADENDPOINT   7  /* the destination endpoint does not exist */
#define ECONGESTION    8  /* congestion at the destination */
#define EUNREACHABLE   9  /* the destination cannot be reached (died) */
#define EREPLYREJECTED 10 /* the destination refused a reply */

/* Returned messages: the opcode handler 0 receives (AM_REQUEST_M ...,
   <amudp_const.h>). */
typedef int op_t;

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- types */

typedef uint64_t tag_t;
typedef uint8_t handler_t;
typedef uint32_t amudp_node_t;
typedef struct sockaddr_in en_t;

#define _AMX_TICK_T
typedef uint64_t amx_tick_t;

typedef enum {
    amudp_Short = 0,
    amudp_Medium = 1,
    amudp_Long = 2,
    amudp_NumCategories = 3
} amudp_category_t;

/* Per-endpoint counters, a flat struct passed by value (AMUDP's layout). */
typedef struct {
    uint64_t RequestsSent[amudp_NumCategories];
    uint64_t RepliesSent[amudp_NumCategories];
    uint64_t RequestsRetransmitted[amudp_NumCategories];
    uint64_t RepliesRetransmitted[amudp_NumCategories];
    uint64_t RepliesSquashed[amudp_NumCategories];
    uint64_t RequestsReceived[amudp_NumCategories];
    uint64_t RepliesReceived[amudp_NumCategories];
    uint64_t ReturnedMessages;
    uint64_t OutOfOrderRequests;
    uint64_t OutOfOrderReplies;
    amx_tick_t RequestMinLatency; /* not measured: as in AMUDP_initial_stats */
    amx_tick_t RequestMaxLatency;
    amx_tick_t RequestSumLatency;
    uint64_t RequestDataBytesSent[amudp_NumCategories]; /* arguments + payload */
    uint64_t ReplyDataBytesSent[amudp_NumCategories];
    uint64_t RequestTotalBytesSent[amudp_NumCategories]; /* + message headers */
    uint64_t ReplyTotalBytesSent[amudp_NumCategories];
    uint64_t TotalBytesSent;
} amudp_stats_t;

/*
 * Handlers are installed through this type; AM_SetHandler casts, so a
 * handler declared with any AM-2 prototype is accepted as it is:
 *   short:   void h(void *token, int32_t a0, ...)
 *   medium:  void h(void *token, void *buf, size_t nbytes, int32_t a0, ...)
 *   long:    the same as medium; buf is where the data landed
 *   index 0: void h(int status, op_t opcode, void *token)
 */
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
typedef void (*amudp_handler_fn_t)();
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic pop
#endif

struct amudp_eb;
typedef struct amudp_eb *eb_t;
struct amudp_ep;
typedef struct amudp_ep *ep_t;

/* ---------------------------------------------------------------- AMUDP extensions */

extern int AMUDP_VerboseErrors; /* non-zero: print each error a call returns */
extern int AMUDP_SilentMode;    /* non-zero: print nothing but errors */
/*
 * The blocking-wait mode. Non-zero: a call that waits (a request waiting
 * for room at its destination, AM_WaitSema, AMUDP_SPMDBarrier,
 * AMUDP_SPMDAllGather) sleeps until the endpoint has work, without
 * polling first; for jobs with more procs than cores, or a program that
 * must leave its core to others. 0, the default: it polls for FLIT_SPIN_US
 * microseconds before it sleeps, for the latency. Read at each wait.
 */
extern int AMUDP_PoliteSync;
#ifdef __GNUC__
__attribute__((__format__(__printf__, 1, 2), __noreturn__))
#endif
extern void
AMUDP_FatalErr(const char *msg, ...);

extern int AMUDP_GetEndpointStatistics(ep_t ep, amudp_stats_t *stats);
extern int AMUDP_ResetEndpointStatistics(ep_t ep);
extern int AMUDP_AggregateStatistics(amudp_stats_t *runningsum, amudp_stats_t *newvalues);
/* Writes a report to fp (a FILE *, may be NULL) and returns it in a static
   buffer rewritten by the next call. */
extern const char *AMUDP_DumpStatistics(void *fp, amudp_stats_t *stats,
                                        int globalAnalysis);
extern const amudp_stats_t AMUDP_initial_stats;

extern int AMUDP_GetSourceId(void *token, int *srcid);

/*
 * Hooks around every AM-2 handler the endpoint runs (tracing, a runtime's
 * handler-context checks): pre just before the handler, post just after
 * it, for requests and replies of every category and for handler 0 with a
 * returned message (handlerId 0, buf NULL, args NULL). buf and nbytes are
 * the medium payload or where the long data landed (NULL, 0 for a short);
 * args the handler's numargs arguments; token the handler's. The hooks may
 * make no AM call. NULL: none. AM_ERR_BAD_ARG for a bad endpoint.
 */
typedef void (*AMUDP_preHandlerCallback_t)(amudp_category_t cat, int isReq, int handlerId,
                                           void *token, void *buf, size_t nbytes,
                                           int numargs, uint32_t *args);
typedef void (*AMUDP_postHandlerCallback_t)(amudp_category_t cat, int isReq);
extern int AMUDP_SetHandlerCallbacks(ep_t ep,
                                     AMUDP_preHandlerCallback_t preHandlerCallback,
                                     AMUDP_postHandlerCallback_t postHandlerCallback);
extern int AMUDP_enEqual(en_t en1, en_t en2);
extern int AMUDP_SetTranslationTag(ep_t ea, int index, tag_t tag);

/* standardized AM-2 extensions */
#define AMX_VerboseErrors           AMUDP_VerboseErrors
#define AMX_SilentMode              AMUDP_SilentMode
#define AMX_FatalErr                AMUDP_FatalErr
#define AMX_SetTranslationTag       AMUDP_SetTranslationTag
#define AMX_GetEndpointStatistics   AMUDP_GetEndpointStatistics
#define AMX_ResetEndpointStatistics AMUDP_ResetEndpointStatistics
#define AMX_DumpStatistics          AMUDP_DumpStatistics
#define AMX_AggregateStatistics     AMUDP_AggregateStatistics
#define AMX_initial_stats           AMUDP_initial_stats
#define amx_stats_t                 amudp_stats_t
#define amx_handler_fn_t            amudp_handler_fn_t
#define AMX_GetSourceId             AMUDP_GetSourceId
#define AMX_enEqual                 AMUDP_enEqual

/* ---------------------------------------------------------------- AM-2 */

extern int AM_Init(void);
/* The call that matches the first AM_Init frees every bundle and ends
   flit's job for this process (when AM_Init joined it): collective, it
   waits for the other procs to free their endpoints; the SPMD collectives
   answer AM_ERR_NOT_INIT after it. A program that exits with 0 without it
   gets it at exit. */
extern int AM_Terminate(void);
extern int AM_MaxSegLength(uintptr_t *nbytes);

extern int AM_AllocateBundle(int type, eb_t *endb);
extern int AM_AllocateEndpoint(eb_t bundle, ep_t *endp, en_t *endpoint_name);
extern int AM_FreeBundle(eb_t bundle);
extern int AM_FreeEndpoint(ep_t ea);
extern int AM_MoveEndpoint(ep_t ea, eb_t from_bundle, eb_t to_bundle);

extern int AM_GetSeg(ep_t ea, void **addr, uintptr_t *nbytes);
extern int AM_SetSeg(ep_t ea, void *addr, uintptr_t nbytes);
extern int AM_GetTag(ep_t ea, tag_t *tag);
extern int AM_SetTag(ep_t ea, tag_t tag);

extern int AM_Map(ep_t ea, int index, en_t name, tag_t tag);
extern int AM_MapAny(ep_t ea, int *index, en_t name, tag_t tag);
extern int AM_UnMap(ep_t ea, int index);
extern int AM_GetTranslationInuse(ep_t ea, int i);
extern int AM_GetTranslationTag(ep_t ea, int i, tag_t *tag);
extern int AM_GetTranslationName(ep_t ea, int i, en_t *gan);
extern int AM_GetNumTranslations(ep_t ep, int *pntrans);
extern int AM_SetNumTranslations(ep_t ep, int ntrans);
extern int AM_SetExpectedResources(ep_t ea, int n_endpoints, int n_outstanding_requests);

extern int _AM_SetHandler(ep_t ea, handler_t handler, amudp_handler_fn_t function);
#define AM_SetHandler(ea, handler, function)                                             \
    _AM_SetHandler((ea), (handler), (amudp_handler_fn_t)(function))
extern int _AM_SetHandlerAny(ep_t ea, handler_t *handler, amudp_handler_fn_t function);
#define AM_SetHandlerAny(ea, handler, function)                                          \
    _AM_SetHandlerAny((ea), (handler), (amudp_handler_fn_t)(function))

extern int AM_GetEventMask(eb_t eb, int *mask);
extern int AM_SetEventMask(eb_t eb, int mask);
extern int AM_WaitSema(eb_t eb);

extern int AM_GetSourceEndpoint(void *token, en_t *gan);
extern int AM_GetDestEndpoint(void *token, ep_t *endp);
extern int AM_GetMsgTag(void *token, tag_t *tagp);

extern int AM_Poll(eb_t bundle);

/* The six calls behind every request and reply macro below; the arguments
   after numargs are int32_t values (promoted to int). */
extern int AMUDP_Request(ep_t request_endpoint, amudp_node_t reply_endpoint,
                         handler_t handler, int numargs, ...);
extern int AMUDP_RequestI(ep_t request_endpoint, amudp_node_t reply_endpoint,
                          handler_t handler, void *source_addr, size_t nbytes,
                          int numargs, ...);
extern int AMUDP_RequestXfer(ep_t request_endpoint, amudp_node_t reply_endpoint,
                             handler_t handler, void *source_addr, size_t nbytes,
                             uintptr_t dest_offset, int async, int numargs, ...);
extern int AMUDP_Reply(void *token, handler_t handler, int numargs, ...);
extern int AMUDP_ReplyI(void *token, handler_t handler, void *source_addr, size_t nbytes,
                        int numargs, ...);
extern int AMUDP_ReplyXfer(void *token, handler_t handler, void *source_addr,
                           size_t nbytes, uintptr_t dest_offset, int numargs, ...);

extern int AMUDP_RequestVA(ep_t request_endpoint, amudp_node_t reply_endpoint,
                           handler_t handler, int numargs, va_list argptr);
extern int AMUDP_RequestIVA(ep_t request_endpoint, amudp_node_t reply_endpoint,
                            handler_t handler, void *source_addr, size_t nbytes,
                            int numargs, va_list argptr);
extern int AMUDP_RequestXferVA(ep_t request_endpoint, amudp_node_t reply_endpoint,
                               handler_t handler, void *source_addr, size_t nbytes,
                               uintptr_t dest_offset, int async, int numargs,
                               va_list argptr);
extern int AMUDP_ReplyVA(void *token, handler_t handler, int numargs, va_list argptr);
extern int AMUDP_ReplyIVA(void *token, handler_t handler, void *source_addr,
                          size_t nbytes, int numargs, va_list argptr);
extern int AMUDP_ReplyXferVA(void *token, handler_t handler, void *source_addr,
                             size_t nbytes, uintptr_t dest_offset, int numargs,
                             va_list argptr);

#ifdef __cplusplus
}
#endif

/*
 * AM-2's request and reply families, 0 to 16 arguments. Each argument is
 * converted to int32_t as a call to a prototyped function would.
 */
/* clang-format off */
#define AM_Request0(ep, destep, hnum) \
    AMUDP_Request((ep), (destep), (hnum), 0)
#define AM_Request1(ep, destep, hnum, a0) \
    AMUDP_Request((ep), (destep), (hnum), 1, (int32_t)(a0))
#define AM_Request2(ep, destep, hnum, a0, a1) \
    AMUDP_Request((ep), (destep), (hnum), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_Request3(ep, destep, hnum, a0, a1, a2) \
    AMUDP_Request((ep), (destep), (hnum), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_Request4(ep, destep, hnum, a0, a1, a2, a3) \
    AMUDP_Request((ep), (destep), (hnum), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_Request5(ep, destep, hnum, a0, a1, a2, a3, a4) \
    AMUDP_Request((ep), (destep), (hnum), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_Request6(ep, destep, hnum, a0, a1, a2, a3, a4, a5) \
    AMUDP_Request((ep), (destep), (hnum), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_Request7(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_Request((ep), (destep), (hnum), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_Request8(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_Request((ep), (destep), (hnum), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_Request9(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_Request((ep), (destep), (hnum), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_Request10(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_Request((ep), (destep), (hnum), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_Request11(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_Request((ep), (destep), (hnum), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_Request12(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_Request((ep), (destep), (hnum), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_Request13(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_Request((ep), (destep), (hnum), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_Request14(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_Request((ep), (destep), (hnum), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_Request15(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_Request((ep), (destep), (hnum), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_Request16(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_Request((ep), (destep), (hnum), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#define AM_RequestI0(ep, destep, hnum, sa, cnt) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 0)
#define AM_RequestI1(ep, destep, hnum, sa, cnt, a0) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 1, (int32_t)(a0))
#define AM_RequestI2(ep, destep, hnum, sa, cnt, a0, a1) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_RequestI3(ep, destep, hnum, sa, cnt, a0, a1, a2) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_RequestI4(ep, destep, hnum, sa, cnt, a0, a1, a2, a3) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_RequestI5(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_RequestI6(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_RequestI7(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_RequestI8(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_RequestI9(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_RequestI10(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_RequestI11(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_RequestI12(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_RequestI13(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_RequestI14(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_RequestI15(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_RequestI16(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_RequestI((ep), (destep), (hnum), (sa), (cnt), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#define AM_RequestXfer0(ep, destep, desto, hnum, sa, cnt) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 0)
#define AM_RequestXfer1(ep, destep, desto, hnum, sa, cnt, a0) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 1, (int32_t)(a0))
#define AM_RequestXfer2(ep, destep, desto, hnum, sa, cnt, a0, a1) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 2, (int32_t)(a0), (int32_t)(a1))
#define AM_RequestXfer3(ep, destep, desto, hnum, sa, cnt, a0, a1, a2) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_RequestXfer4(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_RequestXfer5(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_RequestXfer6(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_RequestXfer7(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_RequestXfer8(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_RequestXfer9(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_RequestXfer10(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_RequestXfer11(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_RequestXfer12(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_RequestXfer13(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_RequestXfer14(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_RequestXfer15(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_RequestXfer16(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#define AM_RequestXferAsync0(ep, destep, desto, hnum, sa, cnt) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 0)
#define AM_RequestXferAsync1(ep, destep, desto, hnum, sa, cnt, a0) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 1, (int32_t)(a0))
#define AM_RequestXferAsync2(ep, destep, desto, hnum, sa, cnt, a0, a1) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 2, (int32_t)(a0), (int32_t)(a1))
#define AM_RequestXferAsync3(ep, destep, desto, hnum, sa, cnt, a0, a1, a2) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_RequestXferAsync4(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_RequestXferAsync5(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_RequestXferAsync6(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_RequestXferAsync7(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_RequestXferAsync8(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_RequestXferAsync9(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_RequestXferAsync10(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_RequestXferAsync11(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_RequestXferAsync12(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_RequestXferAsync13(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_RequestXferAsync14(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_RequestXferAsync15(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_RequestXferAsync16(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#define AM_Reply0(token, hnum) \
    AMUDP_Reply((token), (hnum), 0)
#define AM_Reply1(token, hnum, a0) \
    AMUDP_Reply((token), (hnum), 1, (int32_t)(a0))
#define AM_Reply2(token, hnum, a0, a1) \
    AMUDP_Reply((token), (hnum), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_Reply3(token, hnum, a0, a1, a2) \
    AMUDP_Reply((token), (hnum), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_Reply4(token, hnum, a0, a1, a2, a3) \
    AMUDP_Reply((token), (hnum), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_Reply5(token, hnum, a0, a1, a2, a3, a4) \
    AMUDP_Reply((token), (hnum), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_Reply6(token, hnum, a0, a1, a2, a3, a4, a5) \
    AMUDP_Reply((token), (hnum), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_Reply7(token, hnum, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_Reply((token), (hnum), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_Reply8(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_Reply((token), (hnum), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_Reply9(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_Reply((token), (hnum), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_Reply10(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_Reply((token), (hnum), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_Reply11(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_Reply((token), (hnum), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_Reply12(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_Reply((token), (hnum), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_Reply13(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_Reply((token), (hnum), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_Reply14(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_Reply((token), (hnum), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_Reply15(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_Reply((token), (hnum), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_Reply16(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_Reply((token), (hnum), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#define AM_ReplyI0(token, hnum, sa, cnt) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 0)
#define AM_ReplyI1(token, hnum, sa, cnt, a0) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 1, (int32_t)(a0))
#define AM_ReplyI2(token, hnum, sa, cnt, a0, a1) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_ReplyI3(token, hnum, sa, cnt, a0, a1, a2) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_ReplyI4(token, hnum, sa, cnt, a0, a1, a2, a3) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_ReplyI5(token, hnum, sa, cnt, a0, a1, a2, a3, a4) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_ReplyI6(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_ReplyI7(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_ReplyI8(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_ReplyI9(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_ReplyI10(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_ReplyI11(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_ReplyI12(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_ReplyI13(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_ReplyI14(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_ReplyI15(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_ReplyI16(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_ReplyI((token), (hnum), (sa), (cnt), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#define AM_ReplyXfer0(token, desto, hnum, sa, cnt) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 0)
#define AM_ReplyXfer1(token, desto, hnum, sa, cnt, a0) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 1, (int32_t)(a0))
#define AM_ReplyXfer2(token, desto, hnum, sa, cnt, a0, a1) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_ReplyXfer3(token, desto, hnum, sa, cnt, a0, a1, a2) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_ReplyXfer4(token, desto, hnum, sa, cnt, a0, a1, a2, a3) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_ReplyXfer5(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_ReplyXfer6(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_ReplyXfer7(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_ReplyXfer8(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_ReplyXfer9(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_ReplyXfer10(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_ReplyXfer11(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_ReplyXfer12(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_ReplyXfer13(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_ReplyXfer14(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_ReplyXfer15(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_ReplyXfer16(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
    AMUDP_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

/* clang-format on */

#endif /* __AMUDP_H */
