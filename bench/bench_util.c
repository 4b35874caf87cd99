/* SPDX-License-Identifier: BSD-3-Clause */
/* See bench_util.h. */
#include "bench_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* ---- time and statistics ---- */

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_REPS 15

static uint64_t round_to(uint64_t n, uint64_t mult)
{
    n = (n + mult - 1) / mult * mult;
    return n ? n : mult;
}

static _Thread_local double spread_lo = NAN, spread_hi = NAN;

void bench_last_spread(double *lo, double *hi)
{
    *lo = spread_lo;
    *hi = spread_hi;
}

double bench_measure(bench_run_fn run, void *ctx, uint64_t target_ns, int reps,
                     uint64_t mult, uint64_t max_n)
{
    spread_lo = spread_hi = NAN;
    if (reps < 1)
        reps = 1;
    if (reps > MAX_REPS)
        reps = MAX_REPS;
    if (mult == 0)
        mult = 1;
    max_n = round_to(max_n, mult);
    uint64_t warm_ns = target_ns / 10, n = mult, t = run(ctx, n);
    if (t == UINT64_MAX)
        return NAN;
    while (t < warm_ns && n < max_n) {
        /* Aim a little past the warm-up time, at most 16 times further. */
        double grow = t ? (double)warm_ns * 1.3 / (double)t : 16;
        grow = grow < 2 ? 2 : grow > 16 ? 16 : grow;
        n = round_to((uint64_t)((double)n * grow), mult);
        if (n > max_n)
            n = max_n;
        t = run(ctx, n);
        if (t == UINT64_MAX)
            return NAN;
    }
    double per = (double)(t ? t : 1) / (double)n;
    double want = (double)target_ns / reps / per;
    uint64_t rn = want >= (double)max_n ? max_n : round_to((uint64_t)want, mult);
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        uint64_t tr = run(ctx, rn);
        if (tr == UINT64_MAX)
            return NAN;
        v[r] = (double)tr / (double)rn;
    }
    double median = bench_median(v, reps); /* sorts v */
    spread_lo = median > 0 ? v[0] / median : NAN;
    spread_hi = median > 0 ? v[reps - 1] / median : NAN;
    return median;
}

/* ---- formatting ---- */

const char *bench_fmt_size(char *buf, size_t len, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (bytes >= 1024 && u < 3) {
        bytes /= 1024;
        u++;
    }
    if (bytes == floor(bytes))
        snprintf(buf, len, "%.0f %s", bytes, units[u]);
    else
        snprintf(buf, len, "%.*f %s",
                 bytes < 10    ? 2
                 : bytes < 100 ? 1
                               : 0,
                 bytes, units[u]);
    return buf;
}

bool bench_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return false;
    unsigned shift = 0;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        return false;
    }
    if (*end == 'i' && shift)
        end++;
    if ((*end == 'B' || *end == 'b') && shift)
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)(v << shift);
    return true;
}

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *colon = strchr(line, ':');
        if (colon) {
            colon += strspn(colon + 1, " \t") + 1;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, len, "%s", colon);
        }
        break;
    }
    fclose(f);
}

void bench_host_info(char *buf, size_t len)
{
    char host[256] = "?", model[256];
    gethostname(host, sizeof host - 1);
    cpu_model(model, sizeof model);
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.release, sizeof u.release, "?");
    snprintf(buf, len, "%s (%s, %ld CPUs online, Linux %s)", host, model,
             sysconf(_SC_NPROCESSORS_ONLN), u.release);
}

/* Jiffies since boot, all CPUs together: total and idle (with iowait). */
static bool cpu_times(unsigned long long *total, unsigned long long *idle)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return false;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5)
        return false;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += v[i];
    *idle = v[3] + v[4];
    return true;
}

double bench_cpus_busy(unsigned ms)
{
    unsigned long long t0, i0, t1, i1;
    if (!cpu_times(&t0, &i0))
        return -1;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    if (!cpu_times(&t1, &i1) || t1 <= t0)
        return -1;
    double busy = 1 - (double)(i1 - i0) / (double)(t1 - t0);
    return busy * (double)sysconf(_SC_NPROCESSORS_ONLN);
}

