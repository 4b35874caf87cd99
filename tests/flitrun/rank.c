/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in rank for the flitrun tests. It speaks the boot protocol with
 * boot/proto.c alone (the rest of the library is not needed), checks what
 * flitrun gave it, and misbehaves on demand:
 *
 *   gather ROUNDS [proxied]  ROUNDS allgathers of known blobs, plus one of
 *                        the process group (not when proxied: a proxy's ranks
 *                        are in a group of its own); prints "rank R of N ok"
 *   fail RANK CODE       one allgather, then RANK exits CODE, others wait
 *   sigkill RANK         one allgather, then RANK kills itself, others wait
 *   wait                 one allgather, rank 0 prints "ready", all wait
 *   hang [MUTE]          one allgather, then serve DUMP ("DUMP rank R" on
 *                        stderr, then DUMPED) forever; rank MUTE ignores
 *                        DUMP and SIGTERM
 *   print split|whole    lines on stdout and stderr, a long line, and an
 *                        unterminated last line; split writes lines in parts
 *   stdin [TEXT]         rank 0 must read TEXT (default "hello from stdin\n")
 *                        to EOF, the others EOF at once
 *   stdin_pattern LEN [gate]
 *                        rank 0 must read LEN bytes of the stdin pattern to
 *                        EOF (after the gate opens, with gate), the others
 *                        EOF at once
 *   stdin_early exit|close LEN
 *                        rank 0 reads LEN bytes of the pattern, then exits
 *                        (exit) or closes its stdin and waits for the gate
 *                        (close); the others read EOF at once and wait for
 *                        the gate
 *   badframe RANK        one allgather, then RANK sends a GATHER for a
 *                        round that is not open
 *   abort RANK STATUS [TEXT]
 *                        one allgather, then RANK sends ABORT (STATUS, and
 *                        TEXT or "a reason\tof the test's"), waits for its
 *                        ABORTED (SIGTERM blocked), prints "rank R:
 *                        ABORTED" and exits STATUS; the others wait
 *   reject               rank 0 also makes connections flitrun must refuse:
 *                        another job's id, no rank of the job, a rank
 *                        connected already, a wrong key, garbage
 *   busy drop|late       rank 0 first makes a connection without HELLO
 *                        that flitrun must drop with BUSY: after 64 more
 *                        (drop), or when its wait for a HELLO ends (late);
 *                        then one allgather, "rank R of N ok"
 *   shm                  leaves /dev/shm/flit-<job>-<rank>-0 behind
 *   spam                 writes lines to stdout until that fails
 *   where                prints "rank R of N on HOST", HOST from $FAKEHOST
 *                        (set by the tests' --launch template) or "here"
 *   args ARGS...         prints its working directory and each argument
 *                        in brackets (quoting through a fake ssh)
 *   fakeproxy BAD HOST HOW CMD...  a --launch template's start: runs CMD,
 *                        or on host BAD is a proxy that misbehaves (below)
 *   nokey                one allgather, then no process's command line
 *                        (/proc/PID/cmdline) may hold FLIT_JOB_KEY; prints
 *                        "rank R: the key is on no command line"
 *
 * FLIT_BOOT must be flitrun's unix socket for this job, or, when
 * $FLRUN_TEST_TCP names an IPv4 address, tcp:THAT:PORT, and the connection's
 * own address must be that one too (all on loopback in these tests).
 *
 * Each rank writes its pid to $FLRUN_TEST_DIR/pid.<rank> before it says
 * HELLO, so the driver can check that none outlives flitrun. The gate is the
 * FIFO $FLRUN_TEST_DIR/gate: it opens (reads EOF) once the driver closes
 * its end.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "boot/proto.h"

#define NLINES    20
#define LONG_LINE 100000

struct client {
    int fd;
    uint32_t rank, size;
    uint64_t job_id;
    uint8_t key[FL_PROTO_KEY_LEN];
    const char *job_hex;
    struct fl_proto_rx rx;
    uint32_t round;
    bool mute; /* ignore DUMP */
};

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "flitrun_rank: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(1);
}

static uint32_t env_num(const char *name)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        die("%s is not set", name);
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v > UINT32_MAX)
        die("%s is not a number", name);
    return (uint32_t)v;
}

