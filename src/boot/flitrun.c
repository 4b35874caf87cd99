/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's side of flitrun: one stream connection to flitrun, read by a
 * boot thread that takes allgather results for the main thread and answers
 * dump requests (so a rank stuck in computation can still be diagnosed).
 *
 * The connection is a unix socket when the whole job is on flitrun's host,
 * TCP when it spans hosts. A rank on flitrun's host dies with flitrun
 * (flitrun set PR_SET_PDEATHSIG); a rank that ssh started elsewhere has no
 * such tie, and ssh without a terminal does not end it when ssh ends. So
 * over TCP the connection is the tie: once it breaks before the rank let go
 * of it (flitrun is gone, or dropped the rank), the job is over for this
 * rank, and the boot thread kills the process as the death signal would.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boot/blobs.h"
#include "boot/proto.h"
#include "util/config.h"
#include "util/log.h"

/* Connections flitrun may drop unread before it takes this rank's HELLO. */
#define HELLO_TRIES 8
/* The most an aborting rank waits for flitrun to take its ABORT. */
#define ABORT_WAIT_S 2

static struct {
    int fd;
    pthread_t thread;
    pthread_mutex_t lock; /* writes to fd, and the fields below */
    pthread_cond_t cond;
    uint32_t rank, size;
    uint32_t round;          /* allgather rounds started */
    /* The current round's GATHERED body, in the boot thread's buffer: the
       caller parses it (the boot thread never mallocs, see below) and
       clears it, and only then does the boot thread read on. */
    const uint8_t *gathered;
    size_t gathered_len;
    bool broken;             /* connection lost or garbled */
    /* LEFT: rounds from left_round (0: none) cannot complete, since
       left_rank is gone (left_why: FL_PROTO_LEFT_*). */
    uint32_t left_round, left_rank, left_why;
    bool tcp;                /* the tie to flitrun: see above */
    bool closing;            /* the rank lets go of the connection */
    bool aborted;            /* flitrun took this rank's ABORT */
    char spec[128];          /* flitrun's address, for messages */
    struct fl_proto_rx rx;   /* flitrun's frames: WELCOME here, then the thread's */
} fr = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static bool flitrun_detect(void)
{
    return getenv(FL_ENV_BOOT) != NULL;
}

static bool env_u32(const char *name, uint32_t *out)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return false;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* GATHERED body -> blobs, validating every length. */
static struct fl_blobs *parse_gathered(const uint8_t *body, size_t len)
{
    if (len < FL_PROTO_GATHERED_HDR)
        return NULL;
    uint32_t n = fl_get32(body + 4);
    if (n != fr.size)
        return NULL;
    size_t total = 0, pos = FL_PROTO_GATHERED_HDR;
    for (uint32_t i = 0; i < n; i++) {
        if (pos + 4 > len)
            return NULL;
        uint32_t l = fl_get32(body + pos);
        if (l > len - pos - 4)
            return NULL;
        total += l;
        pos += 4 + l;
    }
    struct fl_blobs *b = fl_blobs_alloc(n, total);
    if (!b)
        return NULL;
    pos = FL_PROTO_GATHERED_HDR;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = fl_get32(body + pos);
        fl_blobs_add(b, i, body + pos + 4, l);
        pos += 4 + l;
    }
    return b;
}

/* flitrun says a rank is gone: the earliest round it dooms is kept. */
static void take_left(const uint8_t *body, size_t len)
{
    pthread_mutex_lock(&fr.lock);
    uint32_t round = len == FL_PROTO_LEFT_LEN ? fl_get32(body + 4) : 0;
    if (round == 0 || fl_get32(body) >= fr.size) {
        fr.broken = true; /* garbled */
    } else if (!fr.left_round || round < fr.left_round) {
        fr.left_rank = fl_get32(body);
        fr.left_round = round;
        fr.left_why = fl_get32(body + 8);
    }
    pthread_cond_broadcast(&fr.cond);
    pthread_mutex_unlock(&fr.lock);
}

