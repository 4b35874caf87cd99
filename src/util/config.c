/* SPDX-License-Identifier: BSD-3-Clause */
/* FLIT_* environment variables: one table, parsed once at flit_init. */
#include "util/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/log.h"

struct fl_config fl_cfg;

enum kind {
    K_INT,
    K_BOOL,
    K_ENUM,
    K_KB,      /* given in KiB, kept in bytes */
    K_SECONDS, /* given in seconds (decimals allowed), kept in ms */
    K_RATE,    /* a probability 0..1, kept in parts per million */
    K_IPV4,    /* a dotted address, kept in host order; 0: pick one */
};

/*
 * One variable. What it accepts is said here and nowhere else: the error
 * for a bad value, FLIT_VERBOSE's listing and docs/settings.md's table (which
 * config_test compares with this one) are all written from these fields.
 */
struct var {
    const char *name;
    enum kind kind;
    size_t offset;         /* of the int64_t in struct fl_config */
    int64_t def, min, max; /* K_INT, K_KB: as given (KiB); else as kept */
    const char *unit;      /* of min and max as given: "KiB", "µs" */
    const char *help;
    bool pow2; /* only powers of two */
    /* A value outside min..max that stands for something else (-1 for
       "flit picks"), allowed when special_means says what. */
    int64_t special;
    const char *special_means;
    const char *const *choices; /* K_ENUM, NULL-terminated */
    bool job; /* every rank of a job must have the same (fl_config_job_values) */
};

static const char *const bulk_choices[] = {"auto", "cma", "copy", NULL};
static const char *const watch_choices[] = {"auto", "proc", NULL};
static const char *const transport_choices[] = {"auto", "udp", "shm", "xdp", NULL};
static const char *const fiber_choices[] = {"auto", "ucontext", NULL};

/*
 * The smallest FLIT_UDP_MTU the UDP path works with: 28 bytes of IPv4 and
 * UDP headers (udp.c), the channel's 56-byte datagram header and 8-byte
 * chunk header (channel/wire.h), and 72 bytes of data per chunk. The data
 * is cut in multiples of 8, and the largest packet (FLIT_AM_MAX_MEDIUM +
 * 512 bytes, MAX_PACKET in channel.c) must fit in the 1024 chunks a lane
 * may have in flight (CHUNK_CAP): 64-byte chunks take 1032. Below 156
 * flit_ep_create refuses every peer as unreachable; from 156 to 163 a
 * full-size medium message would wait for room forever.
 */
#define UDP_MTU_MIN (28 + 56 + 8 + 72)

