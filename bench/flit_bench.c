/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-bench: latency, bandwidth, message rate and N1/2 between two ranks,
 * each figure printed beside a baseline measured in the same run between
 * the same two processes. On shared memory:
 *
 *   latency     raw shared-memory flag ping-pong, one way
 *   bandwidth   single-core memcpy of the same size, cache-warm
 *   rate        a raw single-producer ring of 64-byte slots
 *
 * When the peer is reached over UDP (another host, or FLIT_TRANSPORT=udp),
 * raw UDP between the same two processes, over the same path, with the
 * datagram size flit uses (bench_udp.h):
 *
 *   latency     ping-pong of the same size, one way: spinning (MSG_DONTWAIT)
 *               beside flit_poll, blocking beside flit_wait
 *   bandwidth   streaming of the same size
 *   rate        8-byte datagrams streamed, one per message
 *
 * (sendto/recvfrom for one datagram, sendmmsg/recvmmsg batches for more,
 * as flit itself sends them: bench_udp.h)
 *
 *     flitrun -n 2 flit-bench [--quick] [--csv] [--plot FILE.png]
 *                             [--max-size BYTES] [--sizes LIST]
 *                             [--only SECTIONS] [--no-baselines]
 *                             [--percentiles] [--retries N]
 *
 * A ratio is printed only beside a baseline of the figure's own size. A
 * figure measured while a rank waited for its CPU is measured again (up to
 * --retries times); one that never comes out clean is printed as "noisy",
 * with the reason, instead of a number. Over UDP each figure is followed
 * by the chunks both ranks' endpoints sent again while it was measured
 * ("resent N"; in the CSV's note when not 0): on loopback, where nothing
 * is lost, anything but a handful is a resend of what was not lost.
 *
 * Rank 0 drives and prints; rank 1 serves (bench_engine.c).
 */
#include <flit/flit.h>
#include <flit/tagged.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_engine.h"
#include "bench_group.h"
#include "bench_object.h"
#include "bench_rma.h"
#include "bench_rpc.h"
#include "bench_stats.h"
#include "bench_util.h"

#define PROG             "flit-bench"
#define DEFAULT_MAX_SIZE (4u << 20)
#define MIN_SEGMENT      (16u << 20)
#define BW_WINDOW        64u
#define RATE_WINDOW      256u
#define LAT_REPS         5
#define BW_REPS          5
#define MAX_POINTS       64
#define RETRIES          3    /* --quick: 1 */
#define QUIET_WAIT_MS    3000 /* before an attempt again, for the others to stop */
#define QUIET_WAIT_QUICK 300  /* ... with --quick */
#define SAMPLES_MIN      1000 /* --percentiles: round trips, at least */
#define SAMPLES_MAX      65536
#define SAMPLES_CAP_NS   20000000000ull /* ... unless this long passed */

/* What emit returns for a figure that never came out clean. Passed back
   as a baseline, it marks the figures beside it "baseline noisy". */
#define NOISY (-1.0)

enum {
    SEC_LATENCY = 1,
    SEC_BANDWIDTH = 2,
    SEC_RATE = 4,
    SEC_STREAM = 8,
    SEC_RMA = 16,
    SEC_RPC = 32,     /* bench_rpc.c */
    SEC_GROUP = 64,   /* bench_group.c */
    SEC_OBJECT = 128, /* bench_object.c */
    SEC_ALL = 255
};

struct opts {
    bool csv, quick, no_baselines, percentiles;
    int retries; /* -1: the default */
    const char *plot;
    size_t max_size;
    unsigned sections; /* SEC_* */
    int nsizes;        /* --sizes: these instead of the sweep */
    size_t size_list[MAX_POINTS];
};

/* One curve: a figure at each size, with its baseline (NAN: none), and the
   spread of the runs its value is the median of (lo, hi: the fastest and
   slowest run as fractions of the median; NAN: none). */
struct series {
    int n;
    double size[MAX_POINTS], value[MAX_POINTS], base[MAX_POINTS];
    double lo[MAX_POINTS], hi[MAX_POINTS];
};

struct run {
    struct opts o;
    bench_t b;
    uint64_t lat_ns, bw_ns; /* time per point */
    double raw_us;          /* raw flag one-way; NAN: none; NOISY */
    double line_us;         /* the same on one shared line (the floor) */
    bool raw_done;          /* raw_us was measured clean (or cannot be) */
    bool udp;               /* the peer is on UDP: raw UDP baselines */
    size_t dgram;           /* flit's datagram payload to the peer */
    struct series lat_med, lat_long, bw_med, bw_long;
    struct series lat_short; /* 8 B, 2 arguments: the plot's one short point */
    double memcpy_sizes[MAX_POINTS], memcpy_mbps[MAX_POINTS];
    int nmemcpy;
    /* noise: CPU time other work took from the ranks during a figure */
    uint64_t wait0, t0;
    int tries;    /* attempts at the current figure so far */
    int nmemcpy0; /* memcpy baselines cached when the attempt began */
    bool dirty;   /* the current figure's last attempt was noisy */
    double share; /* ... the share of it a rank waited for a CPU */
    /* Over UDP: both ranks' retransmissions when the attempt began, and
       during it (told beside the figure: on loopback anything but a
       handful is a resend of what was not lost) */
    uint64_t resent0, resent;
    bool resent_set;
    int figures, noisy, remeasured;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flitrun -n 2 " PROG " [options]\n"
            "  --quick           fewer iterations (smoke tests, make demo)\n"
            "  --csv             name,size,value,unit,baseline,ratio,note lines only\n"
            "  --plot FILE.png   latency (short AM too) and bandwidth curves, each\n"
            "                    point with the spread of its runs (needs gnuplot)\n"
            "  --max-size BYTES  largest message (default 4M; k, M, G suffixes)\n"
            "  --sizes LIST      these sizes only, e.g. 8,64k,1M (instead of 8 B\n"
            "                    doubling up to --max-size)\n"
            "  --only SECTIONS   some of latency,bandwidth,rate,stream,rma,rpc,\n"
            "                    group (groups of up to 8 ranks: flitrun -n 8), object\n"
            "  --no-baselines    flit's figures only (as under injected loss, where\n"
            "                    a raw baseline cannot run)\n"
            "  --percentiles     also time 8-byte short AM round trips one by one:\n"
            "                    median, 99th percentile, mean, count (as under loss,\n"
            "                    where a few long stalls make a mean meaningless)\n"
            "  --retries N       measure a figure that lost its CPU again, up to N\n"
            "                    times (default 3, 1 with --quick), then print it\n"
            "                    as noisy\n");
}

/* A comma list of sizes into o->size_list, the largest into o->max_size. */
static bool parse_sizes(const char *arg, struct opts *o)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", arg);
    o->nsizes = 0;
    o->max_size = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t v;
        if (o->nsizes >= MAX_POINTS - 1 || !bench_parse_size(t, &v) || v < 8)
            return false;
        o->size_list[o->nsizes++] = v;
        o->max_size = v > o->max_size ? v : o->max_size;
    }
    return o->nsizes > 0;
}

static bool parse_sections(const char *arg, unsigned *out)
{
    static const char *const name[] = {"latency", "bandwidth", "rate",  "stream",
                                       "rma",     "rpc",       "group", "object"};
    const unsigned count = sizeof name / sizeof *name;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    *out = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned i = 0;
        while (i < count && strcmp(t, name[i]) != 0)
            i++;
        if (i == count)
            return false;
        *out |= 1u << i;
    }
    return *out != 0;
}