/* Only the five variables flitrun documents, each well formed. */
static void check_env(struct client *c)
{
    extern char **environ;
    static const char *const ours[] = {
        "FLIT_BOOT=", "FLIT_RANK=", "FLIT_SIZE=", "FLIT_JOB_ID=", "FLIT_JOB_KEY="};
    for (char **e = environ; *e; e++) {
        bool known = strncmp(*e, "FLIT_", 5) != 0;
        for (int i = 0; i < 5 && !known; i++)
            known = strncmp(*e, ours[i], strlen(ours[i])) == 0;
        if (!known)
            die("unexpected variable %s", *e);
    }
    c->rank = env_num(FL_ENV_RANK);
    c->size = env_num(FL_ENV_SIZE);
    c->job_hex = getenv(FL_ENV_JOB_ID);
    if (c->size == 0 || c->rank >= c->size)
        die("%s", "FLIT_RANK is not below FLIT_SIZE");
    if (!c->job_hex || strlen(c->job_hex) != 16 ||
        strspn(c->job_hex, "0123456789abcdef") != 16)
        die("FLIT_JOB_ID '%s' is not 16 lowercase hex digits",
            c->job_hex ? c->job_hex : "");
    c->job_id = strtoull(c->job_hex, NULL, 16);
    if (fl_proto_key_parse(getenv(FL_ENV_JOB_KEY), c->key) != 0)
        die("%s is not 64 lowercase hex digits", FL_ENV_JOB_KEY);
    char boot[64];
    const char *tcp = getenv("FLRUN_TEST_TCP");
    if (tcp)
        snprintf(boot, sizeof boot, "tcp:%s:", tcp);
    else
        snprintf(boot, sizeof boot, "unix:@flit-%s", c->job_hex);
    const char *got = getenv(FL_ENV_BOOT);
    struct sockaddr_in sa;
    if (!got ||
        (tcp ? strncmp(got, boot, strlen(boot)) != 0 || fl_proto_parse_tcp(got, &sa) != 0
             : strcmp(got, boot) != 0))
        die("FLIT_BOOT is '%s'", got ? got : "");
}

static void write_pidfile(uint32_t rank)
{
    const char *dir = getenv("FLRUN_TEST_DIR");
    if (!dir)
        return;
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.pid.%u", dir, rank);
    snprintf(path, sizeof path, "%s/pid.%u", dir, rank);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 ||
        rename(tmp, path) != 0)
        die("cannot write %s", path);
}

static int dial(void)
{
    uint32_t local = 0;
    const char *tcp = getenv("FLRUN_TEST_TCP");
    struct in_addr want = {0};
    int fd = fl_proto_connect(getenv(FL_ENV_BOOT), &local);
    if (fd < 0)
        die("cannot connect: %s", strerror(-fd));
    if (tcp && (inet_pton(AF_INET, tcp, &want) != 1 || ntohl(want.s_addr) != local))
        die("the connection's own address is not %s", tcp);
    if (!tcp && local != 0)
        die("%s", "a unix socket with an IPv4 address");
    return fd;
}

static int try_hello(int fd, uint64_t job_id, uint32_t rank, const uint8_t *key)
{
    uint8_t hello[FL_PROTO_HELLO_LEN];
    fl_proto_hello_encode(hello, job_id, rank, (uint32_t)getpid(), key);
    return fl_proto_send(fd, FL_PROTO_HELLO, hello, sizeof hello);
}

static void send_hello(int fd, uint64_t job_id, uint32_t rank, const uint8_t *key)
{
    if (try_hello(fd, job_id, rank, key) != 0)
        die("%s", "cannot send HELLO");
}

/* flitrun's answer on a connection that said HELLO, or none: 1 WELCOME, 0
   BUSY (dropped before it read the HELLO, or reset), -1 closed (refused). */
static int await_answer(int fd, struct fl_proto_rx *rx)
{
    for (;;) {
        uint8_t type;
        const uint8_t *body;
        size_t len;
        int r = fl_proto_rx_next(rx, &type, &body, &len);
        if (r == 1 && len == 0 && (type == FL_PROTO_WELCOME || type == FL_PROTO_BUSY))
            return type == FL_PROTO_WELCOME;
        if (r != 0)
            die("%s", "flitrun answered HELLO with something else");
        r = fl_proto_rx_fill(rx, fd);
        if (r == -ECONNRESET || r == -EPIPE)
            return 0;
        if (r == 0)
            return -1;
        if (r < 0 && r != -EINTR)
            die("read from flitrun: %s", strerror(-r));
    }
}

/* HELLO until flitrun answers WELCOME; BUSY means connect again, as the
   library does. */
