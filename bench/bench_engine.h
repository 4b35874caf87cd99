/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The measurements flit-bench and flit-demo share, between rank 0 (which
 * drives and times) and rank 1 (which serves), on one endpoint, through the
 * public API only.
 *
 * Rank 1 runs bench_serve: it polls (or waits) and answers. Rank 0 calls the
 * measuring functions; each sends rank 1 what it needs to know as a control
 * message first. bench_quit lets rank 1 return.
 *
 * A flit library error or a baseline whose peer stopped answering ends the
 * process with a message (exit 1): there is no meaningful figure to print
 * after either.
 */
#ifndef FLIT_BENCH_ENGINE_H
#define FLIT_BENCH_ENGINE_H

#include <flit/flit.h>
#include <flit/tagged.h>
#include <stdbool.h>

#include "bench_udp.h"
#include "bench_util.h"

/* The engine's handlers take these indices on the endpoint (active
   messages and stream handlers alike). */
#define BENCH_HANDLER_FIRST 240u
#define BENCH_HANDLER_COUNT 8u

/*
 * What a figure sends: active messages of each kind; stream messages of one
 * piece (flit_stream_begin / send / end, received whole by the handler);
 * tagged messages (flit_tagged_send into receives posted in advance, as an
 * MPI program does).
 */
enum bench_kind {
    BENCH_SHORT,
    BENCH_MEDIUM,
    BENCH_LONG,
    BENCH_STREAM,
    BENCH_TAGGED,
    BENCH_SHORT_LOOP, /* latency only: a short AM answered by rank 1's loop
                        with a short AM request, as streams are answered */
    BENCH_STREAM_SEG  /* streams that rank 1 takes into its segment, not
                         rbuf: on shared memory the sender places them
                         there (one copy); bench_stream_ns only, and -1
                         when rank 1's segment is smaller than size */
};

typedef struct bench {
    flit_ep_t *ep;
    uint32_t rank;
    const char *prog; /* for messages */
    uint8_t *buf;     /* rank 0: what medium and long messages send */
    uint8_t *rbuf;    /* where stream and tagged messages are received */
    uint8_t *seg;     /* rank 1: its segment, for BENCH_STREAM_SEG */
    size_t seg_size;
    bool stream_seg; /* rank 1: streams go to seg now */
    size_t max_size;
    bench_raw_t *raw;                 /* NULL: no raw baselines */
    bench_udp_t *udp;                 /* NULL: no raw UDP baselines */
    struct bench_udp_shape udp_shape; /* rank 1: the next UDP baseline's */
    /* rank 0: bumped by reply handlers */
    uint64_t pongs, acks, ctrl_acks;
    uint32_t ctrl_result;
    flit_tagged_t *tagged;
    /* rank 1 */
    uint64_t sunk, ack_every;
    size_t echo_size; /* a stream echo to send outside the handler */
    bool echo_due, echo_am;
    uint64_t acks_due;  /* stream acknowledgements to send */
    size_t tagged_size; /* the tagged figure's message size */
    size_t pipe_size;   /* the raw pipe's message size (both ranks) */
    bool wait_mode, quit;
    uint32_t pending; /* a raw baseline to run outside the handler */
    uint64_t pending_n;
    /* rank 0: rank 1's time waiting for a CPU, as last reported */
    uint32_t peer_wait_us;
    uint64_t peer_wait_ns;
    uint32_t peer_resent_low; /* rank 1's retransmissions, as last told */
    uint64_t peer_resent;
} bench_t;

/*
 * Both ranks: registers the handlers on ep and allocates what rank 0 sends.
 * Long messages of up to max_size bytes need a segment at least that large
 * on both ranks. Call before the barrier that precedes measuring.
 */
void bench_init(bench_t *b, flit_ep_t *ep, size_t max_size, const char *prog);
void bench_fini(bench_t *b);

/* Rank 1: answers until rank 0 calls bench_quit. */
void bench_serve(bench_t *b);
/* Rank 0: ends rank 1's bench_serve. */
void bench_quit(bench_t *b);

/*
 * Rank 0: maps a /dev/shm file in both ranks for the raw baselines; false
 * (with the reason printed) when that fails; the raw figures are then
 * missing.
 */
