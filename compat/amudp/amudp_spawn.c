/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Spawn functions of the program's own (AMUDP_SPMDStartup's spawnfn that is
 * none of the library's). AMUDP calls such a function with the command
 * line of a worker and leaves it to start nproc processes of it, anywhere
 * they can reach the master. On flit a worker is a rank of a flitrun job,
 * so the master brokers between the two:
 *
 *  - it listens on a TCP port (this host's name and the port travel on the
 *    workers' command line, after a hidden first argument, as AMUDP's own
 *    hidden arguments do) and starts flitrun with nproc ranks whose launcher
 *    is this program again as a relay (flitrun --launch), after calling
 *    the spawn function with `prog AMX_WORKER_ARG HOST:PORT args...`;
 *  - each relay tells the master the FLIT_* variables flitrun gave its rank
 *    and waits; each worker that calls in gets one relay's variables, puts
 *    them in its environment and starts as that rank;
 *  - when the worker ends it tells the master its exit code (at exit, or in
 *    AMUDP_SPMDExit), which the master passes to the relay, which exits
 *    with it: flitrun then sees the rank end as the worker did, and stops
 *    the job as it does for a rank of its own. A worker that ends without a
 *    word (killed) ends its relay with status 255, AMUDP's for a lost
 *    worker.
 *
 * The master serves until flitrun is done and exits with its status.
 * Messages are lines: a relay sends "R", its variables, an empty line; a
 * worker sends "W" and reads variables up to an empty line; "X CODE" is the
 * exit code, worker to master to relay.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amudp_internal.h"

#define LINE_MAX_ 4096
#define MAX_CONNS 1024

/* ---------------------------------------------------------------- lines */

static int send_all(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        s += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads one line (without its newline) into buf; -1 at EOF or error. */
static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (c == '\n')
            break;
        if (n + 1 < cap)
            buf[n++] = c;
    }
    buf[n] = 0;
    return (int)n;
}

static int connect_to(const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof host)
        return -1;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* ---------------------------------------------------------------- relay */

/* The job's key, which flitrun writes as the first line of a remote
   rank's launcher's stdin (never on a command line), passed on as a
   variable. 0, or -1 when it cannot be read or sent. */
static int relay_key(int fd)
{
    char key[160];
    static const char var[] = "FLIT_JOB_KEY=";
    if (read_line(0, key, sizeof key) < 0)
        return -1;
    return send_all(fd, var, sizeof var - 1) || send_all(fd, key, strlen(key)) ||
           send_all(fd, "\n", 1);
}

/* A relay: argv is `prog AMX_RELAY_ARG HOST:PORT RANKHOST [sh -c SCRIPT sh]
   env FLIT_...=... prog args` (flitrun's launch command; the shell part,
   there when the job's key comes on stdin, reads it). Never returns. */
void amx_spawn_relay(char **argv)
{
    int fd = connect_to(argv[2]);
    if (fd < 0) {
        fprintf(stderr, "AMUDP: relay cannot reach the master at %s\n", argv[2]);
        _exit(1);
    }
    int bad = send_all(fd, "R\n", 2);
    char **w = argv + 4;
    bool key_on_stdin = *w && strcmp(*w, "env") != 0;
    while (*w && strcmp(*w, "env") != 0)
        w++;
    for (w += *w != NULL; !bad && *w && strncmp(*w, "FLIT_", 5) == 0 && strchr(*w, '=');
         w++)
        bad = send_all(fd, *w, strlen(*w)) || send_all(fd, "\n", 1);
    if (!bad && key_on_stdin)
        bad = relay_key(fd);
    if (bad || send_all(fd, "\n", 1))
        _exit(1);
    char line[64];
    int code;
    if (read_line(fd, line, sizeof line) >= 0 && sscanf(line, "X %d", &code) == 1)
        _exit(code);
    _exit(255); /* the worker died without a word: AMUDP's status for a lost worker */
}

/* ---------------------------------------------------------------- worker */

static int worker_fd = -1;

/* Tells the master how this worker ends (once). */
void amx_spawn_exit(int code)
{
    if (worker_fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "X %d\n", code);
    send_all(worker_fd, line, (size_t)n);
    close(worker_fd);
    worker_fd = -1;
}

