/* One line per message on stderr, written with a single write(). */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "core/config.h"
#include "core/job.h"

static const char *const level_name[] = {"error", "warning", "info", "debug"};

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
    if (atomic_load_explicit(&fl_job_state, memory_order_relaxed) == FL_JOB_ACTIVE)
        n = snprintf(line, sizeof line, "flit[%u] %s: ", fl_job.rank,
                     level_name[level]);
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
