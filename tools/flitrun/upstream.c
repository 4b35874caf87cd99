/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A proxy's one connection to flitrun (boot/proto.h, PROXY and FOR). The
 * proxy serves its host's ranks the boot protocol on a listener of its own
 * (server.c, boot.c) and passes on what they say, each frame in a FOR
 * naming the rank; what flitrun sends once for them all (GATHERED, DUMP,
 * LEFT) it hands to each of its ranks. So flitrun keeps one connection and
 * sends one copy of each exchange round a host, not one a rank: at 1,024
 * ranks over 8 hosts, 8 copies of a GATHERED that names every rank instead
 * of 1,024.
 *
 * The listener is at the address that reached flitrun, so a rank's own
 * address towards its proxy (its net hint for UDP) is the one it would
 * have had towards flitrun. If the connection to flitrun ends while ranks
 * still run, the job is over here too: the proxy stops them.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flitrun.h"
#include "platform/os.h"
#include "util/config.h"

#define WELCOME_WAIT_MS 30000 /* flitrun answers PROXY at once, or drops it */
#define CLOSE_WAIT_MS   5000  /* the last frames' way out, at the end */
#define PROXY_TRIES     5     /* connections dropped before the PROXY was read */

/* flitrun's answer to PROXY: 1 WELCOME, 0 refused (closed), -EAGAIN dropped
   before it read it (BUSY, a reset: try again), -EPROTO anything else,
   -ETIMEDOUT no answer. */
static int await_welcome(int fd, struct fl_proto_rx *rx)
{
    for (;;) {
        int r = fl_proto_welcome_next(rx);
        if (r != 0)
            return r;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, WELCOME_WAIT_MS);
        if (n == 0)
            return -ETIMEDOUT;
        if (n < 0 && errno == EINTR)
            continue;
        r = n < 0 ? -errno : fl_proto_rx_fill(rx, fd);
        if (r == 0)
            return 0;
        if (r == -ECONNRESET || r == -EPIPE)
            return -EAGAIN;
        if (r < 0 && r != -EAGAIN)
            return -EPROTO;
    }
}

/* Connects and says PROXY until flitrun takes it. The fd, or -1 said. */
static int say_proxy(struct job *job, const char *spec, const uint8_t *hello,
                     struct fl_proto_rx *rx, uint32_t *ip)
{
    for (int tries = 1;; tries++) {
        int fd = fl_proto_connect(spec, ip);
        if (fd < 0) {
            say("the proxy on %s cannot reach flitrun at %s: %s", job->opt.proxy_host,
                spec, strerror(-fd));
            return -1;
        }
        fl_proto_keepalive(fd, fl_cfg.peer_timeout_ms); /* flitrun's host gone silent */
        int r = fl_proto_send(fd, FL_PROTO_PROXY, hello, FL_PROTO_HELLO_LEN);
        r = r == -EPIPE || r == -ECONNRESET ? -EAGAIN : r < 0 ? r : await_welcome(fd, rx);
        if (r == 1)
            return fd;
        close(fd);
        fl_proto_rx_free(rx);
        if (r == -EAGAIN && tries < PROXY_TRIES)
            continue;
        say("the proxy on %s: flitrun at %s %s", job->opt.proxy_host, spec,
            r == -EAGAIN      ? "dropped its connection before reading it, each time"
            : r == 0          ? "refused it (its stderr says why: another flitrun?)"
            : r == -ETIMEDOUT ? "did not answer it"
                              : "answered it with garbage");
        return -1;
    }
}

int upstream_open(struct job *job)
{
    const char *spec = getenv(FL_ENV_BOOT);
    uint32_t lead = 0, ip = 0;
    uint8_t hello[FL_PROTO_HELLO_LEN];
    struct fl_proto_rx rx = {0};
    if (!spec || !fl_proto_is_tcp(spec) ||
        fl_proto_key_parse(getenv(FL_ENV_JOB_KEY), job->srv.key) != 0) {
        say("--proxy runs a job flitrun started: %s is not a TCP address, or %s is "
            "missing",
            FL_ENV_BOOT, FL_ENV_JOB_KEY);
        return -1;
    }
    while (!job->opt.here[lead])
        lead++; /* proxy_parse gave it one at least */
    fl_proto_hello_encode(hello, job->id, lead, (uint32_t)getpid(), job->srv.key);
    int fd = say_proxy(job, spec, hello, &rx, &ip);
    if (fd < 0)
        return -1;
    job->up = calloc(1, sizeof *job->up);
    if (!job->up || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        say("the proxy on %s cannot keep its connection to flitrun: %s",
            job->opt.proxy_host, job->up ? strerror(errno) : "out of memory");
        free(job->up);
        job->up = NULL;
        close(fd);
        fl_proto_rx_free(&rx);
        return -1;
    }
    *job->up = (struct conn){.fd = fd, .rank = (int)lead, .rx = rx};
    note(job, "the proxy on %s reached flitrun at %s", job->opt.proxy_host, spec);
    if (server_open_proxy(job, ip) != 0)
        return -1;
    if (setenv(FL_ENV_BOOT, job->srv.boot_addr, 1) != 0) {
        say("cannot set the ranks' environment: %s", strerror(errno));
        return -1;
    }
    return 0;
}