/* 0: go on; otherwise the exit status. */
static int parse(int argc, char **argv, struct opts *o, bool talk)
{
    *o = (struct opts){.max_size = DEFAULT_MAX_SIZE, .sections = SEC_ALL, .retries = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--csv") == 0) {
            o->csv = true;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = true;
        } else if (strcmp(a, "--plot") == 0 && i + 1 < argc) {
            o->plot = argv[++i];
        } else if (strcmp(a, "--max-size") == 0 && i + 1 < argc) {
            if (!bench_parse_size(argv[++i], &o->max_size) || o->max_size < 8) {
                if (talk)
                    fprintf(stderr,
                            PROG ": --max-size: '%s' is not a size of "
                                 "at least 8 bytes\n",
                            argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--sizes") == 0 && i + 1 < argc) {
            if (!parse_sizes(argv[++i], o)) {
                if (talk)
                    fprintf(stderr,
                            PROG ": --sizes: '%s' is not a list of 1 to %d sizes of "
                                 "at least 8 bytes\n",
                            argv[i], MAX_POINTS - 1);
                return 2;
            }
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            if (!parse_sections(argv[++i], &o->sections)) {
                if (talk)
                    fprintf(stderr,
                            PROG ": --only: '%s' is not a list of latency, "
                                 "bandwidth, rate, stream, rma, rpc, group, object\n",
                            argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--no-baselines") == 0) {
            o->no_baselines = true;
        } else if (strcmp(a, "--percentiles") == 0) {
            o->percentiles = true;
        } else if (strcmp(a, "--retries") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 0 || v > 20) {
                if (talk)
                    fprintf(stderr,
                            PROG ": --retries: '%s' is not a number from 0 to 20\n",
                            argv[i]);
                return 2;
            }
            o->retries = (int)v;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (talk)
                usage(stdout);
            return -1;
        } else {
            if (talk) {
                fprintf(stderr, PROG ": unknown option '%s'\n", a);
                usage(stderr);
            }
            return 2;
        }
    }
    if (o->retries < 0)
        o->retries = o->quick ? 1 : RETRIES;
    return 0;
}

/* ---- output ---- */

/*
 * Rank 1 spins in flit_poll while rank 0 sleeps here: anything busy beyond
 * that one CPU is someone else's work, which the figures will show.
 */
static void check_quiet(const struct run *r)
{
    double others = bench_cpus_busy(200) - 1;
    if (others < 0.25)
        return;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (r->o.csv)
        fprintf(stderr,
                PROG ": warning: other processes kept %.1f of %ld CPUs "
                     "busy when the run began; the figures will be noisy\n",
                others, cpus);
    else
        printf("  warning  other processes kept %.1f of %ld CPUs busy when the "
               "run began: the\n           figures will be noisy; a quiet "
               "machine gives steadier ones\n",
               others, cpus);
}

/* "2026-11-22 09:14:39 UTC on vm (AMD EPYC, 2 CPUs online, Linux 6.18.44)":
   when and where, for a table pasted elsewhere. */
static void machine_line(char *buf, size_t len)
{
    char host[512], date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    bench_host_info(host, sizeof host);
    snprintf(buf, len, "%s on %s", date, host);
}

static void print_header(const struct run *r)
{
    char machine[640];
    machine_line(machine, sizeof machine);
    if (r->o.csv) {
        /* Standard output is the CSV alone; the line goes where warnings go. */
        fprintf(stderr, PROG ": measured %s\n", machine);
        return;
    }
    flit_peer_info_t info = {.struct_size = sizeof info};
    flit_ep_peer_info(r->b.ep, flit_rank(1), &info);
    printf(PROG ": flit %d.%d.%d, 2 ranks, one endpoint, rank 1 over %s%s%s\n",
           FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR, FLIT_VERSION_PATCH, info.transport,
           info.address[0] ? " at " : "", info.address);
    printf("  measured %s\n", machine);
    if (r->udp)
        printf("  path     %zu-byte datagrams (flit's, and the raw UDP baseline's)\n",
               r->dgram);
    extern char **environ;
    int shown = 0;
    for (char **e = environ; *e; e++) {
        static const char *const launcher[] = {
            "FLIT_BOOT=", "FLIT_RANK=", "FLIT_SIZE=", "FLIT_JOB_ID=", "FLIT_JOB_KEY="};
        bool skip = strncmp(*e, "FLIT_", 5) != 0;
        for (size_t i = 0; i < 5 && !skip; i++)
            skip = strncmp(*e, launcher[i], strlen(launcher[i])) == 0;
        if (!skip)
            printf("  %s %s\n", shown++ ? "        " : "config  ", *e);
    }
    if (!shown)
        printf("  config   no FLIT_* variables set: library defaults\n");
    printf("  method   every figure is the median of %d runs of about %.0f ms "
           "together,\n"
           "           after a warm-up; one-way latency = round trip / 2; "
           "streams keep\n"
           "           %u messages in flight (rate: %u), acknowledged every half "
           "window;\n"
           "           ratio = flit / baseline of the same size (-: none of that "
           "size);\n"
           "           a figure during which a rank waited for a CPU more than "
           "%.0f%% of the\n"
           "           time is measured again (once the other CPUs are idle, or "
           "after %.1f s),\n"
           "           up to %d times, then shown as noisy\n",
           LAT_REPS, (double)r->lat_ns / 1e6, BW_WINDOW, RATE_WINDOW,
           BENCH_NOISY_SHARE * 100, (r->o.quick ? QUIET_WAIT_QUICK : QUIET_WAIT_MS) / 1e3,
           r->o.retries);
}

static void print_section(const struct run *r, const char *title, const char *baseline,
                          bool gbs)
{
    if (r->o.csv)
        return;
    printf("\n%s\n  baseline: %s\n", title, baseline);
    printf("  %-26s %9s %13s %13s %7s%s\n", "figure", "size", "flit", "baseline", "ratio",
           gbs ? "    flit GB/s" : "");
    printf("  %-26s %9s %13s %13s %7s%s\n", "--------------------------", "---------",
           "-------------", "-------------", "-------", gbs ? "    ---------" : "");
    fflush(stdout);
}

struct unit {
    const char *csv_unit; /* in the CSV */
    const char *cell;     /* in the table */
    double scale;         /* table value = value * scale */
    int prec;
};

static const struct unit U_US = {"us", "us", 1, 3};
static const struct unit U_MBS = {"MB/s", "MB/s", 1, 1};
static const struct unit U_RATE = {"Mmsg/s", "M/s", 1, 2};
static const struct unit U_COUNT = {"count", "", 1, 0};

/*
 * An attempt at a figure starts: see again. Every figure is measured as
 *
 *     do {
 *         begin(r);
 *         ... measure the figure and the baselines of this attempt ...
 *     } while (again(r));
 *     emit(r, ...);
 */
static void begin(struct run *r)
{
    if (r->udp)
        r->resent0 = bench_resent(&r->b);
    r->nmemcpy0 = r->nmemcpy;
    r->wait0 = bench_sched_wait_ns(&r->b);
    r->t0 = bench_now_ns();
}

/*
 * Before measuring a figure again: what took the CPU (a compiler, say)
 * often runs for a second or two, and an attempt made at once loses its
 * CPU to it again. Waits, up to max_ms, until the CPUs beyond the one rank 1
 * spins on have been idle for a tenth of a second.
 */
static void wait_quiet(unsigned max_ms)
{
    for (unsigned waited = 0; waited < max_ms; waited += 100) {
        double others = bench_cpus_busy(100) - 1;
        if (others < 0.25)
            return;
    }
}

/*
 * Whether to measure the figure again. An attempt during which either rank
 * waited for a CPU held by other work for more than BENCH_NOISY_SHARE of the time
 * measured the scheduler (a spinning peer that loses its CPU for one tick
 * turns 0.2 us into 4 ms); it is made again, up to --retries times. If the
 * last attempt was noisy too, r->dirty tells emit so.
 */
static bool again(struct run *r)
{
    uint64_t elapsed = bench_now_ns() - r->t0;
    uint64_t waited = bench_sched_wait_ns(&r->b) - r->wait0;
    r->resent_set = r->udp;
    if (r->udp)
        r->resent = bench_resent(&r->b) - r->resent0;
    r->dirty = bench_noisy(waited, elapsed, &r->share);
    if (r->dirty)
        r->nmemcpy = r->nmemcpy0; /* memcpy baselines of this attempt: noise too */
    if (r->dirty && r->tries < r->o.retries) {
        r->tries++;
        wait_quiet(r->o.quick ? QUIET_WAIT_QUICK : QUIET_WAIT_MS);
        return true;
    }
    if (r->tries && !r->dirty)
        r->remeasured++;
    r->tries = 0;
    return false;
}

/*
 * One figure, measured by the attempts since the last again: a table row or
 * a CSV line. size < 0: none. base: the baseline measured at base_size
 * bytes (NAN: none; NOISY: its own row came out noisy); the ratio is shown
 * only when base_size is the figure's size. Returns value, or NOISY when
 * the figure never came out clean: pass that on where it is a baseline.
 */
static double emit(struct run *r, const char *name, const char *figure, double size,
                   double value, double base, double base_size, const struct unit *u)
{
    bool dirty = r->dirty;
    bool same = size == base_size;
    bool base_noisy = same && base == NOISY;
    bool has_base = base > 0 && isfinite(base);
    double ratio = bench_ratio(value, size, base, base_size);
    r->figures++;
    r->noisy += dirty;
    char sz[32] = "", why[128] = "";
    if (size >= 0)
        bench_fmt_size(sz, sizeof sz, size);
    if (dirty) {
        snprintf(why, sizeof why,
                 "noisy: the ranks waited for a CPU %.0f%% of the time (%d attempts)",
                 r->share * 100, r->o.retries + 1);
    } else if (base_noisy) {
        snprintf(why, sizeof why, "baseline noisy");
    }
    bool resent = r->resent_set;
    r->resent_set = false;               /* the attempts' own: not a later figure's */
    if (resent && r->o.csv && r->resent) /* the CSV's note: only when some */
        snprintf(why + strlen(why), sizeof why - strlen(why), "%sresent %llu",
                 why[0] ? "; " : "", (unsigned long long)r->resent);
    if (r->o.csv) {
        printf("%s,", name);
        if (size >= 0)
            printf("%.0f", size);
        printf(",");
        if (!dirty)
            printf("%.4f", value);
        printf(",%s,", u->csv_unit);
        if (!dirty && isfinite(ratio))
            printf("%.4f,%.4f", base, ratio);
        else
            printf(",");
        printf(",%s\n", why);
        fflush(stdout);
        return dirty ? NOISY : value;
    }
    char v[32] = "noisy", bs[32] = "n/a", ra[16] = "";
    if (!dirty)
        snprintf(v, sizeof v, "%.*f %s", u->prec, value * u->scale, u->cell);
    if (dirty) {
        bs[0] = '\0';
    } else if (isfinite(ratio)) {
        snprintf(bs, sizeof bs, "%.*f %s", u->prec, base * u->scale, u->cell);
        snprintf(ra, sizeof ra, "%.2f", ratio);
    } else if (base_noisy) {
        snprintf(bs, sizeof bs, "noisy");
    } else if (has_base || base == NOISY) {
        /* a baseline of another size: no ratio to it */
        snprintf(bs, sizeof bs, "-");
        snprintf(ra, sizeof ra, "-");
    }
    printf("  %-26s %9s %13s %13s %7s", figure, sz, v, bs, ra);
    if (u == &U_MBS && !dirty)
        printf("  %9.2f", value / 1000);
    if (resent)
        printf("  resent %llu", (unsigned long long)r->resent);
    if (dirty)
        printf("  %s", why);
    printf("\n");
    fflush(stdout);
    return dirty ? NOISY : value;
}

/* The spread is that of the attempt's last bench_measure: every caller
   measures its baseline before the figure itself. */
static void add(struct series *s, double size, double value, double base)
{
    if (s->n >= MAX_POINTS)
        return;
    s->size[s->n] = size;
    s->value[s->n] = value;
    s->base[s->n] = base;
    bench_last_spread(&s->lo[s->n], &s->hi[s->n]);
    s->n++;
}

/* ---- sizes ---- */

/* 8, 16, ... up to max (max itself when it is no power of two). */
static int sizes(const struct opts *o, size_t *out)
{
    if (o->nsizes) {
        memcpy(out, o->size_list, (size_t)o->nsizes * sizeof *out);
        return o->nsizes;
    }
    size_t max = o->max_size;
    int n = 0;
    size_t s = 8;
    for (; s <= max && n < MAX_POINTS - 1; s *= 2)
        out[n++] = s;
    if (out[n - 1] != max)
        out[n++] = max;
    return n;
}

/* The bandwidth baseline (MB/s): memcpy on shared memory, raw UDP
   streaming of the same size over UDP. */
static double memcpy_baseline(struct run *r, size_t size);
static double mbps(size_t size, double ns_per_msg);

static double bandwidth_base(struct run *r, size_t size)
{
    if (r->o.no_baselines)
        return NAN;
    if (!r->udp)
        return memcpy_baseline(r, size);
    return mbps(size,
                bench_udp_stream_ns(&r->b, size, r->dgram, BW_WINDOW, r->bw_ns, BW_REPS));
}

static double memcpy_baseline(struct run *r, size_t size)
{
    for (int i = 0; i < r->nmemcpy; i++)
        if (r->memcpy_sizes[i] == (double)size)
            return r->memcpy_mbps[i];
    double v = bench_memcpy_mbps(size, r->bw_ns);
    if (r->nmemcpy < MAX_POINTS) {
        r->memcpy_sizes[r->nmemcpy] = (double)size;
        r->memcpy_mbps[r->nmemcpy++] = v;
    }
    return v;
}

/* ---- the sections ---- */

/*
 * The raw flag ping-pong: r->raw_us. The latency section measures it, or
 * the next section that needs it when it came out noisy or the latency
 * section did not run; again_now measures it anew, beside the figures that
 * follow: the time a cache line takes between the two CPUs changes when
 * the host moves them (by 4x on a VM), and a baseline minutes old may
 * have been taken on other CPUs.
 */
static void raw_flag(struct run *r, bool again_now)
{
    if ((r->raw_done && !again_now) || r->udp || r->o.no_baselines)
        return;
    double ns;
    do {
        begin(r);
        ns = bench_raw_latency_ns(&r->b, false, r->lat_ns, LAT_REPS);
    } while (again(r));
    if (ns > 0)
        r->raw_us = emit(r, "latency_raw_flag", "raw flag (the baseline)", 8, ns / 1e3,
                         NAN, NAN, &U_US);
    /* A noisy one is measured again by the next section that needs it. */
    r->raw_done = r->raw_us != NOISY;
}

/* The baseline of a size-byte ping-pong: on shared memory the raw flag,
   measured at 8 bytes only (latency_base_size); over UDP a raw ping-pong
   of that size. */
static double latency_base_us(struct run *r, size_t size, bool blocking)
{
    if (!r->udp)
        return r->raw_us;
    return bench_udp_latency_ns(&r->b, size, r->dgram, blocking, r->lat_ns, LAT_REPS) /
           1e3;
}

static double latency_base_size(const struct run *r, size_t size)
{
    return r->udp ? (double)size : 8;
}

/*
 * --percentiles: 8-byte short AM round trips timed one by one. Under loss
 * a few round trips wait for a retransmission (milliseconds) among
 * thousands that do not (microseconds): the median says what most see, the
 * 99th percentile and the mean what the stalls cost, and the count how
 * much to trust the tail.
 */
static void distribution(struct run *r)
{
    static double v[SAMPLES_MAX];
    int n;
    do {
        begin(r);
        n = bench_latency_samples(&r->b, BENCH_SHORT, 8, r->lat_ns, SAMPLES_MIN,
                                  SAMPLES_CAP_NS, SAMPLES_MAX, v);
    } while (again(r));
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    double mean = n ? sum / n / 1e3 : NAN;
    double p50 = bench_percentile(v, n, 50) / 1e3;
    double p99 = bench_percentile(v, n, 99) / 1e3;
    double max = n ? v[n - 1] / 1e3 : NAN; /* sorted by bench_percentile */
    emit(r, "latency_short_p50", "short, 2 args: median", 8, p50, NAN, NAN, &U_US);
    emit(r, "latency_short_p99", "short, 2 args: 99th pct", 8, p99, NAN, NAN, &U_US);
    emit(r, "latency_short_max", "short, 2 args: slowest", 8, max, NAN, NAN, &U_US);
    emit(r, "latency_short_mean", "short, 2 args: mean", 8, mean, NAN, NAN, &U_US);
    emit(r, "latency_short_samples", "round trips timed", 8, n, NAN, NAN, &U_COUNT);
}

static void latency_section(struct run *r)
{
    bench_t *b = &r->b;
    print_section(r, "LATENCY, one way (round trip / 2), spinning in flit_poll",
                  r->udp ? "raw UDP ping-pong of the same size between the same two "
                           "processes:\n            spinning (MSG_DONTWAIT), and "
                           "blocking beside flit_wait"
                         : "raw shared-memory flag ping-pong between the same two "
                           "processes (8 B)",
                  false);
    double raw_us = NAN, wait_base_us = NAN, v, base, ns;
    if (r->o.no_baselines) {
        /* no baselines */
    } else if (r->udp) {
        do {
            begin(r);
            v = latency_base_us(r, 8, false);
        } while (again(r));
        raw_us = emit(r, "latency_raw_udp", "raw UDP, spinning", 8, v, NAN, NAN, &U_US);
        do {
            begin(r);
            v = latency_base_us(r, 8, true);
        } while (again(r));
        wait_base_us = emit(r, "latency_raw_udp_blocking", "raw UDP, blocking", 8, v, NAN,
                            NAN, &U_US);
    } else {
        raw_flag(r, false);
        raw_us = wait_base_us = r->raw_us;
        /* The floor beside it: one line that both sides write. */
        do {
            begin(r);
            ns = bench_raw_latency_ns(b, true, r->lat_ns, LAT_REPS);
        } while (again(r));
        if (ns > 0)
            r->line_us = emit(r, "latency_raw_line", "raw flag, one shared line", 8,
                              ns / 1e3, NAN, NAN, &U_US);
    }
    for (unsigned nargs = 0; nargs <= 4; nargs++) {
        char fig[40];
        snprintf(fig, sizeof fig, "short, %u arg%s", nargs, nargs == 1 ? "" : "s");
        do {
            begin(r);
            ns = bench_latency_ns(b, BENCH_SHORT, 4 * nargs, false, r->lat_ns, LAT_REPS);
        } while (again(r));
        v = emit(r, "latency_short", fig, 4 * nargs, ns / 1e3, raw_us, 8, &U_US);
        if (nargs == 2)
            add(&r->lat_short, 8, v, NAN);
        if (nargs == 2 && !r->udp && !r->o.no_baselines)
            emit(r, "latency_short_line", "the same, beside one line", 8, ns / 1e3,
                 r->line_us, 8, &U_US);
    }
    do {
        begin(r);
        ns = bench_latency_ns(b, BENCH_SHORT, 8, true, r->lat_ns, LAT_REPS);
    } while (again(r));
    emit(r, "latency_short_wait", "short, 2 args, flit_wait", 8, ns / 1e3, wait_base_us,
         8, &U_US);
    if (r->o.percentiles)
        distribution(r);

    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n && sz[i] <= FLIT_AM_MAX_MEDIUM; i++) {
        double bsz = latency_base_size(r, sz[i]);
        do {
            begin(r);
            base = latency_base_us(r, sz[i], false);
            ns = bench_latency_ns(b, BENCH_MEDIUM, sz[i], false, r->lat_ns, LAT_REPS);
        } while (again(r));
        v = emit(r, "latency_medium", "medium", (double)sz[i], ns / 1e3, base, bsz,
                 &U_US);
        add(&r->lat_med, (double)sz[i], v, bsz == (double)sz[i] ? base : NAN);
    }
    for (int i = 0; i < n; i++) {
        double bsz = latency_base_size(r, sz[i]);
        do {
            begin(r);
            base = latency_base_us(r, sz[i], false);
            ns = bench_latency_ns(b, BENCH_LONG, sz[i], false, r->lat_ns, LAT_REPS);
        } while (again(r));
        v = emit(r, "latency_long", "long", (double)sz[i], ns / 1e3, base, bsz, &U_US);
        add(&r->lat_long, (double)sz[i], v, bsz == (double)sz[i] ? base : NAN);
    }
}

static double mbps(size_t size, double ns_per_msg)
{
    return ns_per_msg > 0 ? (double)size / ns_per_msg * 1e3 : isnan(ns_per_msg) ? NAN : 0;
}

/* A baseline measured in the attempts of a figure that came out noisy is
   noise too. */
static double unless_noisy(double figure, double base)
{
    return figure == NOISY ? NOISY : base;
}

static void bandwidth_section(struct run *r)
{
    bench_t *b = &r->b;
    char title[128];
    snprintf(title, sizeof title,
             "BANDWIDTH, streaming one way, %u messages in flight (MB/s = 1e6 B/s)",
             BW_WINDOW);
    print_section(r, title,
                  r->udp ? "raw UDP streaming of the same size, same datagrams, "
                           "batched (sendmmsg/recvmmsg)"
                         : "single-core memcpy of the same size, cache-warm",
                  true);
    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    double base, v;
    for (int i = 0; i < n && sz[i] <= FLIT_AM_MAX_MEDIUM; i++) {
        do {
            begin(r);
            base = bandwidth_base(r, sz[i]);
            v = mbps(sz[i], bench_stream_ns(b, BENCH_MEDIUM, sz[i], BW_WINDOW, r->bw_ns,
                                            BW_REPS));
        } while (again(r));
        v = emit(r, "bandwidth_medium", "medium", (double)sz[i], v, base, (double)sz[i],
                 &U_MBS);
        add(&r->bw_med, (double)sz[i], v, unless_noisy(v, base));
    }
    for (int i = 0; i < n; i++) {
        do {
            begin(r);
            base = bandwidth_base(r, sz[i]);
            v = mbps(sz[i],
                     bench_stream_ns(b, BENCH_LONG, sz[i], BW_WINDOW, r->bw_ns, BW_REPS));
        } while (again(r));
        v = emit(r, "bandwidth_long", "long", (double)sz[i], v, base, (double)sz[i],
                 &U_MBS);
        add(&r->bw_long, (double)sz[i], v, unless_noisy(v, base));
    }
}

static void rate_section(struct run *r)
{
    bench_t *b = &r->b;
    char title[128];
    snprintf(title, sizeof title,
             "MESSAGE RATE, 8-byte short AMs (2 args) one way, %u in flight",
             RATE_WINDOW);
    print_section(r, title,
                  r->udp ? "raw UDP: 8-byte datagrams streamed, one per message, "
                           "16 per sendmmsg"
                         : "raw single-producer ring of 64-byte slots in shared memory",
                  false);
    double raw_m = NAN, ns;
    if (!r->o.no_baselines) {
        double raw;
        do {
            begin(r);
            raw = r->udp ? bench_udp_stream_ns(b, 8, r->dgram, RATE_WINDOW, r->bw_ns,
                                               BW_REPS)
                         : bench_raw_stream_ns(b, r->bw_ns, BW_REPS);
        } while (again(r));
        if (raw > 0)
            raw_m = emit(r, r->udp ? "rate_raw_udp" : "rate_raw_ring",
                         r->udp ? "raw UDP (the baseline)" : "raw ring (the baseline)", 8,
                         1e3 / raw, NAN, NAN, &U_RATE);
    }
    do {
        begin(r);
        ns = bench_stream_ns(b, BENCH_SHORT, 8, RATE_WINDOW, r->bw_ns, BW_REPS);
    } while (again(r));
    emit(r, "rate_short", "short, 2 args", 8, ns > 0 ? 1e3 / ns : 0, raw_m, 8, &U_RATE);
}

static double median3(double a, double b, double c)
{
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

/*
 * Time per message of streams and of tagged messages of one size, measured
 * in turn three times and each the median of its three: the ratio of the
 * two is the figure, and drift on a noisy machine hits both alike.
 */
static void stream_vs_tagged(struct run *r, size_t size, double *stream_ns,
                             double *tagged_ns)
{
    double s[3], t[3];
    for (int i = 0; i < 3; i++) {
        s[i] = bench_stream_ns(&r->b, BENCH_STREAM, size, BW_WINDOW, r->bw_ns / 2, 3);
        t[i] = bench_stream_ns(&r->b, BENCH_TAGGED, size, BW_WINDOW, r->bw_ns / 2, 3);
    }
    *stream_ns = median3(s[0], s[1], s[2]);
    *tagged_ns = median3(t[0], t[1], t[2]);
}

/*
 * Streams and tagged messaging, the FM 2.x figure: how much of the stream
 * layer's bandwidth a messaging layer built on it keeps (MPI-FM: 70-90%).
 * Latency: a one-piece stream beside the short AM, tagged beside the
 * stream. Bandwidth: AMs (medium up to its maximum, then long) and streams
 * beside the usual baseline, tagged beside the stream.
 */
static void stream_section(struct run *r)
{
    bench_t *b = &r->b;
    print_section(r, "STREAMS AND TAGGED MESSAGING: latency, one way",
                  "stream: the short AM (2 args) answered the same way; tagged: the "
                  "stream of that size",
                  false);
    raw_flag(r, false); /* when the latency section did not run */
    /* Untimed first runs: the layers' free lists and the tagged request
       pool grow to their working size here, not inside a figure. */
    bench_latency_ns(b, BENCH_STREAM, 8, false, r->lat_ns / 4, 1);
    bench_latency_ns(b, BENCH_TAGGED, 8, false, r->lat_ns / 4, 1);
    double ns, base;
    do {
        begin(r);
        ns = bench_latency_ns(b, BENCH_SHORT, 8, false, r->lat_ns, LAT_REPS);
        base = latency_base_us(r, 8, false);
    } while (again(r));
    emit(r, "latency_short", "short AM, reply in handler", 8, ns / 1e3, base, 8, &U_US);
    /* Stream handlers may not send: rank 1 answers from its loop, after
       flit_poll returns, and so does this AM figure, the fair baseline. */
    do {
        begin(r);
        ns = bench_latency_ns(b, BENCH_SHORT_LOOP, 8, false, r->lat_ns, LAT_REPS);
        base = latency_base_us(r, 8, false);
    } while (again(r));
    double am_us = emit(r, "latency_short_loop", "short AM, answered by loop", 8,
                        ns / 1e3, base, 8, &U_US);
    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n; i++) {
        double st, tg;
        do {
            begin(r);
            st = bench_latency_ns(b, BENCH_STREAM, sz[i], false, r->lat_ns, LAT_REPS) /
                 1e3;
        } while (again(r));
        st = emit(r, "latency_stream", "stream, 1 piece", (double)sz[i], st, am_us, 8,
                  &U_US);
        do {
            begin(r);
            tg = bench_latency_ns(b, BENCH_TAGGED, sz[i], false, r->lat_ns, LAT_REPS) /
                 1e3;
        } while (again(r));
        emit(r, "latency_tagged", "tagged send/recv", (double)sz[i], tg, st,
             (double)sz[i], &U_US);
    }

    char title[160];
    snprintf(title, sizeof title,
             "STREAMS AND TAGGED MESSAGING: bandwidth, %u messages in flight "
             "(tagged: ratio = share of stream)",
             BW_WINDOW);
    print_section(r, title,
                  r->udp
                      ? "AM, stream: raw UDP streaming; tagged: the stream of that size"
                      : "AM, stream: single-core memcpy; tagged: the stream of that size",
                  true);
    bench_stream_ns(b, BENCH_STREAM, 16, BW_WINDOW, r->bw_ns / 4, 1);
    bench_stream_ns(b, BENCH_TAGGED, 16, BW_WINDOW, r->bw_ns / 4, 1);
    for (int i = 0; i < n; i++) {
        if (sz[i] < 16)
            continue;
        double v, st_ns, tg_ns;
        enum bench_kind am = sz[i] <= FLIT_AM_MAX_MEDIUM ? BENCH_MEDIUM : BENCH_LONG;
        do {
            begin(r);
            base = bandwidth_base(r, sz[i]);
            v = mbps(sz[i], bench_stream_ns(b, am, sz[i], BW_WINDOW, r->bw_ns, BW_REPS));
        } while (again(r));
        v = emit(r, "bandwidth_am", am == BENCH_MEDIUM ? "AM medium" : "AM long",
                 (double)sz[i], v, base, (double)sz[i], &U_MBS);
        base = unless_noisy(v, base);
        do {
            begin(r);
            stream_vs_tagged(r, sz[i], &st_ns, &tg_ns);
        } while (again(r));
        double st = emit(r, "bandwidth_stream", "stream, 1 piece", (double)sz[i],
                         mbps(sz[i], st_ns), base, (double)sz[i], &U_MBS);
        emit(r, "bandwidth_tagged", "tagged (vs stream)", (double)sz[i],
             mbps(sz[i], tg_ns), st, (double)sz[i], &U_MBS);
        if (r->udp)
            continue;
        /* Taken into the receiver's segment: the sender places what the
           handler waits for there (one copy, as a long AM). */
        double seg_ns;
        do {
            begin(r);
            seg_ns =
                bench_stream_ns(b, BENCH_STREAM_SEG, sz[i], BW_WINDOW, r->bw_ns, BW_REPS);
        } while (again(r));
        if (seg_ns > 0)
            emit(r, "bandwidth_stream_placed", "stream into segment", (double)sz[i],
                 mbps(sz[i], seg_ns), base, (double)sz[i], &U_MBS);
        if (!b->raw)
            continue;
        /* What the machine allows a message that lands in the receiver's
           buffer: two copies and the lines crossing cores, no protocol. */
        double pipe_ns;
        do {
            begin(r);
            pipe_ns = bench_raw_pipe_ns(b, sz[i], r->bw_ns, BW_REPS);
        } while (again(r));
        if (pipe_ns > 0) {
            double pipe =
                emit(r, "bandwidth_pipe_raw", "raw pipe (vs memcpy)", (double)sz[i],
                     mbps(sz[i], pipe_ns), base, (double)sz[i], &U_MBS);
            emit(r, "bandwidth_stream_pipe", "stream (vs raw pipe)", (double)sz[i],
                 mbps(sz[i], st_ns), pipe, (double)sz[i], &U_MBS);
        }
    }
}

/*
 * One-sided communication (VMMC): put visible at the target (rank 1 watches
 * its memory), put with notification, get; put bandwidth. Baselines: the raw
 * flag ping-pong for latency on shared memory (the short AM over UDP), and
 * memcpy (the long AM over UDP) for bandwidth.
 */
static void rma_section(struct run *r)
{
    bench_t *b = &r->b;
    if (!bench_rma_setup(b, r->o.max_size))
        return;
    print_section(r, "ONE-SIDED: put, get, put with notification, one way",
                  r->udp
                      ? "the short AM (2 args) of the same run"
                      : "raw shared-memory flag ping-pong (8 B: the ratio target is 1.5)",
                  false);
    raw_flag(r, true);
    double base_us = r->udp ? NAN : r->raw_us, v;
    if (r->udp) {
        do {
            begin(r);
            v = bench_latency_ns(b, BENCH_SHORT, 8, false, r->lat_ns, LAT_REPS) / 1e3;
        } while (again(r));
        base_us = emit(r, "latency_short", "short AM, 2 args", 8, v, NAN, NAN, &U_US);
    }
    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n; i++) {
        do {
            begin(r);
            v = bench_rma_put_latency_ns(b, sz[i], r->lat_ns, LAT_REPS) / 1e3;
        } while (again(r));
        emit(r, "latency_put", "put, visible at target", (double)sz[i], v, base_us, 8,
             &U_US);
    }
    do {
        begin(r);
        v = bench_rma_notify_latency_ns(b, 8, r->lat_ns, LAT_REPS) / 1e3;
    } while (again(r));
    emit(r, "latency_put_notify", "put + notification", 8, v, base_us, 8, &U_US);
    do {
        begin(r);
        v = bench_rma_get_latency_ns(b, 8, r->lat_ns, LAT_REPS) / 1e3;
    } while (again(r));
    emit(r, "latency_get", "get (blocking)", 8, v, NAN, NAN, &U_US);

    print_section(
        r, "ONE-SIDED: put bandwidth, 16 puts in flight, then a flush",
        r->udp ? "the long AM of the same size" : "single-core memcpy, cache-warm", true);
    for (int i = 0; i < n; i++) {
        if (sz[i] < 1024)
            continue;
        double base, bw;
        do {
            begin(r);
            base = r->udp ? mbps(sz[i], bench_stream_ns(b, BENCH_LONG, sz[i], BW_WINDOW,
                                                        r->bw_ns, BW_REPS))
                          : bandwidth_base(r, sz[i]);
            bw = bench_rma_put_mbps(b, sz[i], 16, r->bw_ns, BW_REPS);
        } while (again(r));
        emit(r, "bandwidth_put", "put", (double)sz[i], bw, base, (double)sz[i], &U_MBS);
    }
    bench_rma_teardown(b);
}

