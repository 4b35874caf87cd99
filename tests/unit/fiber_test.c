/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fibers (src/platform/fiber.c), with the own switch and with ucontext:
 * a ping-pong that checks every step, 100 fibers interleaved whose stack
 * arrays and register-held locals must survive every switch, floating-point
 * values and control state (rounding mode) kept per fiber, stacks reused
 * from the pool, ~100 KiB of recursion, a fiber resumed by another thread,
 * a fiber resuming a fiber, an overflow stopped by the guard page, blocks
 * held by a stopped fiber not taken for leaks (under ASan), and the cost of
 * a round trip (printed, not asserted).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "platform/fiber.h"
#include "unit.h"
#include "util/config.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNIT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNIT_ASAN 1
#endif
#endif
#ifdef UNIT_ASAN
#include <sanitizer/lsan_interface.h>
#endif

/* Makes values opaque to the compiler: it cannot recompute them after a
   call, so the ones live across a yield sit in callee-saved registers (or
   spill to the fiber's stack), which is what the switch must keep. */
#define OPAQUE(x) __asm__ __volatile__("" : "+r"(x))

/* The kernel's thread id, asked afresh: pthread_self() is declared const,
   and a compiler may reuse its value across a yield. */
static long thread_id(void)
{
    return syscall(SYS_gettid);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

/* ---- ping-pong: both sides check the other's value at every step ---- */

enum { PP_STEPS = 1000 };

struct pp {
    struct fl_fiber *self;
    int to_main;  /* fiber -> main */
    int to_fiber; /* main -> fiber */
    bool returned;
};

static void pp_fn(struct fl_fiber *self, void *arg)
{
    struct pp *p = arg;
    CHECK(self == p->self);
    for (int i = 0; i < PP_STEPS; i++) {
        p->to_main = i + 1;
        fl_fiber_yield(self);
        if (p->to_fiber != -(i + 1))
            FAIL("ping-pong step %d: fiber got %d", i, p->to_fiber);
    }
    p->returned = true;
}

static void test_ping_pong(void)
{
    struct pp p = {0};
    struct fl_fiber *f = fl_fiber_new(pp_fn, &p);
    CHECK(f != NULL);
    p.self = f;
    for (int i = 0; i < PP_STEPS; i++) {
        CHECK(!fl_fiber_resume(f));
        if (p.to_main != i + 1)
            FAIL("ping-pong step %d: main got %d", i, p.to_main);
        CHECK(!p.returned);
        p.to_fiber = -(i + 1);
    }
    CHECK(fl_fiber_resume(f)); /* the last resume: fn returns */
    CHECK(p.returned);
    fl_fiber_free(f);

    /* A fiber whose fn returns at once; one never started is freed too. */
    struct pp q = {0};
    f = fl_fiber_new(pp_fn, &q);
    CHECK(f != NULL);
    fl_fiber_free(f);
    CHECK(!q.returned && q.to_main == 0);
}

/* ---- many fibers round-robin: private stacks, callee-saved registers ---- */

enum { MANY = 100, MANY_STEPS = 20, ARR = 96 };

struct many {
    int id;
    int step; /* last step the fiber reached */
};

static void many_fn(struct fl_fiber *self, void *arg)
{
    struct many *m = arg;
    uint64_t id = (uint64_t)m->id;
    uint64_t arr[ARR];
    for (int j = 0; j < ARR; j++)
        arr[j] = mix(id, (uint64_t)j);
    uint64_t r0 = mix(id, 1000), r1 = mix(id, 1001), r2 = mix(id, 1002);
    uint64_t r3 = mix(id, 1003), r4 = mix(id, 1004), r5 = mix(id, 1005);
    for (int s = 0; s < MANY_STEPS; s++) {
        OPAQUE(r0);
        OPAQUE(r1);
        OPAQUE(r2);
        OPAQUE(r3);
        OPAQUE(r4);
        OPAQUE(r5);
        m->step = s;
        fl_fiber_yield(self);
        if (r0 != mix(id, 1000 + (uint64_t)s * 6) ||
            r1 != mix(id, 1001 + (uint64_t)s * 6) ||
            r2 != mix(id, 1002 + (uint64_t)s * 6) ||
            r3 != mix(id, 1003 + (uint64_t)s * 6) ||
            r4 != mix(id, 1004 + (uint64_t)s * 6) ||
            r5 != mix(id, 1005 + (uint64_t)s * 6))
            FAIL("fiber %d step %d: a local kept in a register changed", m->id, s);
        for (int j = 0; j < ARR; j++)
            if (arr[j] != mix(id + (uint64_t)s * MANY, (uint64_t)j))
                FAIL("fiber %d step %d: stack array [%d] changed", m->id, s, j);
        /* New values for the next step: a stale copy would not match. */
        for (int j = 0; j < ARR; j++)
            arr[j] = mix(id + (uint64_t)(s + 1) * MANY, (uint64_t)j);
        uint64_t b = 1000 + (uint64_t)(s + 1) * 6;
        r0 = mix(id, b), r1 = mix(id, b + 1), r2 = mix(id, b + 2);
        r3 = mix(id, b + 3), r4 = mix(id, b + 4), r5 = mix(id, b + 5);
    }
    m->step = MANY_STEPS;
}

static void test_many(void)
{
    static struct many m[MANY];
    struct fl_fiber *f[MANY];
    for (int i = 0; i < MANY; i++) {
        m[i] = (struct many){.id = i, .step = -1};
        f[i] = fl_fiber_new(many_fn, &m[i]);
        CHECK(f[i] != NULL);
    }
    /* The resumer's own register-held locals must survive too. */
    uint64_t k0 = mix(7, 1), k1 = mix(7, 2), k2 = mix(7, 3);
    OPAQUE(k0);
    OPAQUE(k1);
    OPAQUE(k2);
    for (int s = 0; s <= MANY_STEPS; s++) {
        for (int i = 0; i < MANY; i++) {
            bool done = fl_fiber_resume(f[i]);
            if (done != (s == MANY_STEPS) || m[i].step != s)
                FAIL("fiber %d at round %d: done %d, step %d", i, s, done, m[i].step);
        }
        if (k0 != mix(7, 1) || k1 != mix(7, 2) || k2 != mix(7, 3))
            FAIL("round %d: the resumer's register-held locals changed", s);
    }
    for (int i = 0; i < MANY; i++)
        fl_fiber_free(f[i]);
}

/* ---- floating point: values in registers, control state per fiber ---- */

enum { FP_STEPS = 50 };

/* One step of a computation done with and without yields in between: out
   of line, so both get exactly the same instructions. */
__attribute__((noinline)) static double fp_step(double x, int i)
{
    return x * 1.0000001 + 1.0 / (double)(i + 3);
}

/* The SSE and x87 rounding controls, or FPCR's. */
static uint64_t fp_control(void)
{
#if defined(__x86_64__)
    uint32_t mxcsr;
    uint16_t fcw;
    __asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
    __asm__ __volatile__("fnstcw %0" : "=m"(fcw));
    return (uint64_t)(mxcsr & 0xffc0) << 16 | fcw; /* no sticky flags */
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
#else
    return 0;
#endif
}

/* Rounding towards +infinity in SSE, x87 and FPCR. */
static void fp_round_up(void)
{
#if defined(__x86_64__)
    uint32_t mxcsr;
    uint16_t fcw;
    __asm__ __volatile__("stmxcsr %0" : "=m"(mxcsr));
    __asm__ __volatile__("fnstcw %0" : "=m"(fcw));
    mxcsr = (mxcsr & ~0x6000u) | 0x4000u;
    fcw = (uint16_t)((fcw & ~0xc00u) | 0x800u);
    __asm__ __volatile__("ldmxcsr %0" : : "m"(mxcsr));
    __asm__ __volatile__("fldcw %0" : : "m"(fcw));
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    fpcr = (fpcr & ~(3ull << 22)) | (1ull << 22);
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
#endif
}

struct fp {
    double out[8];
    uint64_t control_seen;
};

static void fp_fn(struct fl_fiber *self, void *arg)
{
    struct fp *p = arg;
    double a = 1.5, b = 2.25, c = -3.125, d = 1e-3, e = 7.0, g = 0.1, h = 1e6, k = -0.5;
    for (int i = 0; i < FP_STEPS; i++) {
        a = fp_step(a, i), b = fp_step(b, i + 1), c = fp_step(c, i + 2);
        d = fp_step(d, i + 3), e = fp_step(e, i + 4), g = fp_step(g, i + 5);
        h = fp_step(h, i + 6), k = fp_step(k, i + 7);
        fl_fiber_yield(self);
    }
    double out[8] = {a, b, c, d, e, g, h, k};
    memcpy(p->out, out, sizeof out);
    /* This fiber's rounding mode is its own: set here, still set after a
       switch away (where the resumer has its own) and back. */
    fp_round_up();
    uint64_t mine = fp_control();
    fl_fiber_yield(self);
    p->control_seen = fp_control();
    CHECK(p->control_seen == mine);
}

static void test_fp(void)
{
    double want[8] = {1.5, 2.25, -3.125, 1e-3, 7.0, 0.1, 1e6, -0.5};
    for (int i = 0; i < FP_STEPS; i++)
        for (int v = 0; v < 8; v++)
            want[v] = fp_step(want[v], i + v);

    enum { NFP = 4 };
    struct fp p[NFP];
    struct fl_fiber *f[NFP];
    memset(p, 0, sizeof p);
    uint64_t control = fp_control();
    for (int i = 0; i < NFP; i++)
        CHECK((f[i] = fl_fiber_new(fp_fn, &p[i])) != NULL);
    double mine = 0.7;
    for (bool any = true; any;) {
        any = false;
        for (int i = 0; i < NFP; i++)
            if (!fl_fiber_resume(f[i]))
                any = true;
        mine = fp_step(mine, 1);
        if (fp_control() != control)
            FAIL("a fiber's rounding mode leaked into its resumer: %#llx, was %#llx",
                 (unsigned long long)fp_control(), (unsigned long long)control);
    }
    double mine_want = 0.7;
    for (int i = 0; i <= FP_STEPS + 1; i++)
        mine_want = fp_step(mine_want, 1);
    CHECK(memcmp(&mine, &mine_want, sizeof mine) == 0);
    for (int i = 0; i < NFP; i++) {
        if (memcmp(p[i].out, want, sizeof want) != 0)
            FAIL("fiber %d: doubles computed across yields differ", i);
        fl_fiber_free(f[i]);
    }
}

/* ---- stacks: reuse from the pool, deep recursion ---- */

struct deep {
    uintptr_t local_at; /* address of a local: where the stack is */
    int depth;
    uint64_t sum;
};

/* ~1 KiB of stack per level, used after the recursive call returns so that
   nothing can be turned into a loop or dropped. */
static uint64_t recurse(struct fl_fiber *self, int depth, int max)
{
    volatile uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(depth + (int)i);
    uint64_t below = 0;
    if (depth + 1 < max)
        below = recurse(self, depth + 1, max);
    else if (self)
        fl_fiber_yield(self); /* a switch at the bottom of a deep stack */
    uint64_t sum = below;
    for (size_t i = 0; i < sizeof buf; i++)
        sum += buf[i];
    return sum;
}

static void deep_fn(struct fl_fiber *self, void *arg)
{
    struct deep *d = arg;
    volatile int local = 0;
    d->local_at = (uintptr_t)&local;
    d->sum = recurse(self, 0, d->depth);
}

static void test_stacks(void)
{
    struct deep d1 = {.depth = 2};
    struct fl_fiber *f1 = fl_fiber_new(deep_fn, &d1);
    CHECK(f1 != NULL);
    CHECK(!fl_fiber_resume(f1));
    CHECK(fl_fiber_resume(f1));
    fl_fiber_free(f1);

    /* The pool gives the same stack back, and it works as new: ~100 KiB
       deep, with a switch out and back at the bottom. */
    struct deep d2 = {.depth = 100};
    struct fl_fiber *f2 = fl_fiber_new(deep_fn, &d2);
    CHECK(f2 != NULL);
    if (f2 != f1)
        FAIL("a freed fiber's stack was not reused");
    CHECK(!fl_fiber_resume(f2));
    CHECK(fl_fiber_resume(f2));
    if (d2.local_at != d1.local_at)
        FAIL("reused stack: the first frame moved (%#lx, was %#lx)",
             (unsigned long)d2.local_at, (unsigned long)d1.local_at);
    CHECK(d2.sum == recurse(NULL, 0, 100));
    fl_fiber_free(f2);

    /* More stacks than the pool keeps: the rest are unmapped. */
    enum { N = 80 };
    struct fl_fiber *f[N];
    struct deep d[N];
    for (int i = 0; i < N; i++) {
        d[i] = (struct deep){.depth = 1};
        CHECK((f[i] = fl_fiber_new(deep_fn, &d[i])) != NULL);
    }
    for (int i = 0; i < N; i++) {
        CHECK(!fl_fiber_resume(f[i]));
        CHECK(fl_fiber_resume(f[i]));
        fl_fiber_free(f[i]);
    }
    /* Another stack size: the pooled ones do not fit and are dropped. */
    int64_t saved = fl_cfg.fiber_stack;
    fl_cfg.fiber_stack = 64 << 10;
    struct deep d3 = {.depth = 30};
    struct fl_fiber *f3 = fl_fiber_new(deep_fn, &d3);
    CHECK(f3 != NULL);
    CHECK(!fl_fiber_resume(f3));
    CHECK(fl_fiber_resume(f3));
    CHECK(d3.sum == recurse(NULL, 0, 30));
    fl_fiber_free(f3);
    fl_cfg.fiber_stack = saved;
    fl_fiber_pool_drain();
}

/* ---- resumed by another thread ---- */

struct hop {
    long tid[3]; /* the thread each step ran on */
    int step;
};

static void hop_fn(struct fl_fiber *self, void *arg)
{
    struct hop *h = arg;
    uint64_t r0 = mix(3, 3), r1 = mix(4, 4);
    double x = 1.25;
    for (int s = 0; s < 3; s++) {
        OPAQUE(r0);
        OPAQUE(r1);
        h->tid[s] = thread_id();
        h->step = s + 1;
        x = fp_step(x, s);
        if (s < 2)
            fl_fiber_yield(self);
        if (r0 != mix(3, 3) || r1 != mix(4, 4))
            FAIL("a local changed across a resume from another thread");
    }
    double want = 1.25;
    for (int s = 0; s < 3; s++)
        want = fp_step(want, s);
    CHECK(memcmp(&x, &want, sizeof x) == 0);
}

static void *hop_thread(void *arg)
{
    struct fl_fiber *f = arg;
    CHECK(!fl_fiber_resume(f));
    return NULL;
}

static void test_threads(void)
{
    struct hop h = {{0}, 0};
    struct fl_fiber *f = fl_fiber_new(hop_fn, &h);
    CHECK(f != NULL);
    CHECK(!fl_fiber_resume(f));
    CHECK(h.step == 1);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, hop_thread, f) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(h.step == 2);
    CHECK(fl_fiber_resume(f));
    CHECK(h.step == 3);
    long me = thread_id();
    if (h.tid[0] != me || h.tid[1] == me || h.tid[2] != me)
        FAIL("steps ran on threads %ld, %ld, %ld (main %ld)", h.tid[0], h.tid[1],
             h.tid[2], me);
    fl_fiber_free(f);
}