void upstream_tell(struct job *job, uint32_t r, uint8_t type, const uint8_t *body,
                   size_t len)
{
    if (!job->up || job->up->dead)
        return;
    struct frame *f = frame_new(FL_PROTO_FOR, FL_PROTO_FOR_HDR + len);
    if (!f) {
        say("out of memory passing a frame of rank %u on to flitrun", r);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    fl_put32(f->bytes + 5, r);
    f->bytes[9] = type;
    if (len)
        memcpy(f->bytes + 5 + FL_PROTO_FOR_HDR, body, len);
    conn_send(job, job->up, f);
    frame_unref(f);
}

/* One copy of what flitrun sent, to each of this host's connected ranks
   (not to those that said BYE, for a LEFT). */
static void hand_out(struct job *job, uint8_t type, const uint8_t *body, size_t len)
{
    struct frame *f = frame_new(type, len);
    if (!f) {
        say("out of memory handing out a %zu-byte frame of flitrun's", len);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    if (len)
        memcpy(f->bytes + 5, body, len);
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (!rk->conn || (type == FL_PROTO_LEFT && rk->said_bye))
            continue;
        rk->dump_asked |= type == FL_PROTO_DUMP;
        conn_send(job, rk->conn, f);
    }
    frame_unref(f);
}

void upstream_frame(struct job *job, uint8_t type, const uint8_t *body, size_t len)
{
    if (type == FL_PROTO_ABORTED && len == FL_PROTO_ABORTED_LEN) {
        uint32_t r = fl_get32(body);
        struct rank *rk = r < job->opt.nranks ? &job->ranks[r] : NULL;
        if (rk && rk->conn) { /* else it is gone already */
            struct frame *f = frame_new(type, len);
            if (f) {
                memcpy(f->bytes + 5, body, len);
                conn_send(job, rk->conn, f);
                frame_unref(f);
            }
        }
        return;
    }
    bool ok = (type == FL_PROTO_GATHERED && len >= FL_PROTO_GATHERED_HDR) ||
              (type == FL_PROTO_DUMP && len == 0) ||
              (type == FL_PROTO_LEFT && len == FL_PROTO_LEFT_LEN);
    if (!ok) {
        conn_fail(job, job->up, "sent a malformed frame: type %u with %zu bytes", type,
                  len);
        return;
    }
    hand_out(job, type, body, len);
}

void upstream_lost(struct job *job, int err)
{
    if (job->live > 0 && job->stop.phase != PHASE_STOPPING) {
        say("the proxy on %s lost its connection to flitrun%s%s; stopping the ranks "
            "there",
            job->opt.proxy_host, err ? ": " : "", err ? strerror(err) : "");
        job_stop(job, EXIT_OWN_ERROR);
    }
}

void upstream_close(struct job *job)
{
    struct conn *up = job->up;
    if (!up)
        return;
    uint64_t until = fl_now_ns() + (uint64_t)CLOSE_WAIT_MS * 1000000u;
    while (up->head && !up->dead && !up->send_failed) {
        uint64_t now = fl_now_ns();
        if (now >= until) {
            say("the proxy on %s could not pass its ranks' last words on to flitrun "
                "within %d s",
                job->opt.proxy_host, CLOSE_WAIT_MS / 1000);
            break;
        }
        struct pollfd pfd = {.fd = up->fd, .events = POLLOUT};
        if (poll(&pfd, 1, (int)((until - now) / 1000000u) + 1) > 0)
            conn_ready(job, up, pfd.revents & (short)~POLLIN);
    }
    conn_free(up);
    job->up = NULL;
}
