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

/* FL_SET_NAMES keeps a mask in an int64_t: at most this many choices. */
#define NAMES_MAX 63

static const char *const fiber_choices[] = {"auto", "ucontext", NULL};
/* FLIT_TRANSPORT's choices, set by the build (fl_config_set_transports). */
static const char *transport_names[NAMES_MAX + 1];

#define F(field) (&fl_cfg.field)
const struct fl_setting fl_core_settings[] = {
    {"FLIT_VERBOSE", FL_SET_INT, F(verbose), 0, 0, 3, NULL,
     "1: print configuration and per-peer transports at start-up; 2-3: debug"},
    {"FLIT_STATS", FL_SET_BOOL, F(stats), 0, 0, 1, NULL,
     "print each endpoint's counters when it is destroyed"},
    {"FLIT_SPIN_US", FL_SET_INT, F(spin_us), -1, 0, 10000000, "µs",
     "microseconds flit_wait spins before sleeping", .special = -1,
     .special_means = "50 (0 when ranks outnumber cores)"},
    {"FLIT_YIELD_US", FL_SET_INT, F(yield_us), -1, 0, 10000000, "µs",
     "microseconds flit_wait and blocked sends go on polling after the spin, giving "
     "the core away between polls (sched_yield), before they sleep",
     .special = -1, .special_means = "1000 when ranks outnumber cores, else 0"},
    {"FLIT_PROGRESS_THREAD", FL_SET_BOOL, F(progress_thread), 0, 0, 1, NULL,
     "serve every endpoint from a progress thread (makes them thread-safe)"},
    {"FLIT_LONG_CHUNK_KB", FL_SET_KB, F(long_chunk), 32, 1, 60, "KiB",
     "piece size when a long payload is copied through the rings"},
    {"FLIT_PEER_CHECK_MS", FL_SET_INT, F(peer_check_ms), 100, 1, 60000, "ms",
     "how often a waiting endpoint checks that its peers are alive"},
    {"FLIT_TRANSPORT", FL_SET_NAMES, F(transport), 0, 0, 0, NULL,
     "auto, or the transports that serve the job, comma-separated: where the list "
     "names none for a kind of peer (on this host, on other hosts), auto's serve it",
     .choices = transport_names, .job = true},
    {"FLIT_PEER_TIMEOUT", FL_SET_SECONDS, F(peer_timeout_ms), 30000, 100, 86400000, "s",
     "seconds a peer may stay silent (or leave data unacknowledged) before it is "
     "declared down and its messages returned"},
    {"FLIT_FIBER_STACK_KB", FL_SET_KB, F(fiber_stack), 256, 16, 65536, "KiB",
     "stack of a stream handler that waits for bytes still on the wire (a fiber)"},
    {"FLIT_FIBERS", FL_SET_ENUM, F(fibers), FL_FIBERS_AUTO, 0, 1, NULL,
     "auto: flit's own context switch where it has one (x86-64, AArch64), else "
     "ucontext; ucontext: always the portable one",
     .choices = fiber_choices},
    {NULL},
};
#undef F

/* Every registered variable, tables in the order registered. */
static const struct fl_setting *vars[FL_CONFIG_MAX];
static size_t nvars;

/* The core's table is always there, first, whoever registers the others. */
static void core_first(void)
{
    static bool done;
    if (!done) {
        done = true;
        (void)fl_config_add(fl_core_settings);
    }
}

flit_status fl_config_add(const struct fl_setting *table)
{
    if (table != fl_core_settings)
        core_first();
    for (size_t i = 0; i < nvars; i++)
        if (vars[i] == table)
            return FLIT_OK; /* registered already */
    size_t n = 0;
    while (table[n].name)
        n++;
    if (nvars + n > FL_CONFIG_MAX) {
        fl_error("%zu settings registered, room for %d: raise FL_CONFIG_MAX", nvars + n,
                 FL_CONFIG_MAX);
        return FLIT_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++)
        vars[nvars++] = &table[i];
    return FLIT_OK;
}

void fl_config_set_transports(const char *const *names)
{
    size_t n = 0;
    for (; names[n] && n < NAMES_MAX; n++)
        transport_names[n] = names[n];
    transport_names[n] = NULL;
}

const char *const *fl_config_transports(void)
{
    return transport_names;
}

/* Variables other parts of flit read (the launcher's), not to be warned of. */
static const char *const known_elsewhere[] = {
    "FLIT_BOOT", "FLIT_RANK", "FLIT_SIZE", "FLIT_JOB_ID", "FLIT_JOB_KEY", NULL,
};

