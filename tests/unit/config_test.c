/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FLIT_* configuration (src/core/config.c) driven through the environment:
 * defaults, every variable's valid values, invalid values answered
 * FLIT_ERR_CONFIG with a message naming the variable, the value, what
 * is wrong with it and what is allowed (range with its unit, the rule, the
 * choices) by the job's first task alone, unknown FLIT_* variables only
 * warned about, fl_config_next_bad (flitrun's check) finding every bad one
 * with the message the ranks would log, flit_init refusing
 * a bad variable without becoming initialized (then succeeding once it is
 * fixed), FLIT_VERBOSE printing the values in effect (FLIT_SPIN_US as the
 * number flit settled on), and the README's table saying what the code's
 * table says (FLIT_README: its path, given by CMake).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "channel/config.h"
#include "core/pub_layer.h"
#include "transport/fault/fault.h"
#include "transport/shm/config.h"
#include "transport/udp/config.h"
#include "unit.h"
#include "util/config.h"

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
    CHECK(fl_shm_cfg.ring_bytes == 256 << 10);
    CHECK(fl_shm_cfg.bulk == FL_BULK_AUTO);
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

/* The code's table entry for name. */
static struct fl_config_doc doc_of(const char *name)
{
    struct fl_config_doc d;
    for (size_t i = 0; fl_config_describe(i, &d); i++)
        if (strcmp(d.name, name) == 0)
            return d;
    FAIL("%s is not in the configuration table", name);
}

/* log is the refusal of name=value: it names both and says what is allowed. */
static void expect_refusal_text(const char *name, const char *value, const char *log)
{
    char given[256];
    snprintf(given, sizeof given, "%s=\"%s\"", name, value);
    if (!strstr(log, given))
        FAIL("%s refused without naming it and the value; log: %s", given, log);
    struct fl_config_doc d = doc_of(name);
    char allowed[sizeof d.allowed + 16];
    snprintf(allowed, sizeof allowed, "allowed %s", d.allowed);
    if (!strstr(log, allowed))
        FAIL("%s refused without saying \"%s\"; log: %s", given, allowed, log);
}

/* name=value is refused: FLIT_ERR_CONFIG, a message naming the
   variable and the value and saying what is allowed, and the variable
   keeps its default. */
static void expect_invalid(const char *name, const char *value, const int64_t *field,
                           int64_t def)
{
    CHECK(setenv(name, value, 1) == 0);
    const char *log;
    flit_status st = load(&log);
    if (st != FLIT_ERR_CONFIG)
        FAIL("%s=\"%s\": %s, expected FLIT_ERR_CONFIG", name, value,
             flit_status_name(st));
    expect_refusal_text(name, value, log);
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

    /* FLIT_SPIN_US 0 .. 10000000, or -1: flit picks */
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

    /* FLIT_SHM_CMA_MIN_KB 0 .. 1048576 (0: every long payload), in bytes */
    expect_valid("FLIT_SHM_CMA_MIN_KB", "0", &fl_shm_cfg.cma_min, 0);
    expect_valid("FLIT_SHM_CMA_MIN_KB", "1048576", &fl_shm_cfg.cma_min, 1ll << 30);
    static const char *const bad_cma[] = {"-1", "1048577", "256k", "lots"};
    for (size_t i = 0; i < sizeof bad_cma / sizeof bad_cma[0]; i++)
        expect_invalid("FLIT_SHM_CMA_MIN_KB", bad_cma[i], &fl_shm_cfg.cma_min, 256 << 10);
}

static void test_ring_kb(void)
{
    for (int64_t kb = 256; kb <= 65536; kb *= 2) {
        char s[16];
        snprintf(s, sizeof s, "%lld", (long long)kb);
        expect_valid("FLIT_SHM_RING_KB", s, &fl_shm_cfg.ring_bytes, kb << 10);
    }
    static const char *const bad[] = {"300",   "255",    "257",    "384",  "65535",
                                      "65537", "131072", "128",    "0",    "-256",
                                      "256k",  "abc",    "1024.0", "0x400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_invalid("FLIT_SHM_RING_KB", bad[i], &fl_shm_cfg.ring_bytes, 256 << 10);
}

static void test_bulk(void)
{
    expect_valid("FLIT_SHM_BULK", "auto", &fl_shm_cfg.bulk, FL_BULK_AUTO);
    expect_valid("FLIT_SHM_BULK", "cma", &fl_shm_cfg.bulk, FL_BULK_CMA);
    expect_valid("FLIT_SHM_BULK", "copy", &fl_shm_cfg.bulk, FL_BULK_COPY);
    static const char *const bad[] = {"0", "1", "dma", "copy2", "auto ", "cm", "mapping"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_invalid("FLIT_SHM_BULK", bad[i], &fl_shm_cfg.bulk, FL_BULK_AUTO);
}

/* name=value is refused saying why (wrong) and naming every piece of text
   in want: the range with its unit, the rule, the special value. */
static void expect_refused_for(const char *name, const char *value, const char *wrong,
                               const char *const *want)
{
    CHECK(setenv(name, value, 1) == 0);
    const char *log;
    CHECK_ST(load(&log), FLIT_ERR_CONFIG);
    expect_refusal_text(name, value, log);
    char why[64];
    snprintf(why, sizeof why, "(%s)", wrong);
    if (!strstr(log, why))
        FAIL("%s=\"%s\" refused without saying \"%s\"; log: %s", name, value, wrong, log);
    for (int i = 0; want[i]; i++)
        if (!strstr(log, want[i]))
            FAIL("%s=\"%s\" refused without \"%s\"; log: %s", name, value, want[i], log);
    CHECK(unsetenv(name) == 0);
}

/* Every refusal says what is allowed, in the variable's unit, and why the
   value is not; the UDP MTU accepts exactly what the UDP path works with. */
static void test_messages(void)
{
    /* Every variable, whatever its kind, refuses what is not even a word
       (a word is a FL_SET_TEXT's value) and says why. */
    struct fl_config_doc d;
    for (size_t i = 0; fl_config_describe(i, &d); i++) {
        CHECK(setenv(d.name, "bogus!", 1) == 0);
        const char *log;
        CHECK_ST(load(&log), FLIT_ERR_CONFIG);
        expect_refusal_text(d.name, "bogus!", log);
        CHECK(unsetenv(d.name) == 0);
    }

    expect_refused_for("FLIT_LONG_CHUNK_KB", "64", "too large",
                       (const char *const[]){"1–60 KiB", NULL});
    /* 128 is a power of two: too small is what is wrong with it. */
    expect_refused_for("FLIT_SHM_RING_KB", "128", "too small",
                       (const char *const[]){"256–65536 KiB, a power of two", NULL});
    expect_refused_for("FLIT_SHM_RING_KB", "300", "not a power of two",
                       (const char *const[]){"256–65536 KiB", NULL});
    expect_refused_for("FLIT_SHM_RING_KB", "131072", "too large",
                       (const char *const[]){"256–65536 KiB", NULL});
    expect_refused_for("FLIT_PEER_TIMEOUT", "0.05", "too small",
                       (const char *const[]){"0.1–86400 s", NULL});
    expect_refused_for("FLIT_PEER_TIMEOUT", "2s", "not a number",
                       (const char *const[]){"0.1–86400 s", NULL});
    expect_refused_for("FLIT_PEER_CHECK_MS", "0", "too small",
                       (const char *const[]){"1–60000 ms", NULL});
    expect_refused_for("FLIT_RTO_MIN_US", "50", "too small",
                       (const char *const[]){"100–10000000 µs", NULL});
    expect_refused_for("FLIT_SPIN_US", "-2", "too small",
                       (const char *const[]){"0–10000000 µs; -1: 50", NULL});
    expect_refused_for("FLIT_SHM_BULK", "fast", "not one of the choices",
                       (const char *const[]){"auto, cma, copy", NULL});
    expect_refused_for("FLIT_STATS", "maybe", "not a yes or no",
                       (const char *const[]){"0 or 1", NULL});
    expect_refused_for("FLIT_DROP_RATE", "5", "too large",
                       (const char *const[]){"0–1", NULL});
    expect_refused_for("FLIT_FAULT_SEED", "9223372036854775808", "too large",
                       (const char *const[]){"0–9223372036854775807", NULL});
    expect_refused_for("FLIT_UDP_ADDR", "host", "not an IPv4 address",
                       (const char *const[]){"IPv4", NULL});

    /* FLIT_UDP_MTU: 0 (the path's), else room for the IPv4 and UDP headers
       (28 bytes), the channel's datagram and chunk headers (56 + 8) and 72
       bytes of data, so that the largest packet fits in the chunks a lane
       may have in flight; up to an IP packet. (156, which fl_chan_connect
       lets through, hangs a full-size medium message.) */
    expect_valid("FLIT_UDP_MTU", "0", &fl_udp_cfg.mtu, 0);
    expect_valid("FLIT_UDP_MTU", "164", &fl_udp_cfg.mtu, 164);
    expect_valid("FLIT_UDP_MTU", "1500", &fl_udp_cfg.mtu, 1500);
    expect_valid("FLIT_UDP_MTU", "65535", &fl_udp_cfg.mtu, 65535);
    static const char *const mtu_want[] = {"164–65535 bytes; 0: the path's MTU", NULL};
    expect_refused_for("FLIT_UDP_MTU", "10", "too small", mtu_want);
    expect_refused_for("FLIT_UDP_MTU", "156", "too small", mtu_want);
    expect_refused_for("FLIT_UDP_MTU", "163", "too small", mtu_want);
    expect_refused_for("FLIT_UDP_MTU", "65536", "too large", mtu_want);
    expect_refused_for("FLIT_UDP_MTU", "-1", "too small", mtu_want);
    expect_refused_for("FLIT_UDP_MTU", "1500B", "not a whole number", mtu_want);
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
    CHECK_ST(load(&log), FLIT_ERR_CONFIG);
    CHECK(strstr(log, "FLIT_SHM_RING_KB") != NULL);
    CHECK(strstr(log, "FLIT_SPIN_US") == NULL);
    CHECK(fl_cfg.spin_us == 7 && fl_shm_cfg.bulk == FL_BULK_COPY);
    CHECK(fl_shm_cfg.ring_bytes == 256 << 10);
    /* Two bad ones: both named. */
    CHECK(setenv("FLIT_STATS", "perhaps", 1) == 0);
    CHECK_ST(load(&log), FLIT_ERR_CONFIG);
    CHECK(strstr(log, "FLIT_SHM_RING_KB") && strstr(log, "FLIT_STATS"));
    unit_clean_env();
    CHECK_OK(load(&log));
    expect_defaults();
}

/* How many times needle occurs in hay. */
static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *at = strstr(hay, needle); at; at = strstr(at + 1, needle))
        n++;
    return n;
}

/* A bad setting is every task's: only the first task of the job (by
   flitrun's FLIT_RANK or another launcher's task number) says so, the
   others answer FLIT_ERR_CONFIG in silence, so a job of 64 says it once. */
static void test_once_per_job(void)
{
    static const char *const rank_vars[] = {
        "FLIT_RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
    };
    const char *log;
    unit_clean_env();
    CHECK(setenv("FLIT_SHM_RING_KB", "300", 1) == 0);
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        CHECK(setenv(rank_vars[i], "5", 1) == 0);
        CHECK(setenv("FLIT_FOO", "1", 1) == 0); /* a typo: warned once per job too */
        CHECK_ST(load(&log), FLIT_ERR_CONFIG);
        if (log[0] != '\0')
            FAIL("%s=5 (not the first task) logged: %s", rank_vars[i], log);
        CHECK(fl_shm_cfg.ring_bytes == 256 << 10);
        CHECK(setenv(rank_vars[i], "0", 1) == 0);
        CHECK_ST(load(&log), FLIT_ERR_CONFIG);
        if (occurrences(log, "FLIT_SHM_RING_KB=\"300\"") != 1 ||
            occurrences(log, "FLIT_FOO") != 1)
            FAIL("%s=0 (the first task): expected one message each; log: %s",
                 rank_vars[i], log);
        CHECK(unsetenv("FLIT_FOO") == 0);
        CHECK(unsetenv(rank_vars[i]) == 0);
    }
    CHECK(unsetenv("FLIT_SHM_RING_KB") == 0);
}