static void at_exit(int code, void *arg)
{
    (void)arg;
    amx_spawn_exit(code);
}

/* A worker the program's spawn function started: takes a relay's FLIT_*
   variables from the master and drops the two hidden arguments. */
int amx_spawn_worker(int *argc, char ***argv)
{
    char **a = *argv;
    int fd = connect_to(a[2]);
    if (fd < 0 || send_all(fd, "W\n", 2) != 0)
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "cannot reach the master");
    char line[LINE_MAX_];
    int n;
    while ((n = read_line(fd, line, sizeof line)) > 0) {
        char *eq = strchr(line, '=');
        if (!eq)
            break;
        *eq = 0;
        setenv(line, eq + 1, 1);
    }
    if (n != 0) {
        close(fd);
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "the master hung up");
    }
    worker_fd = fd;
    on_exit(at_exit, NULL);
    a[2] = a[0];
    *argv = a + 2;
    *argc -= 2;
    return AM_OK;
}

/* A worker of the library's spawn functions: the socket its master reads
   exit words from, inherited (AMX_ENV_EXIT_FD); its children do not get
   it. Nothing when there is none, or the number names no such socket. */
void amx_spawn_inherit(void)
{
    const char *v = getenv(AMX_ENV_EXIT_FD);
    char *end;
    long fd = v ? strtol(v, &end, 10) : -1;
    int type = 0;
    socklen_t len = sizeof type;
    if (worker_fd >= 0 || !v || *end || fd < 0 || fd > 1 << 20 ||
        getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_DGRAM || fcntl((int)fd, F_SETFD, FD_CLOEXEC) != 0) {
        unsetenv(AMX_ENV_EXIT_FD);
        return;
    }
    unsetenv(AMX_ENV_EXIT_FD);
    worker_fd = (int)fd;
    on_exit(at_exit, NULL);
}

/* ---------------------------------------------------------------- master */

struct conn {
    int fd;
    char kind;  /* 'R' relay, 'W' worker, 0 not yet said */
    int peer;   /* a worker's relay (index), -1 none */
    char *vars; /* a relay's variables, ending in an empty line */
    size_t len;
};

static struct conn conns[MAX_CONNS];
static int nconns;

static void drop(int i)
{
    close(conns[i].fd);
    free(conns[i].vars);
    conns[i].fd = -1;
    conns[i].vars = NULL;
}

/* Gives waiting workers the variables of waiting relays. */
static void pair(void)
{
    for (int w = 0; w < nconns; w++) {
        if (conns[w].fd < 0 || conns[w].kind != 'W' || conns[w].peer >= 0)
            continue;
        for (int r = 0; r < nconns; r++)
            if (conns[r].fd >= 0 && conns[r].kind == 'R' && conns[r].vars &&
                conns[r].peer < 0) {
                if (send_all(conns[w].fd, conns[r].vars, conns[r].len) == 0) {
                    conns[w].peer = r;
                    conns[r].peer = w;
                }
                break;
            }
    }
}

/* A relay's first line and variables, all at once (they are small). */
static void read_relay(int i)
{
    char line[LINE_MAX_];
    int n;
    while ((n = read_line(conns[i].fd, line, sizeof line)) > 0) {
        char *v = realloc(conns[i].vars, conns[i].len + (size_t)n + 2);
        if (!v)
            break;
        memcpy(v + conns[i].len, line, (size_t)n);
        v[conns[i].len + (size_t)n] = '\n';
        conns[i].vars = v;
        conns[i].len += (size_t)n + 1;
    }
    char *v = n == 0 ? realloc(conns[i].vars, conns[i].len + 1) : NULL;
    if (!v) {
        drop(i);
        return;
    }
    v[conns[i].len++] = '\n';
    conns[i].vars = v;
}

/* Something to read on connection i. */
static void serve(int i)
{
    char line[64];
    if (read_line(conns[i].fd, line, sizeof line) < 0) {
        int p = conns[i].peer;
        if (conns[i].kind == 'W' && p >= 0 && conns[p].fd >= 0)
            drop(p); /* no word: the relay ends with 1 */
        drop(i);
        return;
    }
    if (!conns[i].kind && (line[0] == 'R' || line[0] == 'W') && !line[1]) {
        conns[i].kind = line[0];
        if (line[0] == 'R')
            read_relay(i);
        pair();
        return;
    }
    int p = conns[i].peer;
    if (conns[i].kind == 'W' && p >= 0 && conns[p].fd >= 0 && line[0] == 'X') {
        send_all(conns[p].fd, line, strlen(line));
        send_all(conns[p].fd, "\n", 1);
    }
}