/* ---- a fiber resuming a fiber ---- */

static void inner_fn(struct fl_fiber *self, void *arg)
{
    int *n = arg;
    for (int i = 0; i < 3; i++) {
        (*n)++;
        fl_fiber_yield(self);
    }
    (*n) += 100;
}

static void outer_fn(struct fl_fiber *self, void *arg)
{
    int *n = arg;
    struct fl_fiber *inner = fl_fiber_new(inner_fn, n);
    CHECK(inner != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK(!fl_fiber_resume(inner));
        CHECK(*n == i + 1);
        fl_fiber_yield(self); /* inner stays stopped meanwhile */
    }
    CHECK(fl_fiber_resume(inner));
    CHECK(*n == 103);
    fl_fiber_free(inner);
}

static void test_nested(void)
{
    int n = 0;
    struct fl_fiber *f = fl_fiber_new(outer_fn, &n);
    CHECK(f != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK(!fl_fiber_resume(f));
        CHECK(n == i + 1);
    }
    CHECK(fl_fiber_resume(f));
    CHECK(n == 103);
    fl_fiber_free(f);
}

/* ---- the guard page: an overflow faults instead of corrupting ---- */

static void overflow_fn(struct fl_fiber *self, void *arg)
{
    (void)arg;
    /* 1 KiB a level, a million levels deep: far beyond any stack. */
    uint64_t s = recurse(NULL, 0, 1 << 20);
    fprintf(stderr, "recursion returned %llu\n", (unsigned long long)s);
    fl_fiber_yield(self);
}