bool bench_noisy(uint64_t waited_ns, uint64_t elapsed_ns, double *share)
{
    double sh = elapsed_ns ? (double)waited_ns / (double)elapsed_ns : 0;
    if (share)
        *share = sh;
    return sh > BENCH_NOISY_SHARE;
}

/* ---- what else runs ---- */

#define MAX_PROCS 8192
#define BUSIEST   3

/* One process's CPU time so far, from /proc/PID/stat. */
struct proc_time {
    int pid, ppid;
    unsigned long long ticks; /* utime + stime */
    char comm[24];
};

/* Fields after the command name, which may hold spaces and parentheses:
   state ppid ... utime (14th field of the line) stime (15th). */
static bool read_proc(int pid, struct proc_time *p)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false; /* gone meanwhile */
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char *open = ok ? strchr(line, '(') : NULL, *close = ok ? strrchr(line, ')') : NULL;
    if (!open || !close || close < open)
        return false;
    unsigned long long ut, st;
    char state;
    if (sscanf(close + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state,
               &p->ppid, &ut, &st) != 4)
        return false;
    int n = (int)(close - open - 1);
    snprintf(p->comm, sizeof p->comm, "%.*s", n < 0 ? 0 : n, open + 1);
    p->pid = pid;
    p->ticks = ut + st;
    return true;
}

static int by_pid(const void *x, const void *y)
{
    const struct proc_time *a = x, *b = y;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

/* Every process's CPU time, at most max, by pid; their number. */
static int snapshot(struct proc_time *p, int max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e; n < max && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end == '\0' && pid > 0 && read_proc((int)pid, &p[n]))
            n++;
    }
    closedir(d);
    qsort(p, (size_t)n, sizeof *p, by_pid); /* busiest() merges by pid */
    return n;
}

static bool is_job(const struct proc_time *p)
{
    pid_t self = getpid(), parent = getppid();
    return p->pid == self || p->pid == parent || p->ppid == parent;
}

/* "; busiest: cc1 (pid 812) 97%, ..." from the two snapshots, over secs;
   returns the CPUs all of them together kept busy. */
static double busiest(char *buf, size_t len, const struct proc_time *a, int na,
                      const struct proc_time *b, int nb, double secs)
{
    struct proc_time top[BUSIEST];
    unsigned long long used[BUSIEST] = {0}, all = 0;
    int ntop = 0;
    for (int j = 0, i = 0; j < nb; j++) {
        while (i < na && a[i].pid < b[j].pid)
            i++;
        if (i >= na || a[i].pid != b[j].pid || is_job(&b[j]) || b[j].ticks <= a[i].ticks)
            continue;
        unsigned long long d = b[j].ticks - a[i].ticks;
        all += d;
        int at = ntop < BUSIEST ? ntop++ : BUSIEST; /* insertion, largest first */
        while (at > 0 && used[at - 1] < d) {
            if (at < BUSIEST)
                top[at] = top[at - 1], used[at] = used[at - 1];
            at--;
        }
        if (at < BUSIEST)
            top[at] = b[j], used[at] = d;
    }
    double hz = (double)sysconf(_SC_CLK_TCK);
    size_t at = strlen(buf);
    snprintf(buf + at, len - at, "; busiest: %s", ntop ? "" : "none");
    for (int k = 0; k < ntop; k++) {
        at = strlen(buf);
        snprintf(buf + at, len - at, "%s%s (pid %d) %.0f%%", k ? ", " : "", top[k].comm,
                 top[k].pid, (double)used[k] / hz / secs * 100);
    }
    return (double)all / hz / secs;
}

