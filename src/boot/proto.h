/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire protocol between flitrun and the ranks it starts, over a stream
 * socket. Frames are:
 *
 *     u32 length (of type + body, little-endian) | u8 type | body
 *
 * rank -> flitrun                          flitrun -> rank
 *   HELLO   u32 version, u64 job_id,         WELCOME   (empty)
 *           u32 rank, u32 pid,               BUSY      (empty)
 *           u8 key[32]                       GATHERED  u32 round, u32 n,
 *   GATHER  u32 round, blob                            n x (u32 len, bytes)
 *   DUMPED  (empty)                          DUMP      (empty)
 *   BYE     (empty)
 *
 * HELLO comes first, once, and proves the connection is the job's: key is
 * the job's secret (FLIT_JOB_KEY, drawn by flitrun at random and given to
 * the ranks only), compared in constant time. flitrun answers WELCOME when
 * it took the rank; it closes a connection whose HELLO it refuses without
 * a word (its own stderr says why). BUSY, then the close, means flitrun
 * dropped the connection before it read a HELLO (too many strangers
 * waiting, or the HELLO came late): connect again. Version 2 added the key,
 * WELCOME and BUSY. Allgather rounds are numbered from 1: a rank's
 * next GATHER is for the round after the last GATHERED it got. A round
 * completes when every rank sent its GATHER for it; then every rank gets the
 * same GATHERED frame. DUMP asks a rank to print its state to stderr and
 * answer DUMPED. BYE says the rank finalized.
 *
 * fl_proto_send writes whole frames only on a blocking fd; a nonblocking
 * writer (flitrun) queues frames itself.
 */
#ifndef FL_BOOT_PROTO_H
#define FL_BOOT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/le.h"

enum fl_proto_type {
    FL_PROTO_HELLO = 1,
    FL_PROTO_GATHER = 2,
    FL_PROTO_GATHERED = 3,
    FL_PROTO_DUMP = 4,
    FL_PROTO_DUMPED = 5,
    FL_PROTO_BYE = 6,
    FL_PROTO_WELCOME = 7,
    FL_PROTO_BUSY = 8,
};

#define FL_PROTO_MAX_FRAME    (64u << 20)
#define FL_PROTO_VERSION      3u
#define FL_PROTO_KEY_LEN      32u
#define FL_PROTO_HELLO_LEN    (20u + FL_PROTO_KEY_LEN)
#define FL_PROTO_GATHERED_HDR 8u /* round, n */

struct fl_proto_hello {
    uint32_t version;
    uint64_t job_id;
    uint32_t rank, pid;
    uint8_t key[FL_PROTO_KEY_LEN];
};

void fl_proto_hello_encode(uint8_t out[FL_PROTO_HELLO_LEN], uint64_t job_id,
                           uint32_t rank, uint32_t pid,
                           const uint8_t key[FL_PROTO_KEY_LEN]);
/* 0, -EPROTO (malformed) or -EPROTONOSUPPORT (another version of flit;
   out->version says which). */
int fl_proto_hello_decode(const uint8_t *body, size_t len, struct fl_proto_hello *out);

/* Whether two keys are equal, in a time that does not depend on where they
   differ: a stranger timing refusals learns nothing of the job's key. */
bool fl_proto_key_equal(const uint8_t a[FL_PROTO_KEY_LEN],
                        const uint8_t b[FL_PROTO_KEY_LEN]);
/* FLIT_JOB_KEY's text: exactly 2 * FL_PROTO_KEY_LEN lowercase hex digits.
   0 or -EINVAL (out untouched). */
int fl_proto_key_parse(const char *hex, uint8_t out[FL_PROTO_KEY_LEN]);
/* hex gets 2 * FL_PROTO_KEY_LEN digits and a NUL. */
void fl_proto_key_format(const uint8_t key[FL_PROTO_KEY_LEN],
                         char hex[2 * FL_PROTO_KEY_LEN + 1]);

