/* SPDX-License-Identifier: BSD-3-Clause */
/* Diagnostics to stderr, one line each, prefixed "flit[rank]". */
#ifndef FL_UTIL_LOG_H
#define FL_UTIL_LOG_H

enum fl_log_level { FL_LOG_ERROR = 0, FL_LOG_WARN, FL_LOG_INFO, FL_LOG_DEBUG };

void fl_log(enum fl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The rank printed in the prefix from now on (-1: none, outside a job). */
void fl_log_set_rank(long rank);
/* Whether a message at level would be printed (FLIT_VERBOSE raises it). */
int fl_log_enabled(enum fl_log_level level);

#define fl_error(...) fl_log(FL_LOG_ERROR, __VA_ARGS__)
#define fl_warn(...)  fl_log(FL_LOG_WARN, __VA_ARGS__)
#define fl_info(...)  fl_log(FL_LOG_INFO, __VA_ARGS__)
#define fl_debug(...)                                                                    \
    do {                                                                                 \
        if (fl_log_enabled(FL_LOG_DEBUG))                                                \
            fl_log(FL_LOG_DEBUG, __VA_ARGS__);                                           \
    } while (0)

#endif /* FL_UTIL_LOG_H */