/* fl_config_next_bad: every bad variable, once each, in the words
   fl_config_load logs; nothing when all are good; fl_cfg untouched. */
static void test_next_bad(void)
{
    unit_clean_env();
    const char *log;
    CHECK_OK(load(&log));
    char msg[512];
    size_t i = 0;
    CHECK(!fl_config_next_bad(&i, msg, sizeof msg));
    CHECK(setenv("FLIT_SHM_RING_KB", "300", 1) == 0);
    CHECK(setenv("FLIT_STATS", "perhaps", 1) == 0);
    CHECK(setenv("FLIT_SHM_BULK", "copy", 1) == 0);
    CHECK_ST(load(&log), FLIT_ERR_CONFIG);
    char logged[sizeof captured];
    snprintf(logged, sizeof logged, "%s", log);
    CHECK(setenv("FLIT_SHM_BULK", "cma", 1) == 0);
    int found = 0;
    for (i = 0; fl_config_next_bad(&i, msg, sizeof msg) && found < 100; found++) {
        if (!strstr(msg, "FLIT_SHM_RING_KB=\"300\"") &&
            !strstr(msg, "FLIT_STATS=\"perhaps\""))
            FAIL("fl_config_next_bad: unexpected \"%s\"", msg);
        if (!strstr(logged, msg))
            FAIL("fl_config_next_bad said \"%s\", fl_config_load logged: %s", msg,
                 logged);
    }
    CHECK(found == 2);
    CHECK(fl_shm_cfg.bulk == FL_BULK_COPY); /* checked, not kept */
    unit_clean_env();
    CHECK_OK(load(&log));
}