/* Long-message N1/2 and peak bandwidth, flit's and its baseline's, from the
   bandwidth section's sweep (bench_nhalf: only where the sweep can tell). */
static void nhalf_section(struct run *r)
{
    const struct series *s = &r->bw_long;
    struct bench_nhalf f = bench_nhalf(s->size, s->value, s->n);
    struct bench_nhalf g = bench_nhalf(s->size, s->base, s->n);
    bool both = f.kind == BENCH_NHALF_OK && g.kind == BENCH_NHALF_OK;
    /* the peak of a sweep with noisy points is not the curve's */
    bool fpeak = isfinite(f.peak) && !f.noisy, gpeak = isfinite(g.peak) && !g.noisy;
    bool peaks = fpeak && gpeak;
    char fwhy[160], gwhy[160];
    bench_nhalf_why(&f, fwhy, sizeof fwhy);
    bench_nhalf_why(&g, gwhy, sizeof gwhy);
    if (r->o.csv) {
        /* An empty value: no figure, the note says why. */
        printf("nhalf_long,,");
        if (f.kind == BENCH_NHALF_OK)
            printf("%.0f", f.value);
        printf(",B,");
        if (both)
            printf("%.0f,%.4f", g.value, f.value / g.value);
        else
            printf(",");
        printf(",%s%s%s%s\n", fwhy, fwhy[0] && gwhy[0] ? "; " : "",
               gwhy[0] ? "baseline: " : "", gwhy);
        printf("peak_bandwidth_long,,");
        if (fpeak)
            printf("%.2f", f.peak);
        printf(",MB/s,");
        if (peaks)
            printf("%.2f,%.4f", g.peak, f.peak / g.peak);
        else
            printf(",");
        printf(",%s\n", fpeak     ? (g.noisy ? "baseline noisy" : "")
                         : f.noisy ? "noisy: some sizes of the sweep were noisy"
                                   : "no long bandwidth figure");
        return;
    }
    print_section(r, "N1/2: smallest size reaching half the peak long bandwidth",
                  r->udp ? "raw UDP streaming's own N1/2 and peak"
                         : "memcpy's own N1/2 and peak",
                  false);
    char a[32], c[32], q[16] = "";
    bench_nhalf_cell(&f, a, sizeof a);
    bench_nhalf_cell(&g, c, sizeof c);
    if (both)
        snprintf(q, sizeof q, "%7.2f", f.value / g.value);
    printf("  %-26s %9s %13s %13s %s\n", "long N1/2", "", a, c, q);
    if (fwhy[0])
        printf("    flit: %s\n", fwhy);
    if (gwhy[0])
        printf("    baseline: %s\n", gwhy);
    snprintf(a, sizeof a, "n/a");
    snprintf(c, sizeof c, "n/a");
    q[0] = '\0';
    if (fpeak)
        snprintf(a, sizeof a, "%.2f GB/s", f.peak / 1000);
    else if (f.noisy)
        snprintf(a, sizeof a, "noisy");
    if (gpeak)
        snprintf(c, sizeof c, "%.2f GB/s", g.peak / 1000);
    else if (g.noisy)
        snprintf(c, sizeof c, "noisy");
    if (peaks)
        snprintf(q, sizeof q, "%7.2f", f.peak / g.peak);
    printf("  %-26s %9s %13s %13s %s\n", "long peak bandwidth", "", a, c, q);
}