bool bench_raw_setup(bench_t *b);

/*
 * Rank 0. Each returns nanoseconds, the median of reps runs lasting about
 * target_ns together (after a warm-up).
 *
 * bench_latency_ns: one-way latency, round trip / 2. Rank 1's handler
 * replies with the same kind and size. For BENCH_SHORT, size is the bytes of
 * arguments (4 per argument, at most 16). wait: both sides block in
 * flit_wait instead of spinning on flit_poll.
 *
 * bench_stream_ns: time per message while streaming size-byte messages of
 * one kind with at most window unacknowledged (rank 1 acknowledges every
 * window / 2). BENCH_SHORT: size / 4 arguments.
 *
 * Active messages are answered inside their handler; stream and tagged
 * messages by rank 1's loop, after flit_poll returns (a stream handler may
 * not send), as an MPI program answers after its receive.
 */
double bench_latency_ns(bench_t *b, enum bench_kind kind, size_t size, bool wait,
                        uint64_t target_ns, int reps);
double bench_stream_ns(bench_t *b, enum bench_kind kind, size_t size, unsigned window,
                       uint64_t target_ns, int reps);

/*
 * Rank 0: one-way latencies (round trip / 2, spinning in flit_poll) of
 * size-byte messages of an active-message kind, each round trip timed on
 * its own, into out[]: after a few untimed ones, until target_ns has
 * passed and min_n were made, or max_n were made, or cap_ns has passed.
 * Returns how many.
 */
int bench_latency_samples(bench_t *b, enum bench_kind kind, size_t size,
                          uint64_t target_ns, int min_n, uint64_t cap_ns, int max_n,
                          double *out);

/* Rank 0, raw baselines: flag one-way latency (two lines, or one_line)
   and ring time per message, in nanoseconds; negative when there is no
   raw baseline. */
double bench_raw_latency_ns(bench_t *b, bool one_line, uint64_t target_ns, int reps);
double bench_raw_stream_ns(bench_t *b, uint64_t target_ns, int reps);
/* Rank 0: time per message of size bytes through the raw byte pipe
   (bench_raw_pipe_send), rank 1 copying each into its receive buffer. */
double bench_raw_pipe_ns(bench_t *b, size_t size, uint64_t target_ns, int reps);

/*
 * Rank 0: nanoseconds both ranks together have spent waiting for a CPU that
 * other work held, since some fixed moment. Compare two readings: a figure
 * measured while this grew by more than a few percent of its time is noise.
 */
uint64_t bench_sched_wait_ns(bench_t *b);

/*
 * Rank 0: the chunks both ranks' endpoints have sent again (their
 * retransmission counters), since some fixed moment. Over a transport
 * that loses nothing, growth is a resend of what was not lost.
 */
uint64_t bench_resent(bench_t *b);

/*
 * Rank 0, when rank 1 is reached over UDP: opens a raw UDP socket in both
 * ranks, bound to any address and aimed at the address the flit endpoint
 * reaches the other rank at; false when the peer is not on UDP or that
 * failed. bench_udp_dgram: the largest datagram payload flit sends the
 * peer; 0 when the peer is not on UDP.
 *
 * Then, in nanoseconds (NAN: the baseline gave up, see bench_udp.h):
 * bench_udp_latency_ns: one way, round trip / 2, of size-byte messages in
 * datagrams of at most dgram bytes, spinning or blocking in recvfrom.
 * bench_udp_stream_ns: time per size-byte message streamed one way, window
 * messages in flight (fewer when the socket buffers hold fewer).
 */
bool bench_udp_setup(bench_t *b);
size_t bench_udp_dgram(bench_t *b);
double bench_udp_latency_ns(bench_t *b, size_t size, size_t dgram, bool blocking,
                            uint64_t target_ns, int reps);
double bench_udp_stream_ns(bench_t *b, size_t size, size_t dgram, unsigned window,
                           uint64_t target_ns, int reps);

/* Prints "prog: what: reason" and exits 1 unless st is FLIT_OK. */
void bench_check(const bench_t *b, flit_status st, const char *what);

#endif /* FLIT_BENCH_ENGINE_H */
