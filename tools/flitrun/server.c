/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rendezvous: the socket the ranks connect to (an abstract unix socket,
 * or TCP when a rank may be on another host), and their connections to it:
 * accepting, refusing strangers, queueing frames out, reading frames in
 * (what they mean is boot.c's), and closing.
 *
 * Anyone who can reach the port may connect, so strangers must never keep
 * the ranks out. A connection is a stranger until its HELLO proves it is
 * the job's (boot.c); strangers live in a pool of their own, STRANGERS_MAX
 * at most, beside the n slots the ranks' connections take: when the pool is
 * full the oldest stranger is dropped (told BUSY, so that a rank whose
 * HELLO was slow connects again), and one that says no HELLO within
 * HELLO_WAIT_NS is dropped the same way. Each turn accepts at most
 * ACCEPTS_PER_TURN, so the table (n + EXTRA_CONNS) never overflows and a
 * stranger outlives the next turn's accepts: its HELLO, if it comes, is
 * read before it could be dropped. Refusals are counted, and only the first
 * of each kind is told.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "flitrun.h"
#include "platform/os.h"
#include "util/config.h"

/* A rank sends HELLO right after connecting; a rank slower than this is
   told BUSY and connects again, so the wait only bounds a stranger's stay. */
#define HELLO_WAIT_NS    (3 * NS_PER_S)
#define READS_PER_TURN   16 /* so one chatty rank cannot starve others */
#define HELLO_FRAME      (1 + FL_PROTO_HELLO_LEN) /* the most a stranger may declare */
#define STRANGERS_MAX    (EXTRA_CONNS * 3 / 4)
#define ACCEPTS_PER_TURN (EXTRA_CONNS - STRANGERS_MAX)

/* The address of this host the ranks connect to: --boot-addr, or the one on
   the route to the first rank's host that is not this one. */
static uint32_t choose_boot_ip(const struct job *job, char *how, size_t len)
{
    if (job->opt.boot_ip) {
        snprintf(how, len, "--boot-addr");
        return job->opt.boot_ip;
    }
    uint32_t r = 0;
    while (!job->ranks[r].remote)
        r++; /* there is one: else no TCP */
    uint32_t ip = fr_boot_ip(host_name(job, r), how, len);
    if (ip)
        return ip;
    say("found no address of this host that other hosts can reach (%s); the ranks "
        "get 127.0.0.1, which reaches flitrun from this host only (see --boot-addr)",
        how);
    return INADDR_LOOPBACK;
}

/* On the one address the ranks are given, at an ephemeral port: not on
   every interface, where hosts the job never named could reach it. */
static int open_tcp_listener(struct job *job, uint32_t boot_ip, const char *how)
{
    char ip[INET_ADDRSTRLEN];
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(boot_ip)};
    socklen_t len = sizeof sa;
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    job->srv.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (job->srv.listen_fd < 0 ||
        bind(job->srv.listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(job->srv.listen_fd, SOMAXCONN) != 0 ||
        getsockname(job->srv.listen_fd, (struct sockaddr *)&sa, &len) != 0) {
        int err = errno;
        say("cannot listen on TCP at %s (%s): %s%s", ip, how, strerror(err),
            err == EADDRNOTAVAIL ? "; the boot address must be one of this host's" : "");
        return -1;
    }
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    snprintf(job->srv.boot_addr, sizeof job->srv.boot_addr, "tcp:%s:%u", ip,
             (unsigned)ntohs(sa.sin_port));
    note(job, "boot address %s: %s (%s); listening there only", job->srv.boot_addr, ip,
         how);
    return 0;
}

int server_open(struct job *job)
{
    struct sockaddr_un sa;
    unsigned salen;
    if (boot_make_key(job) != 0)
        return -1;
    mark_remote(job);
    if (job->srv.tcp) {
        char how[160];
        uint32_t ip = choose_boot_ip(job, how, sizeof how);
        return open_tcp_listener(job, ip, how);
    }
    snprintf(job->srv.boot_addr, sizeof job->srv.boot_addr, "unix:@flit-%s", job->id_hex);
    if (fl_proto_parse_addr(job->srv.boot_addr, &sa, &salen) != 0) {
        say("cannot make a socket address of %s", job->srv.boot_addr);
        return -1;
    }
    job->srv.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (job->srv.listen_fd < 0 ||
        bind(job->srv.listen_fd, (struct sockaddr *)&sa, (socklen_t)salen) != 0 ||
        listen(job->srv.listen_fd, SOMAXCONN) != 0) {
        say("cannot listen on %s: %s", job->srv.boot_addr, strerror(errno));
        return -1;
    }
    return 0;
}

int server_open_proxy(struct job *job, uint32_t ip)
{
    job->srv.tcp = true;
    return open_tcp_listener(job, ip, "the proxy's address towards flitrun");
}

struct frame *frame_new(uint8_t type, size_t body_len)
{
    struct frame *f = malloc(sizeof *f + 5 + body_len);
    if (!f)
        return NULL;
    f->refs = 1;
    f->len = 5 + body_len;
    fl_put32(f->bytes, (uint32_t)(body_len + 1));
    f->bytes[4] = type;
    return f;
}

void frame_unref(struct frame *f)
{
    if (--f->refs == 0)
        free(f);
}

static void sendq_free(struct conn *c);

void conn_free(struct conn *c)
{
    sendq_free(c);
    fl_proto_rx_free(&c->rx);
    close(c->fd);
    free(c);
}

void conn_close(struct job *job, struct conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    if (c == job->up)
        return; /* upstream.c's: not in the table */
    if (c->proxy) {
        for (uint32_t r = 0; r < job->opt.nranks; r++)
            if (job->ranks[r].conn == c)
                job->ranks[r].conn = NULL;
    } else if (c->rank >= 0) {
        job->ranks[c->rank].conn = NULL;
        if (job->up) /* a proxy's rank: flitrun learns it hung up */
            upstream_tell(job, (uint32_t)c->rank, FL_PROTO_LOST, NULL, 0);
    } else {
        job->srv.strangers--;
    }
}

const char *conn_who(const struct job *job, const struct conn *c, char *buf, size_t len)
{
    if (c == job->up)
        snprintf(buf, len, "flitrun");
    else if (c->proxy)
        snprintf(buf, len, "the proxy on %s", host_name(job, (uint32_t)c->rank));
    else
        rank_who(job, (uint32_t)c->rank, buf, len);
    return buf;
}

void conn_welcome(struct job *job, struct conn *c, uint32_t rank)
{
    c->rank = (int)rank;
    job->srv.strangers--;
    c->rx.max_frame = 0; /* a rank of this job: frames up to FL_PROTO_MAX_FRAME */
    struct frame *f = frame_new(FL_PROTO_WELCOME, 0);
    if (!f) {
        say("out of memory welcoming rank %u", rank);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    conn_send(job, c, f);
    frame_unref(f);
}

static const char *const refusal_name[REFUSED_KINDS] = {
    [REFUSED_USER] = "from another user",
    [REFUSED_GARBAGE] = "sent garbage",
    [REFUSED_VERSION] = "spoke another protocol version",
    [REFUSED_KEY] = "had not this job's key",
    [REFUSED_LATE] = "said no HELLO in time",
    [REFUSED_DROPPED] = "dropped for newer ones",
};

static uint64_t refusals(const struct job *job)
{
    uint64_t n = 0;
    for (int k = 0; k < REFUSED_KINDS; k++)
        n += job->srv.refused[k];
    return n;
}

void conn_refuse(struct job *job, struct conn *c, enum refusal kind, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (job->srv.refused[kind]++ == 0)
        say("rejected a connection%s: %s (more like it are counted, not told; -v "
            "tells each)",
            c->peer, why);
    else
        note(job, "rejected a connection%s: %s", c->peer, why);
    conn_close(job, c);
}

void server_report(const struct job *job)
{
    uint64_t total = refusals(job), told = 0;
    char kinds[512];
    size_t len = 0;
    kinds[0] = '\0';
    for (int k = 0; k < REFUSED_KINDS; k++) {
        uint64_t n = job->srv.refused[k];
        told += n > 0;
        if (n > 0 && len < sizeof kinds)
            len +=
                (size_t)snprintf(kinds + len, sizeof kinds - len, "%s%llu %s",
                                 len ? ", " : "", (unsigned long long)n, refusal_name[k]);
    }
    if (total > told)
        say("rejected %llu connections in all that did not prove they were this "
            "job's: %s",
            (unsigned long long)total, kinds);
}

static void conn_lost(struct job *job, struct conn *c, int err)
{
    char who[160];
    if (c == job->up) {
        upstream_lost(job, err);
    } else if (c->rank >= 0 && err == ETIMEDOUT) {
        /* its host stopped answering (fl_proto_keepalive): its ranks may
           live on there, but they are lost to the job */
        say("lost contact with %s: no answer for %g s (FLIT_PEER_TIMEOUT); treating "
            "it as failed",
            conn_who(job, c, who, sizeof who), (double)fl_cfg.peer_timeout_ms / 1000);
        rank_failed(job, EXIT_OWN_ERROR);
    } else if (c->rank >= 0 && err) {
        note(job, "lost the connection of %s: %s", conn_who(job, c, who, sizeof who),
             strerror(err));
    } else if (c->proxy) {
        note(job, "%s closed its connection", conn_who(job, c, who, sizeof who));
    } else if (c->rank >= 0) {
        note(job, "rank %d closed its connection%s", c->rank,
             job->ranks[c->rank].said_bye ? "" : " without BYE");
    }
    conn_close(job, c);
}

/* A connection broke the protocol: refused if anonymous, else a failed rank. */
void conn_fail(struct job *job, struct conn *c, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (c->rank < 0) {
        conn_refuse(job, c, REFUSED_GARBAGE, "%s", why);
        return;
    } else {
        char who[160];
        say("%s %s; treating it as failed", conn_who(job, c, who, sizeof who), why);
        rank_failed(job, EXIT_OWN_ERROR);
    }
    conn_close(job, c);
}

static void sendq_free(struct conn *c)
{
    while (c->head) {
        struct sendq *q = c->head;
        c->head = q->next;
        frame_unref(q->frame);
        free(q);
    }
    c->tail = NULL;
}

/* The peer went while we wrote to it: what it sent before it went (a BYE)
   is still in our socket and says how it left, so it is read first. Nothing
   more is sent (send_failed), so that reading cannot come back here. */
static void conn_lost_sending(struct job *job, struct conn *c, int err)
{
    c->send_failed = true;
    sendq_free(c);
    conn_read(job, c);
    if (!c->dead)
        conn_lost(job, c, err);
}

static void conn_flush(struct job *job, struct conn *c)
{
    while (c->head) {
        struct sendq *q = c->head;
        ssize_t n = send(c->fd, q->frame->bytes + q->off, q->frame->len - q->off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return; /* the rest when POLLOUT says so */
        if (n < 0) {
            conn_lost_sending(job, c, errno);
            return;
        }
        q->off += (size_t)n;
        if (q->off < q->frame->len)
            continue;
        c->head = q->next;
        if (!c->head)
            c->tail = NULL;
        frame_unref(q->frame);
        free(q);
    }
}

/* Queues f (shared, not copied) and sends what the socket takes now. */
void conn_send(struct job *job, struct conn *c, struct frame *f)
{
    if (c->send_failed)
        return; /* the peer is gone: conn_lost_sending */
    struct sendq *q = malloc(sizeof *q);
    if (!q) {
        say("out of memory queueing a frame for rank %d", c->rank);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    *q = (struct sendq){.frame = f};
    f->refs++;
    if (c->tail)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    conn_flush(job, c);
}

void conn_send_once(struct job *job, struct conn *c, struct frame *f, uint64_t mark)
{
    if (c->mark == mark)
        return;
    c->mark = mark;
    conn_send(job, c, f);
}

void conns_sweep(struct job *job)
{
    for (uint32_t i = 0; i < job->srv.nconns;) {
        struct conn *c = job->srv.conns[i];
        if (!c->dead) {
            i++;
            continue;
        }
        conn_free(c);
        job->srv.conns[i] = job->srv.conns[--job->srv.nconns];
        job->srv.listen_paused = false; /* an fd came free */
    }
}

/* Abstract sockets have no permissions: only our own user may join. Over
   TCP anyone may connect; the job's key in HELLO is what lets a rank in. */
static bool peer_is_us(const struct job *job, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return job->srv.tcp || (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                            cred.uid == geteuid());
}

/* " from a.b.c.d:port" for messages; "" for a unix socket. */
static void peer_text(const struct job *job, const struct sockaddr_in *sa, char *buf,
                      size_t len)
{
    char ip[INET_ADDRSTRLEN] = "?";
    buf[0] = '\0';
    if (!job->srv.tcp)
        return;
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip);
    snprintf(buf, len, " from %s:%u", ip, (unsigned)ntohs(sa->sin_port));
}

/* Best effort, on a socket about to be closed: BUSY tells a rank that was
   merely slow to connect again; what came in is read first, so that the
   end is a FIN, not a reset that could overtake the BUSY. The FIN goes now:
   past a deadline no event may come to end the turn that closes the fd. */
static void conn_drop(struct job *job, struct conn *c, enum refusal kind, const char *why)
{
    static const uint8_t busy[5] = {1, 0, 0, 0, FL_PROTO_BUSY};
    uint8_t sink[512];
    for (int i = 0; i < READS_PER_TURN; i++) /* a stranger that streams: no more */
        if (recv(c->fd, sink, sizeof sink, MSG_DONTWAIT) <= 0)
            break;
    (void)!send(c->fd, busy, sizeof busy, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c->fd, SHUT_RDWR);
    conn_refuse(job, c, kind, "%s", why);
}

/* The stranger that came first, that a last read did not prove the job's. */
static void drop_oldest_stranger(struct job *job)
{
    for (uint32_t tries = 0; tries < job->srv.nconns; tries++) {
        struct conn *old = NULL;
        for (uint32_t i = 0; i < job->srv.nconns; i++) {
            struct conn *c = job->srv.conns[i];
            if (c->rank < 0 && !c->dead && (!old || c->serial < old->serial))
                old = c;
        }
        if (!old)
            return;
        conn_read(job, old); /* its HELLO may be in: then it is a rank now */
        if (old->rank < 0 && !old->dead) {
            conn_drop(job, old, REFUSED_DROPPED,
                      "too many connections without a HELLO; dropped the oldest");
            return;
        }
        if (job->srv.strangers < STRANGERS_MAX)
            return;
    }
}

static void conn_add(struct job *job, int fd, const struct sockaddr_in *sa)
{
    struct conn *c = calloc(1, sizeof *c);
    int one = 1;
    if (!c) {
        say("out of memory for a connection; closed it");
        close(fd);
        return;
    }
    peer_text(job, sa, c->peer, sizeof c->peer);
    c->fd = fd;
    c->rank = -1;
    c->rx.max_frame = HELLO_FRAME; /* a stranger gets no room until it said who it is */
    c->hello_by = fl_now_ns() + HELLO_WAIT_NS;
    c->serial = job->srv.next_serial++;
    bool ours = peer_is_us(job, fd); /* another user's drops none of ours */
    if (ours && job->srv.strangers >= STRANGERS_MAX)
        drop_oldest_stranger(job);
    job->srv.conns[job->srv.nconns++] = c;
    job->srv.strangers++;
    if (!ours) {
        conn_refuse(job, c, REFUSED_USER, "it is not from this user");
        return;
    }
    /* the answers are small frames each waited for: no Nagle delay; and a
       host that stops answering is noticed (conn_lost) */
    if (job->srv.tcp) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fl_proto_keepalive(fd, fl_cfg.peer_timeout_ms);
    }
    conn_read(job, c); /* a rank's HELLO is often in already */
}

/* Connections that never say HELLO would take the room of ranks that will. */
void conns_expire(struct job *job, uint64_t now)
{
    char why[64];
    snprintf(why, sizeof why, "no HELLO within %llu s",
             (unsigned long long)(HELLO_WAIT_NS / NS_PER_S));
    for (uint32_t i = 0; i < job->srv.nconns; i++) {
        struct conn *c = job->srv.conns[i];
        if (c->rank < 0 && !c->dead && now >= c->hello_by)
            conn_drop(job, c, REFUSED_LATE, why);
    }
}

/* The earliest HELLO deadline; UINT64_MAX if none. */
uint64_t conns_next_expiry(const struct job *job)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < job->srv.nconns; i++) {
        const struct conn *c = job->srv.conns[i];
        if (c->rank < 0 && !c->dead && c->hello_by < next)
            next = c->hello_by;
    }
    return next;
}