static void noise_note(const struct run *r)
{
    if (r->o.csv) {
        if (r->noisy)
            fprintf(stderr,
                    PROG ": warning: %d of %d figures never came out clean in %d "
                         "attempts (a rank waited for a CPU that other work held): "
                         "their lines say noisy and carry no value\n",
                    r->noisy, r->figures, r->o.retries + 1);
        if (r->remeasured)
            fprintf(stderr,
                    PROG ": %d figures were measured again after a noisy attempt\n",
                    r->remeasured);
        return;
    }
    if (r->noisy)
        printf("\n  noisy: %d of %d figures never came out clean in %d attempts: during "
               "each, a\n  rank waited for a CPU that other work held for more than "
               "%.0f%% of the time, so\n  they would measure the scheduler, not flit; "
               "a quieter machine gives them\n",
               r->noisy, r->figures, r->o.retries + 1, BENCH_NOISY_SHARE * 100);
    if (r->remeasured)
        printf("%s  %d figure%s measured again after a noisy attempt, then clean\n",
               r->noisy ? "" : "\n", r->remeasured,
               r->remeasured == 1 ? " was" : "s were");
}

/* ---- plot ---- */

static void put_value(FILE *f, double v)
{
    if (v > 0 && isfinite(v))
        fprintf(f, " %.6g", v);
    else
        fprintf(f, " ?"); /* missing, or noisy: no point */
}