static void overflow_child(void)
{
    struct rlimit no_core = {0, 0}; /* a crash expected: leave no core file */
    setrlimit(RLIMIT_CORE, &no_core);
    fl_cfg.fiber_stack = 64 << 10;
    struct fl_fiber *f = fl_fiber_new(overflow_fn, NULL);
    if (!f)
        _exit(98);
    fl_fiber_resume(f);
    _exit(0); /* the stack held a million KiB: no guard page */
}

static void test_guard(void)
{
    static char out[65536];
    int status = unit_run_child(overflow_child, out, sizeof out);
    /* Killed by SIGSEGV; under ASan, its report and abort (or exit 1). */
    bool stopped =
        WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0 &&
                                WEXITSTATUS(status) != 98 && WEXITSTATUS(status) != 99);
    if (!stopped)
        FAIL("a fiber overflowing its stack was not stopped (status %#x): %s", status,
             out);
}

/* ---- LeakSanitizer sees what a stopped fiber's stack points to ---- */

#ifdef UNIT_ASAN
static void hold_fn(struct fl_fiber *self, void *arg)
{
    (void)arg;
    /* The only pointer to the block is on this stack while it is stopped. */
    char *volatile block = malloc(1000);
    CHECK(block != NULL);
    block[0] = 1;
    fl_fiber_yield(self);
    free(block);
}