static void client_open(struct client *c)
{
    check_env(c);
    write_pidfile(c->rank);
    for (int tries = 0; tries < 8; tries++) {
        c->fd = dial();
        int r = try_hello(c->fd, c->job_id, c->rank, c->key) == 0
                    ? await_answer(c->fd, &c->rx)
                    : 0;
        if (r < 0)
            die("%s", "flitrun refused our HELLO");
        if (r == 1)
            return;
        close(c->fd);
        fl_proto_rx_free(&c->rx);
    }
    die("%s", "flitrun said BUSY 8 times");
}

static void answer_dump(struct client *c)
{
    if (c->mute)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "DUMP rank %u\n", c->rank);
    if (write(STDERR_FILENO, line, (size_t)n) != n ||
        fl_proto_send(c->fd, FL_PROTO_DUMPED, NULL, 0) != 0)
        die("%s", "cannot answer DUMP");
}

/* Blocks for the next frame other than DUMP; 0 at EOF. */
static int client_next(struct client *c, uint8_t *type, const uint8_t **body, size_t *len)
{
    for (;;) {
        int r = fl_proto_rx_next(&c->rx, type, body, len);
        if (r < 0)
            die("%s", "garbled frame from flitrun");
        if (r == 1 && *type == FL_PROTO_DUMP) {
            answer_dump(c);
            continue;
        }
        if (r == 1)
            return 1;
        r = fl_proto_rx_fill(&c->rx, c->fd);
        if (r == 0 || r == -ECONNRESET)
            return 0;
        if (r < 0 && r != -EINTR)
            die("read from flitrun: %s", strerror(-r));
    }
}

/* Sends a frame whose body is word, then len bytes of tail. */
static void send_word(struct client *c, uint8_t type, uint32_t word, const void *tail,
                      size_t len, const char *what)
{
    uint8_t *msg = malloc(4 + len);
    if (!msg)
        die("%s", "out of memory");
    fl_put32(msg, word);
    memcpy(msg + 4, tail, len);
    if (fl_proto_send(c->fd, type, msg, 4 + len) != 0)
        die("cannot send %s", what);
    free(msg);
}

/* Sends blob for the next round; returns the GATHERED body (valid until the
   next client_next). */
static const uint8_t *client_gather(struct client *c, const void *blob, size_t len,
                                    size_t *out_len)
{
    send_word(c, FL_PROTO_GATHER, ++c->round, blob, len, "GATHER");
    uint8_t type;
    const uint8_t *body;
    if (client_next(c, &type, &body, out_len) != 1)
        die("%s", "flitrun hung up during an allgather");
    if (type != FL_PROTO_GATHERED || *out_len < 8 || fl_get32(body) != c->round ||
        fl_get32(body + 4) != c->size)
        die("%s", "bad GATHERED header");
    return body;
}

/* ---- blobs ---- */

static size_t blob_len(const struct client *c, uint32_t rank, uint32_t round)
{
    if (round == 3) /* about 2 MiB in all: partial sends */
        return (2u << 20) / c->size + rank;
    return (rank * 37u + round * 11u) % 200u; /* some are empty */
}

static uint8_t blob_byte(uint32_t rank, uint32_t round, size_t k)
{
    return (uint8_t)(rank * 131u + round * 7u + k);
}

/* Walks a GATHERED body; calls check(rank, bytes, len) for each blob. */
static void walk_gathered(const struct client *c, const uint8_t *body, size_t len,
                          void (*check)(const struct client *, uint32_t, const uint8_t *,
                                        size_t, const void *),
                          const void *arg)
{
    size_t pos = 8;
    for (uint32_t r = 0; r < c->size; r++) {
        if (pos + 4 > len || fl_get32(body + pos) > len - pos - 4)
            die("%s", "GATHERED is truncated");
        uint32_t l = fl_get32(body + pos);
        check(c, r, body + pos + 4, l, arg);
        pos += 4 + l;
    }
    if (pos != len)
        die("%s", "GATHERED has trailing bytes");
}

static void check_pattern(const struct client *c, uint32_t r, const uint8_t *b, size_t l,
                          const void *arg)
{
    (void)arg;
    if (l != blob_len(c, r, c->round))
        die("%s", "a blob has the wrong length (rank order?)");
    for (size_t k = 0; k < l; k++)
        if (b[k] != blob_byte(r, c->round, k))
            die("%s", "a blob has the wrong bytes (rank order?)");
}