/* A point's error bar, lo and hi, from its series' spread; inverse: the
   value is a rate (bandwidth), so the slowest run gives the lowest. */
static void put_spread(FILE *f, const struct series *s, int i, bool inverse)
{
    double v = s->value[i], lo = s->lo[i], hi = s->hi[i];
    if (!(v > 0 && isfinite(v))) {
        fprintf(f, " ? ?");
        return;
    }
    if (!(lo > 0 && hi > 0)) /* no spread known: a bar of nothing */
        lo = hi = 1;
    fprintf(f, " %.6g %.6g", inverse ? v / hi : v * lo, inverse ? v / lo : v * hi);
}

/* Rows of size, a, b, b's baseline, then a's and b's bars (lo hi each);
   '?' where there is no point. */
static bool write_series(const char *path, const struct series *a, const struct series *b,
                         bool inverse)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    for (int i = 0; i < b->n; i++) {
        fprintf(f, "%.0f", b->size[i]);
        bool a_here = i < a->n && a->size[i] == b->size[i];
        put_value(f, a_here ? a->value[i] : NAN);
        put_value(f, b->value[i]);
        put_value(f, b->base[i]);
        if (a_here)
            put_spread(f, a, i, inverse);
        else
            fprintf(f, " ? ?");
        put_spread(f, b, i, inverse);
        fprintf(f, "\n");
    }
    return fclose(f) == 0;
}

