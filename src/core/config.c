/* FLIT_* environment variables: one table, parsed once at flit_init. */
#include "core/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"

struct fl_config fl_cfg;

enum kind {
    K_INT, K_BOOL, K_ENUM,
    K_KB,       /* given in KiB, kept in bytes */
    K_SECONDS,  /* given in seconds (decimals allowed), kept in ms */
    K_RATE,     /* a probability 0..1, kept in parts per million */
    K_IPV4,     /* a dotted address, kept in host order */
};

struct var {
    const char *name;
    enum kind kind;
    size_t offset;              /* of the int64_t in struct fl_config */
    int64_t def, min, max;      /* in the unit kept (K_KB: KiB) */
    const char *const *choices; /* K_ENUM, NULL-terminated */
    const char *help;
};

static const char *const bulk_choices[] = {"auto", "cma", "copy", NULL};
static const char *const transport_choices[] = {"auto", "udp", "shm", NULL};
static const char *const fiber_choices[] = {"auto", "ucontext", NULL};

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
    {"FLIT_TRANSPORT", K_ENUM, F(transport), FL_TRANSPORT_AUTO, 0, 2, transport_choices,
     "auto (shared memory on a host, UDP between hosts), udp (UDP to every peer), shm"},
    {"FLIT_PEER_TIMEOUT", K_SECONDS, F(peer_timeout_ms), 30000, 100, 86400000, NULL,
     "seconds a UDP peer may stay silent (or leave data unacknowledged) before it is "
     "declared down and its messages returned"},
    {"FLIT_UDP_MTU", K_INT, F(udp_mtu), 0, 0, 65535, NULL,
     "largest IP packet UDP sends (1500: no fragmentation on Ethernet); 0: the path's MTU"},
    {"FLIT_UDP_ADDR", K_IPV4, F(udp_addr), 0, 0, 0xffffffffll, NULL,
     "IPv4 address this rank's UDP endpoints use (default: loopback when the job is on "
     "one host, else the interface that reaches the launcher)"},
    {"FLIT_UDP_WINDOW_KB", K_KB, F(udp_window), 256, 132, 65536, NULL,
     "unacknowledged bytes per UDP peer and lane: the credit window"},
    {"FLIT_ACK_DELAY_US", K_INT, F(ack_delay_us), 100, 0, 1000000, NULL,
     "how long a receiver may hold an acknowledgement back waiting for a reply to "
     "carry it"},
    {"FLIT_RTO_MIN_US", K_INT, F(rto_min_us), 10000, 100, 10000000, NULL,
     "smallest retransmission timeout (the measured one is 4 round trips above the mean)"},
    {"FLIT_DROP_RATE", K_RATE, F(drop_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability (0..1) that a received datagram is dropped"},
    {"FLIT_DUP_RATE", K_RATE, F(dup_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is processed twice"},
    {"FLIT_REORDER_RATE", K_RATE, F(reorder_ppm), 0, 0, 1000000, NULL,
     "fault injection: probability that a received datagram is held back behind the next"},
    {"FLIT_FAULT_SEED", K_INT, F(fault_seed), 1, 0, INT64_MAX, NULL,
     "seed of the fault injection (each rank adds its rank)"},
    {"FLIT_FIBER_STACK_KB", K_KB, F(fiber_stack), 256, 16, 65536, NULL,
     "stack of a stream handler that waits for bytes still on the wire (a fiber)"},
    {"FLIT_FIBERS", K_ENUM, F(fibers), FL_FIBERS_AUTO, 0, 1, fiber_choices,
     "auto: flit's own context switch where it has one (x86-64, AArch64), else "
     "ucontext; ucontext: always the portable one"},
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
    if (v->kind == K_SECONDS || v->kind == K_RATE) {
        char *end;
        errno = 0;
        double x = strtod(s, &end);
        double scale = v->kind == K_SECONDS ? 1e3 : 1e6;
        if (!isdigit((unsigned char)s[0]) || errno || *end || !(x * scale >= (double)v->min) ||
            x * scale > (double)v->max)
            return false;
        *out = (int64_t)(x * scale + 0.5);
        return true;
    }
    if (v->kind == K_IPV4) {
        struct in_addr a;
        if (inet_pton(AF_INET, s, &a) != 1)
            return false;
        *out = ntohl(a.s_addr);
        return true;
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
        char addr[INET_ADDRSTRLEN] = "auto";
        struct in_addr a = {htonl((uint32_t)val)};
        if (v->kind == K_ENUM)
            fprintf(out, "  %-22s %s%s\n", v->name, v->choices[val], set);
        else if (v->kind == K_SECONDS)
            fprintf(out, "  %-22s %.3f s%s\n", v->name, (double)val / 1e3, set);
        else if (v->kind == K_RATE)
            fprintf(out, "  %-22s %.6f%s\n", v->name, (double)val / 1e6, set);
        else if (v->kind == K_IPV4)
            fprintf(out, "  %-22s %s%s\n", v->name,
                    val ? inet_ntop(AF_INET, &a, addr, sizeof addr) : addr, set);
        else
            fprintf(out, "  %-22s %lld%s\n", v->name, (long long)val, set);
    }
}
