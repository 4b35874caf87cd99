/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The boot protocol (boot/proto.h) as flitrun serves it, on the connections
 * server.c keeps: the job's key, a HELLO that proves it and names a rank of
 * this job (answered WELCOME), allgather rounds
 * (every rank's GATHER, then one GATHERED for all), DUMP and its DUMPED
 * answers, BYE. A rank that breaks the protocol is a failed rank.
 *
 * A host's proxy says PROXY instead of HELLO and then speaks for the ranks
 * of its host, each frame of theirs in a FOR; what they all get goes to it
 * once. A proxy serves its ranks the same protocol, and passes their frames
 * on (upstream.c) instead of acting on them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flitrun.h"
#include "platform/os.h"

int boot_make_key(struct job *job)
{
    char hex[2 * FL_PROTO_KEY_LEN + 1];
    int err = fl_random_bytes(job->srv.key, sizeof job->srv.key);
    if (err) {
        say("cannot draw the job's key: %s", strerror(-err));
        return -1;
    }
    fl_proto_key_format(job->srv.key, hex);
    /* beside the other FLIT_* variables (spawn.c): every rank, local or
       launched elsewhere, gets it the way they travel */
    if (setenv(FL_ENV_JOB_KEY, hex, 1) != 0) {
        say("cannot set the ranks' environment: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* A HELLO that proves the job's key, for a rank that has not connected. */
static void hello_rank(struct job *job, struct conn *c, const struct fl_proto_hello *h)
{
    char who[160];
    if (h->rank >= job->opt.nranks) {
        say("rejected a connection%s with this job's key: pid %u claims rank %u of a job "
            "of %u",
            c->peer, h->pid, h->rank, job->opt.nranks);
        conn_close(job, c);
        return;
    }
    struct rank *rk = &job->ranks[h->rank];
    if (job->up && !job->opt.here[h->rank]) {
        say("rejected a connection%s with this job's key: pid %u claims rank %u, which "
            "runs on another host",
            c->peer, h->pid, h->rank);
        conn_close(job, c);
        return;
    }
    if (rk->said_hello) {
        say("rejected a connection%s with this job's key: pid %u claims %s, which "
            "already connected",
            c->peer, h->pid, rank_who(job, h->rank, who, sizeof who));
        conn_close(job, c);
        return;
    }
    rk->said_hello = true;
    rk->conn = c;
    conn_welcome(job, c, h->rank);
    if (job->up) {
        uint8_t pid[4];
        fl_put32(pid, h->pid);
        upstream_tell(job, h->rank, FL_PROTO_HELLO, pid, sizeof pid);
    }
    if (rk->remote)
        note(job, "rank %u (pid %u on %s) connected%s", h->rank, h->pid,
             host_name(job, h->rank), c->peer);
    else
        note(job, "rank %u (pid %u) connected%s", h->rank, h->pid, c->peer);
}

/* A PROXY that proves the job's key, naming the first rank of a host whose
   ranks a proxy starts. */
static void hello_proxy(struct job *job, struct conn *c, const struct fl_proto_hello *h)
{
    uint32_t lead = h->rank;
    if (job->up || lead >= job->opt.nranks || !job->ranks[lead].proxied ||
        job->ranks[lead].lead != lead) {
        say("rejected a connection%s with this job's key: pid %u says it is the proxy "
            "of a host whose first rank is %u; no such proxy was started",
            c->peer, h->pid, lead);
        conn_close(job, c);
        return;
    }
    for (uint32_t i = 0; i < job->srv.nconns; i++) {
        const struct conn *o = job->srv.conns[i];
        if (o->proxy && !o->dead && o->rank == (int)lead) {
            say("rejected a connection%s with this job's key: pid %u says it is the "
                "proxy on %s, which already connected",
                c->peer, h->pid, host_name(job, lead));
            conn_close(job, c);
            return;
        }
    }
    c->proxy = true;
    conn_welcome(job, c, lead);
    note(job, "the proxy on %s (pid %u) connected%s", host_name(job, lead), h->pid,
         c->peer);
}

/* A stranger's first frame: only a HELLO (or a proxy's PROXY) with this
   job's id and key (the key compared in constant time) makes it a rank's
   connection. */
static void conn_hello(struct job *job, struct conn *c, uint8_t type, const uint8_t *body,
                       size_t len)
{
    struct fl_proto_hello h;
    int err = type == FL_PROTO_HELLO || type == FL_PROTO_PROXY
                  ? fl_proto_hello_decode(body, len, &h)
                  : -EPROTO;
    if (err == -EPROTONOSUPPORT) {
        conn_refuse(job, c, REFUSED_VERSION,
                    "a rank speaks protocol version %u, this flitrun %u: "
                    "the program uses another flit",
                    h.version, FL_PROTO_VERSION);
    } else if (err) {
        conn_refuse(job, c, REFUSED_GARBAGE,
                    "it sent frame type %u (%zu bytes) instead of HELLO", type, len);
    } else if (!(fl_proto_key_equal(h.key, job->srv.key) & (h.job_id == job->id))) {
        conn_refuse(job, c, REFUSED_KEY,
                    "pid %u claims rank %u without this job's id and key (%s)", h.pid,
                    h.rank, FL_ENV_JOB_KEY);
    } else if (type == FL_PROTO_PROXY) {
        hello_proxy(job, c, &h);
    } else {
        hello_rank(job, c, &h);
    }
}

/* Every rank sent its blob: one GATHERED, shared by all. */
static void round_complete(struct job *job)
{
    uint32_t n = job->opt.nranks;
    struct frame *f = frame_new(FL_PROTO_GATHERED, job->rounds.bytes);
    if (!f) {
        say("out of memory for allgather round %u (%zu bytes)", job->rounds.done + 1,
            job->rounds.bytes);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    uint8_t *p = f->bytes + 5;
    fl_put32(p, ++job->rounds.done);
    fl_put32(p + 4, n);
    p += GATHERED_HEAD;
    for (uint32_t r = 0; r < n; r++) {
        struct rank *rk = &job->ranks[r];
        fl_put32(p, rk->blob_len);
        memcpy(p + 4, rk->blob, rk->blob_len);
        p += 4 + rk->blob_len;
        free(rk->blob);
        rk->blob = NULL;
    }
    note(job, "allgather round %u complete: %zu bytes to each rank", job->rounds.done,
         job->rounds.bytes);
    uint64_t mark = ++job->srv.marks;
    for (uint32_t r = 0; r < n; r++)
        if (job->ranks[r].conn)
            conn_send_once(job, job->ranks[r].conn, f, mark);
    frame_unref(f);
    job->rounds.count = 0;
    job->rounds.bytes = GATHERED_HEAD;
}

static void rank_gather(struct job *job, struct conn *c, uint32_t r, const uint8_t *body,
                        size_t len)
{
    struct rank *rk = &job->ranks[r];
    uint32_t round = len >= 4 ? fl_get32(body) : 0;
    size_t blob_len = len >= 4 ? len - 4 : 0;
    if (len < 4 || round != job->rounds.done + 1 || rk->gather_round == round) {
        conn_fail(job, c,
                  "sent a malformed frame: GATHER of rank %u for round %u of %zu bytes "
                  "while round %u is open",
                  r, round, len, job->rounds.done + 1);
        return;
    }
    if (job->rounds.bytes + 4 + blob_len > GATHERED_MAX) {
        conn_fail(job, c, "pushed allgather round %u past the %u-byte frame limit", round,
                  GATHERED_MAX);
        return;
    }
    rk->blob = malloc(blob_len ? blob_len : 1);
    if (!rk->blob) {
        conn_fail(job, c, "sent a %zu-byte blob flitrun has no memory for", blob_len);
        return;
    }
    memcpy(rk->blob, body + 4, blob_len);
    rk->blob_len = (uint32_t)blob_len;
    rk->gather_round = round;
    job->rounds.bytes += 4 + blob_len;
    if (++job->rounds.count == job->opt.nranks)
        round_complete(job);
}

/* ABORTED for rank r, on the connection its ABORT came by (its own, or its
   proxy's, which hands it on to r alone). */
static void abort_taken(struct job *job, struct conn *c, uint32_t r)
{
    struct frame *f = frame_new(FL_PROTO_ABORTED, FL_PROTO_ABORTED_LEN);
    if (!f)
        return; /* the rank waits a bounded time for it */
    fl_put32(f->bytes + 5, r);
    conn_send(job, c, f);
    frame_unref(f);
}

/* Rank r ends the job (flit_job_abort): its status is the job's, said
   before anything its end makes its peers do. */
static void rank_abort(struct job *job, struct conn *c, uint32_t r, const uint8_t *body,
                       size_t len)
{
    uint32_t status = fl_get32(body);
    if (status == 0 || status > 255 || len - 4 > FL_PROTO_ABORT_TEXT) {
        conn_fail(job, c, "sent a malformed ABORT: status %u with %zu bytes of text",
                  status, len - 4);
        return;
    }
    char why[FL_PROTO_ABORT_TEXT + 1], who[160];
    size_t n = len - 4;
    for (size_t i = 0; i < n; i++) /* a line of text, whatever it sent */
        why[i] = body[4 + i] >= 0x20 && body[4 + i] < 0x7f ? (char)body[4 + i] : '?';
    why[n] = '\0';
    rank_who(job, r, who, sizeof who);
    if (job->stop.phase == PHASE_RUNNING) {
        say("%s aborted the job with status %u%s%s", who, status, n ? ": " : "", why);
        job_stop(job, (int)status);
    } else {
        note(job, "%s aborted (status %u%s%s) while the job was ending", who, status,
             n ? ": " : "", why);
    }
    abort_taken(job, c, r);
}

/* A frame of rank r, from its own connection or its proxy's. */
static void rank_frame(struct job *job, struct conn *c, uint32_t r, uint8_t type,
                       const uint8_t *body, size_t len)
{
    struct rank *rk = &job->ranks[r];
    if (job->up && (type == FL_PROTO_GATHER ||
                    (len == 0 && (type == FL_PROTO_DUMPED || type == FL_PROTO_BYE)))) {
        rk->said_bye |= type == FL_PROTO_BYE;
        upstream_tell(job, r, type, body, len); /* flitrun checks and counts */
    } else if (type == FL_PROTO_ABORT && len >= 4 && job->up) {
        upstream_tell(job, r, type, body, len); /* flitrun answers through us */
    } else if (type == FL_PROTO_ABORT && len >= 4) {
        rank_abort(job, c, r, body, len);
    } else if (type == FL_PROTO_GATHER) {
        rank_gather(job, c, r, body, len);
    } else if (type == FL_PROTO_DUMPED && len == 0) {
        rk->dumped = true;
    } else if (type == FL_PROTO_BYE && len == 0) {
        rk->said_bye = true;
        note(job, "rank %u finalized", r);
    } else {
        conn_fail(job, c, "sent a malformed frame: type %u with %zu bytes for rank %u",
                  type, len, r);
    }
}

/* A proxy's FOR: a frame of one of its host's ranks. */
static void proxy_frame(struct job *job, struct conn *c, uint8_t type,
                        const uint8_t *body, size_t len)
{
    uint32_t r = len >= FL_PROTO_FOR_HDR ? fl_get32(body) : UINT32_MAX;
    if (type != FL_PROTO_FOR || r >= job->opt.nranks || !job->ranks[r].proxied ||
        job->ranks[r].lead != (uint32_t)c->rank) {
        conn_fail(job, c, "sent a malformed frame: type %u with %zu bytes (rank %u)",
                  type, len, r);
        return;
    }
    struct rank *rk = &job->ranks[r];
    uint8_t inner = body[4];
    body += FL_PROTO_FOR_HDR;
    len -= FL_PROTO_FOR_HDR;
    if (inner == FL_PROTO_HELLO && len == 4 && !rk->said_hello) {
        rk->said_hello = true;
        rk->conn = c;
        note(job, "rank %u (pid %u on %s) connected through its proxy", r, fl_get32(body),
             host_name(job, r));
    } else if (inner == FL_PROTO_EXITED && len == 4) {
        if (!rk->exited) /* its end, whether it ever connected or not */
            leave_rank_ended(job, r, (int)fl_get32(body));
    } else if (rk->conn != c) {
        conn_fail(job, c, "sent a frame (type %u) for rank %u, which %s", inner, r,
                  rk->said_hello ? "is not connected through it" : "never connected");
    } else if (inner == FL_PROTO_LOST && len == 0) {
        note(job, "rank %u closed its connection to the proxy on %s%s", r,
             host_name(job, r), rk->said_bye ? "" : " without BYE");
        rk->conn = NULL;
    } else {
        rank_frame(job, c, r, inner, body, len);
    }
}

static void conn_frame(struct job *job, struct conn *c, uint8_t type, const uint8_t *body,
                       size_t len)
{
    if (c == job->up)
        upstream_frame(job, type, body, len);
    else if (c->rank < 0)
        conn_hello(job, c, type, body, len);
    else if (c->proxy)
        proxy_frame(job, c, type, body, len);
    else
        rank_frame(job, c, (uint32_t)c->rank, type, body, len);
}

void boot_take_frames(struct job *job, struct conn *c)
{
    while (!c->dead) {
        uint8_t type;
        const uint8_t *body;
        size_t len;
        int r = fl_proto_rx_next(&c->rx, &type, &body, &len);
        if (r == 0)
            return;
        if (r == -EMSGSIZE) {
            conn_fail(job, c, "declared a %u-byte frame before its HELLO",
                      (unsigned)fl_get32(c->rx.buf));
            return;
        }
        if (r < 0) {
            conn_fail(job, c, "sent a malformed frame: %s", strerror(-r));
            return;
        }
        conn_frame(job, c, type, body, len);
    }
}

/* Every asked rank answered, hung up, or died. */
bool boot_dumps_done(const struct job *job)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        const struct rank *rk = &job->ranks[r];
        if (rk->dump_asked && !rk->dumped && rk->conn && rk->live)
            return false;
    }
    return true;
}

void boot_ask_dumps(struct job *job)
{
    struct frame *f = frame_new(FL_PROTO_DUMP, 0);
    if (!f)
        return; /* no dumps, then: stop right away */
    uint64_t mark = ++job->srv.marks;
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (rk->conn) {
            rk->dump_asked = true;
            conn_send_once(job, rk->conn, f, mark);
        }
    }
    frame_unref(f);
}
