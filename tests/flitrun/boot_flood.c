/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stranger at flitrun's boot port, in front of a rank: flitrun starts it
 * as the program (or a launcher template puts it before `env FLIT_...=...
 * program`); it reads the job's boot address, id and rank from its
 * environment or from those words, opens connections to the port as an
 * attacker would, and only then execs the rank, which inherits them: so
 * every stranger is in before the rank's own connection, and stays open as
 * long as the rank runs.
 *
 *   boot_flood [--idle N] [--garbage N] [--slow N] [--impostor]
 *              [--refused-at IP] -- PROGRAM [ARGS...]
 *
 *   --idle N        N connections that say nothing
 *   --garbage N     N that send a frame that is not a HELLO: in turn a
 *                   declared length of 64 MiB, a length of 0, a BYE, a
 *                   HELLO of protocol version 1, random bytes
 *   --slow N        N that send the first 9 bytes of a HELLO and no more
 *                   (slowloris: a HELLO that never ends)
 *   --impostor      one that sends a well-formed HELLO with the job's id
 *                   naming this very rank, before it, without the job's key
 *   --refused-at IP a connection to the boot port at IP (another address of
 *                   flitrun's host) must be refused: flitrun listens only on
 *                   the address it gave the ranks
 *
 * Exit 1 (before the exec) if a connection cannot be made or IP answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/proto.h"

struct flood {
    unsigned idle, garbage, slow;
    bool impostor;
    const char *refused_at;
    char **prog;
};

__attribute__((noreturn)) static void die(const char *what, int err)
{
    fprintf(stderr, "boot_flood: %s%s%s\n", what, err ? ": " : "",
            err ? strerror(err) : "");
    exit(1);
}

/* $NAME, or the NAME=value word of the program's `env` words. */
static const char *job_var(char **prog, const char *name)
{
    size_t len = strlen(name);
    for (; *prog; prog++)
        if (strncmp(*prog, name, len) == 0 && (*prog)[len] == '=')
            return *prog + len + 1;
    return getenv(name);
}

/* A connection the rank inherits (no close-on-exec). */
static int dial(const char *boot)
{
    uint32_t local;
    int fd = fl_proto_connect(boot, &local);
    if (fd < 0)
        die("cannot connect to flitrun's port", -fd);
    int flags = 0;
    if (fcntl(fd, F_SETFD, flags) != 0)
        die("fcntl", errno);
    return fd;
}

/* A stranger that flitrun has dropped already (as it may, oldest first)
   sends into the void: only other errors stop the flood. */
static void send_all(int fd, const void *p, size_t len)
{
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n != (ssize_t)len && !(n < 0 && (errno == EPIPE || errno == ECONNRESET)))
        die("send", n < 0 ? errno : EIO);
}

/* Garbage of kind k, then left open. */
static void send_garbage(int fd, unsigned k)
{
    uint8_t b[32] = {0};
    switch (k % 5) {
    case 0: /* a frame flitrun must not make room for */
        fl_put32(b, FL_PROTO_MAX_FRAME);
        b[4] = FL_PROTO_HELLO;
        send_all(fd, b, 5);
        break;
    case 1: /* a length of 0: not a frame at all */
        send_all(fd, b, 8);
        break;
    case 2:
        fl_put32(b, 1);
        b[4] = FL_PROTO_BYE;
        send_all(fd, b, 5);
        break;
    case 3: /* a HELLO of version 1: 20 bytes, no key */
        fl_put32(b, 21);
        b[4] = FL_PROTO_HELLO;
        fl_put32(b + 5, 1);
        send_all(fd, b, 25);
        break;
    default:
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (uint8_t)(rand() >> 7);
        send_all(fd, b, sizeof b);
        break;
    }
}

/* A HELLO with the job's id, naming rank, with a key that is not the job's
   (all ones: the key drawn at random is not that). */
static void send_impostor(int fd, const char *job_hex, const char *rank)
{
    uint8_t key[FL_PROTO_KEY_LEN], body[FL_PROTO_HELLO_LEN], head[5];
    memset(key, 0xff, sizeof key);
    fl_proto_hello_encode(body, strtoull(job_hex ? job_hex : "0", NULL, 16),
                          (uint32_t)strtoul(rank ? rank : "0", NULL, 10),
                          (uint32_t)getpid(), key);
    fl_put32(head, 1 + FL_PROTO_HELLO_LEN);
    head[4] = FL_PROTO_HELLO;
    send_all(fd, head, sizeof head);
    send_all(fd, body, sizeof body);
}

/* The port, at ip instead of the address flitrun gave: must be refused. */
static void expect_refused_at(const char *boot, const char *ip)
{
    struct sockaddr_in sa;
    if (fl_proto_parse_tcp(boot, &sa) != 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        die("--refused-at wants an IPv4 address and a TCP boot address", 0);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket", errno);
    int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int err = r == 0 ? 0 : errno;
    close(fd);
    if (r == 0) {
        fprintf(stderr, "boot_flood: flitrun's port answers at %s, not only at %s\n", ip,
                boot);
        exit(1);
    }
    if (err != ECONNREFUSED)
        die("connecting at the other address failed otherwise", err);
}

static void parse(int argc, char **argv, struct flood *f)
{
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "--idle") == 0 && more)
            f->idle = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--garbage") == 0 && more)
            f->garbage = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--slow") == 0 && more)
            f->slow = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--impostor") == 0)
            f->impostor = true;
        else if (strcmp(argv[i], "--refused-at") == 0 && more)
            f->refused_at = argv[++i];
        else
            die("usage: boot_flood [--idle N] [--garbage N] [--slow N] [--impostor] "
                "[--refused-at IP] -- PROGRAM [ARGS...]",
                0);
    }
    if (i + 1 >= argc)
        die("no program after --", 0);
    f->prog = argv + i + 1;
}

int main(int argc, char **argv)
{
    struct flood f = {0};
    parse(argc, argv, &f);
    const char *boot = job_var(f.prog, FL_ENV_BOOT);
    if (!boot)
        die("no FLIT_BOOT: run me under flitrun", 0);
    srand((unsigned)getpid());
    if (f.refused_at)
        expect_refused_at(boot, f.refused_at);
    for (unsigned i = 0; i < f.idle; i++)
        dial(boot);
    for (unsigned i = 0; i < f.garbage; i++)
        send_garbage(dial(boot), i);
    static const uint8_t partial[9] = {1 + FL_PROTO_HELLO_LEN, 0, 0, 0, FL_PROTO_HELLO,
                                       FL_PROTO_VERSION};
    for (unsigned i = 0; i < f.slow; i++)
        send_all(dial(boot), partial, sizeof partial);
    if (f.impostor)
        send_impostor(dial(boot), job_var(f.prog, FL_ENV_JOB_ID),
                      job_var(f.prog, FL_ENV_RANK));
    execvp(f.prog[0], f.prog);
    die("cannot execute the program", errno);
}