static void handle_frame(uint8_t type, const uint8_t *body, size_t len)
{
    if (type == FL_PROTO_LEFT) {
        take_left(body, len);
        return;
    }
    if (type == FL_PROTO_ABORTED) {
        pthread_mutex_lock(&fr.lock);
        if (len == FL_PROTO_ABORTED_LEN && fl_get32(body) == fr.rank)
            fr.aborted = true;
        else
            fr.broken = true;
        pthread_cond_broadcast(&fr.cond);
        pthread_mutex_unlock(&fr.lock);
        return;
    }
    if (type == FL_PROTO_DUMP) {
        fl_boot_run_dump(STDERR_FILENO);
        pthread_mutex_lock(&fr.lock);
        fl_proto_send(fr.fd, FL_PROTO_DUMPED, NULL, 0);
        pthread_mutex_unlock(&fr.lock);
        return;
    }
    pthread_mutex_lock(&fr.lock);
    if (type == FL_PROTO_GATHERED && len >= 4 && fl_get32(body) == fr.round &&
        !fr.gathered) {
        fr.gathered = body;
        fr.gathered_len = len;
        pthread_cond_broadcast(&fr.cond);
        while (fr.gathered && !fr.closing)
            pthread_cond_wait(&fr.cond, &fr.lock);
        fr.gathered = NULL;
    } else {
        fr.broken = true;
        pthread_cond_broadcast(&fr.cond);
    }
    pthread_mutex_unlock(&fr.lock);
}

/* Over TCP, the end of the connection that the rank did not ask for ends
   the rank, as PR_SET_PDEATHSIG ends a rank on flitrun's host. */
static void connection_ended(void)
{
    pthread_mutex_lock(&fr.lock);
    bool expected = fr.closing || !fr.tcp;
    pthread_mutex_unlock(&fr.lock);
    if (expected)
        return;
    fl_error("lost the connection to flitrun at %s: the job is over; rank %u ends here",
             fr.spec, fr.rank);
    kill(getpid(), SIGKILL);
}

/* Reads flitrun's frames; calls no malloc, so the process gets no malloc
   arena for it (64 MB of address space each). */
static void *boot_thread(void *arg)
{
    (void)arg;
    for (;;) { /* what came after WELCOME is in fr.rx already */
        uint8_t type;
        const uint8_t *body;
        size_t len;
        int r;
        while ((r = fl_proto_rx_next(&fr.rx, &type, &body, &len)) == 1)
            handle_frame(type, body, len);
        if (r < 0 || fl_proto_rx_fill(&fr.rx, fr.fd) <= 0)
            break;
    }
    fl_proto_rx_free(&fr.rx);
    pthread_mutex_lock(&fr.lock);
    fr.broken = true;
    pthread_cond_broadcast(&fr.cond);
    pthread_mutex_unlock(&fr.lock);
    connection_ended();
    return NULL;
}

static void flitrun_close(bool clean);

static flit_status connect_flitrun(const char *spec, uint32_t *net_hint)
{
    int fd = fl_proto_connect(spec, net_hint);
    if (fd == -EINVAL) {
        fl_error("%s=\"%s\" is not an address flitrun gives", FL_ENV_BOOT, spec);
        return FLIT_ERR_BOOT;
    }
    if (fd < 0) {
        fl_error("cannot reach flitrun at %s: %s%s", spec, strerror(-fd),
                 fl_proto_is_tcp(spec) ? " (is that address of flitrun's host reachable "
                                         "from this one? see flitrun --boot-addr)"
                                       : "");
        return FLIT_ERR_BOOT;
    }
    fr.fd = fd;
    fr.tcp = fl_proto_is_tcp(spec);
    if (fr.tcp) /* flitrun's host gone silent is a broken connection too */
        fl_proto_keepalive(fd, fl_cfg.peer_timeout_ms);
    snprintf(fr.spec, sizeof fr.spec, "%s", spec);
    return FLIT_OK;
}

/* Reads flitrun's answer to HELLO: 1 WELCOME, 0 refused (closed without
   a word), -EAGAIN dropped before it read the HELLO (BUSY, or a reset):
   worth another try; -EPROTO an answer that is not one; another -errno
   the connection lost while waiting (flitrun's host gone silent:
   -ETIMEDOUT). */
static int await_welcome(void)
{
    for (;;) {
        int r = fl_proto_welcome_next(&fr.rx);
        if (r != 0)
            return r;
        r = fl_proto_rx_fill(&fr.rx, fr.fd);
        if (r == 0)
            return 0;
        if (r == -ECONNRESET || r == -EPIPE)
            return -EAGAIN;
        if (r < 0)
            return r;
    }
}

