/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What layers on the public API share (<flit/layer.h>): the checks and
 * copies of scatter/gather lists with their exact statuses, the clock, and
 * the log's levels under FLIT_VERBOSE (in children whose stderr is read).
 */
#include <flit/layer.h>
#include <stdint.h>

#include "unit.h"

static void check_total(void)
{
    char a[4], b[8];
    size_t t = 99;
    struct iovec ok[3] = {{a, 4}, {NULL, 0}, {b, 8}};
    CHECK_OK(flit_iov_total(ok, 3, &t));
    CHECK(t == 12);
    CHECK_OK(flit_iov_total(NULL, 0, &t));
    CHECK(t == 0);
    t = 99;
    struct iovec hole[2] = {{a, 4}, {NULL, 1}};
    CHECK_ST(flit_iov_total(hole, 2, &t), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_iov_total(ok, -1, &t), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_iov_total(NULL, 1, &t), FLIT_ERR_INVALID_ARG);
    CHECK_ST(flit_iov_total(ok, 3, NULL), FLIT_ERR_INVALID_ARG);
    struct iovec huge[2] = {{a, SIZE_MAX}, {b, 2}};
    CHECK_ST(flit_iov_total(huge, 2, &t), FLIT_ERR_TOO_LARGE);
    CHECK(t == 99); /* written only on success */
}

static void check_copies(void)
{
    char a[3], b[5], flat[8];
    struct iovec v[3] = {{a, 3}, {NULL, 0}, {b, 5}};
    flit_iov_scatter(v, 3, "abcdefgh", 8);
    CHECK(memcmp(a, "abc", 3) == 0 && memcmp(b, "defgh", 5) == 0);
    flit_iov_gather(flat, v, 3);
    CHECK(memcmp(flat, "abcdefgh", 8) == 0);
    memset(b, 'x', sizeof b);
    CHECK(flit_iov_scatter(v, 3, "ABCD", 4) == 4); /* stops at len */
    CHECK(memcmp(a, "ABC", 3) == 0 && b[0] == 'D' && b[1] == 'x');
    CHECK(flit_iov_scatter(v, 3, "0123456789", 10) == 8); /* pieces full */
}

static void check_clock(void)
{
    int64_t t0 = flit_clock_ns();
    CHECK(t0 > 0);
    for (int i = 0; i < 1000; i++) {
        int64_t t = flit_clock_ns();
        CHECK(t >= t0);
        t0 = t;
    }
}

/* Each child logs at every level, and one level the type does not have. */
static void log_all(void)
{
    flit_log(FLIT_LOG_ERROR, "e-%d", 1);
    flit_log(FLIT_LOG_WARN, "w-%d", 2);
    flit_log(FLIT_LOG_INFO, "i-%d", 3);
    flit_log(FLIT_LOG_DEBUG, "d-%d", 4);
    flit_log((flit_log_level)9, "x-%d", 5);
}

static void child_quiet(void)
{
    CHECK_OK(flit_init(NULL));
    CHECK(flit_log_enabled(FLIT_LOG_WARN) && !flit_log_enabled(FLIT_LOG_INFO));
    log_all();
    CHECK_OK(flit_finalize());
    exit(0);
}

static void child_verbose(void)
{
    setenv("FLIT_VERBOSE", "2", 1);
    CHECK_OK(flit_init(NULL));
    CHECK(flit_log_enabled(FLIT_LOG_DEBUG) && !flit_log_enabled((flit_log_level)9));
    log_all();
    CHECK_OK(flit_finalize());
    exit(0);
}

static void check_log(void)
{
    char out[8192];
    int status = unit_run_child(child_quiet, out, sizeof out);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strstr(out, " error: e-1\n") && strstr(out, " warning: w-2\n"));
    CHECK(!strstr(out, "i-3") && !strstr(out, "d-4") && !strstr(out, "x-5"));
    status = unit_run_child(child_verbose, out, sizeof out);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strstr(out, " info: i-3\n") && strstr(out, " debug: d-4\n"));
    CHECK(!strstr(out, "x-5"));
}

int main(void)
{
    unit_clean_env();
    check_total();
    check_copies();
    check_clock();
    check_log();
    return 0;
}
