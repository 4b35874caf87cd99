/* FLIT_* environment variables: one table, parsed once at flit_init. */
#include "core/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

struct fl_config fl_cfg;

enum kind { K_INT, K_BOOL, K_KB, K_ENUM };

struct var {
    const char *name;
    enum kind kind;
    size_t offset;              /* of the int64_t in struct fl_config */
    int64_t def, min, max;      /* K_KB: in KiB */
    const char *const *choices; /* K_ENUM, NULL-terminated */
    const char *help;
};

static const char *const bulk_choices[] = {"auto", "cma", "copy", NULL};

#define F(field) offsetof(struct fl_config, field)
static const struct var vars[] = {
    {"FLIT_VERBOSE", K_INT, F(verbose), 0, 0, 3, NULL,
     "1: print configuration and per-peer transports at start-up; 2-3: debug"},
    {"FLIT_STATS", K_BOOL, F(stats), 0, 0, 1, NULL,
     "print each endpoint's counters when it is destroyed"},
    {"FLIT_SPIN_US", K_INT, F(spin_us), -1, -1, 10000000, NULL,
     "microseconds flit_wait spins before sleeping (-1: 50, or 2 when ranks outnumber cores)"},
    {"FLIT_PROGRESS_THREAD", K_BOOL, F(progress_thread), 0, 0, 1, NULL,
     "serve every endpoint from a progress thread (makes them thread-safe)"},
    {"FLIT_SHM_RING_KB", K_KB, F(shm_ring_bytes), 256, 256, 65536, NULL,
     "size of each shared-memory ring (one per ordered pair and lane), power of two"},
    {"FLIT_SHM_BULK", K_ENUM, F(shm_bulk), FL_BULK_AUTO, 0, 2, bulk_choices,
     "long payloads on shared memory: auto (mapping, else CMA, else copy), cma, copy"},
    {"FLIT_LONG_CHUNK_KB", K_KB, F(long_chunk), 32, 1, 60, NULL,
     "piece size when a long payload is copied through the rings"},
    {"FLIT_PEER_CHECK_MS", K_INT, F(peer_check_ms), 100, 1, 60000, NULL,
     "how often a waiting endpoint checks that its peers are alive"},
};
#undef F
#define NVARS (sizeof vars / sizeof vars[0])

/* Variables other parts of flit read (the launcher's), not to be warned of. */
static const char *const known_elsewhere[] = {
    "FLIT_BOOT", "FLIT_RANK", "FLIT_SIZE", "FLIT_JOB_ID", NULL,
};

static int64_t *field(const struct var *v)
{
    return (int64_t *)((char *)&fl_cfg + v->offset);
}

static bool parse_value(const struct var *v, const char *s, int64_t *out)
{
    if (v->kind == K_ENUM) {
        for (int i = 0; v->choices[i]; i++)
            if (strcmp(s, v->choices[i]) == 0) {
                *out = i;
                return true;
            }
        return false;
    }
    if (v->kind == K_BOOL) {
        static const char *const yes[] = {"1", "yes", "true", "on", NULL};
        static const char *const no[] = {"0", "no", "false", "off", NULL};
        for (int i = 0; yes[i]; i++) {
            if (strcasecmp(s, yes[i]) == 0) { *out = 1; return true; }
            if (strcasecmp(s, no[i]) == 0) { *out = 0; return true; }
        }
        return false;
    }
    /* Digits, with an optional minus: strtoll alone would take " +7". */
    if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return false;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < v->min || x > v->max)
        return false;
    if (v->kind == K_KB && v->offset == offsetof(struct fl_config, shm_ring_bytes) &&
        (x & (x - 1)))
        return false;   /* ring sizes are powers of two */
    *out = x;
    return true;
}

static void warn_unknown(void)
{
    extern char **environ;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "FLIT_", 5) != 0)
            continue;
        size_t n = strcspn(*e, "=");
        bool known = false;
        for (size_t i = 0; i < NVARS && !known; i++)
            known = strlen(vars[i].name) == n && strncmp(*e, vars[i].name, n) == 0;
        for (size_t i = 0; known_elsewhere[i] && !known; i++)
            known = strlen(known_elsewhere[i]) == n &&
                    strncmp(*e, known_elsewhere[i], n) == 0;
        if (!known)
            fl_warn("unknown variable %.*s ignored (typo?)", (int)n, *e);
    }
}

flit_status fl_config_load(void)
{
    flit_status st = FLIT_OK;
    for (size_t i = 0; i < NVARS; i++) {
        const struct var *v = &vars[i];
        int64_t val = v->def;
        const char *s = getenv(v->name);
        if (s && *s && !parse_value(v, s, &val)) {
            fl_error("%s=\"%s\" is not valid: %s", v->name, s, v->help);
            st = FLIT_ERR_INVALID_ARG;
        }
        *field(v) = v->kind == K_KB ? val << 10 : val;
    }
    warn_unknown();
    return st;
}

void fl_config_print(FILE *out)
{
    for (size_t i = 0; i < NVARS; i++) {
        const struct var *v = &vars[i];
        int64_t val = *field(v);
        if (v->kind == K_KB)
            val >>= 10;
        const char *set = getenv(v->name) ? "" : " (default)";
        if (v->kind == K_ENUM)
            fprintf(out, "  %-22s %s%s\n", v->name, v->choices[val], set);
        else
            fprintf(out, "  %-22s %lld%s\n", v->name, (long long)val, set);
    }
}
