/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by flit-bench and flit-demo that know nothing of flit:
 * the clock, statistics, size formatting and parsing, and the baselines a
 * flit figure is printed beside:
 *
 *  - raw flag ping-pong: two processes bounce a counter through a
 *    cache-line pair in a /dev/shm file; the floor of one-way latency
 *  - raw SPSC ring: 64-byte slots in the same file, streamed one way; the
 *    floor of the small-message rate
 *  - single-core memcpy, cache-warm: what one copy costs; a long message
 *    on shared memory is one copy, so this is the reference for bandwidth
 *
 * Names start with bench_: this is neither the library (flit_) nor its
 * inside (fl_).
 */
#ifndef FLIT_BENCH_UTIL_H
#define FLIT_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- time and statistics ---- */

uint64_t bench_now_ns(void);
/* Median of n values; reorders v. */
double bench_median(double *v, int n);
static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/*
 * The measuring loop every figure uses. run(ctx, n) does n iterations and
 * returns the nanoseconds they took. bench_measure first grows n until one
 * run lasts a tenth of target_ns (the warm-up: caches, rings and branch
 * predictors reach the state they keep), then does reps runs of an n chosen
 * so that all of them together last about target_ns. n stays a multiple of
 * mult and at most max_n. Returns the median nanoseconds per iteration, or
 * NAN when a run returned UINT64_MAX (it could not measure: the figure is
 * missing).
 */
typedef uint64_t (*bench_run_fn)(void *ctx, uint64_t n);
double bench_measure(bench_run_fn run, void *ctx, uint64_t target_ns, int reps,
                     uint64_t mult, uint64_t max_n);
/* The spread of this thread's last bench_measure: its fastest and slowest
   run, per iteration, as fractions of the median it returned (*lo <= 1 <=
   *hi); both NAN when it measured nothing. A figure derived from the time
   by a factor (latency = round trip / 2) spreads by the same fractions. */
void bench_last_spread(double *lo, double *hi);

/* ---- formatting ---- */

/* "0 B", "8 B", "4 KiB", "1.5 MiB" into buf; returns buf. */
const char *bench_fmt_size(char *buf, size_t len, double bytes);
/* "123", "4k", "64K", "4M", "1g" (binary multiples); false if not a size. */
bool bench_parse_size(const char *s, size_t *out);
/* A line of the host: name, CPU model, online CPUs, kernel. */
void bench_host_info(char *buf, size_t len);
/* Nanoseconds this thread has spent runnable but waiting for a CPU (taken
   by other work), from /proc/thread-self/schedstat; 0 if unknown. */
uint64_t bench_runq_wait_ns(void);
/* How many CPUs were busy, on average, over the next ms milliseconds
   (from /proc/stat; the caller sleeps meanwhile); negative if unknown. */
double bench_cpus_busy(unsigned ms);
/*
 * One line on what else ran over the next ms milliseconds (the caller
 * sleeps meanwhile), from /proc: the CPUs other processes kept busy, the
 * load average and the busiest of them, e.g. "1.2 of 2 CPUs busy with
 * other work, load average 5.31 4.80 4.12; busiest: cc1 (pid 812) 97%,
 * ninja (pid 640) 12%". The job's own processes are not other work: this
 * one, its parent (the launcher) and the parent's other children (the
 * other ranks), spinning or not. Returns those CPUs; negative if unknown.
 */
double bench_others(char *buf, size_t len, unsigned ms);

/*
 * Whether a figure measured the scheduler rather than flit: its ranks
 * waited, runnable, for a CPU other work held (waited_ns, from
 * bench_runq_wait_ns or bench_sched_wait_ns) more than BENCH_NOISY_SHARE
 * of the elapsed_ns it took. A spinning peer that loses its CPU for one
 * tick turns 0.2 us into 4 ms, so a figure that is noisy is shown as
 * "noisy", never as a number. *share (when not NULL): waited / elapsed.
 */
#define BENCH_NOISY_SHARE 0.02
bool bench_noisy(uint64_t waited_ns, uint64_t elapsed_ns, double *share);

/* ---- single-core memcpy baseline ---- */

/*
 * Copies size bytes from one buffer to another for about target_ns (after a
 * warm-up, so the buffers are as warm as a repeated send's) and returns the
 * bandwidth in MB/s (1e6 bytes). 0 if memory ran out.
 */
double bench_memcpy_mbps(size_t size, uint64_t target_ns);

/* ---- raw shared-memory baselines ---- */

typedef struct bench_raw bench_raw_t;

/*
 * The creator (rank 0) makes /dev/shm/flit-bench-<key> and maps it; the
 * peer attaches with the same key; the creator unlinks it once the peer has
 * it mapped. Both close. Each prints its own error; NULL on failure.
 */
bench_raw_t *bench_raw_create(uint32_t key);
bench_raw_t *bench_raw_attach(uint32_t key);
void bench_raw_unlink(uint32_t key);
void bench_raw_close(bench_raw_t *raw);

/*
 * Flag ping-pong, n round trips: each side writes its own cache line, or
 * (one_line) both write one line, the floor: one line moving each way.
 * The initiator returns the nanoseconds they took, the echo side 0; either
 * returns UINT64_MAX when the other side made no progress for 10 s (it
 * died, or never started). Both sides must call with the same n and
 * one_line; calls continue where the previous ones left off.
 */
uint64_t bench_raw_ping(bench_raw_t *raw, uint64_t n, bool one_line);
uint64_t bench_raw_echo(bench_raw_t *raw, uint64_t n, bool one_line);

/*
 * SPSC ring of 64-byte slots, n messages of 8 bytes one way. The producer
 * returns the nanoseconds from its first write until the consumer had read
 * the last message; the consumer returns 0. UINT64_MAX as above.
 */
uint64_t bench_raw_produce(bench_raw_t *raw, uint64_t n);
uint64_t bench_raw_consume(bench_raw_t *raw, uint64_t n);

/*
 * A byte pipe as small as flit's shared-memory ring (256 KiB), n messages of
 * size bytes one way in pieces of up to 64 KiB: the sender copies each from
 * src into the pipe, the receiver out of it into dst. What a message that
 * lands in the receiver's own buffer costs at the least on shared memory:
 * two copies, and every line crossing between the cores. Returns as the
 * ring's calls; both sides must use the same size.
 */
uint64_t bench_raw_pipe_send(bench_raw_t *raw, const void *src, size_t size, uint64_t n);
uint64_t bench_raw_pipe_recv(bench_raw_t *raw, void *dst, size_t size, uint64_t n);

#endif /* FLIT_BENCH_UTIL_H */
