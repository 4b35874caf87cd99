/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flit-bench-scale: what N ranks on one host cost, run once per N by
 * bench/scale.sh (make bench-scale) under flitrun:
 *
 *     flitrun -n N flit-bench-scale [--iters K]
 *
 * Every rank times flit_init and flit_ep_create and reads its VmSize and
 * VmRSS after creation and again after an all-to-all exchange (one short
 * message from every rank to every other). Ranks 0 and 1 ping-pong 8-byte
 * short messages while the others wait in flit_wait (they sleep: there are
 * more ranks than cores); then every rank times barriers. Rank 0 reads the
 * host's /dev/shm use (statvfs: host-wide, so other programs' files count
 * too; scale.sh subtracts what it saw before the run) after creation and
 * after the exchange, gathers the other ranks' figures and prints one line:
 *
 *     scale N=<n> transport=<t> init_s=<max> create_s=<max> after_s=<s>
 *           vmsize_mb=<max> vmrss_mb=<max> vmrss_a2a_mb=<max> shm_create_mb=<used>
 *           shm_a2a_mb=<used> lat_us=<one-way, median batch>
 *           lat_min_us=<fastest batch> barrier_us=<mean>
 *           ep_heap_kb=<max> ep_heap_a2a_kb=<max> first_barrier_epoch=<s>
 *     scale-end N=<n> finalize_s=<rank 0's>
 *
 * first_barrier_epoch: when rank 0 left the first barrier after creation
 * (CLOCK_REALTIME, seconds), for a script to time its launcher's start to
 * there; finalize_s: rank 0's flit_ep_destroy and flit_finalize, after
 * the line.
 *
 * init_s and create_s are the slowest rank's, so they hold the time that
 * rank waited for the last one to start (the first exchange waits for
 * everyone); after_s is what flit adds once every process runs: from the
 * last rank's start of flit_init to the last end of flit_ep_create.
 *
 * ep_heap: the bytes the endpoint holds from malloc (mallinfo2: in use on
 * the heap and in mmapped chunks), from just before flit_ep_create to just
 * after it, and to after the all-to-all: what the endpoint's per-peer state
 * costs, which VmSize blurs (malloc arenas reserve address space ahead).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include <malloc.h>

#include <flit/am.h>
#include <flit/flit.h>

enum { H_PING = 1, H_PONG, H_DONE, H_A2A, H_STATS };

static struct {
    flit_ep_t *ep;
    volatile uint32_t pongs, pings, done, a2a, stats;
    double init_s, create_s, vmsize_mb, vmrss_mb, vmrss_a2a_mb; /* max over ranks */
    /* Rank 0's: the latest start of flit_init and end of flit_ep_create of
       any rank, in microseconds after its own start (CLOCK_MONOTONIC is one
       clock for the whole host). */
    uint32_t ref_us;
    int64_t last_start_us, last_end_us;
    double files_mb, files_a2a_mb; /* sum over ranks: their files' blocks */
    double heap_kb, heap_a2a_kb;   /* max over ranks: the endpoint's malloc bytes */
} g;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, flit_status st)
{
    fprintf(stderr, "flit-bench-scale: %s: %s\n", what, flit_status_name(st));
    exit(1);
}

#define OK(call)                                                                         \
    do {                                                                                 \
        flit_status st_ = (call);                                                        \
        if (st_ != FLIT_OK)                                                              \
            die(#call, st_);                                                             \
    } while (0)

/* kB of a /proc/self/status line ("VmSize:", "VmRSS:"). */
static double status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = 0;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0)
            kb = strtod(line + n, NULL);
    if (f)
        fclose(f);
    return kb;
}

/*
 * MB of /dev/shm this rank's own files of the job hold (allocated blocks,
 * holes not counted), found through its mappings: a file it maps whole or
 * in part counts once. Other programs' files do not count, unlike statvfs.
 */
static double own_shm_mb(uint32_t me)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], suffix[32];
    snprintf(suffix, sizeof suffix, "-%u-0", me);
    unsigned long long seen[16];
    unsigned nseen = 0;
    double mb = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *name = strstr(line, "/dev/shm/flit-");
        if (!name)
            continue;
        char *end = strchr(name, ' ');
        if (!end)
            end = strchr(name, '\n');
        if (!end || (size_t)(end - name) < strlen(suffix) ||
            strncmp(end - strlen(suffix), suffix, strlen(suffix)) != 0)
            continue;
        unsigned long long lo, hi, ino;
        char path[96];
        if (sscanf(line, "%llx-%llx %*s %*s %*s %llu", &lo, &hi, &ino) != 3)
            continue;
        bool dup = false;
        for (unsigned i = 0; i < nseen; i++)
            dup |= seen[i] == ino;
        if (dup || nseen == 16)
            continue;
        seen[nseen++] = ino;
        snprintf(path, sizeof path, "/proc/self/map_files/%llx-%llx", lo, hi);
        struct stat st;
        if (stat(path, &st) == 0)
            mb += (double)st.st_blocks * 512 / 1048576.0;
    }
    if (f)
        fclose(f);
    return mb;
}

