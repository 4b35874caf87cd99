/*
 * FLIT_* configuration (src/core/config.c) driven through the environment:
 * defaults, every variable's valid values, invalid values answered
 * FLIT_ERR_INVALID_ARG with a message naming the variable, unknown FLIT_*
 * variables only warned about, and flit_init refusing a bad variable
 * without becoming initialized (then succeeding once it is fixed).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "unit.h"

/* ---- stderr capture: what the library logged during one call ---- */

static char captured[16384];

static int capture_begin(void)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    CHECK(saved >= 0);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    CHECK(dup2(fileno(f), STDERR_FILENO) == STDERR_FILENO);
    fclose(f); /* the descriptor dup2 made keeps the file */
    return saved;
}

static const char *capture_end(int saved)
{
    fflush(stderr);
    off_t end = lseek(STDERR_FILENO, 0, SEEK_END);
    CHECK(end >= 0);
    CHECK(lseek(STDERR_FILENO, 0, SEEK_SET) == 0);
    size_t n = (size_t)end < sizeof captured - 1 ? (size_t)end : sizeof captured - 1;
    ssize_t r = read(STDERR_FILENO, captured, n);
    CHECK(r == (ssize_t)n);
    captured[n] = '\0';
    CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
    close(saved);
    return captured;
}

/* fl_config_load with stderr captured. */
static flit_status load(const char **log)
{
    int saved = capture_begin();
    flit_status st = fl_config_load();
    *log = capture_end(saved);
    return st;
}

static void expect_defaults(void)
{
    CHECK(fl_cfg.verbose == 0);
    CHECK(fl_cfg.stats == 0);
    CHECK(fl_cfg.spin_us == -1);
    CHECK(fl_cfg.progress_thread == 0);
    CHECK(fl_cfg.shm_ring_bytes == 256 << 10);
    CHECK(fl_cfg.shm_bulk == FL_BULK_AUTO);
    CHECK(fl_cfg.long_chunk == 32 << 10);
    CHECK(fl_cfg.peer_check_ms == 100);
}

/* name=value is accepted and lands in *field as want. */
static void expect_valid(const char *name, const char *value, const int64_t *field,
                         int64_t want)
{
    CHECK(setenv(name, value, 1) == 0);
    const char *log;
    flit_status st = load(&log);
    if (st != FLIT_OK)
        FAIL("%s=\"%s\": %s, expected FLIT_OK; log: %s", name, value,
             flit_status_name(st), log);
    if (*field != want)
        FAIL("%s=\"%s\" gave %lld, expected %lld", name, value, (long long)*field,
             (long long)want);
    CHECK(strstr(log, name) == NULL); /* nothing to say about it */
    CHECK(unsetenv(name) == 0);
}

/* name=value is refused: FLIT_ERR_INVALID_ARG, a message naming the
   variable, and the variable keeps its default. */
static void expect_invalid(const char *name, const char *value, const int64_t *field,
                           int64_t def)
{
    CHECK(setenv(name, value, 1) == 0);
    const char *log;
    flit_status st = load(&log);
    if (st != FLIT_ERR_INVALID_ARG)
        FAIL("%s=\"%s\": %s, expected FLIT_ERR_INVALID_ARG", name, value,
             flit_status_name(st));
    if (!strstr(log, name))
        FAIL("%s=\"%s\" refused without naming it; log: %s", name, value, log);
    if (*field != def)
        FAIL("%s=\"%s\" refused but left %lld, expected the default %lld", name, value,
             (long long)*field, (long long)def);
    CHECK(unsetenv(name) == 0);
}

static const char *const yes[] = {"1", "yes", "true", "on"};
static const char *const no[] = {"0", "no", "false", "off"};
static const char *const not_bool[] = {"2", "-1", "maybe", "yes!",      "1 ",
                                       "y", "10", "onn",   "truefalse", "0x1"};