/* Sizes at which a series has a baseline point. */
static int base_points(const struct series *s, double *at)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (s->base[i] > 0 && isfinite(s->base[i])) {
            *at = s->size[i];
            n++;
        }
    return n;
}

/* Whether a series (values or baseline) has a point to draw. */
static bool drawable(const struct series *s)
{
    for (int i = 0; i < s->n; i++)
        if ((s->value[i] > 0 && isfinite(s->value[i])) ||
            (s->base[i] > 0 && isfinite(s->base[i])))
            return true;
    return false;
}

/* The key's name of a baseline: "memcpy", or "raw shm flag (8 B only)"
   when it was measured at one size (drawn as a single point there). */
static void base_title(char *buf, size_t len, const char *name, const struct series *s)
{
    double at = 0;
    char sz[32];
    if (base_points(s, &at) == 1)
        snprintf(buf, len, "%s (%s only)", name, bench_fmt_size(sz, sizeof sz, at));
    else
        snprintf(buf, len, "%s", name);
}

/* A panel with nothing to draw gets a y range and says why it is empty
   (gnuplot refuses to autoscale an empty plot). */
static void empty_panel(FILE *f, const struct series *a, const struct series *b)
{
    if (drawable(a) || drawable(b))
        return;
    fprintf(f, "set yrange [1:10]\n"
               "set label 2 'no clean point to draw' at graph 0.5,0.5 center\n");
}