/* Connects and says HELLO until flitrun takes it: a stranger flooding
   flitrun's port may get this connection dropped before its HELLO was read
   (flitrun says BUSY), a few times at most. */
static flit_status say_hello(const char *spec, const uint8_t *hello, uint32_t *net_hint)
{
    for (int tries = 1;; tries++) {
        flit_status st = connect_flitrun(spec, net_hint);
        if (st != FLIT_OK)
            return st;
        int r = fl_proto_send(fr.fd, FL_PROTO_HELLO, hello, FL_PROTO_HELLO_LEN);
        r = r == -EPIPE || r == -ECONNRESET ? -EAGAIN : r < 0 ? r : await_welcome();
        if (r == 1)
            return FLIT_OK;
        close(fr.fd);
        fr.fd = -1;
        fl_proto_rx_free(&fr.rx);
        if (r == -EAGAIN && tries < HELLO_TRIES)
            continue;
        if (r == -EAGAIN)
            fl_error("flitrun at %s dropped this rank's connection %d times before "
                     "reading its HELLO (is something flooding flitrun's port?)",
                     spec, tries);
        else if (r == 0)
            fl_error("flitrun at %s refused rank %u's HELLO (its stderr says why: a "
                     "program built with another flit, or not this job's %s)",
                     spec, fr.rank, FL_ENV_JOB_KEY);
        else if (r == -EPROTO)
            fl_error("flitrun at %s answered rank %u's HELLO with garbage", spec,
                     fr.rank);
        else
            fl_error("lost contact with flitrun at %s while rank %u waited for its "
                     "answer to HELLO: %s",
                     spec, fr.rank, strerror(-r));
        return FLIT_ERR_BOOT;
    }
}

static flit_status flitrun_open(struct fl_boot_info *info)
{
    const char *job = getenv(FL_ENV_JOB_ID);
    char *end = NULL;
    uint64_t job_id = job ? strtoull(job, &end, 16) : 0;
    uint8_t key[FL_PROTO_KEY_LEN];
    if (!env_u32(FL_ENV_RANK, &fr.rank) || !env_u32(FL_ENV_SIZE, &fr.size) ||
        fr.size == 0 || fr.rank >= fr.size || !job || !*job || *end ||
        fl_proto_key_parse(getenv(FL_ENV_JOB_KEY), key) != 0) {
        fl_error("the launcher's variables %s, %s, %s, %s are missing or invalid (a "
                 "flitrun of another flit version?)",
                 FL_ENV_RANK, FL_ENV_SIZE, FL_ENV_JOB_ID, FL_ENV_JOB_KEY);
        return FLIT_ERR_BOOT;
    }
    uint32_t net_hint = 0;
    uint8_t hello[FL_PROTO_HELLO_LEN];
    fl_proto_hello_encode(hello, job_id, fr.rank, (uint32_t)getpid(), key);
    flit_status st = say_hello(getenv(FL_ENV_BOOT), hello, &net_hint);
    if (st != FLIT_OK)
        return st;
    fr.broken = false;
    fr.closing = false;
    fr.gathered = NULL;
    fr.round = 0;
    fr.left_round = 0;
    /* The boot thread takes no signals: they belong to the program. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&fr.thread, NULL, boot_thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        fl_error("cannot start talking to flitrun: %s", strerror(err));
        close(fr.fd);
        fr.fd = -1;
        fl_proto_rx_free(&fr.rx);
        return FLIT_ERR_BOOT;
    }
    info->rank = fr.rank;
    info->size = fr.size;
    info->job_id = job_id;
    info->job_id_unique = true; /* flitrun's own, random */
    /* A unix socket is flitrun's sign that it forked every rank on its own
       host (and they reached it, so they share its network namespace):
       flit_init needs no exchange to learn where the ranks are. A program
       that sits in an IPC or mount namespace of its own anyway fails
       flit_ep_create on every rank: the shared-memory transport checks each
       peer's host identity, and UDP is not opened within a host; the error
       says to start such ranks through --hosts and --launch (TCP, and the
       exchange). */
    if (fr.size > 1 && !fr.tcp) {
        info->host_of = calloc(fr.size, sizeof *info->host_of);
        if (!info->host_of) {
            flitrun_close(false);
            return FLIT_ERR_NO_MEMORY;
        }
    }
    info->launcher = "flitrun";
    info->net_hint = net_hint;
    return FLIT_OK;
}