static void test_bools(void)
{
    const char *names[] = {"FLIT_STATS", "FLIT_PROGRESS_THREAD"};
    const int64_t *fields[] = {&fl_cfg.stats, &fl_cfg.progress_thread};
    for (int v = 0; v < 2; v++) {
        for (int i = 0; i < 4; i++) {
            expect_valid(names[v], yes[i], fields[v], 1);
            expect_valid(names[v], no[i], fields[v], 0);
        }
        for (size_t i = 0; i < sizeof not_bool / sizeof not_bool[0]; i++)
            expect_invalid(names[v], not_bool[i], fields[v], 0);
    }
}

static void test_ints(void)
{
    /* FLIT_VERBOSE 0..3 */
    for (int v = 0; v <= 3; v++) {
        char s[8];
        snprintf(s, sizeof s, "%d", v);
        expect_valid("FLIT_VERBOSE", s, &fl_cfg.verbose, v);
    }
    static const char *const bad_verbose[] = {
        "4", "-1", "x", "1x", "1.0", "0x2", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_verbose / sizeof bad_verbose[0]; i++)
        expect_invalid("FLIT_VERBOSE", bad_verbose[i], &fl_cfg.verbose, 0);

    /* FLIT_SPIN_US -1 .. 10000000 */
    expect_valid("FLIT_SPIN_US", "-1", &fl_cfg.spin_us, -1);
    expect_valid("FLIT_SPIN_US", "0", &fl_cfg.spin_us, 0);
    expect_valid("FLIT_SPIN_US", "50", &fl_cfg.spin_us, 50);
    expect_valid("FLIT_SPIN_US", "10000000", &fl_cfg.spin_us, 10000000);
    static const char *const bad_spin[] = {"-2",
                                           "10000001",
                                           "fast",
                                           "50us",
                                           "5e3",
                                           "-9223372036854775809",
                                           "9223372036854775808"};
    for (size_t i = 0; i < sizeof bad_spin / sizeof bad_spin[0]; i++)
        expect_invalid("FLIT_SPIN_US", bad_spin[i], &fl_cfg.spin_us, -1);

    /* FLIT_PEER_CHECK_MS 1 .. 60000 */
    expect_valid("FLIT_PEER_CHECK_MS", "1", &fl_cfg.peer_check_ms, 1);
    expect_valid("FLIT_PEER_CHECK_MS", "60000", &fl_cfg.peer_check_ms, 60000);
    static const char *const bad_check[] = {"0", "60001", "-5", "100ms", "ten"};
    for (size_t i = 0; i < sizeof bad_check / sizeof bad_check[0]; i++)
        expect_invalid("FLIT_PEER_CHECK_MS", bad_check[i], &fl_cfg.peer_check_ms, 100);

    /* FLIT_LONG_CHUNK_KB 1 .. 60, stored in bytes */
    expect_valid("FLIT_LONG_CHUNK_KB", "1", &fl_cfg.long_chunk, 1 << 10);
    expect_valid("FLIT_LONG_CHUNK_KB", "60", &fl_cfg.long_chunk, 60 << 10);
    static const char *const bad_chunk[] = {"0", "61", "-1", "32k", "32KB"};
    for (size_t i = 0; i < sizeof bad_chunk / sizeof bad_chunk[0]; i++)
        expect_invalid("FLIT_LONG_CHUNK_KB", bad_chunk[i], &fl_cfg.long_chunk, 32 << 10);
}