static void load_without_environment(void)
{
    extern char **environ;
    CHECK(clearenv() == 0 && environ == NULL);
    CHECK_OK(fl_config_load());
    expect_defaults();
    _exit(unit_exit_status());
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
    CHECK(fl_shm_cfg.ring_bytes == 256 << 10);
    CHECK(unsetenv("FLIT_SHM_RING") == 0);
    /* The launcher's variables are known: no warning about them. */
    CHECK(setenv("FLIT_RANK", "0", 1) == 0);
    CHECK(setenv("FLIT_SIZE", "1", 1) == 0);
    CHECK(setenv("FLIT_JOB_ID", "0123456789abcdef", 1) == 0);
    CHECK(setenv("FLIT_JOB_KEY",
                 "00112233445566778899aabbccddeeff"
                 "00112233445566778899aabbccddeeff",
                 1) == 0);
    CHECK_OK(load(&log));
    CHECK(strstr(log, "FLIT_RANK") == NULL && strstr(log, "FLIT_SIZE") == NULL &&
          strstr(log, "FLIT_JOB_ID") == NULL && strstr(log, "FLIT_JOB_KEY") == NULL);
    unit_clean_env();
    /* Nothing set: nothing said. */
    CHECK_OK(load(&log));
    CHECK(log[0] == '\0');
    /* No environment at all (clearenv leaves environ NULL): defaults. */
    char out[4096];
    int status = unit_run_child(load_without_environment, out, sizeof out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        FAIL("fl_config_load with environ NULL: status %#x, stderr: %s", status, out);
}

/* flit_init reads the configuration: a bad variable fails it and leaves the
   library uninitialized, so a second try (variable fixed) succeeds. */
static void test_init(void)
{
    CHECK(setenv("FLIT_SHM_RING_KB", "300", 1) == 0);
    int saved = capture_begin();
    flit_status st = flit_init(NULL);
    const char *log = capture_end(saved);
    CHECK_ST(st, FLIT_ERR_CONFIG);
    /* said once, naming the environment, never blaming an argument */
    if (occurrences(log, "FLIT_SHM_RING_KB") != 1 || strstr(log, "NULL pointer"))
        FAIL("a singleton's flit_init with FLIT_SHM_RING_KB=300 logged: %s", log);
    CHECK(strstr(flit_strerror(st), "FLIT_*") != NULL);
    CHECK(flit_job_size() == 0);
    flit_ep_t *ep = NULL;
    CHECK_ST(flit_ep_create(NULL, &ep), FLIT_ERR_NOT_INITIALIZED);
    CHECK_ST(flit_finalize(), FLIT_ERR_NOT_INITIALIZED);
    /* Still bad: still refused. */
    CHECK(setenv("FLIT_SHM_BULK", "fast", 1) == 0);
    saved = capture_begin();
    st = flit_init(NULL);
    capture_end(saved);
    CHECK_ST(st, FLIT_ERR_CONFIG);
    unit_clean_env();
    /* An MTU the UDP path cannot work with is refused here, by name, not
       later by flit_ep_create as a peer too small to reach. */
    CHECK(setenv("FLIT_UDP_MTU", "10", 1) == 0);
    saved = capture_begin();
    st = flit_init(NULL);
    log = capture_end(saved);
    CHECK_ST(st, FLIT_ERR_CONFIG);
    expect_refusal_text("FLIT_UDP_MTU", "10", log);
    CHECK(flit_job_size() == 0);
    unit_clean_env();
    /* An unknown variable does not stop it. */
    CHECK(setenv("FLIT_FOO", "1", 1) == 0);
    CHECK(setenv("FLIT_SHM_RING_KB", "512", 1) == 0);
    CHECK(setenv("FLIT_STATS", "yes", 1) == 0);
    CHECK(setenv("FLIT_VERBOSE", "1", 1) == 0);
    saved = capture_begin();
    st = flit_init(NULL);
    log = capture_end(saved);
    CHECK_OK(st);
    CHECK(strstr(log, "FLIT_FOO") != NULL);
    /* FLIT_VERBOSE=1 lists the values in effect: the spin flit settled on
       (one rank never outnumbers the cores), not the -1 that asked for it. */
    const char *spin = strstr(log, "FLIT_SPIN_US ");
    if (!spin || !strstr(log, "FLIT_SHM_RING_KB"))
        FAIL("FLIT_VERBOSE=1 printed no configuration; log: %s", log);
    size_t spin_len = strcspn(spin, "\n");
    if (!memmem(spin, spin_len, " 50 (default)", 13) || memmem(spin, spin_len, "-1", 2))
        FAIL("FLIT_VERBOSE=1 printed \"%.*s\", expected 50 (default)", (int)spin_len,
             spin);
    const char *yield = strstr(log, "FLIT_YIELD_US ");
    size_t yield_len = yield ? strcspn(yield, "\n") : 0;
    if (!yield || !memmem(yield, yield_len, " 0 (default)", 12))
        FAIL("FLIT_VERBOSE=1 printed \"%.*s\", expected FLIT_YIELD_US 0 (default)",
             (int)yield_len, yield ? yield : "");
    CHECK(flit_job_size() == 1 && flit_job_rank().idx == 0);
    CHECK(fl_shm_cfg.ring_bytes == 512 << 10);
    CHECK_ST(flit_init(NULL), FLIT_ERR_ALREADY_INITIALIZED);
    CHECK(fl_cfg.stats == 1);
    saved = capture_begin(); /* FLIT_VERBOSE=1: the endpoint's peers */
    st = flit_ep_create(NULL, &ep);
    capture_end(saved);
    CHECK_OK(st);
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
    /* Every registered variable: the build's tables, whatever it has. */
    const char *names[FL_CONFIG_MAX];
    int nnames = 0;
    struct fl_config_doc d;
    while (nnames < FL_CONFIG_MAX && fl_config_describe((size_t)nnames, &d))
        names[nnames++] = d.name;
    CHECK(nnames > 20);
    enum { NNAMES = FL_CONFIG_MAX };
    int seen[NNAMES] = {0};
    char line[256];
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        int which = -1;
        for (int i = 0; i < nnames; i++) {
            char *at = strstr(line, names[i]);
            /* whole word: FLIT_SHM_RING_KB is not FLIT_SHM_RING_KBX */
            if (at && (at[strlen(names[i])] == ' ' || at[strlen(names[i])] == '\t'))
                which = i;
        }
        if (which < 0)
            FAIL("fl_config_print: unexpected line \"%s\"", line);
        seen[which]++;
        bool ring = strcmp(names[which], "FLIT_SHM_RING_KB") == 0;
        bool bulk = strcmp(names[which], "FLIT_SHM_BULK") == 0;
        if ((ring || bulk) != (strstr(line, "(default)") == NULL))
            FAIL("fl_config_print: \"%s\" %s marked default", line,
                 ring || bulk ? "is" : "is not");
        if (ring)
            CHECK(strstr(line, " 1024") != NULL);
        if (bulk)
            CHECK(strstr(line, " copy") != NULL);
        /* Before flit_init settles it, FLIT_SPIN_US says what -1 means. */
        if (strcmp(names[which], "FLIT_SPIN_US") == 0 &&
            (strstr(line, " -1") || !strstr(line, " 50 (0 when")))
            FAIL("fl_config_print before flit_init: \"%s\"", line);
        if (strcmp(names[which], "FLIT_UDP_MTU") == 0 &&
            !strstr(line, " the path's MTU (default)"))
            FAIL("fl_config_print: \"%s\"", line);
    }
    fclose(f);
    CHECK(lines == nnames);
    for (int i = 0; i < nnames; i++)
        if (seen[i] != 1)
            FAIL("fl_config_print: %s printed %d times", names[i], seen[i]);
    unit_clean_env();
}