double bench_others(char *buf, size_t len, unsigned ms)
{
    struct proc_time *a = malloc(2 * MAX_PROCS * sizeof *a);
    struct proc_time *b = a ? a + MAX_PROCS : NULL;
    int na = a ? snapshot(a, MAX_PROCS) : 0;
    uint64_t t0 = bench_now_ns();
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    int nb = b ? snapshot(b, MAX_PROCS) : 0;
    double secs = (double)(bench_now_ns() - t0) / 1e9;
    char procs[512] = "";
    double others = na && nb ? busiest(procs, sizeof procs, a, na, b, nb, secs) : -1;
    free(a);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (others >= 0)
        snprintf(buf, len, "%.1f of %ld CPUs busy with other work", others, cpus);
    else
        snprintf(buf, len, "other work unknown (no /proc)");
    double l1, l5, l15;
    FILE *f = fopen("/proc/loadavg", "r");
    size_t at = strlen(buf);
    if (f && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        snprintf(buf + at, len - at, ", load average %.2f %.2f %.2f", l1, l5, l15);
    if (f)
        fclose(f);
    at = strlen(buf);
    snprintf(buf + at, len - at, "%s", procs);
    return others;
}

uint64_t bench_runq_wait_ns(void)
{
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return 0;
    unsigned long long run, wait;
    int n = fscanf(f, "%llu %llu", &run, &wait);
    fclose(f);
    return n == 2 ? wait : 0;
}

/* ---- memcpy baseline ---- */

struct copy {
    void *dst;
    const void *src;
    size_t size;
};

static uint64_t copy_n(void *ctx, uint64_t n)
{
    struct copy *c = ctx;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        memcpy(c->dst, c->src, c->size);
        /* Keeps the compiler from dropping copies nobody reads. */
        __asm__ volatile("" : : "r"(c->dst) : "memory");
    }
    return bench_now_ns() - t0;
}

double bench_memcpy_mbps(size_t size, uint64_t target_ns)
{
    size_t alloc = (size + 4095) / 4096 * 4096;
    if (alloc == 0)
        alloc = 4096;
    void *src = aligned_alloc(4096, alloc), *dst = aligned_alloc(4096, alloc);
    if (!src || !dst) {
        free(src);
        free(dst);
        return 0;
    }
    memset(src, 0x5a, alloc);
    memset(dst, 0, alloc);
    struct copy c = {dst, src, size};
    double ns = bench_measure(copy_n, &c, target_ns, 3, 1, 1ull << 32);
    free(src);
    free(dst);
    return ns > 0 ? (double)size / ns * 1e3 : 0;
}

/* ---- raw shared memory ---- */

#define RING_SLOTS   1024u          /* 64 KiB of slots */
#define RING_PUBLISH 64u            /* the consumer publishes its tail this often */
#define STALL_NS     10000000000ull /* a side that waits this long gives up */
#define PIPE_BYTES   (256u << 10)   /* the byte pipe: flit's shm ring size */
#define PIPE_PIECE   (64u << 10)    /* the most one piece carries */

struct slot {
    _Atomic uint64_t seq; /* message number + 1 once the slot is full */
    uint64_t data[7];
};

/*
 * The file. Each counter has 128 bytes to itself: the adjacent-line
 * prefetcher would otherwise make the two sides share a line pair.
 */
struct raw_shm {
    _Alignas(128) _Atomic uint64_t ping; /* written by the initiator */
    _Alignas(128) _Atomic uint64_t pong; /* written by the echo side */
    _Alignas(128) _Atomic uint64_t line; /* the one-line ping-pong: both */
    _Alignas(128) _Atomic uint64_t tail; /* ring: messages consumed */
    _Alignas(128) struct slot slots[RING_SLOTS];
    _Alignas(128) _Atomic uint64_t pipe_head; /* bytes of the pipe written */
    _Alignas(128) _Atomic uint64_t pipe_tail; /* bytes of the pipe read */
    _Alignas(4096) uint8_t pipe[PIPE_BYTES];
};

struct bench_raw {
    struct raw_shm *shm;
    uint64_t flag_seq;  /* round trips so far (both sides) */
    uint64_t line_seq;  /* the same, on the single line */
    uint64_t ring_pos;  /* messages produced / consumed so far */
    uint64_t tail_seen; /* producer: the consumer's tail, last read */
    uint64_t sink;      /* consumer: what it read, so it reads */
    uint64_t pipe_pos;  /* the pipe: bytes passed so far (both sides) */
    uint64_t pipe_seen; /* the other side's counter, last read */
};

static void raw_name(char *buf, size_t len, uint32_t key)
{
    snprintf(buf, len, "/flit-bench-%u", key);
}

