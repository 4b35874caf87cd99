/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's side of flitrun's boot protocol (src/boot/flitrun.c) against a
 * scripted flitrun: this process listens on an abstract unix socket, puts
 * flitrun's variables in the environment, and answers a child that opens
 * the flitrun launcher as each case says, connection after connection:
 *
 *   welcome   WELCOME at once: the launcher opens, and says BYE at close
 *   busy      BUSY twice (flitrun dropped the connection before it read the
 *             HELLO), then WELCOME: it opens on its third connection
 *   unread    closed twice without reading anything, then WELCOME: the same
 *   refused   the HELLO read, then closed without a word: FLIT_ERR_BOOT,
 *             saying that flitrun refused it and where to look
 *   busy8     BUSY every time: it gives up after 8 connections, saying so
 *   garbage   the HELLO read, then answered with a frame that is no answer
 *             to it: FLIT_ERR_BOOT, saying so (not taken for a lost link)
 *   nokey     no FLIT_JOB_KEY: FLIT_ERR_BOOT before connecting, naming it
 *
 * Every HELLO must carry this version, the job's id, the rank and the key.
 * Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../boot/child.h"
#include "boot/boot.h"
#include "boot/proto.h"

#define WAIT_MS 20000 /* a connection or a frame this late: the case fails */

enum answer { WELCOME, BUSY, UNREAD, REFUSE, GARBAGE };

struct tcase {
    const char *name;
    enum answer answers[8]; /* per connection; the last one repeats */
    unsigned nanswers, conns;
    bool no_key;
    flit_status want;
    const char *said;
};

static const struct tcase cases[] = {
    {.name = "welcome", .answers = {WELCOME}, .nanswers = 1, .conns = 1},
    {.name = "busy", .answers = {BUSY, BUSY, WELCOME}, .nanswers = 3, .conns = 3},
    {.name = "unread", .answers = {UNREAD, UNREAD, WELCOME}, .nanswers = 3, .conns = 3},
    {.name = "refused",
     .answers = {REFUSE},
     .nanswers = 1,
     .conns = 1,
     .want = FLIT_ERR_BOOT,
     .said = "refused rank 0's HELLO (its stderr"},
    {.name = "busy8",
     .answers = {BUSY},
     .nanswers = 1,
     .conns = 8,
     .want = FLIT_ERR_BOOT,
     .said = "connection 8 times before reading its"},
    {.name = "garbage",
     .answers = {GARBAGE},
     .nanswers = 1,
     .conns = 1,
     .want = FLIT_ERR_BOOT,
     .said = "answered rank 0's HELLO with garbage"},
    {.name = "nokey",
     .answers = {WELCOME},
     .nanswers = 1,
     .no_key = true,
     .want = FLIT_ERR_BOOT,
     .said = "FLIT_JOB_KEY are missing or invalid"},
};

static unsigned failures;
static uint8_t key[FL_PROTO_KEY_LEN];
static const uint64_t job_id = 0x0123456789abcdefull;

#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "FAIL %s: ", c->name);                                           \
        fprintf(stderr, __VA_ARGS__);                                                    \
        fprintf(stderr, "\n");                                                           \
        failures++;                                                                      \
    } while (0)

static bool readable_in(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1;
}

static bool readable(int fd)
{
    return readable_in(fd, WAIT_MS);
}

/* The next frame on fd, blocking up to WAIT_MS: 1, or 0 at EOF or late. */
static int next_frame(int fd, struct fl_proto_rx *rx, uint8_t *type, const uint8_t **body,
                      size_t *len)
{
    for (;;) {
        int r = fl_proto_rx_next(rx, type, body, len);
        if (r != 0)
            return r == 1;
        if (!readable(fd) || fl_proto_rx_fill(rx, fd) <= 0)
            return 0;
    }
}

static void check_hello(const struct tcase *c, int fd, struct fl_proto_rx *rx)
{
    uint8_t type;
    const uint8_t *body;
    size_t len;
    struct fl_proto_hello h;
    if (!next_frame(fd, rx, &type, &body, &len) || type != FL_PROTO_HELLO ||
        fl_proto_hello_decode(body, len, &h) != 0)
        FAIL("no HELLO of this version");
    else if (h.job_id != job_id || h.rank != 0 || !fl_proto_key_equal(h.key, key))
        FAIL("the HELLO lacks the job's id, rank or key");
}

static void send_empty(int fd, uint8_t type)
{
    (void)fl_proto_send(fd, type, NULL, 0);
}

