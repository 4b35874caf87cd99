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
 *   latency     sendto/recvfrom ping-pong of the same size, one way: spinning
 *               (MSG_DONTWAIT) beside flit_poll, blocking beside flit_wait
 *   bandwidth   sendto/recvfrom streaming of the same size
 *   rate        8-byte datagrams streamed, one sendto each
 *
 *     flitrun -n 2 flit-bench [--quick] [--csv] [--plot FILE.png]
 *                             [--max-size BYTES] [--sizes LIST]
 *                             [--only SECTIONS] [--no-baselines]
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
#include "bench_rma.h"
#include "bench_util.h"

#define PROG             "flit-bench"
#define DEFAULT_MAX_SIZE (4u << 20)
#define MIN_SEGMENT      (16u << 20)
#define BW_WINDOW        64u
#define RATE_WINDOW      256u
#define LAT_REPS         5
#define BW_REPS          5
#define MAX_POINTS       64

enum { SEC_LATENCY = 1, SEC_BANDWIDTH = 2, SEC_RATE = 4, SEC_STREAM = 8, SEC_RMA = 16,
       SEC_ALL = 31 };

struct opts {
    bool csv, quick, no_baselines;
    const char *plot;
    size_t max_size;
    unsigned sections;          /* SEC_* */
    int nsizes;                 /* --sizes: these instead of the sweep */
    size_t size_list[MAX_POINTS];
};

/* One curve: a figure at each size, with its baseline (NAN: none). */
struct series {
    int n;
    double size[MAX_POINTS], value[MAX_POINTS], base[MAX_POINTS];
};

struct run {
    struct opts o;
    bench_t b;
    uint64_t lat_ns, bw_ns; /* time per point */
    double raw_ns;          /* raw flag one-way; < 0 when none */
    bool udp;               /* the peer is on UDP: raw UDP baselines */
    size_t dgram;           /* flit's datagram payload to the peer */
    struct series lat_med, lat_long, bw_med, bw_long;
    double memcpy_sizes[MAX_POINTS], memcpy_mbps[MAX_POINTS];
    int nmemcpy;
    /* noise: CPU time other work took from the ranks during a figure */
    uint64_t wait0, t0;
    int figures, noisy;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: flitrun -n 2 " PROG " [options]\n"
               "  --quick           fewer iterations (smoke tests, make demo)\n"
               "  --csv             name,size,value,unit,baseline,ratio lines only\n"
               "  --plot FILE.png   latency and bandwidth curves (needs gnuplot)\n"
               "  --max-size BYTES  largest message (default 4M; k, M, G suffixes)\n"
               "  --sizes LIST      these sizes only, e.g. 8,64k,1M (instead of 8 B\n"
               "                    doubling up to --max-size)\n"
               "  --only SECTIONS   some of latency,bandwidth,rate,stream,rma\n"
               "  --no-baselines    flit's figures only (as under injected loss, where\n"
               "                    a raw baseline cannot run)\n");
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
    static const char *const name[] = {"latency", "bandwidth", "rate", "stream", "rma"};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", arg);
    *out = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        unsigned i = 0;
        while (i < 5 && strcmp(t, name[i]) != 0)
            i++;
        if (i == 5)
            return false;
        *out |= 1u << i;
    }
    return *out != 0;
}