static void accept_one(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (nconns == MAX_CONNS) {
        close(fd);
        return;
    }
    conns[nconns] = (struct conn){fd, 0, -1, NULL, 0};
    nconns++;
}

/* Serves until flitrun (pid) ends; returns its exit status. */
static int broker(int lfd, pid_t pid)
{
    for (;;) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (w < 0 && errno != EINTR)
            return 1;
        struct pollfd fds[MAX_CONNS + 1];
        int at[MAX_CONNS + 1], n = 0;
        fds[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        at[n++] = -1;
        for (int i = 0; i < nconns; i++)
            if (conns[i].fd >= 0) {
                fds[n] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
                at[n++] = i;
            }
        if (poll(fds, (nfds_t)n, 50) <= 0)
            continue;
        for (int k = 0; k < n; k++)
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            else if (at[k] < 0)
                accept_one(lfd);
            else
                serve(at[k]);
    }
}

/* A TCP port on every address; "HOST:PORT" of this host into where. */
static int listen_here(char *where, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t len = sizeof a;
    char host[200];
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, 128) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0 ||
        gethostname(host, sizeof host) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    host[sizeof host - 1] = 0;
    snprintf(where, cap, "%s:%u", host, ntohs(a.sin_port));
    return fd;
}

/* flitrun with nproc relays as launchers, in a child; its pid or -1. */
static pid_t start_flitrun(int nproc, int argc, char **argv, const char *exe,
                           const char *where)
{
    char count[16], hosts[64], launch[4400];
    snprintf(count, sizeof count, "%d", nproc);
    snprintf(hosts, sizeof hosts, "amudp-spawn:%d", nproc);
    snprintf(launch, sizeof launch, "%s %s %s {host}", exe, AMX_RELAY_ARG, where);
    char **fa = calloc((size_t)argc + 12, sizeof *fa);
    if (!fa)
        return -1;
    int k = 0;
    fa[k++] = (char *)amx_flitrun_path();
    fa[k++] = (char *)"-n";
    fa[k++] = count;
    fa[k++] = (char *)"--hosts";
    fa[k++] = hosts;
    fa[k++] = (char *)"--launch";
    fa[k++] = launch;
    fa[k++] = (char *)"--no-proxy"; /* a relay stands for one rank: a call each */
    fa[k++] = (char *)"--";
    fa[k++] = (char *)exe;
    for (int i = 1; i < argc; i++)
        fa[k++] = argv[i];
    pid_t pid = amx_start_flitrun(fa);
    free(fa);
    return pid;
}

/* The master with a spawn function of the program's own. Returns only when
   nothing could be started. */
int amx_spawn_custom(int nproc, int argc, char **argv, int (*fn)(int, int, char **))
{
    static char exe[4096], where[256];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    if (n <= 0 || strchr(exe, ' '))
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup",
                       "the program's path is unknown or has a blank");
    int lfd = listen_here(where, sizeof where);
    char **wa = lfd >= 0 ? calloc((size_t)argc + 3, sizeof *wa) : NULL;
    if (!wa) {
        if (lfd >= 0)
            close(lfd);
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup", "cannot listen for workers");
    }
    wa[0] = argv[0]; /* as the program was given it, as AMUDP passes it */
    wa[1] = (char *)AMX_WORKER_ARG;
    wa[2] = where;
    for (int i = 1; i < argc; i++)
        wa[i + 2] = argv[i];
    /* The workers wait in the listening queue for flitrun's ranks. */
    int ok = fn(nproc, argc + 2, wa);
    free(wa);
    pid_t pid = ok ? start_flitrun(nproc, argc, argv, exe, where) : -1;
    if (pid < 0) {
        close(lfd);
        return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup",
                       ok ? "cannot start flitrun" : "the spawn function failed");
    }
    fflush(NULL);
    exit(broker(lfd, pid));
}
