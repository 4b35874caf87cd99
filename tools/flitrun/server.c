/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rendezvous: the socket the ranks connect to (an abstract unix socket,
 * or TCP when a rank may be on another host), and their connections to it:
 * accepting, refusing strangers, queueing frames out, reading frames in
 * (what they mean is boot.c's), and closing.
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

#define HELLO_WAIT_NS  (10 * NS_PER_S) /* for a new connection's HELLO */
#define READS_PER_TURN 16              /* so one chatty rank cannot starve others */
#define HELLO_FRAME    (1 + FL_PROTO_HELLO_LEN) /* the most a stranger may declare */

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

/* On every interface, at an ephemeral port; the ranks get one address. */
static int open_tcp_listener(struct job *job)
{
    char how[160], ip[INET_ADDRSTRLEN];
    uint32_t boot_ip = choose_boot_ip(job, how, sizeof how);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof sa;
    job->srv.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (job->srv.listen_fd < 0 ||
        bind(job->srv.listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(job->srv.listen_fd, SOMAXCONN) != 0 ||
        getsockname(job->srv.listen_fd, (struct sockaddr *)&sa, &len) != 0) {
        say("cannot listen on TCP: %s", strerror(errno));
        return -1;
    }
    struct in_addr a = {.s_addr = htonl(boot_ip)};
    inet_ntop(AF_INET, &a, ip, sizeof ip);
    snprintf(job->srv.boot_addr, sizeof job->srv.boot_addr, "tcp:%s:%u", ip,
             (unsigned)ntohs(sa.sin_port));
    note(job, "boot address %s: %s (%s)", job->srv.boot_addr, ip, how);
    return 0;
}

int server_open(struct job *job)
{
    struct sockaddr_un sa;
    unsigned salen;
    mark_remote(job);
    if (job->srv.tcp)
        return open_tcp_listener(job);
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

void conn_free(struct conn *c)
{
    while (c->head) {
        struct sendq *q = c->head;
        c->head = q->next;
        frame_unref(q->frame);
        free(q);
    }
    fl_proto_rx_free(&c->rx);
    close(c->fd);
    free(c);
}

/* Marks c for freeing at the end of the turn: a pollfd may still name it. */
static void conn_close(struct job *job, struct conn *c)
{
    c->dead = true;
    if (c->rank >= 0)
        job->ranks[c->rank].conn = NULL;
}

static void conn_lost(struct job *job, struct conn *c, int err)
{
    if (c->rank >= 0 && err)
        note(job, "lost the connection of rank %d: %s", c->rank, strerror(err));
    else if (c->rank >= 0)
        note(job, "rank %d closed its connection%s", c->rank,
             job->ranks[c->rank].said_bye ? "" : " without BYE");
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
        say("rejected a connection%s: %s", c->peer, why);
    } else {
        char who[160];
        say("%s %s; treating it as failed",
            rank_who(job, (uint32_t)c->rank, who, sizeof who), why);
        rank_failed(job, EXIT_OWN_ERROR);
    }
    conn_close(job, c);
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
            conn_lost(job, c, errno);
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
   TCP anyone may connect; the job id in HELLO is what lets a rank in. */
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

static void conn_add(struct job *job, int fd, const struct sockaddr_in *sa)
{
    const char *refused = NULL;
    struct conn *c = NULL;
    char peer[sizeof c->peer];
    int one = 1;
    peer_text(job, sa, peer, sizeof peer);
    if (!peer_is_us(job, fd))
        refused = "it is not from this user";
    else if (job->srv.nconns >= job->srv.max_conns)
        refused = "too many connections";
    else if (!(c = calloc(1, sizeof *c)))
        refused = "out of memory";
    if (refused) {
        say("rejected a connection%s: %s", peer, refused);
        close(fd);
        return;
    }
    /* the answers are small frames each waited for: no Nagle delay */
    if (job->srv.tcp)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->rank = -1;
    c->rx.max_frame = HELLO_FRAME; /* a stranger gets no room until it said who it is */
    c->hello_by = fl_now_ns() + HELLO_WAIT_NS;
    memcpy(c->peer, peer, sizeof peer);
    job->srv.conns[job->srv.nconns++] = c;
}

/* Connections that never say HELLO would take the room of ranks that will. */
void conns_expire(struct job *job, uint64_t now)
{
    for (uint32_t i = 0; i < job->srv.nconns; i++) {
        struct conn *c = job->srv.conns[i];
        if (c->rank < 0 && !c->dead && now >= c->hello_by) {
            say("rejected a connection%s: no HELLO within %llu s", c->peer,
                (unsigned long long)(HELLO_WAIT_NS / NS_PER_S));
            conn_close(job, c);
        }
    }
}

/* The earliest HELLO deadline; UINT64_MAX if none. */
uint64_t conns_next_expiry(const struct job *job)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < job->srv.nconns; i++)
        if (job->srv.conns[i]->rank < 0 && job->srv.conns[i]->hello_by < next)
            next = job->srv.conns[i]->hello_by;
    return next;
}

void conns_accept(struct job *job)
{
    for (;;) {
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