/* FL_SET_SECONDS and FL_SET_RATE keep a fraction as an integer: this many per unit. */
static double scale(const struct fl_setting *v)
{
    return v->kind == FL_SET_SECONDS ? 1e3 : 1e6;
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
static void format_allowed(const struct fl_setting *v, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    switch (v->kind) {
    case FL_SET_BOOL:
        put(buf, len, &at, "0 or 1 (also no/yes, off/on, false/true)");
        return;
    case FL_SET_ENUM:
        for (int i = 0; v->choices[i]; i++)
            put(buf, len, &at, "%s%s", i ? ", " : "", v->choices[i]);
        return;
    case FL_SET_IPV4:
        put(buf, len, &at, "a dotted IPv4 address");
        return;
    case FL_SET_TEXT:
        put(buf, len, &at, "a word of up to %d letters, digits and _ . , ; : -",
            FL_CONFIG_WORD - 1);
        return;
    case FL_SET_NAMES: /* the same words whatever the build has */
        put(buf, len, &at, "auto, or a comma-separated list of the build's transports");
        return;
    case FL_SET_SECONDS:
    case FL_SET_RATE:
        put(buf, len, &at, "%g–%g", (double)v->min / scale(v), (double)v->max / scale(v));
        break;
    case FL_SET_INT:
    case FL_SET_KB:
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

/* A FL_SET_NAMES mask as it would be given: "auto", or the names. */
static void format_names(const struct fl_setting *v, int64_t mask, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; v->choices[i] && i < NAMES_MAX; i++)
        if (mask & (INT64_C(1) << i))
            put(buf, len, &at, "%s%s", at ? "," : "", v->choices[i]);
    if (!at)
        put(buf, len, &at, "%s", mask ? "?" : "auto");
}

/* "a,b": the mask of those choices; NULL when valid, else what is wrong. */
static const char *parse_names(const struct fl_setting *v, const char *s, int64_t *out)
{
    int64_t mask = 0;
    if (strcmp(s, "auto") == 0) {
        *out = 0;
        return NULL;
    }
    while (*s) {
        size_t n = strcspn(s, ",");
        int i = 0;
        while (v->choices[i] && i < NAMES_MAX &&
               !(strlen(v->choices[i]) == n && strncmp(s, v->choices[i], n) == 0))
            i++;
        if (!v->choices[i] || i == NAMES_MAX)
            return n ? "names what this build does not have" : "an empty name";
        if (mask & (INT64_C(1) << i))
            return "names one twice";
        mask |= INT64_C(1) << i;
        s += n;
        if (*s == ',' && !*++s)
            return "an empty name";
    }
    *out = mask;
    return NULL;
}

/* val (in the unit kept, FL_SET_KB in KiB) as it would be given. */
static void format_value(const struct fl_setting *v, int64_t val, char *buf, size_t len)
{
    struct in_addr a = {htonl((uint32_t)val)};
    if (v->special_means && val == v->special)
        snprintf(buf, len, "%s", v->special_means);
    else if (v->kind == FL_SET_ENUM)
        snprintf(buf, len, "%s", v->choices[val]);
    else if (v->kind == FL_SET_NAMES)
        format_names(v, val, buf, len);
    else if (v->kind == FL_SET_SECONDS || v->kind == FL_SET_RATE)
        snprintf(buf, len, "%g", (double)val / scale(v));
    else if (v->kind == FL_SET_IPV4 && val == 0)
        snprintf(buf, len, "auto");
    else if (v->kind == FL_SET_IPV4)
        inet_ntop(AF_INET, &a, buf, (socklen_t)len);
    else
        snprintf(buf, len, "%lld", (long long)val);
}

/* A FL_SET_TEXT value: a word, so that it cannot carry what a shell or a
   provider's parser would read as something else. */
static const char *parse_word(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_.,;:-");
    if (s[n])
        return "not a word";
    return n < FL_CONFIG_WORD ? NULL : "too long";
}

/* What a FL_SET_TEXT keeps now (current) or by default. */
static const char *text_of(const struct fl_setting *v, bool current)
{
    const char *t = current && v->text[0] ? v->text : v->text_def;
    return t && *t ? t : "unset";
}

/* Reads s into *out; NULL when it is valid, else what is wrong with it. */
static const char *parse_value(const struct fl_setting *v, const char *s, int64_t *out)
{
    if (v->kind == FL_SET_TEXT)
        return parse_word(s);
    if (v->kind == FL_SET_NAMES)
        return parse_names(v, s, out);
    if (v->kind == FL_SET_ENUM) {
        for (int i = 0; v->choices[i]; i++)
            if (strcmp(s, v->choices[i]) == 0) {
                *out = i;
                return NULL;
            }
        return "not one of the choices";
    }
    if (v->kind == FL_SET_BOOL) {
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
    if (v->kind == FL_SET_SECONDS || v->kind == FL_SET_RATE) {
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
    if (v->kind == FL_SET_IPV4) {
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
        for (size_t i = 0; i < nvars && !known; i++)
            known = strlen(vars[i]->name) == n && strncmp(*e, vars[i]->name, n) == 0;
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
static bool read_var(const struct fl_setting *v, int64_t *val, char *msg, size_t len)
{
    const char *s = getenv(v->name);
    const char *wrong = s && *s ? parse_value(v, s, val) : NULL;
    if (!wrong)
        return true;
    char allowed[2 * FL_CONFIG_TEXT];
    format_allowed(v, allowed, sizeof allowed);
    if (v->kind == FL_SET_NAMES) { /* and which those are */
        size_t at = strlen(allowed);
        for (int k = 0; v->choices[k]; k++)
            put(allowed, sizeof allowed, &at, "%s%s", k ? ", " : " (", v->choices[k]);
        put(allowed, sizeof allowed, &at, ")");
    }
    snprintf(msg, len, "%s=\"%s\" is not valid (%s): allowed %s — %s", v->name, s, wrong,
             allowed, v->help);
    *val = v->def;
    return false;
}

bool fl_config_next_bad(size_t *i, char *msg, size_t len)
{
    core_first();
    while (*i < nvars) {
        int64_t val = vars[*i]->def;
        if (!read_var(vars[(*i)++], &val, msg, len))
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

/* Keeps variable v's value from the environment (its default when unset
   or bad); false for a bad one, logged when speak. */
static bool load_var(const struct fl_setting *v, bool speak)
{
    int64_t val = v->def;
    char msg[3 * FL_CONFIG_TEXT + 256];
    bool ok = read_var(v, &val, msg, sizeof msg);
    if (!ok && speak)
        fl_error("%s", msg);
    if (v->kind == FL_SET_TEXT) {
        const char *t = getenv(v->name);
        if (!t || !*t || parse_word(t))
            t = v->text_def ? v->text_def : "";
        snprintf(v->text, FL_CONFIG_WORD, "%s", t);
    } else {
        *v->value = v->kind == FL_SET_KB ? val << 10 : val;
    }
    return ok;
}

flit_status fl_config_load(void)
{
    core_first();
    flit_status st = FLIT_OK;
    bool speak = first_task();
    for (size_t i = 0; i < nvars; i++)
        if (!load_var(vars[i], speak))
            st = FLIT_ERR_CONFIG;
    if (speak) /* a typo, too, is every task's: said once per job */
        warn_unknown();
    return st;
}

flit_status fl_config_load_table(const struct fl_setting *table)
{
    flit_status st = FLIT_OK;
    bool speak = first_task();
    for (size_t i = 0; table[i].name; i++)
        if (!load_var(&table[i], speak))
            st = FLIT_ERR_CONFIG;
    return st;
}

unsigned fl_config_job_values(int64_t *out, unsigned max)
{
    core_first();
    unsigned n = 0;
    for (size_t i = 0; i < nvars; i++)
        if (vars[i]->job && n < max)
            out[n++] = *vars[i]->value;
    return n;
}

void fl_config_job_describe(unsigned k, int64_t val, const char **name, char *buf,
                            size_t len)
{
    *name = "?";
    snprintf(buf, len, "%lld", (long long)val);
    for (size_t i = 0; i < nvars; i++) {
        if (!vars[i]->job || k-- != 0)
            continue;
        const struct fl_setting *v = vars[i];
        *name = v->name;
        bool known = v->kind != FL_SET_ENUM || (val >= v->min && val <= v->max);
        if (known)
            format_value(v, v->kind == FL_SET_KB ? val >> 10 : val, buf, len);
        return;
    }
}

/* What special values became once the job was known (fl_config_settle). */
static bool is_settled[FL_CONFIG_MAX];
static int64_t settled_val[FL_CONFIG_MAX];
static const char *settled_why[FL_CONFIG_MAX];

void fl_config_settle(const char *name, int64_t value, const char *why)
{
    for (size_t i = 0; i < nvars; i++) {
        if (strcmp(vars[i]->name, name) != 0)
            continue;
        is_settled[i] = true;
        settled_val[i] = value;
        settled_why[i] = why;
    }
}

void fl_config_print(FILE *out)
{
    core_first();
    for (size_t i = 0; i < nvars; i++) {
        const struct fl_setting *v = vars[i];
        const char *s = getenv(v->name);
        bool set = s && *s;
        if (v->kind == FL_SET_TEXT) {
            fprintf(out, "  %-22s %s%s\n", v->name, text_of(v, true),
                    set ? "" : " (default)");
            continue;
        }
        int64_t val = *v->value;
        if (v->kind == FL_SET_KB)
            val >>= 10;
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
    core_first();
    if (i >= nvars)
        return false;
    const struct fl_setting *v = vars[i];
    d->name = v->name;
    if (v->kind == FL_SET_TEXT)
        snprintf(d->def, sizeof d->def, "%s", text_of(v, false));
    else
        format_value(v, v->def, d->def, sizeof d->def);
    format_allowed(v, d->allowed, sizeof d->allowed);
    return true;
}