/* One line of fl_config_print, for name, into line[len]. */
static void print_line(const char *name, char *line, size_t len)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    fl_config_print(f);
    CHECK(fflush(f) == 0);
    rewind(f);
    size_t n = strlen(name);
    line[0] = '\0';
    char buf[256];
    while (fgets(buf, sizeof buf, f))
        if (strncmp(buf + 2, name, n) == 0 && buf[2 + n] == ' ')
            snprintf(line, len, "%s", buf);
    fclose(f);
    if (!line[0])
        FAIL("fl_config_print: no line for %s", name);
}

/* After flit_init (test_init), FLIT_SPIN_US=-1 is printed as what it
   became whether it was left unset or set to -1; other values as set. */
static void test_print_settled(void)
{
    char line[256];
    const char *log;
    unit_clean_env();
    CHECK_OK(load(&log));
    print_line("FLIT_SPIN_US", line, sizeof line);
    if (!strstr(line, " 50 (default)\n"))
        FAIL("FLIT_SPIN_US unset printed \"%s\"", line);
    CHECK(setenv("FLIT_SPIN_US", "-1", 1) == 0);
    CHECK_OK(load(&log));
    print_line("FLIT_SPIN_US", line, sizeof line);
    if (!strstr(line, " 50 (from -1)\n"))
        FAIL("FLIT_SPIN_US=-1 printed \"%s\"", line);
    CHECK(setenv("FLIT_SPIN_US", "7", 1) == 0);
    CHECK_OK(load(&log));
    print_line("FLIT_SPIN_US", line, sizeof line);
    if (!strstr(line, " 7\n") || strchr(line, '('))
        FAIL("FLIT_SPIN_US=7 printed \"%s\"", line);
    unit_clean_env();
}

