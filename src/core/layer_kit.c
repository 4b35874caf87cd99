/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What layers built on the public API share (flit/layer.h): the log, the
 * clock and the scatter/gather helpers each of them used to write again.
 */
#include <flit/layer.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

/* flit_log_level and enum fl_log_level name the same levels in one order. */
_Static_assert(FLIT_LOG_ERROR == (int)FL_LOG_ERROR && FLIT_LOG_DEBUG == (int)FL_LOG_DEBUG,
               "public and internal log levels differ");

static int level_known(flit_log_level level)
{
    return (int)level >= FLIT_LOG_ERROR && (int)level <= FLIT_LOG_DEBUG;
}

int flit_log_enabled(flit_log_level level)
{
    return level_known(level) && fl_log_enabled((enum fl_log_level)level);
}

void flit_log(flit_log_level level, const char *fmt, ...)
{
    if (!fmt || !flit_log_enabled(level))
        return;
    /* Formatted here, printed by the library's own log: one prefix, one
       write, one place that reads FLIT_VERBOSE. */
    char text[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fl_log((enum fl_log_level)level, "%s", text);
}

int64_t flit_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

flit_status flit_iov_total(const struct iovec *iov, int iovcnt, size_t *total)
{
    if (!total || iovcnt < 0 || (iovcnt > 0 && !iov))
        return FLIT_ERR_INVALID_ARG;
    size_t sum = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len && !iov[i].iov_base)
            return FLIT_ERR_INVALID_ARG;
        if (iov[i].iov_len > SIZE_MAX - sum)
            return FLIT_ERR_TOO_LARGE;
        sum += iov[i].iov_len;
    }
    *total = sum;
    return FLIT_OK;
}

void flit_iov_gather(void *dst, const struct iovec *iov, int iovcnt)
{
    unsigned char *to = dst;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len)
            memcpy(to, iov[i].iov_base, iov[i].iov_len);
        to += iov[i].iov_len;
    }
}

size_t flit_iov_scatter(const struct iovec *iov, int iovcnt, const void *src, size_t len)
{
    const unsigned char *from = src;
    size_t done = 0;
    for (int i = 0; i < iovcnt && done < len; i++) {
        size_t k = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
        if (k)
            memcpy(iov[i].iov_base, from + done, k);
        done += k;
    }
    return done;
}