/* 0: go on; otherwise the exit status. */
static int parse(int argc, char **argv, struct opts *o, bool talk)
{
    *o = (struct opts){.max_size = DEFAULT_MAX_SIZE, .sections = SEC_ALL};
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
                    fprintf(stderr, PROG ": --only: '%s' is not a list of latency, "
                                         "bandwidth, rate, stream, rma\n",
                            argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--no-baselines") == 0) {
            o->no_baselines = true;
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

static void print_header(const struct run *r)
{
    char host[512], date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
    bench_host_info(host, sizeof host);
    flit_peer_info_t info = {.struct_size = sizeof info};
    flit_ep_peer_info(r->b.ep, flit_rank(1), &info);
    printf(PROG ": flit %d.%d.%d, 2 ranks, one endpoint, rank 1 over %s%s%s\n",
           FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR, FLIT_VERSION_PATCH, info.transport,
           info.address[0] ? " at " : "", info.address);
    if (r->udp)
        printf("  path     %zu-byte datagrams (flit's, and the raw UDP baseline's)\n",
               r->dgram);
    printf("  date     %s\n  host     %s\n", date, host);
    extern char **environ;
    int shown = 0;
    for (char **e = environ; *e; e++) {
        static const char *const launcher[] = {
            "FLIT_BOOT=", "FLIT_RANK=", "FLIT_SIZE=", "FLIT_JOB_ID="};
        bool skip = strncmp(*e, "FLIT_", 5) != 0;
        for (size_t i = 0; i < 4 && !skip; i++)
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
           "           ratio = flit / baseline\n",
           LAT_REPS, (double)r->lat_ns / 1e6, BW_WINDOW, RATE_WINDOW);
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

/* A figure's measuring starts: see emit. */
static void begin(struct run *r)
{
    r->wait0 = bench_sched_wait_ns(&r->b);
    r->t0 = bench_now_ns();
}

/*
 * Whether, since begin, either rank waited for a CPU held by other work for
 * more than 2% of the time: a spinning peer that loses its CPU makes the
 * figure a measure of the scheduler.
 */
static bool noisy(struct run *r)
{
    uint64_t elapsed = bench_now_ns() - r->t0;
    uint64_t waited = bench_sched_wait_ns(&r->b) - r->wait0;
    return waited * 50 > elapsed;
}

/*
 * One figure, measured since begin: a table row or a CSV line. size < 0:
 * none. base < 0 or NAN: no baseline.
 */
static void emit(struct run *r, const char *name, const char *figure, double size,
                 double value, double base, const struct unit *u)
{
    bool has_base = base > 0 && isfinite(base);
    double ratio = has_base ? value / base : NAN;
    bool mark = noisy(r);
    r->figures++;
    r->noisy += mark;
    if (r->o.csv) {
        printf("%s,", name);
        if (size >= 0)
            printf("%.0f", size);
        printf(",%.4f,%s,", value, u->csv_unit);
        if (has_base)
            printf("%.4f,%.4f", base, ratio);
        else
            printf(",");
        printf("\n");
        fflush(stdout);
        return;
    }
    char sz[32] = "", v[32], bs[32] = "n/a", ra[16] = "";
    if (size >= 0)
        bench_fmt_size(sz, sizeof sz, size);
    snprintf(v, sizeof v, "%.*f %s", u->prec, value * u->scale, u->cell);
    if (has_base) {
        snprintf(bs, sizeof bs, "%.*f %s", u->prec, base * u->scale, u->cell);
        snprintf(ra, sizeof ra, "%.2f", ratio);
    }
    printf("  %-26s %9s %13s %13s %7s%s", figure, sz, v, bs, ra, mark ? "*" : " ");
    if (u == &U_MBS)
        printf("  %9.2f", value / 1000);
    printf("\n");
    fflush(stdout);
}

static void add(struct series *s, double size, double value, double base)
{
    if (s->n >= MAX_POINTS)
        return;
    s->size[s->n] = size;
    s->value[s->n] = value;
    s->base[s->n] = base;
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
    return mbps(size, bench_udp_stream_ns(&r->b, size, r->dgram, BW_WINDOW, r->bw_ns,
                                          BW_REPS));
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

/* The baseline of a size-byte ping-pong: the raw flag's 8 bytes on shared
   memory (the floor at any size); over UDP a raw ping-pong of that size. */
static double latency_base_us(struct run *r, size_t size, bool blocking)
{
    if (!r->udp)
        return r->raw_ns / 1e3;
    return bench_udp_latency_ns(&r->b, size, r->dgram, blocking, r->lat_ns, LAT_REPS) /
           1e3;
}

static void latency_section(struct run *r)
{
    bench_t *b = &r->b;
    print_section(r, "LATENCY, one way (round trip / 2), spinning in flit_poll",
                  r->udp ? "raw UDP sendto/recvfrom ping-pong of the same size between "
                           "the same two\n            processes: spinning "
                           "(MSG_DONTWAIT), and blocking beside flit_wait"
                         : "raw shared-memory flag ping-pong between the same two "
                           "processes",
                  false);
    begin(r);
    double raw_us, wait_base_us;
    if (r->o.no_baselines) {
        raw_us = wait_base_us = NAN;
    } else if (r->udp) {
        raw_us = latency_base_us(r, 8, false);
        emit(r, "latency_raw_udp", "raw UDP, spinning", 8, raw_us, NAN, &U_US);
        begin(r);
        wait_base_us = latency_base_us(r, 8, true);
        emit(r, "latency_raw_udp_blocking", "raw UDP, blocking", 8, wait_base_us, NAN,
             &U_US);
    } else {
        r->raw_ns = bench_raw_latency_ns(b, r->lat_ns, LAT_REPS);
        raw_us = wait_base_us = r->raw_ns / 1e3;
        if (r->raw_ns > 0)
            emit(r, "latency_raw_flag", "raw flag (the baseline)", 8, raw_us, NAN, &U_US);
    }
    for (unsigned nargs = 0; nargs <= 4; nargs++) {
        char fig[40];
        snprintf(fig, sizeof fig, "short, %u arg%s", nargs, nargs == 1 ? "" : "s");
        begin(r);
        double ns =
            bench_latency_ns(b, BENCH_SHORT, 4 * nargs, false, r->lat_ns, LAT_REPS);
        emit(r, "latency_short", fig, 4 * nargs, ns / 1e3, raw_us, &U_US);
    }
    begin(r);
    double ns = bench_latency_ns(b, BENCH_SHORT, 8, true, r->lat_ns, LAT_REPS);
    emit(r, "latency_short_wait", "short, 2 args, flit_wait", 8, ns / 1e3, wait_base_us,
         &U_US);

    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n && sz[i] <= FLIT_AM_MAX_MEDIUM; i++) {
        begin(r);
        double base = latency_base_us(r, sz[i], false);
        ns = bench_latency_ns(b, BENCH_MEDIUM, sz[i], false, r->lat_ns, LAT_REPS);
        emit(r, "latency_medium", "medium", (double)sz[i], ns / 1e3, base, &U_US);
        add(&r->lat_med, (double)sz[i], ns / 1e3, base);
    }
    for (int i = 0; i < n; i++) {
        begin(r);
        double base = latency_base_us(r, sz[i], false);
        ns = bench_latency_ns(b, BENCH_LONG, sz[i], false, r->lat_ns, LAT_REPS);
        emit(r, "latency_long", "long", (double)sz[i], ns / 1e3, base, &U_US);
        add(&r->lat_long, (double)sz[i], ns / 1e3, base);
    }
}

static double mbps(size_t size, double ns_per_msg)
{
    return ns_per_msg > 0 ? (double)size / ns_per_msg * 1e3 : isnan(ns_per_msg) ? NAN : 0;
}

static void bandwidth_section(struct run *r)
{
    bench_t *b = &r->b;
    char title[128];
    snprintf(title, sizeof title,
             "BANDWIDTH, streaming one way, %u messages in flight (MB/s = 1e6 B/s)",
             BW_WINDOW);
    print_section(r, title,
                  r->udp ? "raw UDP sendto/recvfrom streaming of the same size, "
                           "same datagrams"
                         : "single-core memcpy of the same size, cache-warm",
                  true);
    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n && sz[i] <= FLIT_AM_MAX_MEDIUM; i++) {
        begin(r);
        double base = bandwidth_base(r, sz[i]);
        double v = mbps(
            sz[i], bench_stream_ns(b, BENCH_MEDIUM, sz[i], BW_WINDOW, r->bw_ns, BW_REPS));
        emit(r, "bandwidth_medium", "medium", (double)sz[i], v, base, &U_MBS);
        add(&r->bw_med, (double)sz[i], v, base);
    }
    for (int i = 0; i < n; i++) {
        begin(r);
        double base = bandwidth_base(r, sz[i]);
        double v = mbps(
            sz[i], bench_stream_ns(b, BENCH_LONG, sz[i], BW_WINDOW, r->bw_ns, BW_REPS));
        emit(r, "bandwidth_long", "long", (double)sz[i], v, base, &U_MBS);
        add(&r->bw_long, (double)sz[i], v, base);
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
                  r->udp ? "raw UDP: 8-byte datagrams streamed, one sendto each"
                         : "raw single-producer ring of 64-byte slots in shared memory",
                  false);
    begin(r);
    double raw = r->o.no_baselines ? NAN
                 : r->udp ? bench_udp_stream_ns(b, 8, r->dgram, RATE_WINDOW, r->bw_ns, BW_REPS)
                          : bench_raw_stream_ns(b, r->bw_ns, BW_REPS);
    double raw_m = raw > 0 ? 1e3 / raw : NAN;
    if (raw > 0)
        emit(r, r->udp ? "rate_raw_udp" : "rate_raw_ring",
             r->udp ? "raw UDP (the baseline)" : "raw ring (the baseline)", 8, raw_m, NAN,
             &U_RATE);
    begin(r);
    double ns = bench_stream_ns(b, BENCH_SHORT, 8, RATE_WINDOW, r->bw_ns, BW_REPS);
    emit(r, "rate_short", "short, 2 args", 8, ns > 0 ? 1e3 / ns : 0, raw_m, &U_RATE);
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
    /* Untimed first runs: the layers' free lists and the tagged request
       pool grow to their working size here, not inside a figure. */
    bench_latency_ns(b, BENCH_STREAM, 8, false, r->lat_ns / 4, 1);
    bench_latency_ns(b, BENCH_TAGGED, 8, false, r->lat_ns / 4, 1);
    begin(r);
    double am_us = bench_latency_ns(b, BENCH_SHORT, 8, false, r->lat_ns, LAT_REPS) / 1e3;
    emit(r, "latency_short", "short AM, reply in handler", 8, am_us,
         latency_base_us(r, 8, false), &U_US);
    /* Stream handlers may not send: rank 1 answers from its loop, after
       flit_poll returns, and so does this AM figure, the fair baseline. */
    begin(r);
    am_us = bench_latency_ns(b, BENCH_SHORT_LOOP, 8, false, r->lat_ns, LAT_REPS) / 1e3;
    emit(r, "latency_short_loop", "short AM, answered by loop", 8, am_us,
         latency_base_us(r, 8, false), &U_US);
    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n; i++) {
        begin(r);
        double st = bench_latency_ns(b, BENCH_STREAM, sz[i], false, r->lat_ns, LAT_REPS) / 1e3;
        emit(r, "latency_stream", "stream, 1 piece", (double)sz[i], st,
             sz[i] == 8 ? am_us : NAN, &U_US);
        begin(r);
        double tg = bench_latency_ns(b, BENCH_TAGGED, sz[i], false, r->lat_ns, LAT_REPS) / 1e3;
        emit(r, "latency_tagged", "tagged send/recv", (double)sz[i], tg, st, &U_US);
    }

    char title[160];
    snprintf(title, sizeof title,
             "STREAMS AND TAGGED MESSAGING: bandwidth, %u messages in flight "
             "(tagged: ratio = share of stream)",
             BW_WINDOW);
    print_section(r, title,
                  r->udp ? "AM, stream: raw UDP streaming; tagged: the stream of that size"
                         : "AM, stream: single-core memcpy; tagged: the stream of that size",
                  true);
    bench_stream_ns(b, BENCH_STREAM, 16, BW_WINDOW, r->bw_ns / 4, 1);
    bench_stream_ns(b, BENCH_TAGGED, 16, BW_WINDOW, r->bw_ns / 4, 1);
    for (int i = 0; i < n; i++) {
        if (sz[i] < 16)
            continue;
        begin(r);
        double base = bandwidth_base(r, sz[i]);
        enum bench_kind am = sz[i] <= FLIT_AM_MAX_MEDIUM ? BENCH_MEDIUM : BENCH_LONG;
        double v = mbps(sz[i], bench_stream_ns(b, am, sz[i], BW_WINDOW, r->bw_ns, BW_REPS));
        emit(r, "bandwidth_am", am == BENCH_MEDIUM ? "AM medium" : "AM long",
             (double)sz[i], v, base, &U_MBS);
        begin(r);
        double st_ns, tg_ns;
        stream_vs_tagged(r, sz[i], &st_ns, &tg_ns);
        double st = mbps(sz[i], st_ns), tg = mbps(sz[i], tg_ns);
        emit(r, "bandwidth_stream", "stream, 1 piece", (double)sz[i], st, base, &U_MBS);
        emit(r, "bandwidth_tagged", "tagged (vs stream)", (double)sz[i], tg, st, &U_MBS);
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
                  r->udp ? "the short AM (2 args) of the same run"
                         : "raw shared-memory flag ping-pong (8 B: the ratio target is 1.5)",
                  false);
    if (!r->udp && !(r->raw_ns > 0) && !r->o.no_baselines) {
        begin(r);   /* the latency section did not run */
        r->raw_ns = bench_raw_latency_ns(b, r->lat_ns, LAT_REPS);
        if (r->raw_ns > 0)
            emit(r, "latency_raw_flag", "raw flag (the baseline)", 8, r->raw_ns / 1e3, NAN,
                 &U_US);
    }
    double base_us = r->raw_ns > 0 && !r->udp ? r->raw_ns / 1e3 : NAN;
    if (r->udp) {
        begin(r);
        base_us = bench_latency_ns(b, BENCH_SHORT, 8, false, r->lat_ns, LAT_REPS) / 1e3;
        emit(r, "latency_short", "short AM, 2 args", 8, base_us, NAN, &U_US);
    }
    size_t sz[MAX_POINTS];
    int n = sizes(&r->o, sz);
    for (int i = 0; i < n; i++) {
        begin(r);
        double v = bench_rma_put_latency_ns(b, sz[i], r->lat_ns, LAT_REPS) / 1e3;
        emit(r, "latency_put", "put, visible at target", (double)sz[i], v,
             sz[i] == 8 ? base_us : NAN, &U_US);
    }
    begin(r);
    double v = bench_rma_notify_latency_ns(b, 8, r->lat_ns, LAT_REPS) / 1e3;
    emit(r, "latency_put_notify", "put + notification", 8, v, base_us, &U_US);
    begin(r);
    v = bench_rma_get_latency_ns(b, 8, r->lat_ns, LAT_REPS) / 1e3;
    emit(r, "latency_get", "get (blocking)", 8, v, NAN, &U_US);

    print_section(r, "ONE-SIDED: put bandwidth, 16 puts in flight, then a flush",
                  r->udp ? "the long AM of the same size" : "single-core memcpy, cache-warm",
                  true);
    for (int i = 0; i < n; i++) {
        if (sz[i] < 1024)
            continue;
        begin(r);
        double base = r->udp ? mbps(sz[i], bench_stream_ns(b, BENCH_LONG, sz[i], BW_WINDOW,
                                                           r->bw_ns, BW_REPS))
                             : bandwidth_base(r, sz[i]);
        double bw = bench_rma_put_mbps(b, sz[i], 16, r->bw_ns, BW_REPS);
        emit(r, "bandwidth_put", "put", (double)sz[i], bw, base, &U_MBS);
    }
    bench_rma_teardown(b);
}

/*
 * The smallest size whose bandwidth reaches half of the series' peak,
 * interpolated linearly between the two measured sizes around it.
 */
static double n_half(const double *size, const double *bw, int n, double *peak_out)
{
    double peak = 0;
    for (int i = 0; i < n; i++)
        peak = bw[i] > peak ? bw[i] : peak;
    *peak_out = peak > 0 ? peak : NAN;
    if (!(peak > 0))
        return NAN; /* no figure at all (a baseline that gave up) */
    for (int i = 0; i < n; i++) {
        if (!(bw[i] >= peak / 2)) /* below, or missing */
            continue;
        if (i == 0 || !isfinite(bw[i - 1]))
            return size[i];
        double f = (peak / 2 - bw[i - 1]) / (bw[i] - bw[i - 1]);
        return size[i - 1] + f * (size[i] - size[i - 1]);
    }
    return NAN;
}

static void nhalf_section(struct run *r)
{
    const struct series *s = &r->bw_long;
    if (s->n < 2)
        return; /* a curve needs more than one point */
    double peak, bpeak;
    double nh = n_half(s->size, s->value, s->n, &peak);
    double bnh = n_half(s->size, s->base, s->n, &bpeak);
    if (r->o.csv) {
        /* A baseline that gave up leaves its fields empty. */
        printf("nhalf_long,,%.0f,B,", nh);
        if (isfinite(bnh))
            printf("%.0f,%.4f", bnh, nh / bnh);
        else
            printf(",");
        printf("\npeak_bandwidth_long,,%.2f,MB/s,", peak);
        if (isfinite(bpeak))
            printf("%.2f,%.4f", bpeak, peak / bpeak);
        else
            printf(",");
        printf("\n");
        return;
    }
    print_section(r, "N1/2: smallest size reaching half the peak long bandwidth",
                  r->udp ? "raw UDP streaming's own N1/2 and peak"
                         : "memcpy's own N1/2 and peak",
                  false);
    char a[32], c[32] = "n/a", q[16] = "";
    bench_fmt_size(a, sizeof a, nh);
    if (isfinite(bnh)) {
        bench_fmt_size(c, sizeof c, bnh);
        snprintf(q, sizeof q, "%7.2f", nh / bnh);
    }
    printf("  %-26s %9s %13s %13s %s\n", "long N1/2", "", a, c, q);
    snprintf(a, sizeof a, "%.2f GB/s", peak / 1000);
    snprintf(c, sizeof c, "n/a");
    q[0] = '\0';
    if (isfinite(bpeak)) {
        snprintf(c, sizeof c, "%.2f GB/s", bpeak / 1000);
        snprintf(q, sizeof q, "%7.2f", peak / bpeak);
    }
    printf("  %-26s %9s %13s %13s %s\n", "long peak bandwidth", "", a, c, q);
}

static void noise_note(const struct run *r)
{
    if (!r->noisy)
        return;
    if (r->o.csv) {
        fprintf(stderr,
                PROG ": warning: %d of %d figures were measured while "
                     "other processes took CPU time from the ranks: noise\n",
                r->noisy, r->figures);
        return;
    }
    printf("\n  * %d of %d figures: while measuring, other processes held a CPU "
           "a rank needed\n    for more than 2%% of the time; those figures "
           "measure the scheduler, not flit\n",
           r->noisy, r->figures);
}

/* ---- plot ---- */

static bool write_series(const char *path, const struct series *a, const struct series *b)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    /* size, a, b, baseline; '?' where a series has no point */
    for (int i = 0; i < b->n; i++) {
        fprintf(f, "%.0f ", b->size[i]);
        if (i < a->n && a->size[i] == b->size[i])
            fprintf(f, "%.6g ", a->value[i]);
        else
            fprintf(f, "? ");
        fprintf(f, "%.6g %.6g\n", b->value[i], b->base[i] > 0 ? b->base[i] : NAN);
    }
    return fclose(f) == 0;
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
    char lat[64], bw[64], gp[64], cmd[256];
    snprintf(lat, sizeof lat, "%s/lat.dat", dir);
    snprintf(bw, sizeof bw, "%s/bw.dat", dir);
    snprintf(gp, sizeof gp, "%s/plot.gp", dir);
    FILE *f = NULL;
    if (write_series(lat, &r->lat_med, &r->lat_long) &&
        write_series(bw, &r->bw_med, &r->bw_long))
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
        char host[256] = "?";
        gethostname(host, sizeof host - 1);
        fprintf(f,
                "set terminal %s size 1400,560\n"
                "set output '%s'\n"
                "set datafile missing '?'\n"
                "set multiplot layout 1,2 title 'flit %d.%d.%d on %s: two ranks, "
                "shared memory'\n"
                "set logscale x 2\nset logscale y\nset xtics (%s)\nset format y '%%g'\n"
                "set grid\n"
                "set key top left\nset xlabel 'message size (bytes)'\n"
                "set ylabel 'one-way latency (us)'\n"
                "plot '%s' using 1:2 with linespoints title 'flit medium', "
                "'' using 1:3 with linespoints title 'flit long', "
                "'' using 1:4 with lines dashtype 2 title 'raw shm flag'\n"
                "set ylabel 'bandwidth (MB/s)'\nset key bottom right\n"
                "set format y '%%.0f'\n"
                "plot '%s' using 1:2 with linespoints title 'flit medium', "
                "'' using 1:3 with linespoints title 'flit long', "
                "'' using 1:4 with lines dashtype 2 title 'memcpy'\n"
                "unset multiplot\n",
                cairo ? "pngcairo" : "png", r->o.plot, FLIT_VERSION_MAJOR,
                FLIT_VERSION_MINOR, FLIT_VERSION_PATCH, host, tics, lat, bw);
        fclose(f);
        snprintf(cmd, sizeof cmd, "gnuplot '%s'", gp);
        if (system(cmd) == 0)
            fprintf(stderr, PROG ": plot written to %s\n", r->o.plot);
        else
            fprintf(stderr, PROG ": gnuplot failed; no plot written\n");
    } else {
        fprintf(stderr, PROG ": cannot write the plot's data in %s\n", dir);
    }
    unlink(lat);
    unlink(bw);
    unlink(gp);
    rmdir(dir);
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
        printf("name,size,value,unit,baseline,ratio\n");
    else
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
    if (rc == 0 && size != 2) {
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
    r.bw_ns = r.lat_ns;

    size_t seg = r.o.max_size > MIN_SEGMENT ? r.o.max_size : MIN_SEGMENT;
    flit_ep_params_t p = {
        /* Single-threaded, and no progress thread even if FLIT_PROGRESS_THREAD
           says so: handlers run in our own polls, which the counters rely on. */
        .field_mask = FLIT_EP_PARAM_THREAD_MODE | FLIT_EP_PARAM_SEGMENT |
                      FLIT_EP_PARAM_PROGRESS_THREAD,
        .thread_mode = FLIT_THREAD_SINGLE,
        .progress_thread = 0,
        .segment_addr = NULL,
        .segment_size = seg,
    };
    flit_ep_t *ep;
    check(flit_ep_create(&p, &ep), "flit_ep_create");
    bench_init(&r.b, ep, r.o.max_size, PROG);
    check(flit_barrier(ep), "flit_barrier"); /* handlers are in place */
    if (rank == 0)
        drive(&r);
    else
        bench_serve(&r.b);
    check(flit_barrier(ep), "flit_barrier");
    bench_fini(&r.b);
    check(flit_ep_destroy(ep), "flit_ep_destroy");
    check(flit_finalize(), "flit_finalize");
    return 0;
}