/* Copies the trimmed text of one table cell [b, e) into out, without the
   backticks that format code in Markdown. */
static void cell_text(const char *b, const char *e, char *out, size_t cap)
{
    while (b < e && *b == ' ')
        b++;
    while (e > b && e[-1] == ' ')
        e--;
    size_t n = 0;
    for (; b < e && n + 1 < cap; b++)
        if (*b != '`')
            out[n++] = *b;
    out[n] = '\0';
}

/* Whether name belongs to a transport that is built only where its
   library is found, and this build lacks it. */
static bool optional_absent(const char *name)
{
#ifdef FLIT_HAVE_OFI
    (void)name;
    return false;
#else
    return strncmp(name, "FLIT_OFI_", 9) == 0;
#endif
}

/* The README's table of environment variables lists every variable of the
   code's table, once, with the same default and allowed values, and no
   other: the two cannot drift apart. */
static void test_readme(void)
{
    FILE *f = fopen(FLIT_README, "r");
    if (!f)
        FAIL("cannot open %s", FLIT_README);
    struct fl_config_doc d;
    size_t nvars = 0;
    while (fl_config_describe(nvars, &d))
        nvars++;
    int seen[64] = {0};
    CHECK(nvars <= 64);
    bool in_section = false, header = false;
    int rows = 0;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## ", 3) == 0) {
            in_section = strncmp(line, "## Environment variables", 24) == 0;
            continue;
        }
        if (!in_section)
            continue;
        if (strncmp(line, "| variable | default | allowed | meaning |", 42) == 0)
            header = true;
        if (strncmp(line, "| `FLIT_", 8) != 0)
            continue;
        /* | `NAME` | default | allowed | meaning | */
        const char *bar[5];
        bar[0] = line;
        for (int i = 1; i < 5; i++) {
            bar[i] = strchr(bar[i - 1] + 1, '|');
            if (!bar[i])
                FAIL("README: a row with fewer than 4 columns: %s", line);
        }
        char name[64], def[256], allowed[256];
        cell_text(bar[0] + 1, bar[1], name, sizeof name);
        cell_text(bar[1] + 1, bar[2], def, sizeof def);
        cell_text(bar[2] + 1, bar[3], allowed, sizeof allowed);
        size_t i = 0;
        while (fl_config_describe(i, &d) && strcmp(d.name, name) != 0)
            i++;
        if (i == nvars && optional_absent(name))
            continue; /* a transport's this build lacks */
        rows++;
        if (i == nvars)
            FAIL("README lists %s, which flit does not read", name);
        seen[i]++;
        if (strcmp(def, d.def) != 0)
            FAIL("README: %s defaults to \"%s\", the code to \"%s\"", name, def, d.def);
        if (strcmp(allowed, d.allowed) != 0)
            FAIL("README: %s allows \"%s\", the code \"%s\"", name, allowed, d.allowed);
    }
    fclose(f);
    if (!header)
        FAIL("README: no \"| variable | default | allowed | meaning |\" table under "
             "\"## Environment variables\"");
    for (size_t i = 0; i < nvars; i++) {
        fl_config_describe(i, &d);
        if (seen[i] != 1)
            FAIL("README lists %s %d times, expected once", d.name, seen[i]);
    }
    CHECK(rows == (int)nvars);
}