/* After WELCOME: GATHERs answered for a job of one rank, until BYE. */
static void serve(const struct tcase *c, int fd, struct fl_proto_rx *rx)
{
    uint8_t type, out[FL_PROTO_GATHERED_HDR + 4 + 256];
    const uint8_t *body;
    size_t len;
    while (next_frame(fd, rx, &type, &body, &len)) {
        if (type == FL_PROTO_BYE)
            return;
        if (type != FL_PROTO_GATHER || len < 4 || len - 4 > 256) {
            FAIL("frame type %u (%zu bytes) after WELCOME", type, len);
            return;
        }
        fl_put32(out, fl_get32(body));
        fl_put32(out + 4, 1);
        fl_put32(out + 8, (uint32_t)(len - 4));
        memcpy(out + 12, body + 4, len - 4);
        (void)fl_proto_send(fd, FL_PROTO_GATHERED, out, 12 + len - 4);
    }
    FAIL("no BYE");
}

/* Answers one connection; true when the child is welcomed. */
static bool answer(const struct tcase *c, int lfd, enum answer a)
{
    if (!readable(lfd)) {
        FAIL("no connection came");
        return true;
    }
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    struct fl_proto_rx rx = {0};
    if (fd < 0) {
        FAIL("accept: %s", strerror(errno));
        return true;
    }
    if (a != UNREAD)
        check_hello(c, fd, &rx);
    if (a == BUSY)
        send_empty(fd, FL_PROTO_BUSY);
    if (a == GARBAGE)
        send_empty(fd, FL_PROTO_GATHERED);
    if (a == WELCOME) {
        send_empty(fd, FL_PROTO_WELCOME);
        serve(c, fd, &rx);
    }
    fl_proto_rx_free(&rx);
    close(fd);
    return a == WELCOME;
}

static int child_open(void *arg)
{
    (void)arg;
    struct fl_boot_info info = {0};
    flit_status st = fl_boot_flitrun.open(&info);
    if (st == FLIT_OK)
        fl_boot_flitrun.close(true);
    return (int)st;
}

static void set_env(const char *boot, bool with_key)
{
    char id[17], hex[2 * FL_PROTO_KEY_LEN + 1];
    snprintf(id, sizeof id, "%016llx", (unsigned long long)job_id);
    fl_proto_key_format(key, hex);
    setenv(FL_ENV_BOOT, boot, 1);
    setenv(FL_ENV_RANK, "0", 1);
    setenv(FL_ENV_SIZE, "1", 1);
    setenv(FL_ENV_JOB_ID, id, 1);
    if (with_key)
        setenv(FL_ENV_JOB_KEY, hex, 1);
    else
        unsetenv(FL_ENV_JOB_KEY);
}

static void run_case(const struct tcase *c, int lfd, const char *boot)
{
    struct child ch;
    set_env(boot, !c->no_key);
    if (child_start(&ch, child_open, NULL) != 0) {
        FAIL("fork: %s", strerror(errno));
        return;
    }
    unsigned n = 0;
    while (n < c->conns) {
        enum answer a = c->answers[n < c->nanswers ? n : c->nanswers - 1];
        n++;
        if (answer(c, lfd, a))
            break;
    }
    int code = child_wait(&ch);
    if (code != (int)c->want)
        FAIL("open gave %d, not %d; it said:\n%s", code, (int)c->want, ch.text);
    if (c->said && !strstr(ch.text, c->said))
        FAIL("stderr lacks \"%s\"; it was:\n%s", c->said, ch.text);
    if (n != c->conns)
        FAIL("%u connections, not %u", n, c->conns);
    if (readable_in(lfd, 0))
        FAIL("a connection more than the case's");
}

int main(void)
{
    struct sockaddr_un sa;
    unsigned salen;
    char boot[64];
    snprintf(boot, sizeof boot, "unix:@flit-client-test-%d", (int)getpid());
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(i * 7 + 3);
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || fl_proto_parse_addr(boot, &sa, &salen) != 0 ||
        bind(lfd, (struct sockaddr *)&sa, (socklen_t)salen) != 0 ||
        listen(lfd, 16) != 0) {
        perror("client_test: listen");
        return 1;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned before = failures;
        run_case(&cases[i], lfd, boot);
        if (failures == before)
            printf("ok: %s\n", cases[i].name);
    }
    close(lfd);
    return failures ? 1 : 0;
}