/* text into buf as the inside of a gnuplot double-quoted string. */
static void gp_quote(char *buf, size_t len, const char *text)
{
    size_t o = 0;
    for (; *text && o + 3 < len; text++) {
        if (*text == '"' || *text == '\\')
            buf[o++] = '\\';
        buf[o++] = *text;
    }
    buf[o] = '\0';
}

/*
 * The plot's note on noise, gnuplot text ("\\n" between lines): how many
 * figures of the run never came out clean, and for each curve the sizes
 * whose points are missing for that reason; "" when none.
 */
static void noise_label(const struct run *r, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!r->noisy)
        return;
    /* the four curves, then the baselines drawn beside them */
    const char *const curve[] = {"latency, medium",
                                 "latency, long",
                                 "bandwidth, medium",
                                 "bandwidth, long",
                                 r->udp ? "latency, raw UDP" : "latency, raw shm flag",
                                 r->udp ? "bandwidth, raw UDP" : "bandwidth, memcpy"};
    const struct series *ser[] = {&r->lat_med, &r->lat_long, &r->bw_med,
                                  &r->bw_long, &r->lat_long, &r->bw_long};
    size_t o = (size_t)snprintf(buf, len,
                                "NOISY: %d of %d figures of this run never came out "
                                "clean (a rank lost its CPU to other work)",
                                r->noisy, r->figures);
    bool any = false;
    for (int c = 0; c < 6 && o < len; c++) {
        const double *v = c < 4 ? ser[c]->value : ser[c]->base;
        int n = 0, shown = 0;
        for (int i = 0; i < ser[c]->n; i++)
            n += v[i] == NOISY;
        if (!n)
            continue;
        o += (size_t)snprintf(buf + o, len - o,
                              "%s\\n%s: ", any ? "" : "; not drawn:", curve[c]);
        any = true;
        if (n == ser[c]->n && n > 1) {
            o += (size_t)snprintf(buf + o, len - o, "all %d sizes", n);
            continue;
        }
        for (int i = 0; i < ser[c]->n && o < len; i++) {
            if (v[i] != NOISY)
                continue;
            if (shown == 8) {
                o += (size_t)snprintf(buf + o, len - o, " and %d more", n - shown);
                break;
            }
            char sz[32];
            bench_fmt_size(sz, sizeof sz, ser[c]->size[i]);
            o += (size_t)snprintf(buf + o, len - o, "%s%s", shown++ ? ", " : "", sz);
        }
    }
    if (!any && o < len)
        snprintf(buf + o, len - o, "; every point drawn here is clean");
}

static void plot(const struct run *r)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stderr, PROG ": gnuplot not found (Debian: apt-get install "
                             "gnuplot-nox); no plot written\n");
        return;
    }
    char dir[] = "/tmp/flit-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        perror(PROG ": mkdtemp");
        return;
    }
    char lat[64], bw[64], sh[64], gp[64], err[64], cmd[256];
    snprintf(err, sizeof err, "%s/gnuplot.err", dir);
    snprintf(sh, sizeof sh, "%s/short.dat", dir);
    snprintf(lat, sizeof lat, "%s/lat.dat", dir);
    snprintf(bw, sizeof bw, "%s/bw.dat", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    FILE *f = NULL;
    if (write_series(sh, &r->lat_short, &r->lat_short, false) &&
        write_series(lat, &r->lat_med, &r->lat_long, false) &&
        write_series(bw, &r->bw_med, &r->bw_long, true))
        f = fopen(gp, "w");
    if (f) {
        /* Tics every factor of 8: 8, 64, 512, 4K, ... */
        char tics[512] = "";
        for (size_t v = 8, o = 0; v <= r->o.max_size && o + 32 < sizeof tics; v *= 8)
            o += (size_t)snprintf(tics + o, sizeof tics - o, "%s'%zu%s' %zu",
                                  o ? ", " : "",
                                  v >= 1u << 20 ? v >> 20
                                  : v >= 1024   ? v >> 10
                                                : v,
                                  v >= 1u << 20 ? "M"
                                  : v >= 1024   ? "K"
                                                : "",
                                  v);
        bool cairo = system("gnuplot -e 'set terminal pngcairo' </dev/null "
                            ">/dev/null 2>&1") == 0;
        char machine[640], title[1400], note[1400], raw[800], lat_base[80], bw_base[80];
        machine_line(machine, sizeof machine);
        snprintf(raw, sizeof raw, "flit %d.%d.%d, two ranks over %s, %s",
                 FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR, FLIT_VERSION_PATCH,
                 r->udp ? "UDP" : "shared memory", machine);
        gp_quote(title, sizeof title, raw);
        noise_label(r, note, sizeof note);
        base_title(lat_base, sizeof lat_base, r->udp ? "raw UDP" : "raw shm flag",
                   &r->lat_long);
        base_title(bw_base, sizeof bw_base, r->udp ? "raw UDP" : "memcpy", &r->bw_long);
        fprintf(f,
                "set terminal %s noenhanced size 1400,%d\n"
                "set output '%s'\n"
                "set datafile missing '?'\n"
                "set multiplot layout 1,2 title \"%s\" margins 0.06,0.98,%s,0.88 "
                "spacing 0.08\n"
                "set logscale x 2\nset logscale y\nset xtics (%s)\n"
                /* 0.1 stays 0.1 (a fixed-point format printed it as 0), 1e6 is
                   1000000 */
                "set format y '%%.10g'\n"
                "set grid\n"
                "set key top left\nset xlabel 'message size (bytes)'\n"
                "set ylabel 'one-way latency (us)'\n",
                cairo ? "pngcairo" : "png", note[0] ? 760 : 560, r->o.plot, title,
                note[0] ? "0.28" : "0.1", tics);
        /* Fixed x, a little wider than the sweep: a panel whose every point
           was noisy still has axes, and a point at either end is not cut in
           half by the border (the 8-byte baseline). */
        fprintf(f, "set xrange [%g:%g]\n",
                (r->lat_long.n ? r->lat_long.size[0] : 8.0) / 1.4,
                (double)r->o.max_size * 1.4);
        if (note[0])
            fprintf(f,
                    "set label 1 \"%s\" at screen 0.02,0.19 left front "
                    "textcolor rgb 'red'\n",
                    note);
        /* Every flit point is the median of its runs; its bar spans the
           fastest and the slowest of them. */
        fprintf(f,
                "set label 4 \"bars: the fastest and slowest of the runs whose "
                "median each flit point is (%d for latency, %d for bandwidth)\" "
                "at screen 0.02,0.03 left front\n",
                LAT_REPS, BW_REPS);
        if (!drawable(&r->lat_short))
            empty_panel(f, &r->lat_med, &r->lat_long);
        fprintf(f,
                "plot '%s' using 1:2:5:6 with yerrorlines title 'flit medium', "
                "'' using 1:3:7:8 with yerrorlines title 'flit long', "
                /* a baseline of one size is one point there, not a line */
                "'' using 1:4 with linespoints dashtype 2 pointtype 7 pointsize 1.5 "
                "title '%s', "
                "'%s' using 1:3:7:8 with yerrorbars pointtype 5 pointsize 1.5 "
                "title 'flit short, 2 args (8 B)'\n"
                "unset label 1\nunset label 2\nunset label 4\nset autoscale y\n"
                "set ylabel 'bandwidth (MB/s)'\nset key bottom right\n",
                lat, lat_base, sh);
        /* What the receiver does with the bytes (bench_engine.c's on_sink):
           nothing, so these are not figures of data a program then reads. */
        fprintf(f, "set title \"one-sided: the receiver does not read the data\\n"
                   "(long: written into its segment; medium: its handler leaves it)\"\n");
        empty_panel(f, &r->bw_med, &r->bw_long);
        fprintf(f,
                "plot '%s' using 1:2:5:6 with yerrorlines title 'flit medium', "
                "'' using 1:3:7:8 with yerrorlines title 'flit long', "
                "'' using 1:4 with linespoints dashtype 2 pointtype 7 pointsize 0.8 "
                "title '%s'\n"
                "unset multiplot\n",
                bw, bw_base);
        fclose(f);
        /* gnuplot's warnings (a curve with no point) only when it fails */
        snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>'%s'", gp, err);
        if (system(cmd) == 0) {
            fprintf(stderr, PROG ": plot written to %s\n", r->o.plot);
        } else {
            snprintf(cmd, sizeof cmd, "cat '%s' >&2", err);
            if (system(cmd) != 0)
                fprintf(stderr, PROG ": (gnuplot said nothing)\n");
            fprintf(stderr, PROG ": gnuplot failed; no plot written\n");
        }
    } else {
        fprintf(stderr, PROG ": cannot write the plot's data in %s\n", dir);
    }
    unlink(sh);
    unlink(lat);
    unlink(bw);
    unlink(gp);
    unlink(err);
    rmdir(dir);
}

