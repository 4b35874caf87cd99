/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit/layer.h: what a layer built on the public API (groups, objects,
 * tagged messages, RPC, or a program's own) gets from the library, so
 * that it writes none of it again: the library's log, its clock, and the
 * checks and copies of scatter/gather lists every such layer needs.
 * Everything here is a public call: a layer that includes only <flit/...>
 * headers uses it as any program may.
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

#ifdef __cplusplus
}
#endif

#endif /* FLIT_LAYER_H */
