/* SPDX-License-Identifier: BSD-3-Clause */
/* One line per message on stderr, written with a single write(). */
#include "util/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "util/config.h"

static const char *const level_name[] = {"error", "warning", "info", "debug"};

/* The rank in the prefix: -1 outside a job. */
static _Atomic long prefix_rank = -1;

void fl_log_set_rank(long rank)
{
    atomic_store_explicit(&prefix_rank, rank, memory_order_relaxed);
}

int fl_log_enabled(enum fl_log_level level)
{
    if (level <= FL_LOG_WARN)
        return 1;
    return (int)level - (int)FL_LOG_WARN <= fl_cfg.verbose;
}

void fl_log(enum fl_log_level level, const char *fmt, ...)
{
    if (!fl_log_enabled(level))
        return;
    char line[1024];
    int n;
    long rank = atomic_load_explicit(&prefix_rank, memory_order_relaxed);
    if (rank >= 0)
        n = snprintf(line, sizeof line, "flit[%ld] %s: ", rank, level_name[level]);
    else
        n = snprintf(line, sizeof line, "flit %s: ", level_name[level]);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