#define F(field) offsetof(struct fl_config, field)
static const struct var vars[] = {
    {"FLIT_VERBOSE", K_INT, F(verbose), 0, 0, 3, NULL,
     "1: print configuration and per-peer transports at start-up; 2-3: debug"},
    {"FLIT_STATS", K_BOOL, F(stats), 0, 0, 1, NULL,
     "print each endpoint's counters when it is destroyed"},
    {"FLIT_SPIN_US", K_INT, F(spin_us), -1, 0, 10000000, "µs",
     "microseconds flit_wait spins before sleeping", .special = -1,
     .special_means = "50 (2 when ranks outnumber cores)"},
    {"FLIT_PROGRESS_THREAD", K_BOOL, F(progress_thread), 0, 0, 1, NULL,
     "serve every endpoint from a progress thread (makes them thread-safe)"},
    {"FLIT_SHM_RING_KB", K_KB, F(shm_ring_bytes), 256, 256, 65536, "KiB",
     "size of each shared-memory ring (one per ordered pair and lane)", .pow2 = true,
     .job = true},
    {"FLIT_SHM_BULK", K_ENUM, F(shm_bulk), FL_BULK_AUTO, 0, 2, NULL,
     "long payloads on shared memory: auto (mapping, else CMA, else copy), cma, copy",
     .choices = bulk_choices},
    {"FLIT_SHM_WATCH", K_ENUM, F(shm_watch), FL_WATCH_AUTO, 0, 1, NULL,
     "how a dead peer on this host is noticed: auto (pidfd, else /proc), proc "
     "(reading /proc/PID/stat every FLIT_PEER_CHECK_MS)",
     .choices = watch_choices},
    {"FLIT_LONG_CHUNK_KB", K_KB, F(long_chunk), 32, 1, 60, "KiB",
     "piece size when a long payload is copied through the rings"},
    {"FLIT_SHM_CMA_MIN_KB", K_KB, F(shm_cma_min), 256, 0, 1048576, "KiB",
     "smallest long AM payload written by cross-memory attach; smaller ones go in "
     "pieces through the rings"},
    {"FLIT_PEER_CHECK_MS", K_INT, F(peer_check_ms), 100, 1, 60000, "ms",
     "how often a waiting endpoint checks that its peers are alive"},
    {"FLIT_TRANSPORT", K_ENUM, F(transport), FL_TRANSPORT_AUTO, 0, 3, NULL,
     "auto (shared memory on a host, UDP between hosts), udp (UDP to every peer), shm, "
     "xdp (AF_XDP between hosts where it can attach, else UDP)",
     .choices = transport_choices, .job = true},
    {"FLIT_PEER_TIMEOUT", K_SECONDS, F(peer_timeout_ms), 30000, 100, 86400000, "s",
     "seconds a UDP peer may stay silent (or leave data unacknowledged) before it is "
     "declared down and its messages returned"},
    {"FLIT_UDP_MTU", K_INT, F(udp_mtu), 0, UDP_MTU_MIN, 65535, "bytes",
     "largest IP packet UDP sends (1500: no fragmentation on Ethernet)", .special = 0,
     .special_means = "the path's MTU"},
    {"FLIT_UDP_ADDR", K_IPV4, F(udp_addr), 0, 0, 0xffffffffll, NULL,
     "IPv4 address this rank's UDP endpoints use (default: loopback when the job is on "
     "one host, else the interface that reaches the launcher)"},
    {"FLIT_UDP_WINDOW_KB", K_KB, F(udp_window), 256, 132, 65536, "KiB",
     "unacknowledged bytes per UDP peer and lane: the credit window"},
    {"FLIT_ACK_DELAY_US", K_INT, F(ack_delay_us), 100, 0, 1000000, "µs",
     "how long a receiver may hold an acknowledgement back waiting for a reply to "
     "carry it"},
    {"FLIT_RTO_MIN_US", K_INT, F(rto_min_us), 10000, 100, 10000000, "µs",
     "smallest retransmission timeout (the measured one is 4 round trips above the "
     "mean)"},
    {"FLIT_DROP_RATE", K_RATE, F(drop_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is dropped"},
    {"FLIT_DUP_RATE", K_RATE, F(dup_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is processed twice"},
    {"FLIT_REORDER_RATE", K_RATE, F(reorder_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is held back behind the "
     "next"},
    {"FLIT_FAULT_SEED", K_INT, F(fault_seed), 1, 0, INT64_MAX, NULL,
     "seed of the fault injection (each rank adds its rank)"},
    {"FLIT_FIBER_STACK_KB", K_KB, F(fiber_stack), 256, 16, 65536, "KiB",
     "stack of a stream handler that waits for bytes still on the wire (a fiber)"},
    {"FLIT_FIBERS", K_ENUM, F(fibers), FL_FIBERS_AUTO, 0, 1, NULL,
     "auto: flit's own context switch where it has one (x86-64, AArch64), else "
     "ucontext; ucontext: always the portable one",
     .choices = fiber_choices},
};
#undef F
#define NVARS (sizeof vars / sizeof vars[0])

/* Variables other parts of flit read (the launcher's), not to be warned of. */
static const char *const known_elsewhere[] = {
    "FLIT_BOOT", "FLIT_RANK", "FLIT_SIZE", "FLIT_JOB_ID", "FLIT_JOB_KEY", NULL,
};

static int64_t *field(const struct var *v)
{
    return (int64_t *)((char *)&fl_cfg + v->offset);
}

/* K_SECONDS and K_RATE keep a fraction as an integer: this many per unit. */
static double scale(const struct var *v)
{
    return v->kind == K_SECONDS ? 1e3 : 1e6;
}

/* Appends to buf[len] at *at, never past its end. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    if (*at >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += (size_t)n;
}

/* What v accepts, as its error message and docs/settings.md's table say it. */
static void format_allowed(const struct var *v, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    switch (v->kind) {
    case K_BOOL:
        put(buf, len, &at, "0 or 1 (also no/yes, off/on, false/true)");
        return;
    case K_ENUM:
        for (int i = 0; v->choices[i]; i++)
            put(buf, len, &at, "%s%s", i ? ", " : "", v->choices[i]);
        return;
    case K_IPV4:
        put(buf, len, &at, "a dotted IPv4 address");
        return;
    case K_SECONDS:
    case K_RATE:
        put(buf, len, &at, "%g–%g", (double)v->min / scale(v), (double)v->max / scale(v));
        break;
    case K_INT:
    case K_KB:
        put(buf, len, &at, "%lld–%lld", (long long)v->min, (long long)v->max);
        break;
    }
    if (v->unit)
        put(buf, len, &at, " %s", v->unit);
    if (v->pow2)
        put(buf, len, &at, ", a power of two");
    if (v->special_means)
        put(buf, len, &at, "; %lld: %s", (long long)v->special, v->special_means);
}

/* val (in the unit kept, K_KB in KiB) as it would be given. */
static void format_value(const struct var *v, int64_t val, char *buf, size_t len)
{
    struct in_addr a = {htonl((uint32_t)val)};
    if (v->special_means && val == v->special)
        snprintf(buf, len, "%s", v->special_means);
    else if (v->kind == K_ENUM)
        snprintf(buf, len, "%s", v->choices[val]);
    else if (v->kind == K_SECONDS || v->kind == K_RATE)
        snprintf(buf, len, "%g", (double)val / scale(v));
    else if (v->kind == K_IPV4 && val == 0)
        snprintf(buf, len, "auto");
    else if (v->kind == K_IPV4)
        inet_ntop(AF_INET, &a, buf, (socklen_t)len);
    else
        snprintf(buf, len, "%lld", (long long)val);
}

/* Reads s into *out; NULL when it is valid, else what is wrong with it. */
static const char *parse_value(const struct var *v, const char *s, int64_t *out)
{
    if (v->kind == K_ENUM) {
        for (int i = 0; v->choices[i]; i++)
            if (strcmp(s, v->choices[i]) == 0) {
                *out = i;
                return NULL;
            }
        return "not one of the choices";
    }
    if (v->kind == K_BOOL) {
        static const char *const yes[] = {"1", "yes", "true", "on", NULL};
        static const char *const no[] = {"0", "no", "false", "off", NULL};
        for (int i = 0; yes[i]; i++) {
            if (strcasecmp(s, yes[i]) == 0) {
                *out = 1;
                return NULL;
            }
            if (strcasecmp(s, no[i]) == 0) {
                *out = 0;
                return NULL;
            }
        }
        return "not a yes or no";
    }
    if (v->kind == K_SECONDS || v->kind == K_RATE) {
        char *end;
        errno = 0;
        double x = strtod(s, &end) * scale(v);
        /* A leading digit: strtod alone would take " 1", "+1", ".5", "inf". */
        if (!isdigit((unsigned char)s[0]) || *end || isnan(x))
            return "not a number";
        if (errno)
            return "out of range";
        if (x < (double)v->min)
            return "too small";
        if (x > (double)v->max)
            return "too large";
        *out = (int64_t)(x + 0.5);
        return NULL;
    }
    if (v->kind == K_IPV4) {
        struct in_addr a;
        if (inet_pton(AF_INET, s, &a) != 1)
            return "not an IPv4 address";
        *out = ntohl(a.s_addr);
        return NULL;
    }
    /* Digits, with an optional minus: strtoll alone would take " +7". */
    if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return "not a whole number";
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end)
        return "not a whole number";
    if (v->special_means && x == v->special && !errno) {
        *out = x;
        return NULL;
    }
    if (errno == ERANGE)
        return s[0] == '-' ? "too small" : "too large";
    if (x < v->min)
        return "too small";
    if (x > v->max)
        return "too large";
    if (v->pow2 && (x & (x - 1)))
        return "not a power of two";
    *out = x;
    return NULL;
}

bool (*fl_config_known_above)(const char *name, size_t len);

static void warn_unknown(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) { /* NULL after clearenv() */
        if (strncmp(*e, "FLIT_", 5) != 0)
            continue;
        size_t n = strcspn(*e, "=");
        bool known = false;
        for (size_t i = 0; i < NVARS && !known; i++)
            known = strlen(vars[i].name) == n && strncmp(*e, vars[i].name, n) == 0;
        for (size_t i = 0; known_elsewhere[i] && !known; i++)
            known = strlen(known_elsewhere[i]) == n &&
                    strncmp(*e, known_elsewhere[i], n) == 0;
        if (!known && fl_config_known_above)
            known = fl_config_known_above(*e, n);
        if (!known)
            fl_warn("unknown variable %.*s ignored (typo?)", (int)n, *e);
    }
}

/* Variable i's value from the environment into *val (its default when
   unset); false, with the message naming it, its value and what is allowed,
   when the value is bad. */
static bool read_var(size_t i, int64_t *val, char *msg, size_t len)
{
    const struct var *v = &vars[i];
    const char *s = getenv(v->name);
    const char *wrong = s && *s ? parse_value(v, s, val) : NULL;
    if (!wrong)
        return true;
    char allowed[FL_CONFIG_TEXT];
    format_allowed(v, allowed, sizeof allowed);
    snprintf(msg, len, "%s=\"%s\" is not valid (%s): allowed %s — %s", v->name, s, wrong,
             allowed, v->help);
    *val = v->def;
    return false;
}

bool fl_config_next_bad(size_t *i, char *msg, size_t len)
{
    while (*i < NVARS) {
        int64_t val = vars[*i].def;
        if (!read_var((*i)++, &val, msg, len))
            return true;
    }
    return false;
}

/*
 * Whether this process is the first task of its job as far as its launcher
 * says before flit_init joins it: FLIT_RANK (flitrun), or the task numbers
 * of the launchers src/boot/single.c knows. The others keep a bad setting,
 * which every task shares, to themselves: one message per job, not per rank.
 */
static bool first_task(void)
{
    static const char *const rank_vars[] = {
        "FLIT_RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK", NULL,
    };
    for (size_t i = 0; rank_vars[i]; i++) {
        const char *s = getenv(rank_vars[i]);
        char *end;
        errno = 0;
        unsigned long rank = s && *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
        if (rank > 0 && !errno && !*end)
            return false; /* anything but a task number above 0: speak */
    }
    return true;
}

flit_status fl_config_load(void)
{
    flit_status st = FLIT_OK;
    bool speak = first_task();
    for (size_t i = 0; i < NVARS; i++) {
        const struct var *v = &vars[i];
        int64_t val = v->def;
        char msg[2 * FL_CONFIG_TEXT + 256];
        if (!read_var(i, &val, msg, sizeof msg)) {
            if (speak)
                fl_error("%s", msg);
            st = FLIT_ERR_CONFIG;
        }
        *field(v) = v->kind == K_KB ? val << 10 : val;
    }
    if (speak) /* a typo, too, is every task's: said once per job */
        warn_unknown();
    return st;
}

unsigned fl_config_job_values(int64_t *out, unsigned max)
{
    unsigned n = 0;
    for (size_t i = 0; i < NVARS; i++)
        if (vars[i].job && n < max)
            out[n++] = *field(&vars[i]);
    return n;
}

void fl_config_job_describe(unsigned k, int64_t val, const char **name, char *buf,
                            size_t len)
{
    *name = "?";
    snprintf(buf, len, "%lld", (long long)val);
    for (size_t i = 0; i < NVARS; i++) {
        if (!vars[i].job || k-- != 0)
            continue;
        const struct var *v = &vars[i];
        *name = v->name;
        bool known = v->kind != K_ENUM || (val >= v->min && val <= v->max);
        if (known)
            format_value(v, v->kind == K_KB ? val >> 10 : val, buf, len);
        return;
    }
}

/* What special values became once the job was known (fl_config_settle). */
static bool is_settled[NVARS];
static int64_t settled_val[NVARS];
static const char *settled_why[NVARS];

void fl_config_settle(const char *name, int64_t value, const char *why)
{
    for (size_t i = 0; i < NVARS; i++) {
        if (strcmp(vars[i].name, name) != 0)
            continue;
        is_settled[i] = true;
        settled_val[i] = value;
        settled_why[i] = why;
    }
}

void fl_config_print(FILE *out)
{
    for (size_t i = 0; i < NVARS; i++) {
        const struct var *v = &vars[i];
        int64_t val = *field(v);
        if (v->kind == K_KB)
            val >>= 10;
        const char *s = getenv(v->name);
        bool set = s && *s;
        /* A special value flit settled: the value it became, and why. */
        const char *why = settled_why[i];
        bool settled = v->special_means && val == v->special && is_settled[i];
        if (settled)
            val = settled_val[i];
        char text[FL_CONFIG_TEXT];
        if (settled)
            snprintf(text, sizeof text, "%lld", (long long)val);
        else
            format_value(v, val, text, sizeof text);
        char from[32] = "";
        if (settled && set)
            snprintf(from, sizeof from, "from %lld", (long long)v->special);
        const char *note = !set ? "default" : from;
        if (*note)
            fprintf(out, "  %-22s %s (%s%s%s)\n", v->name, text, note, why ? ": " : "",
                    why ? why : "");
        else
            fprintf(out, "  %-22s %s\n", v->name, text);
    }
}

bool fl_config_describe(size_t i, struct fl_config_doc *d)
{
    if (i >= NVARS)
        return false;
    const struct var *v = &vars[i];
    d->name = v->name;
    format_value(v, v->def, d->def, sizeof d->def);
    format_allowed(v, d->allowed, sizeof d->allowed);
    return true;
}