/* The mask FLIT_TRANSPORT keeps for the build's transport called name. */
static int64_t transport_bit(const char *name)
{
    const char *const *names = fl_config_transports();
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return INT64_C(1) << i;
    FAIL("this build has no transport called %s", name);
}

/* FLIT_TRANSPORT: auto, or a list of the build's transports' names. */
static void test_transport_names(void)
{
    int64_t shm = transport_bit("shm"), udp = transport_bit("udp");
    CHECK(transport_bit("self") != 0 && shm != udp);
    expect_valid("FLIT_TRANSPORT", "udp", &fl_cfg.transport, udp);
    expect_valid("FLIT_TRANSPORT", "shm", &fl_cfg.transport, shm);
    expect_valid("FLIT_TRANSPORT", "shm,udp", &fl_cfg.transport, shm | udp);
    expect_valid("FLIT_TRANSPORT", "udp,shm", &fl_cfg.transport, shm | udp);
    expect_valid("FLIT_TRANSPORT", "auto", &fl_cfg.transport, 0);
    static const char *const bad[] = {"tcp",     "UDP",      "udp,",
                                      ",udp",    "udp,,shm", "udp,udp",
                                      "shm udp", "auto,udp", "udp;shm"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_invalid("FLIT_TRANSPORT", bad[i], &fl_cfg.transport, 0);
    /* The refusal names what this build has. */
    CHECK(setenv("FLIT_TRANSPORT", "tcp", 1) == 0);
    const char *log;
    CHECK(load(&log) == FLIT_ERR_CONFIG);
    if (!strstr(log, "self, shm") || !strstr(log, "udp)"))
        FAIL("FLIT_TRANSPORT=tcp refused without naming the build's transports: %s", log);
    CHECK(unsetenv("FLIT_TRANSPORT") == 0);
}

/* The same for the settings of the layers on the public API (registered
   by flit_init, which test_init ran): docs/settings.md's second table
   lists each once, with its default and range, and nothing else. */
static void test_readme_layers(void)
{
    FILE *f = fopen(FLIT_README, "r");
    if (!f)
        FAIL("cannot open %s", FLIT_README);
    int seen[FLIT_LAYER_MAX][8] = {{0}};
    bool in_section = false;
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## ", 3) == 0)
            in_section = strstr(line, "layers on the public API") != NULL;
        if (!in_section || strncmp(line, "| `FLIT_", 8) != 0)
            continue;
        const char *bar[4] = {line};
        for (int i = 1; i < 4; i++)
            if (!(bar[i] = strchr(bar[i - 1] + 1, '|')))
                FAIL("README: a row with fewer than 3 columns: %s", line);
        char name[64], def[64], allowed[64], want[64];
        cell_text(bar[0] + 1, bar[1], name, sizeof name);
        cell_text(bar[1] + 1, bar[2], def, sizeof def);
        cell_text(bar[2] + 1, bar[3], allowed, sizeof allowed);
        bool found = false;
        for (unsigned l = 0; l < fl_pub_count() && !found; l++) {
            const flit_layer_t *layer = fl_pub_at(l);
            for (unsigned k = 0; k < layer->nsettings && k < 8 && !found; k++) {
                const flit_layer_setting_t *st = &layer->settings[k];
                if (strcmp(st->name, name) != 0)
                    continue;
                found = true;
                seen[l][k]++;
                snprintf(want, sizeof want, "%lld", (long long)st->def);
                if (strcmp(def, want) != 0)
                    FAIL("README: %s defaults to \"%s\", the layer to \"%s\"", name, def,
                         want);
                snprintf(want, sizeof want, "%lld–%lld", (long long)st->min,
                         (long long)st->max);
                if (strcmp(allowed, want) != 0)
                    FAIL("README: %s allows \"%s\", the layer \"%s\"", name, allowed,
                         want);
            }
        }
        if (!found)
            FAIL("README lists %s among the layers' settings, which no layer has", name);
    }
    fclose(f);
    for (unsigned l = 0; l < fl_pub_count(); l++)
        for (unsigned k = 0; k < fl_pub_at(l)->nsettings && k < 8; k++)
            if (seen[l][k] != 1)
                FAIL("README lists the %s layer's %s %d times, expected once",
                     fl_pub_at(l)->name, fl_pub_at(l)->settings[k].name, seen[l][k]);
}