static bench_raw_t *raw_map(uint32_t key, bool create)
{
    char name[64];
    raw_name(name, sizeof name, key);
    int fd = create ? shm_open(name, O_RDWR | O_CREAT | O_TRUNC, 0600)
                    : shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        fprintf(stderr, "raw baseline: shm_open %s: %s\n", name, strerror(errno));
        return NULL;
    }
    if (create && ftruncate(fd, sizeof(struct raw_shm)) != 0) {
        fprintf(stderr, "raw baseline: ftruncate %s: %s\n", name, strerror(errno));
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    void *mem =
        mmap(NULL, sizeof(struct raw_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    bench_raw_t *raw = calloc(1, sizeof *raw);
    if (mem == MAP_FAILED || !raw) {
        fprintf(stderr, "raw baseline: mapping %s: %s\n", name,
                mem == MAP_FAILED ? strerror(errno) : "out of memory");
        if (mem != MAP_FAILED)
            munmap(mem, sizeof(struct raw_shm));
        free(raw);
        if (create)
            shm_unlink(name);
        return NULL;
    }
    raw->shm = mem;
    return raw;
}

bench_raw_t *bench_raw_create(uint32_t key)
{
    return raw_map(key, true);
}

bench_raw_t *bench_raw_attach(uint32_t key)
{
    return raw_map(key, false);
}

void bench_raw_unlink(uint32_t key)
{
    char name[64];
    raw_name(name, sizeof name, key);
    shm_unlink(name);
}

void bench_raw_close(bench_raw_t *raw)
{
    if (!raw)
        return;
    munmap(raw->shm, sizeof(struct raw_shm));
    free(raw);
}

/* One spin of a wait; true once the other side has been silent too long. */
static inline bool stalled(uint32_t *spins, uint64_t *since)
{
    bench_cpu_relax();
    if (++*spins & 0xffff)
        return false;
    uint64_t now = bench_now_ns();
    if (*since == 0)
        *since = now;
    return now - *since > STALL_NS;
}

/* Spins until *a == want; false if the other side stalled. */
static bool wait_eq(_Atomic uint64_t *a, uint64_t want)
{
    uint32_t spins = 0;
    uint64_t since = 0;
    /* acquire: what the other side wrote before its store is visible after */
    while (atomic_load_explicit(a, memory_order_acquire) != want)
        if (stalled(&spins, &since))
            return false;
    return true;
}

/*
 * The flags of a ping-pong: the initiator writes ask, the echo side
 * answer. Two lines: round trip k asks k on ping and is answered k on
 * pong. One line: both write it, 2k - 1 asking and 2k answering.
 */
struct flags {
    _Atomic uint64_t *ask, *answer;
    uint64_t *seq;
    uint64_t step;
};

static struct flags flags_of(bench_raw_t *raw, bool one_line)
{
    struct raw_shm *s = raw->shm;
    if (one_line)
        return (struct flags){&s->line, &s->line, &raw->line_seq, 2};
    return (struct flags){&s->ping, &s->pong, &raw->flag_seq, 1};
}

uint64_t bench_raw_ping(bench_raw_t *raw, uint64_t n, bool one_line)
{
    struct flags f = flags_of(raw, one_line);
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t answer = ++*f.seq * f.step;
        /* release: nothing to publish but the flag; the pair mirrors echo's */
        atomic_store_explicit(f.ask, answer - f.step + 1, memory_order_release);
        if (!wait_eq(f.answer, answer))
            return UINT64_MAX;
    }
    return bench_now_ns() - t0;
}

uint64_t bench_raw_echo(bench_raw_t *raw, uint64_t n, bool one_line)
{
    struct flags f = flags_of(raw, one_line);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t answer = ++*f.seq * f.step;
        if (!wait_eq(f.ask, answer - f.step + 1))
            return UINT64_MAX;
        /* release: answers only after the ping was seen */
        atomic_store_explicit(f.answer, answer, memory_order_release);
    }
    return 0;
}

uint64_t bench_raw_produce(bench_raw_t *raw, uint64_t n)
{
    struct raw_shm *s = raw->shm;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t pos = raw->ring_pos;
        uint32_t spins = 0;
        uint64_t since = 0;
        while (pos - raw->tail_seen >= RING_SLOTS) {
            /* acquire: the consumer is done with the slots before tail */
            raw->tail_seen = atomic_load_explicit(&s->tail, memory_order_acquire);
            if (stalled(&spins, &since))
                return UINT64_MAX;
        }
        struct slot *sl = &s->slots[pos % RING_SLOTS];
        sl->data[0] = pos; /* the 8-byte message */
        /* release: the message is in the slot before the slot says full */
        atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
        raw->ring_pos = pos + 1;
    }
    if (!wait_eq(&s->tail, raw->ring_pos))
        return UINT64_MAX;
    raw->tail_seen = raw->ring_pos;
    return bench_now_ns() - t0;
}