/* Bytes in use from malloc: small chunks and mmapped ones. */
static double heap_bytes(void)
{
    struct mallinfo2 m = mallinfo2();
    return (double)m.uordblks + (double)m.hblkhd;
}

static double shm_used_mb(void)
{
    struct statvfs s;
    if (statvfs("/dev/shm", &s) != 0)
        return -1;
    return (double)(s.f_blocks - s.f_bfree) * (double)s.f_frsize / 1048576.0;
}

static void on_ping(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)buf, (void)n, (void)u;
    g.pings++;
    OK(flit_am_reply_short(t, flit_handler(H_PONG), a, na));
}

static void on_pong(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)u;
    g.pongs++;
}

static void on_count(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                     void *u)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na;
    (*(volatile uint32_t *)u)++;
}

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* Figures travel as micro-units in 32-bit arguments. */
static void on_stats(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                     void *u)
{
    (void)t, (void)buf, (void)n, (void)u;
    if (na != 11)
        return;
    g.heap_kb = max2(g.heap_kb, a[7]);
    g.heap_a2a_kb = max2(g.heap_a2a_kb, a[8]);
    g.files_mb += a[5] / 1024.0;
    g.files_a2a_mb += a[6] / 1024.0;
    int64_t start = (int32_t)(a[9] - g.ref_us), end = (int32_t)(a[10] - g.ref_us);
    g.last_start_us = start > g.last_start_us ? start : g.last_start_us;
    g.last_end_us = end > g.last_end_us ? end : g.last_end_us;
    g.init_s = max2(g.init_s, a[0] * 1e-6);
    g.create_s = max2(g.create_s, a[1] * 1e-6);
    g.vmsize_mb = max2(g.vmsize_mb, a[2] / 1024.0);
    g.vmrss_mb = max2(g.vmrss_mb, a[3] / 1024.0);
    g.vmrss_a2a_mb = max2(g.vmrss_a2a_mb, a[4] / 1024.0);
    g.stats++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void wait_for(volatile uint32_t *v, uint32_t target)
{
    while (*v < target) {
        flit_status st = flit_wait(g.ep, 1000000);
        if (st != FLIT_OK && st != FLIT_ERR_TIMEOUT)
            die("flit_wait", st);
    }
}

static void spin_for(volatile uint32_t *v, uint32_t target)
{
    while (*v < target)
        OK(flit_poll(g.ep));
}

int main(int argc, char **argv)
{
    uint32_t iters = 20000, barriers = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--iters") == 0)
            iters = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        else if (strcmp(argv[i], "--barriers") == 0)
            barriers = (uint32_t)strtoul(argv[i + 1], NULL, 0);
        else {
            fprintf(stderr, "usage: flit-bench-scale [--iters K] [--barriers B]\n");
            return 2;
        }
    }
    double t0 = now();
    g.ref_us = (uint32_t)(uint64_t)(t0 * 1e6);
    OK(flit_init(NULL));
    double t1 = now();
    double heap0 = heap_bytes();
    OK(flit_ep_create(NULL, &g.ep));
    double t2 = now();
    double heap1 = heap_bytes();
    double vmsize = status_kb("VmSize:"), vmrss = status_kb("VmRSS:");
    uint32_t own0 = (uint32_t)(own_shm_mb(flit_job_rank().idx) * 1024);
    uint32_t me = flit_job_rank().idx, n = flit_job_size();
    OK(flit_am_register(g.ep, flit_handler(H_PING), on_ping, NULL));
    OK(flit_am_register(g.ep, flit_handler(H_PONG), on_pong, NULL));
    OK(flit_am_register(g.ep, flit_handler(H_DONE), on_count, (void *)&g.done));
    OK(flit_am_register(g.ep, flit_handler(H_A2A), on_count, (void *)&g.a2a));
    OK(flit_am_register(g.ep, flit_handler(H_STATS), on_stats, NULL));
    OK(flit_barrier(g.ep));
    struct timespec first_barrier;
    clock_gettime(CLOCK_REALTIME, &first_barrier);
    double shm_create = me == 0 ? shm_used_mb() : 0;

    /* 8-byte one-way latency between ranks 0 and 1; the others sleep. Timed
       in batches: on a loaded machine the median batch is the figure, the
       fastest one what the pair does when it has its CPUs. */
    double lat_us = 0, lat_min_us = 0;
    if (n >= 2 && me <= 1) {
        uint32_t batch = iters < 2000 ? iters / 10 + 1 : 200, nb = iters / batch + 1;
        uint32_t args[2] = {0, 0};
        if (me == 0) {
            double *t = calloc(nb, sizeof *t);
            if (!t)
                die("calloc", FLIT_ERR_NO_MEMORY);
            for (uint32_t b = 0; b <= nb; b++) { /* batch 0 warms up */
                double start = now();
                for (uint32_t i = 0; i < batch; i++) {
                    OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_PING), args, 2,
                                     0));
                    spin_for(&g.pongs, b * batch + i + 1);
                }
                if (b > 0)
                    t[b - 1] = (now() - start) / batch / 2 * 1e6;
            }
            qsort(t, nb, sizeof *t, cmp_double);
            lat_us = t[nb / 2];
            lat_min_us = t[0];
            free(t);
        } else {
            spin_for(&g.pings, (nb + 1) * batch);
        }
    }
    if (me == 0)
        for (uint32_t r = 1; r < n; r++)
            OK(flit_am_short(g.ep, flit_rank(r), flit_handler(H_DONE), NULL, 0, 0));
    else
        wait_for(&g.done, 1);

    /* All-to-all: one short message to every other rank. */
    for (uint32_t k = 1; k < n; k++)
        OK(flit_am_short(g.ep, flit_rank((me + k) % n), flit_handler(H_A2A), NULL, 0, 0));
    wait_for(&g.a2a, n - 1);
    OK(flit_barrier(g.ep));
    double vmrss_a2a = status_kb("VmRSS:");
    double heap2 = heap_bytes();
    uint32_t own1 = (uint32_t)(own_shm_mb(me) * 1024);
    double shm_a2a = me == 0 ? shm_used_mb() : 0;

    double b0 = now();
    for (uint32_t i = 0; i < barriers; i++)
        OK(flit_barrier(g.ep));
    double barrier_us = (now() - b0) / barriers * 1e6;

    uint32_t st[11] = {(uint32_t)((t1 - t0) * 1e6),
                       (uint32_t)((t2 - t1) * 1e6),
                       (uint32_t)vmsize,
                       (uint32_t)vmrss,
                       (uint32_t)vmrss_a2a,
                       own0,
                       own1,
                       (uint32_t)((heap1 - heap0) / 1024),
                       (uint32_t)((heap2 - heap0) / 1024),
                       (uint32_t)(uint64_t)(t0 * 1e6),
                       (uint32_t)(uint64_t)(t2 * 1e6)};
    if (me != 0) {
        OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_STATS), st, 11, 0));
    } else {
        on_stats(NULL, NULL, 0, st, 11, NULL);
        wait_for(&g.stats, n);
        const char *tp = getenv("FLIT_TRANSPORT");
        printf("scale N=%u transport=%s init_s=%.4f create_s=%.4f after_s=%.4f "
               "vmsize_mb=%.1f "
               "vmrss_mb=%.1f vmrss_a2a_mb=%.1f shm_create_mb=%.2f shm_a2a_mb=%.2f "
               "files_mb=%.2f files_a2a_mb=%.2f lat_us=%.3f lat_min_us=%.3f "
               "barrier_us=%.1f ep_heap_kb=%.0f ep_heap_a2a_kb=%.0f "
               "first_barrier_epoch=%.3f\n",
               n, tp && *tp ? tp : "shm", g.init_s, g.create_s,
               (double)(g.last_end_us - g.last_start_us) * 1e-6, g.vmsize_mb, g.vmrss_mb,
               g.vmrss_a2a_mb, shm_create, shm_a2a, g.files_mb, g.files_a2a_mb, lat_us,
               lat_min_us, barrier_us, g.heap_kb, g.heap_a2a_kb,
               (double)first_barrier.tv_sec + first_barrier.tv_nsec * 1e-9);
        fflush(stdout);
    }
    double f0 = now();
    OK(flit_ep_destroy(g.ep));
    OK(flit_finalize());
    if (me == 0) {
        printf("scale-end N=%u finalize_s=%.4f\n", n, now() - f0);
        fflush(stdout);
    }
    return 0;
}