/* Environment variables flitrun sets for each rank. */
#define FL_ENV_BOOT                                                                      \
    "FLIT_BOOT" /* flitrun's socket: "unix:@name" when                                   \
                   every rank is on its host, else                                       \
                   "tcp:a.b.c.d:port" */
#define FL_ENV_RANK   "FLIT_RANK"
#define FL_ENV_SIZE   "FLIT_SIZE"
#define FL_ENV_JOB_ID "FLIT_JOB_ID" /* 16 hex digits */
#define FL_ENV_JOB_KEY                                                                   \
    "FLIT_JOB_KEY" /* 64 hex digits: the secret a                                        \
                      HELLO proves the job with */

/* Writes one whole frame to a blocking fd (retries on EINTR). 0 or -errno. */
int fl_proto_send(int fd, uint8_t type, const void *body, size_t len);

/*
 * flitrun -> rank, LEFT: u32 rank, u32 round, u32 why. That rank is gone
 * (why: FL_PROTO_LEFT_*), so no allgather round from `round` on can
 * complete: a rank waiting in one, or starting one, fails it with an error
 * naming the rank instead of waiting for ever. Sent again when an earlier
 * round turns out doomed; a rank keeps the earliest.
 */
enum { FL_PROTO_LEFT = 9, FL_PROTO_LEFT_LEN = 12 };
enum fl_proto_left_why {
    FL_PROTO_LEFT_UNFINALIZED = 1, /* exited 0 without flit_finalize */
    FL_PROTO_LEFT_FINALIZED = 2,   /* called flit_finalize */
    FL_PROTO_LEFT_FAILED = 3,      /* exited non-zero, or was killed */
    FL_PROTO_LEFT_LOST = 4,        /* closed its connection to flitrun */
    FL_PROTO_LEFT_NEVER = 5,       /* exited 0 before flit_init */
};

/*
 * flitrun's proxy on a host (flitrun --proxy) serves that host's ranks the
 * protocol above and speaks for them to flitrun on one connection, so that
 * flitrun holds one connection a host, not one a rank, and sends each
 * GATHERED, DUMP and LEFT once a host:
 *
 * proxy -> flitrun                         flitrun -> proxy
 *   PROXY  as HELLO, rank: the host's        WELCOME, BUSY   as to a rank
 *          first rank, pid: the proxy's      GATHERED, DUMP, LEFT  as to a
 *   FOR    u32 rank, u8 type, body:                 rank, for each of the
 *          a frame of that rank                     host's ranks
 *
 * FOR carries GATHER, DUMPED and BYE as the rank sent them, and three
 * frames only a proxy says: HELLO (u32 pid: the proxy took that rank's
 * HELLO, which proved the job's key), LOST (empty: its connection to the
 * proxy closed), EXITED (u32 status: it ended; a signal S reads 128 + S).
 * The proxy is the same flitrun as flitrun (its own path, or flitrun on
 * the PATH there); a rank may still connect to flitrun itself.
 */
enum {
    FL_PROTO_PROXY = 10,
    FL_PROTO_FOR = 11,
    FL_PROTO_LOST = 12,
    FL_PROTO_EXITED = 13,
    FL_PROTO_FOR_HDR = 5, /* u32 rank, u8 type */
};

/*
 * A rank ends the whole job (flit_job_abort, so MPI_Abort):
 *
 * rank -> flitrun   ABORT    u32 status (1..255), then up to
 *                            FL_PROTO_ABORT_TEXT bytes of text: why
 * flitrun -> rank   ABORTED  u32 rank: flitrun took it
 *
 * flitrun names the rank, stops the job (even under --keep-going: the
 * program asked) and exits with that status. The rank exits only once
 * ABORTED came (or after a bounded wait), so the abort is flitrun's before
 * any peer can see the rank gone: a peer that fails on seeing it cannot
 * take the job's status. A proxy passes ABORT on in a FOR and hands
 * ABORTED, whose rank says to whom, to that rank alone.
 */