static void test_ring_kb(void)
{
    for (int64_t kb = 256; kb <= 65536; kb *= 2) {
        char s[16];
        snprintf(s, sizeof s, "%lld", (long long)kb);
        expect_valid("FLIT_SHM_RING_KB", s, &fl_cfg.shm_ring_bytes, kb << 10);
    }
    static const char *const bad[] = {"300",   "255",    "257",    "384",  "65535",
                                      "65537", "131072", "128",    "0",    "-256",
                                      "256k",  "abc",    "1024.0", "0x400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_invalid("FLIT_SHM_RING_KB", bad[i], &fl_cfg.shm_ring_bytes, 256 << 10);
}

static void test_bulk(void)
{
    expect_valid("FLIT_SHM_BULK", "auto", &fl_cfg.shm_bulk, FL_BULK_AUTO);
    expect_valid("FLIT_SHM_BULK", "cma", &fl_cfg.shm_bulk, FL_BULK_CMA);
    expect_valid("FLIT_SHM_BULK", "copy", &fl_cfg.shm_bulk, FL_BULK_COPY);
    static const char *const bad[] = {"0", "1", "dma", "copy2", "auto ", "cm", "mapping"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_invalid("FLIT_SHM_BULK", bad[i], &fl_cfg.shm_bulk, FL_BULK_AUTO);
}

static void test_mixed(void)
{
    /* An empty value means "unset". */
    CHECK(setenv("FLIT_SHM_RING_KB", "", 1) == 0);
    const char *log;
    CHECK_OK(load(&log));
    expect_defaults();
    CHECK(unsetenv("FLIT_SHM_RING_KB") == 0);

    /* One bad variable does not stop the others from being read. */
    CHECK(setenv("FLIT_SPIN_US", "7", 1) == 0);
    CHECK(setenv("FLIT_SHM_RING_KB", "300", 1) == 0);
    CHECK(setenv("FLIT_SHM_BULK", "copy", 1) == 0);
    CHECK_ST(load(&log), FLIT_ERR_INVALID_ARG);
    CHECK(strstr(log, "FLIT_SHM_RING_KB") != NULL);
    CHECK(strstr(log, "FLIT_SPIN_US") == NULL);
    CHECK(fl_cfg.spin_us == 7 && fl_cfg.shm_bulk == FL_BULK_COPY);
    CHECK(fl_cfg.shm_ring_bytes == 256 << 10);
    /* Two bad ones: both named. */
    CHECK(setenv("FLIT_STATS", "perhaps", 1) == 0);
    CHECK_ST(load(&log), FLIT_ERR_INVALID_ARG);
    CHECK(strstr(log, "FLIT_SHM_RING_KB") && strstr(log, "FLIT_STATS"));
    unit_clean_env();
    CHECK_OK(load(&log));
    expect_defaults();
}

static void test_unknown(void)
{
    const char *log;
    CHECK(setenv("FLIT_FOO", "1", 1) == 0);
    CHECK_OK(load(&log));
    expect_defaults();
    if (!strstr(log, "FLIT_FOO"))
        FAIL("unknown FLIT_FOO not warned about; log: %s", log);
    CHECK(unsetenv("FLIT_FOO") == 0);
    /* A near miss of a real name is also just a warning. */
    CHECK(setenv("FLIT_SHM_RING", "512", 1) == 0);
    CHECK_OK(load(&log));
    CHECK(strstr(log, "FLIT_SHM_RING") != NULL);
    CHECK(fl_cfg.shm_ring_bytes == 256 << 10);
    CHECK(unsetenv("FLIT_SHM_RING") == 0);
    /* The launcher's variables are known: no warning about them. */
    CHECK(setenv("FLIT_RANK", "0", 1) == 0);
    CHECK(setenv("FLIT_SIZE", "1", 1) == 0);
    CHECK(setenv("FLIT_JOB_ID", "0123456789abcdef", 1) == 0);
    CHECK_OK(load(&log));
    CHECK(strstr(log, "FLIT_RANK") == NULL && strstr(log, "FLIT_SIZE") == NULL &&
          strstr(log, "FLIT_JOB_ID") == NULL);
    unit_clean_env();
    /* Nothing set: nothing said. */
    CHECK_OK(load(&log));
    CHECK(log[0] == '\0');
}

/* flit_init reads the configuration: a bad variable fails it and leaves the
   library uninitialized, so a second try (variable fixed) succeeds. */
static void test_init(void)
{
    CHECK(setenv("FLIT_SHM_RING_KB", "300", 1) == 0);
    int saved = capture_begin();
    flit_status st = flit_init(NULL);
    const char *log = capture_end(saved);
    CHECK_ST(st, FLIT_ERR_INVALID_ARG);
    CHECK(strstr(log, "FLIT_SHM_RING_KB") != NULL);
    CHECK(flit_job_size() == 0);
    flit_ep_t *ep = NULL;
    CHECK_ST(flit_ep_create(NULL, &ep), FLIT_ERR_NOT_INITIALIZED);
    CHECK_ST(flit_finalize(), FLIT_ERR_NOT_INITIALIZED);
    /* Still bad: still refused. */
    CHECK(setenv("FLIT_SHM_BULK", "fast", 1) == 0);
    saved = capture_begin();
    st = flit_init(NULL);
    capture_end(saved);
    CHECK_ST(st, FLIT_ERR_INVALID_ARG);
    unit_clean_env();
    /* An unknown variable does not stop it. */
    CHECK(setenv("FLIT_FOO", "1", 1) == 0);
    CHECK(setenv("FLIT_SHM_RING_KB", "512", 1) == 0);
    CHECK(setenv("FLIT_STATS", "yes", 1) == 0);
    saved = capture_begin();
    st = flit_init(NULL);
    log = capture_end(saved);
    CHECK_OK(st);
    CHECK(strstr(log, "FLIT_FOO") != NULL);
    CHECK(flit_job_size() == 1 && flit_job_rank().idx == 0);
    CHECK(fl_cfg.shm_ring_bytes == 512 << 10);
    CHECK_ST(flit_init(NULL), FLIT_ERR_ALREADY_INITIALIZED);
    CHECK(fl_cfg.stats == 1);
    CHECK_OK(flit_ep_create(NULL, &ep));
    CHECK(ep != NULL);
    /* FLIT_STATS=1: the endpoint's counters are printed when it goes. */
    saved = capture_begin();
    st = flit_finalize();
    log = capture_end(saved);
    CHECK_OK(st);
    if (!strstr(log, "endpoint 0 counters") || !strstr(log, "polls"))
        FAIL("FLIT_STATS=1 printed no counters at finalize; log: %s", log);
    CHECK_ST(flit_init(NULL), FLIT_ERR_FINALIZED);
}

/* fl_config_print: one line per variable, its value, "(default)" when it
   was not set. */
static void test_print(void)
{
    unit_clean_env();
    CHECK(setenv("FLIT_SHM_BULK", "copy", 1) == 0);
    CHECK(setenv("FLIT_SHM_RING_KB", "1024", 1) == 0);
    const char *log;
    CHECK_OK(load(&log));
    FILE *f = tmpfile();
    CHECK(f != NULL);
    fl_config_print(f);
    CHECK(fflush(f) == 0);
    rewind(f);
    static const char *const names[] = {
        "FLIT_VERBOSE",     "FLIT_STATS",    "FLIT_SPIN_US",       "FLIT_PROGRESS_THREAD",
        "FLIT_SHM_RING_KB", "FLIT_SHM_BULK", "FLIT_LONG_CHUNK_KB", "FLIT_PEER_CHECK_MS",
        "FLIT_TRANSPORT",   "FLIT_PEER_TIMEOUT", "FLIT_UDP_MTU",   "FLIT_UDP_ADDR",
        "FLIT_UDP_WINDOW_KB", "FLIT_ACK_DELAY_US", "FLIT_RTO_MIN_US", "FLIT_DROP_RATE",
        "FLIT_DUP_RATE",    "FLIT_REORDER_RATE", "FLIT_FAULT_SEED", "FLIT_FIBER_STACK_KB", "FLIT_FIBERS",
    };
    enum { NNAMES = sizeof names / sizeof names[0] };
    int seen[NNAMES] = {0};
    char line[256];
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        int which = -1;
        for (int i = 0; i < NNAMES; i++) {
            char *at = strstr(line, names[i]);
            /* whole word: FLIT_SHM_RING_KB is not FLIT_SHM_RING_KBX */
            if (at && (at[strlen(names[i])] == ' ' || at[strlen(names[i])] == '\t'))
                which = i;
        }
        if (which < 0)
            FAIL("fl_config_print: unexpected line \"%s\"", line);
        seen[which]++;
        bool set = which == 4 || which == 5;
        if (set != (strstr(line, "(default)") == NULL))
            FAIL("fl_config_print: \"%s\" %s marked default", line,
                 set ? "is" : "is not");
        if (which == 4)
            CHECK(strstr(line, " 1024") != NULL);
        if (which == 5)
            CHECK(strstr(line, " copy") != NULL);
        if (which == 2)
            CHECK(strstr(line, " -1") != NULL);
    }
    fclose(f);
    CHECK(lines == NNAMES);
    for (int i = 0; i < NNAMES; i++)
        if (seen[i] != 1)
            FAIL("fl_config_print: %s printed %d times", names[i], seen[i]);
    unit_clean_env();
}

/* The UDP path's variables: seconds, probabilities, an address, a choice. */
static void test_udp_kinds(void)
{
    /* FLIT_PEER_TIMEOUT: seconds with decimals, kept in ms, 0.1 s .. 1 day */
    expect_valid("FLIT_PEER_TIMEOUT", "2.5", &fl_cfg.peer_timeout_ms, 2500);
    expect_valid("FLIT_PEER_TIMEOUT", "30", &fl_cfg.peer_timeout_ms, 30000);
    expect_valid("FLIT_PEER_TIMEOUT", "0.1", &fl_cfg.peer_timeout_ms, 100);
    static const char *const bad_timeout[] = {"0", "0.05", "-1", "2s", "x", "1e10", ".5"};
    for (size_t i = 0; i < sizeof bad_timeout / sizeof bad_timeout[0]; i++)
        expect_invalid("FLIT_PEER_TIMEOUT", bad_timeout[i], &fl_cfg.peer_timeout_ms,
                       30000);
    /* FLIT_DROP_RATE and friends: a probability, kept in parts per million */
    expect_valid("FLIT_DROP_RATE", "0.05", &fl_cfg.drop_ppm, 50000);
    expect_valid("FLIT_DUP_RATE", "1", &fl_cfg.dup_ppm, 1000000);
    expect_valid("FLIT_REORDER_RATE", "0", &fl_cfg.reorder_ppm, 0);
    static const char *const bad_rate[] = {"5", "1.01", "-0.1", "5%", "half", "0.1x"};
    for (size_t i = 0; i < sizeof bad_rate / sizeof bad_rate[0]; i++)
        expect_invalid("FLIT_DROP_RATE", bad_rate[i], &fl_cfg.drop_ppm, 0);
    /* FLIT_UDP_ADDR: dotted IPv4, kept in host order */
    expect_valid("FLIT_UDP_ADDR", "10.1.2.3", &fl_cfg.udp_addr, 0x0a010203);
    static const char *const bad_addr[] = {"300.1.1.1", "10.1.2", "host", "::1", "10.1.2.3 "};
    for (size_t i = 0; i < sizeof bad_addr / sizeof bad_addr[0]; i++)
        expect_invalid("FLIT_UDP_ADDR", bad_addr[i], &fl_cfg.udp_addr, 0);
    /* FLIT_TRANSPORT */
    expect_valid("FLIT_TRANSPORT", "udp", &fl_cfg.transport, FL_TRANSPORT_UDP);
    expect_valid("FLIT_TRANSPORT", "shm", &fl_cfg.transport, FL_TRANSPORT_SHM);
    expect_invalid("FLIT_TRANSPORT", "tcp", &fl_cfg.transport, FL_TRANSPORT_AUTO);
}

int main(void)
{
    unit_clean_env();
    const char *log;
    CHECK_OK(load(&log));
    expect_defaults();
    test_bools();
    test_ints();
    test_ring_kb();
    test_bulk();
    test_udp_kinds();
    test_mixed();
    test_unknown();
    test_print();
    test_init();
    return 0;
}