uint64_t bench_raw_consume(bench_raw_t *raw, uint64_t n)
{
    struct raw_shm *s = raw->shm;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t pos = raw->ring_pos;
        struct slot *sl = &s->slots[pos % RING_SLOTS];
        if (!wait_eq(&sl->seq, pos + 1))
            return UINT64_MAX;
        raw->sink += sl->data[0];
        raw->ring_pos = pos + 1;
        if (raw->ring_pos % RING_PUBLISH == 0 || i + 1 == n)
            /* release: our reads of the slots are done before we free them */
            atomic_store_explicit(&s->tail, raw->ring_pos, memory_order_release);
    }
    return 0;
}

/*
 * The byte pipe. A message goes in pieces of up to PIPE_PIECE bytes, each
 * at the next 64-byte boundary of the pipe, or at its start when it would
 * not fit before the end; both sides derive the same places from the size.
 * Returns where the piece of len bytes at *pos starts, and moves *pos past
 * it.
 */
static uint64_t pipe_place(uint64_t *pos, size_t len)
{
    uint64_t at = *pos;
    if (at % PIPE_BYTES + len > PIPE_BYTES)
        at += PIPE_BYTES - at % PIPE_BYTES;
    *pos = at + ((len + 63) & ~(uint64_t)63);
    return at;
}

/* Waits until *a reaches at least want (caching it in *seen). */
static bool wait_ge(_Atomic uint64_t *a, uint64_t want, uint64_t *seen)
{
    uint32_t spins = 0;
    uint64_t since = 0;
    while (*seen < want) {
        /* acquire: what the other side wrote before its store is visible */
        *seen = atomic_load_explicit(a, memory_order_acquire);
        if (*seen < want && stalled(&spins, &since))
            return false;
    }
    return true;
}

uint64_t bench_raw_pipe_send(bench_raw_t *raw, const void *src, size_t size, uint64_t n)
{
    struct raw_shm *s = raw->shm;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < n; i++) {
        for (size_t off = 0; off < size;) {
            size_t len = size - off < PIPE_PIECE ? size - off : PIPE_PIECE;
            uint64_t at = pipe_place(&raw->pipe_pos, len);
            /* room: the reader is done with what was there a lap ago */
            uint64_t lap = raw->pipe_pos > PIPE_BYTES ? raw->pipe_pos - PIPE_BYTES : 0;
            if (!wait_ge(&s->pipe_tail, lap, &raw->pipe_seen))
                return UINT64_MAX;
            memcpy(s->pipe + at % PIPE_BYTES, (const uint8_t *)src + off, len);
            /* release: the bytes are in before the reader may see them */
            atomic_store_explicit(&s->pipe_head, raw->pipe_pos, memory_order_release);
            off += len;
        }
    }
    if (!wait_ge(&s->pipe_tail, raw->pipe_pos, &raw->pipe_seen))
        return UINT64_MAX;
    return bench_now_ns() - t0;
}

uint64_t bench_raw_pipe_recv(bench_raw_t *raw, void *dst, size_t size, uint64_t n)
{
    struct raw_shm *s = raw->shm;
    for (uint64_t i = 0; i < n; i++) {
        for (size_t off = 0; off < size;) {
            size_t len = size - off < PIPE_PIECE ? size - off : PIPE_PIECE;
            uint64_t at = pipe_place(&raw->pipe_pos, len);
            if (!wait_ge(&s->pipe_head, raw->pipe_pos, &raw->pipe_seen))
                return UINT64_MAX;
            memcpy((uint8_t *)dst + off, s->pipe + at % PIPE_BYTES, len);
            /* release: our reads are done before the writer reuses the bytes */
            atomic_store_explicit(&s->pipe_tail, raw->pipe_pos, memory_order_release);
            off += len;
        }
    }
    return 0;
}