static void test_leak_roots(void)
{
    struct fl_fiber *f = fl_fiber_new(hold_fn, NULL);
    CHECK(f != NULL);
    CHECK(!fl_fiber_resume(f));
    if (__lsan_do_recoverable_leak_check() != 0)
        FAIL("a block held by a stopped fiber's stack was reported as leaked");
    CHECK(fl_fiber_resume(f));
    fl_fiber_free(f);
}
#else
static void test_leak_roots(void)
{
}
#endif

/* ---- a fiber made for one switch runs on after the setting changes ---- */

static void test_mixed(void)
{
    int64_t saved = fl_cfg.fibers;
    struct pp p = {0};
    struct fl_fiber *f = fl_fiber_new(pp_fn, &p);
    CHECK(f != NULL);
    p.self = f;
    CHECK(!fl_fiber_resume(f));
    fl_cfg.fibers = saved == FL_FIBERS_UCONTEXT ? FL_FIBERS_AUTO : FL_FIBERS_UCONTEXT;
    for (int i = 0; i < PP_STEPS; i++) {
        CHECK(p.to_main == i + 1);
        p.to_fiber = -(i + 1);
        CHECK(fl_fiber_resume(f) == (i == PP_STEPS - 1));
    }
    CHECK(p.returned);
    fl_fiber_free(f);
    fl_cfg.fibers = saved;
}