/* ---- sections in files of their own (bench_section.h) ---- */

static void io_title(void *run, const char *title, const char *baseline, bool gbs)
{
    print_section(run, title, baseline, gbs);
}

static void io_begin(void *run)
{
    begin(run);
}

static bool io_again(void *run)
{
    return again(run);
}

static double io_emit(void *run, const char *name, const char *figure, double size,
                      double value, double base, double base_size, enum bench_unit u)
{
    static const struct unit *const units[] = {&U_US, &U_MBS, &U_RATE, &U_COUNT};
    return emit(run, name, figure, size, value, base, base_size, units[u]);
}

static struct bench_io io_of(struct run *r)
{
    return (struct bench_io){.run = r,
                             .title = io_title,
                             .begin = io_begin,
                             .again = io_again,
                             .emit = io_emit,
                             .lat_ns = r->lat_ns,
                             .bw_ns = r->bw_ns,
                             .lat_reps = LAT_REPS,
                             .bw_reps = BW_REPS,
                             .udp = r->udp};
}

/* ---- main ---- */

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, PROG ": %s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

static void drive(struct run *r)
{
    r->dgram = bench_udp_dgram(&r->b);
    r->udp = r->dgram > 0;
    if (r->udp && !r->o.no_baselines && !bench_udp_setup(&r->b))
        fprintf(stderr, PROG ": no raw UDP baselines in this run\n");
    if (r->o.csv)
        printf("name,size,value,unit,baseline,ratio,note\n");
    print_header(r);
    check_quiet(r);
    if (!r->udp && !r->o.no_baselines && !bench_raw_setup(&r->b))
        fprintf(stderr, PROG ": no raw shared-memory baselines in this run\n");
    if (r->o.sections & SEC_LATENCY)
        latency_section(r);
    if (r->o.sections & SEC_BANDWIDTH)
        bandwidth_section(r);
    if (r->o.sections & SEC_RATE)
        rate_section(r);
    if (r->o.sections & SEC_STREAM)
        stream_section(r);
    if (r->o.sections & SEC_RMA)
        rma_section(r);
    if (r->o.sections & SEC_RPC) {
        struct bench_io io = io_of(r);
        bench_rpc_section(&r->b, &io);
    }
    if (r->o.sections & SEC_OBJECT) {
        struct bench_io io = io_of(r);
        bench_object_section(&r->b, &io);
    }
    if (r->o.sections & SEC_GROUP) {
        struct bench_io io = io_of(r);
        bench_group_section(&r->b, &io); /* ranks 2 and up return */
    }
    if (r->o.sections & SEC_BANDWIDTH)
        nhalf_section(r);
    noise_note(r);
    fflush(stdout);
    bench_quit(&r->b);
    if (r->o.plot)
        plot(r);
}

int main(int argc, char **argv)
{
    check(flit_init(NULL), "flit_init");
    uint32_t rank = flit_job_rank().idx, size = flit_job_size();
    static struct run r;
    int rc = parse(argc, argv, &r.o, rank == 0);
    if (rc == 0 && size != 2 && !(size > 2 && (r.o.sections & SEC_GROUP))) {
        if (rank == 0)
            fprintf(stderr,
                    PROG ": needs exactly 2 ranks, has %u; run it as\n"
                         "    flitrun -n 2 %s\n",
                    size, argv[0]);
        rc = 2;
    }
    if (rc != 0) {
        check(flit_finalize(), "flit_finalize");
        return rc < 0 ? 0 : rc;
    }
    r.lat_ns = r.o.quick ? 25000000u : 150000000u;
    r.raw_us = NAN;
    r.line_us = NAN;
    r.bw_ns = r.lat_ns;

    size_t seg = r.o.max_size > MIN_SEGMENT ? r.o.max_size : MIN_SEGMENT;
    flit_ep_params_t p = {
        /* Single-threaded, and no progress thread even if FLIT_PROGRESS_THREAD
           says so: handlers run in our own polls, which the counters rely on. */
        .field_mask = FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT |
                      FLIT_EP_PARAM_PROGRESS_THREAD | FLIT_EP_PARAM_HANDLER_COUNT,
        .thread_mode = FLIT_THREAD_SINGLE,
        .progress_thread = 0,
        .segment_addr = NULL,
        .segment_size = seg,
        /* Room for the layers' reservations (rpc, groups, objects and the
           object section's baselines) above the bench's own handlers. */
        .handler_count = 512,
    };
    flit_ep_t *ep;
    check(flit_ep_create(&p, &ep), "flit_ep_create");
    bench_init(&r.b, ep, r.o.max_size, PROG);
    if (r.o.sections & SEC_RPC)
        bench_rpc_open(&r.b);
    if (r.o.sections & SEC_GROUP)
        bench_group_open(&r.b);
    if (r.o.sections & SEC_OBJECT)
        bench_object_open(&r.b);
    check(flit_barrier(ep), "flit_barrier"); /* handlers are in place */
    if (rank == 0)
        drive(&r);
    else if (rank == 1)
        bench_serve(&r.b);
    else
        bench_group_serve(&r.b);
    check(flit_barrier(ep), "flit_barrier");
    if (r.o.sections & SEC_RPC)
        bench_rpc_close(&r.b);
    if (r.o.sections & SEC_OBJECT)
        bench_object_close(&r.b);
    if (r.o.sections & SEC_GROUP)
        bench_group_close(&r.b);
    bench_fini(&r.b);
    check(flit_ep_destroy(ep), "flit_ep_destroy");
    check(flit_finalize(), "flit_finalize");
    return 0;
}