enum {
    FL_PROTO_ABORT = 14,
    FL_PROTO_ABORTED = 15,
    FL_PROTO_ABORTED_LEN = 4,
    FL_PROTO_ABORT_TEXT = 512,
};

/*
 * Buffered reader that yields whole frames from a (possibly nonblocking) fd.
 * max_frame bounds the length a frame may declare (type + body); 0 means
 * FL_PROTO_MAX_FRAME. A reader facing a peer not yet known (flitrun before a
 * connection's HELLO) sets it low, so that a stranger cannot make it
 * allocate the room for a large frame. The buffer is anonymous pages
 * (mmap), so a thread that only reads frames never calls malloc.
 */
struct fl_proto_rx {
    uint8_t *buf;
    size_t len, cap;
    size_t handed;      /* bytes of the frame handed out last */
    uint32_t max_frame; /* 0: FL_PROTO_MAX_FRAME */
};

/*
 * Reads what is available: 1 if bytes came, 0 on EOF, -errno on error
 * (-EAGAIN when a nonblocking fd had nothing).
 */
int fl_proto_rx_fill(struct fl_proto_rx *rx, int fd);

/*
 * Takes the next whole frame out of rx: 1 with *type, *body, *len set (body
 * valid until the next call), 0 when none is complete, -EPROTO when the
 * stream is garbage (a length of 0 or above FL_PROTO_MAX_FRAME), -EMSGSIZE
 * when the next frame declares more than rx->max_frame (nothing is
 * allocated for it).
 */
int fl_proto_rx_next(struct fl_proto_rx *rx, uint8_t *type, const uint8_t **body,
                     size_t *len);
void fl_proto_rx_free(struct fl_proto_rx *rx);
/* The answer to a HELLO (or a proxy's PROXY) when rx holds it whole: 1
   WELCOME, -EAGAIN BUSY (dropped before it was read: connect again), 0 not
   yet, -EPROTO anything else. */
int fl_proto_welcome_next(struct fl_proto_rx *rx);

/* "unix:@name" -> a sockaddr_un (abstract namespace). 0 or -EINVAL. */
struct sockaddr_un;
int fl_proto_parse_addr(const char *spec, struct sockaddr_un *sa, unsigned *salen);

/* "tcp:a.b.c.d:port" (dotted quad, port 1..65535, nothing else) -> a
   sockaddr_in. 0 or -EINVAL; *sa is written only on success. */
struct sockaddr_in;
int fl_proto_parse_tcp(const char *spec, struct sockaddr_in *sa);

/*
 * Connects a blocking stream socket (close-on-exec) to either kind of
 * address, with TCP_NODELAY over TCP. Returns the fd, or -EINVAL when spec
 * is neither kind, or -errno. *local_ip: the socket's own IPv4 address over
 * TCP (host order), which is the rank's address on the route to flitrun;
 * 0 over a unix socket.
 */
int fl_proto_connect(const char *spec, uint32_t *local_ip);

/*
 * A TCP connection to a host that stops answering (a cable pulled, a host
 * frozen) ends with ETIMEDOUT after about timeout_ms of silence instead of
 * looking alive for as long as TCP retries (a quarter of an hour): kernel
 * keep-alive probes after half of it, and a user timeout on data not
 * acknowledged. The kernel answers the probes, so a process too busy to
 * read is not taken for a dead host. 0 or less: nothing set. Returns 0 or
 * -errno. The ranks and proxies apply it to their connection with
 * FLIT_PEER_TIMEOUT, as flitrun does to each it accepts.
 */
int fl_proto_keepalive(int fd, int64_t timeout_ms);

/* Whether spec is a TCP address (the ranks may be on other hosts). */
bool fl_proto_is_tcp(const char *spec);

#endif /* FL_BOOT_PROTO_H */
