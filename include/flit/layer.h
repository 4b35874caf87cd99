/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit/layer.h: the seat of a layer built on the public API (groups,
 * objects, tagged messages, RPC, or a program's own). Such a layer
 * describes itself in one flit_layer_t: its name, the bytes of state it
 * keeps per endpoint (allocated, zeroed and freed by the library with the
 * endpoint), the hooks the endpoint's life calls, its FLIT_* settings, its
 * named counters and its section of the state dump. It gets the library's
 * log, its clock and the checks and copies of scatter/gather lists every
 * such layer needs, so that it writes none of them again. Everything here
 * is a public call: a layer that includes only <flit/...> headers uses it
 * as any program may, and sends its messages with the public API alone.
 */
#ifndef FLIT_LAYER_H
#define FLIT_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <flit/flit.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ log */

typedef enum flit_log_level {
    FLIT_LOG_ERROR = 0, /* always printed */
    FLIT_LOG_WARN = 1,  /* always printed */
    FLIT_LOG_INFO = 2,  /* printed from FLIT_VERBOSE=1 */
    FLIT_LOG_DEBUG = 3  /* printed from FLIT_VERBOSE=2 */
} flit_log_level;

/*
 * One line on stderr, written at once, prefixed as the library's own
 * ("flit[RANK] LEVEL: "), when level is printed (see flit_log_enabled).
 * No newline needed; a line longer than about 1000 bytes is cut. A level
 * outside flit_log_level prints nothing. Safe from any thread and from
 * handlers.
 */
FLIT_API void flit_log(flit_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Nonzero when flit_log prints at level: errors and warnings always,
   info from FLIT_VERBOSE=1, debug from FLIT_VERBOSE=2. Lets a caller skip
   building a costly message. */
FLIT_API int flit_log_enabled(flit_log_level level);

/* ---------------------------------------------------------------- clock */

/* Nanoseconds of a monotonic clock (CLOCK_MONOTONIC): for deadlines and
   intervals, never for dates. */
FLIT_API int64_t flit_clock_ns(void);

/* ------------------------------------------------ scatter/gather lists */

/*
 * Checks a scatter/gather list as every call taking one does and sums its
 * lengths into *total (untouched on failure): FLIT_ERR_INVALID_ARG for a
 * NULL total, iovcnt < 0, iov NULL with iovcnt > 0 or a piece with a
 * length and a NULL base; FLIT_ERR_TOO_LARGE when the sum overflows
 * size_t.
 */
FLIT_API flit_status flit_iov_total(const struct iovec *iov, int iovcnt, size_t *total);
/* Copies the pieces, in order, to dst (room for their total; pieces of
   length 0 may have a NULL base). */
FLIT_API void flit_iov_gather(void *dst, const struct iovec *iov, int iovcnt);
/* Copies up to len bytes of src into the pieces, in order; returns how
   many were copied (less than len when the pieces hold less). */
FLIT_API size_t flit_iov_scatter(const struct iovec *iov, int iovcnt, const void *src,
                                 size_t len);

/* ------------------------------------------------------ the descriptor */

#define FLIT_LAYER_VERSION 1u  /* flit_layer_t.version */
#define FLIT_LAYER_MAX     16u /* layers registered in a process, built-in ones too */

/* A FLIT_* variable of the layer: an integer read once, at flit_init. */
typedef struct flit_layer_setting {
    const char *name; /* "FLIT_<LAYER>_<WHAT>", unique in the process */
    int64_t def;      /* when the variable is unset */
    int64_t min, max; /* allowed range, inclusive; def within it */
    const char *doc;  /* one line, for flit(7)'s readers and FLIT_VERBOSE */
} flit_layer_setting_t;

/* A named counter: a uint64_t of the layer's per-endpoint state, which the
   layer updates with relaxed atomic operations (C11 atomic_fetch_add_
   explicit on an _Atomic uint64_t, or __atomic_fetch_add), since the dump
   and flit_layer_counter read it from any thread. */
typedef struct flit_layer_counter {
    const char *name;       /* lower case, unique in the layer: "refused" */
    size_t offset;          /* offsetof(the state's struct, the field) */
    const char *doc;        /* one line */
    flit_counter_kind kind; /* left out: FLIT_COUNTER_COUNT (flit.h) */
} flit_layer_counter_t;

/* Where a layer's dump hook writes its lines (flit_layer_dump_line). */
typedef struct flit_layer_dump flit_layer_dump_t;

/* The layer opens on an endpoint only when flit_ep_params_t.layers names it
   (its open is collective, or takes handler indices); without the flag, on
   every endpoint. */
#define FLIT_LAYER_ON_REQUEST (1u << 0)

typedef struct flit_layer {
    uint32_t version;  /* FLIT_LAYER_VERSION */
    const char *name;  /* [a-z0-9_]+, unique in the process: "group" */
    unsigned flags;    /* FLIT_LAYER_* */
    size_t state_size; /* bytes per endpoint, zeroed; may be 0 */
    /*
     * Called by flit_ep_create on every rank once the endpoint works, in
     * the order the layers were registered (built-in ones first): the
     * layer may make any call a program may, collective ones included
     * (every rank creates the endpoint). Required. A status other than
     * FLIT_OK: the layers opened so far are closed and the endpoint
     * destroyed, and flit_ep_create answers that status.
     */
    flit_status (*open)(flit_ep_t *ep, void *state);
    /* flit_ep_destroy began (the endpoint still works): finish what is
       under way; every layer's quiesce, bottom up, runs before any close.
       May be NULL. */
    void (*quiesce)(flit_ep_t *ep, void *state);
    /* After every quiesce, top down: let go of what open took. May be
       NULL. The state's bytes are freed after it. */
    void (*close)(flit_ep_t *ep, void *state);
    /* A peer died or stopped answering (handler context: no sends, no
       waits; note it and act in progress). May be NULL. */
    void (*peer_down)(flit_ep_t *ep, void *state, flit_rank_t rank, flit_status reason);
    const flit_layer_setting_t *settings; /* nsettings of them, may be NULL */
    unsigned nsettings;
    const flit_layer_counter_t *counters; /* ncounters of them, may be NULL */
    unsigned ncounters;
    /* Its section of the state dump (SIGUSR1, flit_ep_dump) and of
       FLIT_STATS=1, after its counters, which the library prints itself.
       Runs on any thread while the endpoint works: reads only what
       atomics guard. May be NULL. */
    void (*dump)(const void *state, flit_layer_dump_t *d);
} flit_layer_t;

/*
 * Adds a layer to this process, opened on the endpoints created from now
 * on (the library's own, listed in it, are there from flit_init). The
 * descriptor must stay valid for the process's life. Its settings'
 * variables are read now (register before flit_init, so that it does not
 * warn of them as unknown). Also before flit_init; not while an endpoint
 * exists. FLIT_ERR_INVALID_ARG: NULL, another version, a name not
 * [a-z0-9_]+ or taken, no open, an unknown flag, a setting whose name is
 * not FLIT_* or whose default is outside its range, a counter whose name
 * is not [a-z0-9_]+ or that does not lie, aligned, within state_size;
 * FLIT_ERR_CONFIG: a variable holds what is not an integer within its
 * range (logged, naming it); FLIT_ERR_EXHAUSTED past FLIT_LAYER_MAX;
 * FLIT_ERR_AGAIN while an endpoint exists.
 */
FLIT_API flit_status flit_layer_register(const flit_layer_t *layer);

/* The layer's state on ep: FLIT_ERR_INVALID_ARG for NULL arguments or a
   layer not registered, FLIT_ERR_CLOSED when it is not open on ep (not
   requested, or the endpoint is being destroyed). */
FLIT_API flit_status flit_layer_state(flit_ep_t *ep, const flit_layer_t *layer,
                                      void **out);

/* The value of the layer's setting named name (its default when the
   variable is unset); FLIT_ERR_INVALID_ARG for NULL arguments, a layer not
   registered or a name it does not have. */
FLIT_API flit_status flit_layer_setting(const flit_layer_t *layer, const char *name,
                                        int64_t *out);

/* The counter named "layer.counter" (group.refused) of ep, summed over
   nothing: one endpoint's value. FLIT_ERR_INVALID_ARG for NULL arguments or
   a name no open layer of ep has. */
FLIT_API flit_status flit_layer_counter(flit_ep_t *ep, const char *name, uint64_t *out);

/* One line of the layer's dump section (the prefix and the newline are
   added); from its dump hook only. */
FLIT_API void flit_layer_dump_line(flit_layer_dump_t *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif /* FLIT_LAYER_H */