static void gather_pattern(struct client *c)
{
    size_t len = blob_len(c, c->rank, c->round + 1), got;
    uint8_t *mine = malloc(len + 1);
    if (!mine)
        die("%s", "out of memory");
    for (size_t k = 0; k < len; k++)
        mine[k] = blob_byte(c->rank, c->round + 1, k);
    const uint8_t *body = client_gather(c, mine, len, &got);
    walk_gathered(c, body, got, check_pattern, NULL);
    free(mine);
}

static void check_group(const struct client *c, uint32_t r, const uint8_t *b, size_t l,
                        const void *arg)
{
    char who[16];
    snprintf(who, sizeof who, "%u", r);
    if (l != 4 || fl_get32(b) != *(const uint32_t *)arg)
        die("rank %s is in another process group", who);
    (void)c;
}

/* One job-wide group, not flitrun's, led by rank 0. */
static void gather_group(struct client *c)
{
    uint32_t pgid = (uint32_t)getpgrp();
    if ((pid_t)pgid == getpgid(getppid()))
        die("%s", "the rank shares flitrun's process group");
    if (c->rank == 0 && (pid_t)pgid != getpid())
        die("%s", "rank 0 does not lead the job's process group");
    uint8_t mine[4];
    fl_put32(mine, pgid);
    size_t got;
    const uint8_t *body = client_gather(c, mine, sizeof mine, &got);
    walk_gathered(c, body, got, check_group, &pgid);
}

static void say_bye(struct client *c)
{
    if (fl_proto_send(c->fd, FL_PROTO_BYE, NULL, 0) != 0)
        die("%s", "cannot send BYE");
    close(c->fd);
    fl_proto_rx_free(&c->rx);
}

/* ---- modes ---- */

static void wait_forever(struct client *c)
{
    uint8_t type;
    const uint8_t *body;
    size_t len;
    while (client_next(c, &type, &body, &len) == 1)
        ; /* nothing else is expected */
    for (;;)
        pause();
}

static int mode_gather(struct client *c, int argc, char **argv)
{
    uint32_t rounds = argc > 2 ? (uint32_t)atoi(argv[2]) : 3;
    client_open(c);
    for (uint32_t i = 0; i < rounds; i++)
        gather_pattern(c);
    if (!(argc > 3 && strcmp(argv[3], "proxied") == 0)) /* a proxy's: its own group */
        gather_group(c);
    say_bye(c);
    printf("rank %u of %u ok\n", c->rank, c->size);
    return 0;
}

static int mode_fail(struct client *c, int argc, char **argv, bool by_signal)
{
    uint32_t who = argc > 2 ? (uint32_t)atoi(argv[2]) : 0;
    client_open(c);
    gather_pattern(c); /* everyone is up before one fails */
    if (c->rank == who && by_signal)
        raise(SIGKILL);
    if (c->rank == who)
        exit(argc > 3 ? atoi(argv[3]) : 1);
    wait_forever(c);
    return 1;
}

static int mode_wait(struct client *c)
{
    client_open(c);
    gather_pattern(c);
    if (c->rank == 0) {
        printf("ready\n");
        fflush(stdout);
    }
    wait_forever(c);
    return 1;
}

static int mode_hang(struct client *c, int argc, char **argv)
{
    client_open(c);
    if (argc > 2 && (uint32_t)atoi(argv[2]) == c->rank) {
        c->mute = true;
        signal(SIGTERM, SIG_IGN);
    }
    gather_pattern(c);
    wait_forever(c);
    return 1;
}

static void write_str(int fd, const char *s, size_t len)
{
    if (write(fd, s, len) != (ssize_t)len)
        die("%s", "write failed");
}

/* Until flitrun has read all that was written to fd, when fd is a pipe
   (with --prefix, one of the rank's own, read by flitrun alone). A bounded
   wait: past it the test only proves less. */
static void wait_drained(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        return;
    struct timespec tick = {0, 100000}, now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += 10;
    int left;
    while (ioctl(fd, FIONREAD, &left) == 0 && left > 0 &&
           clock_gettime(CLOCK_MONOTONIC, &now) == 0 &&
           (now.tv_sec < end.tv_sec ||
            (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec)))
        nanosleep(&tick, NULL);
}

static void write_line(int fd, const char *line, bool split)
{
    size_t len = strlen(line);
    if (!split) {
        write_str(fd, line, len);
        return;
    }
    write_str(fd, line, len / 2);
    wait_drained(fd); /* flitrun has the half line alone */
    write_str(fd, line + len / 2, len - len / 2);
}