/* ---- cost of a round trip ---- */

static void bounce_fn(struct fl_fiber *self, void *arg)
{
    long n = *(long *)arg;
    for (long i = 0; i < n; i++)
        fl_fiber_yield(self);
}

/* Round trips timed; fewer under AddressSanitizer, where the figure says
   little and every switch costs ten times more. */
#ifdef UNIT_ASAN
enum { BENCH_ASM = 200000, BENCH_UCONTEXT = 20000 };
#else
enum { BENCH_ASM = 1000000, BENCH_UCONTEXT = 100000 };
#endif

static double round_trip_ns(long n)
{
    struct fl_fiber *f = fl_fiber_new(bounce_fn, &n);
    CHECK(f != NULL);
    CHECK(!fl_fiber_resume(f)); /* first entry out of the timing */
    double t0 = unit_now();
    for (long i = 1; i < n; i++)
        fl_fiber_resume(f);
    double t1 = unit_now();
    CHECK(fl_fiber_resume(f));
    fl_fiber_free(f);
    return (t1 - t0) * 1e9 / (double)(n - 1);
}

static void run_all(const char *kind)
{
    CHECK(strcmp(fl_fiber_kind(), kind) == 0);
    test_ping_pong();
    test_many();
    test_fp();
    test_stacks();
    test_threads();
    test_nested();
    test_mixed();
    test_leak_roots();
    test_guard();
}

int main(void)
{
    unit_clean_env();
    CHECK_OK(fl_config_load());
    CHECK(fl_cfg.fiber_stack == 256 << 10);
    CHECK(fl_cfg.fibers == FL_FIBERS_AUTO);

    bool have_asm = strcmp(fl_fiber_kind(), "asm") == 0;
#if defined(__x86_64__)
    /* Where a CET shadow stack is on (rdsspq gives non-zero) flit uses
       ucontext, which knows how to move it. */
    uint64_t ssp = 0;
    __asm__ __volatile__(".byte 0xf3, 0x48, 0x0f, 0x1e, 0xc8" : "+a"(ssp));
    CHECK(have_asm == (ssp == 0));
#elif defined(__aarch64__)
    CHECK(have_asm);
#endif
    double asm_ns = 0;
    if (have_asm) {
        run_all("asm");
        asm_ns = round_trip_ns(BENCH_ASM);
    }
    fl_cfg.fibers = FL_FIBERS_UCONTEXT;
    run_all("ucontext");
    double uc_ns = round_trip_ns(BENCH_UCONTEXT);
    fl_fiber_pool_drain();
    if (have_asm)
        printf("fiber switch: asm %.1f ns, ucontext %.1f ns per round trip\n", asm_ns,
               uc_ns);
    else
        printf("fiber switch: asm none, ucontext %.1f ns per round trip\n", uc_ns);
    return unit_exit_status();
}