/* The open round cannot complete: a rank it needs is gone. Locked. */
static bool doomed(void)
{
    return fr.left_round && fr.round >= fr.left_round;
}

static const char *left_why(uint32_t why)
{
    switch (why) {
    case FL_PROTO_LEFT_UNFINALIZED:
        return "exited without calling flit_finalize";
    case FL_PROTO_LEFT_FINALIZED:
        return "called flit_finalize";
    case FL_PROTO_LEFT_FAILED:
        return "failed (exited non-zero or was killed)";
    case FL_PROTO_LEFT_LOST:
        return "closed its connection to flitrun without calling flit_finalize";
    case FL_PROTO_LEFT_NEVER:
        return "exited before calling flit_init";
    default:
        return "is gone";
    }
}

/* Called with fr.lock held, which it releases. */
static flit_status round_doomed(void)
{
    uint32_t rank = fr.left_rank, why = fr.left_why, round = fr.round;
    pthread_mutex_unlock(&fr.lock);
    const char *call = fl_boot_waiting_call();
    fl_error(
        "%s: rank %u left the job (it %s): the exchange with the launcher (round %u) "
        "cannot complete",
        call ? call : "the launcher's exchange", rank, left_why(why), round);
    return FLIT_ERR_PEER_DOWN;
}

static flit_status flitrun_allgather(const void *mine, size_t len, struct fl_blobs **out)
{
    uint8_t *msg = malloc(4 + len);
    if (!msg)
        return FLIT_ERR_NO_MEMORY;
    pthread_mutex_lock(&fr.lock);
    fr.round++;
    fl_put32(msg, fr.round);
    if (len)
        memcpy(msg + 4, mine, len);
    int err = fr.broken  ? -EPIPE
              : doomed() ? 0 /* no use: flitrun cannot complete it */
                         : fl_proto_send(fr.fd, FL_PROTO_GATHER, msg, 4 + len);
    free(msg);
    while (!err && !fr.gathered && !fr.broken && !doomed())
        pthread_cond_wait(&fr.cond, &fr.lock);
    if (!err && !fr.gathered && doomed())
        return round_doomed();
    struct fl_blobs *b = NULL;
    if (fr.gathered) {
        b = parse_gathered(fr.gathered, fr.gathered_len);
        if (!b)
            fr.broken = true;
        fr.gathered = NULL;
        pthread_cond_broadcast(&fr.cond);
    }
    pthread_mutex_unlock(&fr.lock);
    if (!b) {
        fl_error("lost flitrun during the address exchange");
        return FLIT_ERR_BOOT;
    }
    *out = b;
    return FLIT_OK;
}

/* Tells flitrun that this rank ends the job, and waits (a bounded time)
   until it has taken that in: see FL_PROTO_ABORT. */
static void flitrun_abort(int status, const char *why)
{
    uint8_t msg[4 + FL_PROTO_ABORT_TEXT];
    size_t n = strnlen(why, FL_PROTO_ABORT_TEXT);
    fl_put32(msg, (uint32_t)status);
    memcpy(msg + 4, why, n);
    pthread_mutex_lock(&fr.lock);
    if (fr.fd >= 0 && !fr.broken &&
        fl_proto_send(fr.fd, FL_PROTO_ABORT, msg, 4 + n) == 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until); /* the condition's clock */
        until.tv_sec += ABORT_WAIT_S;
        while (!fr.aborted && !fr.broken)
            if (pthread_cond_timedwait(&fr.cond, &fr.lock, &until) == ETIMEDOUT)
                break;
    }
    pthread_mutex_unlock(&fr.lock);
}

static void flitrun_close(bool clean)
{
    if (fr.fd < 0)
        return;
    pthread_mutex_lock(&fr.lock);
    if (clean && !fr.broken)
        fl_proto_send(fr.fd, FL_PROTO_BYE, NULL, 0);
    fr.closing = true;
    pthread_cond_broadcast(&fr.cond);
    pthread_mutex_unlock(&fr.lock);
    shutdown(fr.fd, SHUT_RDWR);
    pthread_join(fr.thread, NULL);
    close(fr.fd);
    fr.fd = -1;
}

const struct fl_boot_ops fl_boot_flitrun = {
    .name = "flitrun",
    .detect = flitrun_detect,
    .open = flitrun_open,
    .allgather = flitrun_allgather,
    .close = flitrun_close,
    .abort = flitrun_abort,
};