/* A word (FL_SET_TEXT, a provider's name): kept as given, its default
   when unset, refused when it is not a word or too long. Registered last,
   after the README checks: no plug-in of the build has this one. */
static char word[FL_CONFIG_WORD];
static const struct fl_setting word_table[] = {
    {"FLIT_TEST_WORD", FL_SET_TEXT, NULL, 0, 0, 0, NULL, "a word, for config_test",
     .text = word, .text_def = "tcp"},
    {NULL},
};

static void test_text(void)
{
    CHECK_OK(fl_config_add(word_table));
    const char *log;
    CHECK_OK(load(&log));
    CHECK(strcmp(word, "tcp") == 0);
    CHECK(setenv("FLIT_TEST_WORD", "tcp;ofi_rxm", 1) == 0);
    CHECK_OK(load(&log));
    CHECK(strcmp(word, "tcp;ofi_rxm") == 0);
    char line[256];
    print_line("FLIT_TEST_WORD", line, sizeof line);
    if (!strstr(line, "tcp;ofi_rxm") || strstr(line, "default"))
        FAIL("fl_config_print: \"%s\"", line);
    /* The last is 64 bytes: one more than a text setting holds. */
    static const char *const bad[] = {"tcp ofi", "x$(id)", "a/b", "é",
                                      ("0123456789012345678901234567890123456789"
                                       "012345678901234567890123")};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(setenv("FLIT_TEST_WORD", bad[i], 1) == 0);
        CHECK_ST(load(&log), FLIT_ERR_CONFIG);
        expect_refusal_text("FLIT_TEST_WORD", bad[i], log);
        if (strcmp(word, "tcp") != 0)
            FAIL("FLIT_TEST_WORD=\"%s\" refused but kept \"%s\"", bad[i], word);
    }
    CHECK(unsetenv("FLIT_TEST_WORD") == 0);
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
    expect_valid("FLIT_DROP_RATE", "0.05", &fl_fault_cfg.drop_ppm, 50000);
    expect_valid("FLIT_DUP_RATE", "1", &fl_fault_cfg.dup_ppm, 1000000);
    expect_valid("FLIT_REORDER_RATE", "0", &fl_fault_cfg.reorder_ppm, 0);
    static const char *const bad_rate[] = {"5", "1.01", "-0.1", "5%", "half", "0.1x"};
    for (size_t i = 0; i < sizeof bad_rate / sizeof bad_rate[0]; i++)
        expect_invalid("FLIT_DROP_RATE", bad_rate[i], &fl_fault_cfg.drop_ppm, 0);
    /* FLIT_UDP_ADDR: dotted IPv4, kept in host order */
    expect_valid("FLIT_UDP_ADDR", "10.1.2.3", &fl_udp_cfg.addr, 0x0a010203);
    static const char *const bad_addr[] = {"300.1.1.1", "10.1.2", "host", "::1",
                                           "10.1.2.3 "};
    for (size_t i = 0; i < sizeof bad_addr / sizeof bad_addr[0]; i++)
        expect_invalid("FLIT_UDP_ADDR", bad_addr[i], &fl_udp_cfg.addr, 0);
    test_transport_names();
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(fl_build_settings());
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
    test_messages();
    test_once_per_job();
    test_next_bad();
    test_print();
    test_init();
    test_print_settled();
    test_readme();
    test_readme_layers();
    test_text();
    return 0;
}