static int mode_print(int argc, char **argv)
{
    bool split = argc > 2 && strcmp(argv[2], "split") == 0;
    uint32_t rank = (uint32_t)atoi(getenv(FL_ENV_RANK) ? getenv(FL_ENV_RANK) : "0");
    char line[128];
    for (int i = 0; i < NLINES; i++) {
        snprintf(line, sizeof line, "line %d from rank %u\n", i, rank);
        write_line(STDOUT_FILENO, line, split);
        snprintf(line, sizeof line, "err %d from rank %u\n", i, rank);
        write_line(STDERR_FILENO, line, split);
    }
    char *big = malloc(LONG_LINE + 1);
    memset(big, 'x', LONG_LINE);
    big[LONG_LINE] = '\n';
    write_str(STDOUT_FILENO, big, LONG_LINE + 1);
    free(big);
    snprintf(line, sizeof line, "tail %u", rank);
    write_str(STDOUT_FILENO, line, strlen(line));
    return 0;
}

static uint32_t my_rank(void)
{
    return (uint32_t)atoi(getenv(FL_ENV_RANK) ? getenv(FL_ENV_RANK) : "0");
}

static int mode_stdin(int argc, char **argv)
{
    uint32_t rank = my_rank();
    write_pidfile(rank);
    char buf[256];
    size_t len = 0;
    ssize_t n;
    while ((n = read(STDIN_FILENO, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
    const char *want = rank > 0 ? "" : argc > 2 ? argv[2] : "hello from stdin\n";
    if (n < 0 || strcmp(buf, want) != 0)
        die("stdin was '%s'", buf);
    printf("rank %u stdin ok\n", rank);
    return 0;
}

/* The driver's stdin bytes: byte k of the stream. No short period, so a
   lost, doubled or reordered piece shows. */
static uint8_t stdin_byte(size_t k)
{
    uint32_t x = (uint32_t)k * 2654435761u;
    return (uint8_t)((x >> 24) ^ (k >> 16));
}

/* Reads stdin up to max bytes or EOF, checking them; returns the count. */
static size_t read_pattern(size_t max)
{
    static uint8_t buf[65536];
    size_t got = 0;
    while (got < max) {
        size_t want = max - got < sizeof buf ? max - got : sizeof buf;
        ssize_t n = read(STDIN_FILENO, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("read stdin: %s", strerror(errno));
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] != stdin_byte(got + (size_t)i))
                die("%s", "stdin has the wrong bytes");
        got += (size_t)n;
    }
    return got;
}

/* Blocks until the driver closes its end of the gate FIFO. */
static void wait_gate(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/gate", getenv("FLRUN_TEST_DIR"));
    /* nonblocking open: it must not wait for a writer that has come and gone */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fcntl(fd, F_SETFL, 0) != 0)
        die("cannot open the gate %s", path);
    char c;
    ssize_t n;
    while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
        ;
    if (n != 0)
        die("%s", "the gate did not open cleanly");
    close(fd);
}

static int mode_stdin_pattern(int argc, char **argv)
{
    uint32_t rank = my_rank();
    write_pidfile(rank);
    size_t want = rank == 0 && argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 0;
    if (rank == 0 && argc > 3 && strcmp(argv[3], "gate") == 0)
        wait_gate();
    size_t got = read_pattern(SIZE_MAX);
    if (got != want)
        die("stdin ended after %s bytes", rank == 0 ? "too few or too many" : "some");
    printf("rank %u stdin %zu bytes ok\n", rank, got);
    return 0;
}

static int mode_stdin_early(int argc, char **argv)
{
    uint32_t rank = my_rank();
    write_pidfile(rank);
    bool close_it = argc > 2 && strcmp(argv[2], "close") == 0;
    size_t want = rank == 0 && argc > 3 ? (size_t)strtoull(argv[3], NULL, 10) : 0;
    if (read_pattern(want ? want : SIZE_MAX) != want)
        die("%s", rank == 0 ? "stdin ended early" : "stdin is not empty");
    if (rank == 0 && close_it)
        close(STDIN_FILENO);
    if (rank > 0 || close_it)
        wait_gate();
    printf("rank %u stdin early ok\n", rank);
    return 0;
}

static int mode_badframe(struct client *c, int argc, char **argv)
{
    uint32_t who = argc > 2 ? (uint32_t)atoi(argv[2]) : 0;
    client_open(c);
    gather_pattern(c); /* everyone is up before one misbehaves */
    if (c->rank != who) {
        gather_pattern(c); /* never completes: flitrun stops the job */
        return 1;
    }
    uint8_t msg[4];
    fl_put32(msg, 7);
    if (fl_proto_send(c->fd, FL_PROTO_GATHER, msg, sizeof msg) != 0)
        die("%s", "cannot send the bad GATHER");
    wait_forever(c);
    return 1;
}

static int mode_abort(struct client *c, int argc, char **argv)
{
    uint32_t who = argc > 2 ? (uint32_t)atoi(argv[2]) : 0;
    uint32_t status = argc > 3 ? (uint32_t)atoi(argv[3]) : 1;
    const char *why = argc > 4 ? argv[4] : "a reason\tof the test's";
    client_open(c);
    gather_pattern(c); /* everyone is up before one aborts */
    if (c->rank != who)
        wait_forever(c);
    /* flitrun stops the job (SIGTERM) as it answers: held off, to see the
       answer come */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    send_word(c, FL_PROTO_ABORT, status, why, strlen(why), "ABORT");
    uint8_t type;
    const uint8_t *body;
    size_t len;
    while (client_next(c, &type, &body, &len) == 1) {
        if (type == FL_PROTO_ABORTED && len == FL_PROTO_ABORTED_LEN &&
            fl_get32(body) == c->rank) {
            printf("rank %u: ABORTED\n", c->rank);
            exit((int)status);
        }
        if (type != FL_PROTO_LEFT)
            die("%s", "a frame other than ABORTED after ABORT");
    }
    sigprocmask(SIG_UNBLOCK, &term, NULL); /* refused: flitrun stops the job */
    wait_forever(c);
    return 1;
}

enum stranger { SAYS_HELLO, SAYS_PROXY, SAYS_BYE, DECLARES_MAX };

/* flitrun must close a connection that says this HELLO, a non-HELLO, or
   that declares a frame of FL_PROTO_MAX_FRAME bytes before any HELLO (at
   once: not after the wait for a HELLO, and with no room allocated). */
static void expect_refused(uint64_t job_id, uint32_t rank, const uint8_t *key,
                           enum stranger how)
{
    int fd = dial();
    uint8_t head[5];
    fl_put32(head, FL_PROTO_MAX_FRAME);
    head[4] = FL_PROTO_HELLO;
    if (how == SAYS_HELLO) {
        send_hello(fd, job_id, rank, key);
    } else if (how == SAYS_PROXY) { /* with the key, of a proxy never started */
        uint8_t hello[FL_PROTO_HELLO_LEN];
        fl_proto_hello_encode(hello, job_id, rank, (uint32_t)getpid(), key);
        if (fl_proto_send(fd, FL_PROTO_PROXY, hello, sizeof hello) != 0)
            die("%s", "cannot send PROXY");
    } else if (how == SAYS_BYE ? fl_proto_send(fd, FL_PROTO_BYE, NULL, 0) != 0
                               : write(fd, head, sizeof head) != (ssize_t)sizeof head) {
        die("%s", "cannot send the stranger's frame");
    }
    char b;
    ssize_t n;
    while ((n = read(fd, &b, 1)) < 0 && errno == EINTR)
        ;
    if (n != 0 && !(n < 0 && errno == ECONNRESET))
        die("%s", "flitrun kept a connection it should have refused");
    close(fd);
}

static int mode_reject(struct client *c)
{
    client_open(c);
    gather_pattern(c); /* flitrun knows our real HELLO by now */
    if (c->rank == 0) {
        uint8_t wrong[FL_PROTO_KEY_LEN];
        memcpy(wrong, c->key, sizeof wrong);
        wrong[FL_PROTO_KEY_LEN - 1] ^= 1;
        expect_refused(c->job_id ^ 1, 0, c->key, SAYS_HELLO);
        expect_refused(c->job_id, c->size, c->key, SAYS_HELLO);
        expect_refused(c->job_id, 0, c->key, SAYS_HELLO);
        expect_refused(c->job_id, 1, wrong, SAYS_HELLO);
        expect_refused(c->job_id, 0, c->key, SAYS_BYE);
        expect_refused(c->job_id, 1, c->key, SAYS_PROXY);
        expect_refused(c->job_id, 0, c->key, DECLARES_MAX);
    }
    gather_pattern(c);
    say_bye(c);
    return 0;
}

/* A connection of ours without a HELLO must be dropped with BUSY: once
   the strangers' pool is full (drop: STRANGERS more connections after it,
   more than the pool holds), or once the wait for a HELLO is over (late). */
static void expect_busy(bool drop)
{
    enum { STRANGERS = 64 };
    int first = dial(), more[STRANGERS];
    for (int i = 0; i < (drop ? STRANGERS : 0); i++)
        more[i] = dial();
    struct fl_proto_rx rx = {0};
    int r = await_answer(first, &rx);
    if (r != 0)
        die("flitrun %s a connection without HELLO instead of saying BUSY",
            r < 0 ? "closed" : "welcomed");
    fl_proto_rx_free(&rx);
    close(first);
    for (int i = 0; i < (drop ? STRANGERS : 0); i++)
        close(more[i]);
}

static int mode_busy(struct client *c, int argc, char **argv)
{
    bool drop = argc > 2 && strcmp(argv[2], "drop") == 0;
    check_env(c);
    if (c->rank == 0)
        expect_busy(drop);
    client_open(c);
    gather_pattern(c);
    say_bye(c);
    printf("rank %u of %u ok\n", c->rank, c->size);
    return 0;
}

static int mode_shm(struct client *c)
{
    check_env(c);
    char name[64];
    snprintf(name, sizeof name, "/flit-%s-%u-0", c->job_hex, c->rank);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        die("shm_open: %s", strerror(errno));
    close(fd);
    printf("shm %s\n", name);
    return 0;
}

static int mode_where(void)
{
    const char *host = getenv("FAKEHOST");
    printf("rank %s of %s on %s\n", getenv(FL_ENV_RANK), getenv(FL_ENV_SIZE),
           host ? host : "here");
    return 0;
}

static int mode_args(int argc, char **argv)
{
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        die("getcwd: %s", strerror(errno));
    printf("cwd [%s]\n", cwd);
    /* one line per word, whole: flitrun forwards the ranks' output by lines,
       so a newline inside a word is shown as \n (and a backslash as \\) */
    for (int i = 2; i < argc; i++) {
        fputs("arg [", stdout);
        for (const char *c = argv[i]; *c; c++) {
            if (*c == '\n')
                fputs("\\n", stdout);
            else if (*c == '\\')
                fputs("\\\\", stdout);
            else
                putchar(*c);
        }
        fputs("]\n", stdout);
    }
    return 0;
}

/* Whether the file at path holds text (its first 64 KiB). */
static bool file_has(const char *path, const char *text)
{
    static char buf[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false; /* gone since the listing */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    return memmem(buf, (size_t)n, text, strlen(text)) != NULL;
}

/* One allgather (every rank and its launcher are running then), then no
   command line on this host may show the job's key. */
static int mode_nokey(struct client *c)
{
    client_open(c);
    gather_pattern(c);
    const char *key = getenv(FL_ENV_JOB_KEY);
    DIR *d = opendir("/proc");
    if (!d)
        die("/proc: %s", strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
        char path[300];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        if (file_has(path, key))
            die("the job's key is on the command line of pid %s", e->d_name);
    }
    closedir(d);
    gather_pattern(c); /* no launcher ends before every rank has looked */
    say_bye(c);
    printf("rank %u: the key is on no command line\n", c->rank);
    return 0;
}

/* The launcher word "FLIT_X=value" of argv, or NULL. */
static const char *launch_var(char **argv, const char *name)
{
    size_t n = strlen(name);
    for (; *argv; argv++)
        if (strncmp(*argv, name, n) == 0 && (*argv)[n] == '=')
            return *argv + n + 1;
    return NULL;
}

static void send_for(int fd, uint32_t rank, uint8_t type, const void *body, size_t len)
{
    uint8_t frame[64];
    fl_put32(frame, rank);
    frame[4] = type;
    if (len)
        memcpy(frame + FL_PROTO_FOR_HDR, body, len);
    if (fl_proto_send(fd, FL_PROTO_FOR, frame, FL_PROTO_FOR_HDR + len) != 0)
        die("%s", "cannot send FOR");
}

/*
 * A launcher (the template's words before {host}'s command) that starts
 * that command, except on host BAD: there it is a proxy that misbehaves
 * towards flitrun. It reads the key, says PROXY for the host's first rank,
 * and then what HOW says: "short" a FOR too short to name a rank, "alien"
 * a FOR for a rank of another host, "unheard" a GATHER for a rank that said
 * no HELLO, "type" a HELLO and then a frame type no rank sends. flitrun
 * must fail the job naming the proxy, and close the connection.
 */
static int mode_fakeproxy(int argc, char **argv)
{
    if (argc < 6)
        die("%s", "fakeproxy BAD HOST HOW command...");
    if (strcmp(argv[2], argv[3]) != 0) {
        execvp(argv[5], argv + 5);
        die("cannot run %s", argv[5]);
    }
    const char *how = argv[4], *boot = launch_var(argv + 5, FL_ENV_BOOT),
               *job = launch_var(argv + 5, FL_ENV_JOB_ID),
               *rank = launch_var(argv + 5, FL_ENV_RANK);
    char line[2 * FL_PROTO_KEY_LEN + 2];
    uint8_t key[FL_PROTO_KEY_LEN], hello[FL_PROTO_HELLO_LEN], pid[4];
    if (!boot || !job || !rank || !fgets(line, sizeof line, stdin))
        die("%s", "the fake proxy lacks FLIT_BOOT, FLIT_JOB_ID, FLIT_RANK or the key");
    line[strcspn(line, "\n")] = '\0';
    if (fl_proto_key_parse(line, key) != 0)
        die("%s", "the fake proxy's key is not 64 hex digits");
    uint32_t lead = (uint32_t)atoi(rank);
    uint32_t local;
    int fd = fl_proto_connect(boot, &local);
    if (fd < 0)
        die("the fake proxy cannot connect: %s", strerror(-fd));
    fl_proto_hello_encode(hello, strtoull(job, NULL, 16), lead, (uint32_t)getpid(), key);
    struct fl_proto_rx rx = {0};
    if (fl_proto_send(fd, FL_PROTO_PROXY, hello, sizeof hello) != 0 ||
        await_answer(fd, &rx) != 1)
        die("%s", "flitrun did not welcome the fake proxy");
    fl_put32(pid, (uint32_t)getpid());
    if (strcmp(how, "short") == 0) {
        if (fl_proto_send(fd, FL_PROTO_FOR, pid, 3) != 0)
            die("%s", "cannot send FOR");
    } else if (strcmp(how, "alien") == 0) {
        send_for(fd, 0, FL_PROTO_HELLO, pid, sizeof pid);
    } else if (strcmp(how, "unheard") == 0) {
        send_for(fd, lead, FL_PROTO_GATHER, pid, sizeof pid);
    } else {
        send_for(fd, lead, FL_PROTO_HELLO, pid, sizeof pid);
        send_for(fd, lead, 99, NULL, 0);
    }
    char b;
    while (read(fd, &b, 1) > 0) /* flitrun closes it, then stops the job */
        ;
    fl_proto_rx_free(&rx);
    return 0;
}

static int mode_spam(void)
{
    while (write(STDOUT_FILENO, "spam\n", 5) == 5)
        ;
    return 1; /* SIGPIPE was to end this first */
}

int main(int argc, char **argv)
{
    struct client c = {.fd = -1};
    const char *mode = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(mode, "gather") == 0)
        return mode_gather(&c, argc, argv);
    if (strcmp(mode, "fail") == 0)
        return mode_fail(&c, argc, argv, false);
    if (strcmp(mode, "sigkill") == 0)
        return mode_fail(&c, argc, argv, true);
    if (strcmp(mode, "wait") == 0)
        return mode_wait(&c);
    if (strcmp(mode, "hang") == 0)
        return mode_hang(&c, argc, argv);
    if (strcmp(mode, "print") == 0)
        return mode_print(argc, argv);
    if (strcmp(mode, "stdin") == 0)
        return mode_stdin(argc, argv);
    if (strcmp(mode, "stdin_pattern") == 0)
        return mode_stdin_pattern(argc, argv);
    if (strcmp(mode, "stdin_early") == 0)
        return mode_stdin_early(argc, argv);
    if (strcmp(mode, "badframe") == 0)
        return mode_badframe(&c, argc, argv);
    if (strcmp(mode, "abort") == 0)
        return mode_abort(&c, argc, argv);
    if (strcmp(mode, "reject") == 0)
        return mode_reject(&c);
    if (strcmp(mode, "shm") == 0)
        return mode_shm(&c);
    if (strcmp(mode, "busy") == 0)
        return mode_busy(&c, argc, argv);
    if (strcmp(mode, "spam") == 0)
        return mode_spam();
    if (strcmp(mode, "nokey") == 0)
        return mode_nokey(&c);
    if (strcmp(mode, "where") == 0)
        return mode_where();
    if (strcmp(mode, "args") == 0)
        return mode_args(argc, argv);
    if (strcmp(mode, "fakeproxy") == 0)
        return mode_fakeproxy(argc, argv);
    die("unknown mode '%s'", mode);
    return 1;
}