/* At most ACCEPTS_PER_TURN, and never past the table: the rest wait in the
   kernel's queue for the next turn, after the sweep. */
void conns_accept(struct job *job)
{
    for (uint32_t n = 0; n < ACCEPTS_PER_TURN && job->srv.nconns < job->srv.max_conns;
         n++) {
        struct sockaddr_in sa = {0};
        socklen_t salen = sizeof sa;
        int fd = accept4(job->srv.listen_fd, job->srv.tcp ? (struct sockaddr *)&sa : NULL,
                         job->srv.tcp ? &salen : NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            conn_add(job, fd, &sa);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE) {
            /* the pending connection would wake poll forever: wait for an fd */
            say("accept: %s; waiting for a connection to close", strerror(errno));
            job->srv.listen_paused = true;
        } else if (errno != EAGAIN) {
            say("accept: %s", strerror(errno));
        }
        return;
    }
}

void conn_read(struct job *job, struct conn *c)
{
    for (int i = 0; i < READS_PER_TURN && !c->dead; i++) {
        int r = fl_proto_rx_fill(&c->rx, c->fd);
        if (r == -EAGAIN)
            return;
        if (r <= 0) {
            conn_lost(job, c, -r);
            return;
        }
        boot_take_frames(job, c);
    }
}

void conn_ready(struct job *job, struct conn *c, short revents)
{
    if (!c->dead && (revents & POLLOUT))
        conn_flush(job, c);
    if (!c->dead && (revents & (POLLIN | POLLHUP | POLLERR)))
        conn_read(job, c);
}
