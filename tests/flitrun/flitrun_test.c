/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Drives flitrun through one case: flitrun_test CASE FLITRUN RANK, where
 * RANK is the stand-in rank program (rank.c). Exit 0 pass, 1 fail, 77 skip.
 *
 * The driver is a child subreaper, so a rank that outlives flitrun becomes
 * its child: after every run it reaps what is left and fails the case if a
 * process is still running. Ranks also leave their pids in a temporary
 * directory ($FLRUN_TEST_DIR), checked the same way. Synchronisation is by
 * handshake ("ready" on stdout, pipes reaching EOF, the gate FIFO), never by
 * sleeping.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define RUN_LIMIT_S 20.0 /* a run past this is a hang: kill it, fail */
#define MAX_ARGS    32
#define STDIN_LEN   (1u << 20) /* fed to flitrun's stdin */
#define PIECE_MAX   16384      /* the feed goes in pieces of 1..PIECE_MAX bytes */
/* The feed blocked this long with rank 0 not reading yet: flitrun holds no
   more. Only a lower bound: on a slow machine the check may pass early. */
#define STUCK_MS 300

static const char *flitrun_path, *rank_path;
static char test_dir[256];
static bool failed;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    failed = true;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- one run of flitrun ---- */

struct buf {
    char *data;
    size_t len;
};

enum term { /* flitrun's stdin and stdout a terminal */
            TERM_NONE,
            TERM_FG, /* in its foreground */
            TERM_BG, /* in its background, as a shell's job */
};

enum gate {                /* when the ranks waiting on the gate go on */
            GATE_NONE,     /* no gate */
            GATE_ON_STUCK, /* the feed is stuck (or over) */
            GATE_ON_END,   /* the feed is over: all written, or EPIPE */
};

struct run {
    const char *stdin_text; /* NULL: /dev/null; with term, typed on it */
    const char *stdin_path; /* stdin is this file */
    size_t feed_len;        /* stdin a pipe fed this many pattern bytes */
    enum gate gate;
    enum term term;
    int ready_signal;  /* sent to flitrun once stdout says "ready" */
    bool close_stdout; /* nobody reads flitrun's stdout */
    int status;        /* flitrun's wait status */
    struct buf out, err;
    double secs;          /* until both its pipes reached EOF */
    size_t fed;           /* feed: bytes written */
    bool stuck;           /* feed: blocked STUCK_MS before the gate */
    bool broken;          /* feed: EPIPE, flitrun let go of its stdin */
    int feed_fd, gate_fd; /* the driver's ends; -1 when closed */
    uint32_t lcg;         /* piece sizes */
};

static void buf_add(struct buf *b, const char *p, size_t n)
{
    b->data = realloc(b->data, b->len + n + 1);
    if (!b->data) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* Returns false at EOF. */
static bool drain(int fd, struct buf *b)
{
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
        return true;
    if (n <= 0)
        return false;
    buf_add(b, chunk, (size_t)n);
    return true;
}

static void child_exec(char **argv, int in_fd, int out_fd, int err_fd)
{
    signal(SIGPIPE, SIG_DFL); /* the driver's own SIG_IGN is not the ranks' */
    dup2(in_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv);
    _exit(126);
}

/* An argument as flitrun gets it: "RANK" is the stand-in rank ("RANK ..."
   it and more words: a --launch template), "DIR/x" the file x in the
   test's directory. */
static const char *expand(const char *arg, char *buf, size_t len)
{
    if (strcmp(arg, "RANK") == 0)
        return rank_path;
    if (strncmp(arg, "RANK ", 5) == 0) {
        snprintf(buf, len, "%s%s", rank_path, arg + 4);
        return buf;
    }
    if (strncmp(arg, "DIR/", 4) != 0)
        return arg;
    snprintf(buf, len, "%s/%s", test_dir, arg + 4);
    return buf;
}

/* The feed's bytes: byte k of the stream (as rank.c has it). */
static uint8_t stdin_byte(size_t k)
{
    uint32_t x = (uint32_t)k * 2654435761u;
    return (uint8_t)((x >> 24) ^ (k >> 16));
}

static void fill_pattern(uint8_t *p, size_t off, size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = stdin_byte(off + i);
}

static int open_stdin(struct run *r)
{
    int p[2];
    char path[512];
    if (r->stdin_path)
        return open(expand(r->stdin_path, path, sizeof path), O_RDONLY | O_CLOEXEC);
    if (r->feed_len) {
        if (pipe2(p, O_CLOEXEC) != 0 || fcntl(p[1], F_SETFL, O_NONBLOCK) != 0)
            return -1;
        r->feed_fd = p[1];
        return p[0];
    }
    if (!r->stdin_text)
        return open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pipe2(p, O_CLOEXEC) != 0 || write(p[1], r->stdin_text, strlen(r->stdin_text)) < 0)
        return -1;
    close(p[1]); /* small enough for the pipe: EOF after it */
    return p[0];
}

/* The ranks open the gate FIFO and wait on it until its only writer, the
   driver, closes it. */
static int gate_make(struct run *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s/gate", test_dir);
    unlink(path);
    if (r->gate == GATE_NONE)
        return 0;
    if (mkfifo(path, 0600) != 0)
        return -1;
    r->gate_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    return r->gate_fd < 0 ? -1 : 0;
}

static void gate_open(struct run *r)
{
    if (r->gate_fd >= 0)
        close(r->gate_fd);
    r->gate_fd = -1;
}

static void feed_end(struct run *r, bool broken)
{
    close(r->feed_fd);
    r->feed_fd = -1;
    r->broken = broken;
    gate_open(r);
}

/* One piece of the pattern per call: the feed trickles in, in odd sizes. */
static void feed_piece(struct run *r)
{
    static uint8_t piece[PIECE_MAX];
    if (r->fed == r->feed_len) {
        feed_end(r, false);
        return;
    }
    r->lcg = r->lcg * 1103515245u + 12345u;
    size_t len = 1 + (r->lcg >> 8) % PIECE_MAX;
    if (len > r->feed_len - r->fed)
        len = r->feed_len - r->fed;
    fill_pattern(piece, r->fed, len);
    ssize_t n = write(r->feed_fd, piece, len);
    if (n > 0)
        r->fed += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
        feed_end(r, true); /* EPIPE: nobody reads flitrun's stdin now */
}

/* A pseudo-terminal without echo; returns the master, *slave its other end. */
static int open_pty(int *slave)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    const char *name = master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0
                           ? ptsname(master)
                           : NULL;
    struct termios t;
    *slave = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    if (*slave < 0 || tcgetattr(*slave, &t) != 0)
        return -1;
    t.c_lflag &= ~(tcflag_t)(ECHO | TOSTOP);
    t.c_cc[VEOF] = 4; /* ^D, as the driver types it */
    return tcsetattr(*slave, TCSANOW, &t) == 0 ? master : -1;
}

/* flitrun leads a new session whose controlling terminal is the pty, in
   its foreground; or it runs as a shell runs a background job: in a group of
   its own, beside this process (which stays in the foreground and exits as
   flitrun does), so that reading the terminal would stop it (SIGTTIN). */
static void child_tty(char **argv, int slave, int err_fd, enum term term)
{
    pid_t shell = getpid(), job;
    int st;
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0)
        _exit(126);
    if (term == TERM_FG)
        child_exec(argv, slave, slave, err_fd);
    if ((job = fork()) == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the driver kills the shell on a hang */
        if (getppid() != shell)
            _exit(126);
        child_exec(argv, slave, slave, err_fd);
    }
    if (job < 0 || (setpgid(job, job) != 0 && errno != EACCES))
        _exit(126); /* EACCES: it has exec'd, so it did it itself */
    while (waitpid(job, &st, 0) < 0)
        if (errno != EINTR)
            _exit(126);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

static void kill_pidfile_ranks(void);

/* Reads stdout and stderr to EOF, which comes once flitrun and everything
   that inherited them are gone; signals flitrun on "ready" if asked. */
static void collect(struct run *r, pid_t pid, int out_fd, int err_fd, double start)
{
    bool out_open = out_fd >= 0, err_open = true, signalled = false;
    while (out_open || err_open) {
        struct pollfd p[3] = {{.fd = out_open ? out_fd : -1, .events = POLLIN},
                              {.fd = err_open ? err_fd : -1, .events = POLLIN},
                              {.fd = r->feed_fd, .events = POLLOUT}};
        double left = start + RUN_LIMIT_S - now_s();
        int ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
        /* no POLLOUT for STUCK_MS: the feed is stuck */
        bool stuck_check = r->feed_fd >= 0 && r->gate == GATE_ON_STUCK && r->gate_fd >= 0;
        int n = poll(p, 3, stuck_check && ms > STUCK_MS ? STUCK_MS : ms);
        if (n == 0 && stuck_check && ms > STUCK_MS) {
            r->stuck = true;
            gate_open(r);
            continue;
        }
        if (n == 0) {
            fail("flitrun did not finish within %.0f s", RUN_LIMIT_S);
            kill(pid, SIGKILL);
            kill_pidfile_ranks();
            start = now_s(); /* give the kill a new window */
            continue;
        }
        if (p[0].revents)
            out_open = drain(out_fd, &r->out);
        if (p[1].revents)
            err_open = drain(err_fd, &r->err);
        if (p[2].revents && r->feed_fd >= 0)
            feed_piece(r);
        if (r->ready_signal && !signalled && r->out.data &&
            strstr(r->out.data, "ready\n")) {
            kill(pid, r->ready_signal);
            signalled = true;
        }
    }
}

static void run_flitrun(struct run *r, const char *const *args)
{
    static char paths[MAX_ARGS][512];
    char *argv[MAX_ARGS + 2];
    int n = 0;
    argv[n++] = (char *)flitrun_path;
    for (; args[n - 1] && n < MAX_ARGS; n++)
        argv[n] = (char *)expand(args[n - 1], paths[n], sizeof paths[n]);
    argv[n] = NULL;
    /* with a terminal, out[1] and in_fd are its slave end, out[0] the master */
    int out[2] = {-1, -1}, err[2], in_fd = -1;
    r->feed_fd = r->gate_fd = -1;
    r->lcg = 1;
    bool ok = pipe2(err, O_CLOEXEC) == 0 && gate_make(r) == 0;
    if (ok && r->term)
        ok = (out[0] = open_pty(&out[1])) >= 0;
    else if (ok)
        ok = pipe2(out, O_CLOEXEC) == 0 && (in_fd = open_stdin(r)) >= 0;
    if (!ok) {
        perror("flitrun_test: pipes");
        exit(1);
    }
    double start = now_s();
    pid_t pid = fork();
    if (pid == 0 && r->term)
        child_tty(argv, out[1], err[1], r->term);
    if (pid == 0)
        child_exec(argv, in_fd, out[1], err[1]);
    if (in_fd >= 0)
        close(in_fd);
    close(out[1]);
    close(err[1]);
    size_t typed = r->term && r->stdin_text ? strlen(r->stdin_text) : 0;
    if (typed && write(out[0], r->stdin_text, typed) != (ssize_t)typed)
        fail("cannot type on the terminal: %s", strerror(errno));
    if (r->close_stdout) {
        close(out[0]);
        out[0] = -1;
    }
    collect(r, pid, out[0], err[0], start);
    r->secs = now_s() - start;
    if (r->feed_fd >= 0)
        close(r->feed_fd);
    gate_open(r);
    if (out[0] >= 0)
        close(out[0]);
    close(err[0]);
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
        ;
}

static void run_free(struct run *r)
{
    free(r->out.data);
    free(r->err.data);
}

/* ---- no process left behind ---- */

static void on_alarm(int sig)
{
    (void)sig; /* only interrupts waitpid */
}

/* Orphans of this run were reparented to us: reap them. A child still
   running after a short wait (its exit may be in progress) is a leak. */
static void reap_orphans(void)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid > 0)
            continue;
        if (pid < 0)
            return; /* ECHILD: nothing left */
        alarm(3);
        pid = waitpid(-1, &st, 0);
        alarm(0);
        if (pid < 0 && errno == EINTR) {
            fail("a process of the job is still running after flitrun exited");
            kill_pidfile_ranks();
            return;
        }
    }
}

static int pidfile_pid(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f && fscanf(f, "%d", &pid) != 1)
        pid = 0;
    if (f)
        fclose(f);
    return pid;
}

/* Calls fn(rank, pid) for each pid file; returns how many there were. */
static int each_pidfile(void (*fn)(int rank, int pid))
{
    DIR *d = opendir(test_dir);
    int count = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "pid.", 4) != 0)
            continue;
        int pid = pidfile_pid(e->d_name);
        if (pid > 0 && fn)
            fn(atoi(e->d_name + 4), pid);
        count++;
    }
    if (d)
        closedir(d);
    return count;
}

static void kill_one(int rank, int pid)
{
    (void)rank;
    kill(pid, SIGKILL);
}

static void kill_pidfile_ranks(void)
{
    each_pidfile(kill_one);
}

static void check_dead(int rank, int pid)
{
    if (kill(pid, 0) == 0)
        fail("rank %d (pid %d) is still running", rank, pid);
}

static void clear_pidfiles(void)
{
    DIR *d = opendir(test_dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", test_dir, e->d_name);
        if (e->d_name[0] != '.' || strlen(e->d_name) > 2)
            unlink(path);
    }
    if (d)
        closedir(d);
}

/* After a run: nobody left, and (if want >= 0) that many ranks had started. */
static void check_nothing_left(int want_ranks)
{
    reap_orphans();
    int n = each_pidfile(check_dead);
    if (want_ranks >= 0 && n != want_ranks)
        fail("%d ranks wrote their pid, expected %d", n, want_ranks);
}

/* ---- expectations ---- */

static void expect_in(const struct buf *b, const char *what, const char *needle)
{
    if (!b->data || !strstr(b->data, needle))
        fail("%s lacks \"%s\"; it was:\n%s---", what, needle, b->data ? b->data : "");
}

static void expect_not_in(const struct buf *b, const char *what, const char *needle)
{
    if (b->data && strstr(b->data, needle))
        fail("%s has \"%s\"; it was:\n%s---", what, needle, b->data);
}

static void expect_status(const struct run *r, int code, int killed_by)
{
    bool ok = killed_by ? WIFSIGNALED(r->status) && WTERMSIG(r->status) == killed_by
                        : WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
    if (!ok)
        fail("flitrun: wanted %s %d, got wait status 0x%x\n--- stdout:\n%s"
             "--- stderr:\n%s---",
             killed_by ? "death by signal" : "exit status", killed_by ? killed_by : code,
             r->status, r->out.data ? r->out.data : "", r->err.data ? r->err.data : "");
}

static void expect_secs(const struct run *r, double lo, double hi)
{
    if (r->secs < lo || r->secs > hi)
        fail("flitrun took %.2f s, expected %.1f..%.1f s", r->secs, lo, hi);
}

/* A message about one rank: "flitrun: rank R (pid P) TAIL", or with host
   "flitrun: rank R on HOST (launcher pid P) TAIL"; P from rank R's pid
   file (the launcher is the rank, through env). */
struct rank_msg {
    int rank;
    const char *host;
    const char *tail; /* NULL: no message */
};

static void expect_rank_msg(const struct run *r, const struct rank_msg *m)
{
    char name[32], msg[256];
    snprintf(name, sizeof name, "pid.%d", m->rank);
    if (m->host)
        snprintf(msg, sizeof msg, "flitrun: rank %d on %s (launcher pid %d) %s", m->rank,
                 m->host, pidfile_pid(name), m->tail);
    else
        snprintf(msg, sizeof msg, "flitrun: rank %d (pid %d) %s", m->rank,
                 pidfile_pid(name), m->tail);
    expect_in(&r->err, "stderr", msg);
}

/* One line per rank on stdout: fmt with %1$d the rank and %2$d the number
   of ranks; rank 0's is fmt0 when it has one. */
struct rank_lines {
    int n;
    const char *fmt, *fmt0;
};

static void expect_rank_lines(const struct run *r, const struct rank_lines *l)
{
    for (int i = 0; i < l->n; i++) {
        char line[128];
        snprintf(line, sizeof line, i == 0 && l->fmt0 ? l->fmt0 : l->fmt, i, l->n);
        expect_in(&r->out, "stdout", line);
    }
}

/* ---- checks beyond the table's ---- */

/* The dumps come before the message that the job timed out. */
static void dumps_first(const struct run *r)
{
    const char *at = r->err.data ? strstr(r->err.data, "flitrun: job timed out") : NULL;
    if (at && (strstr(at, "DUMP rank 0") || strstr(at, "DUMP rank 1")))
        fail("the dumps came after the timeout message:\n%s", r->err.data);
}

/* Counts the lines of each rank; every line must be one of the rank's
   own, whole, behind the right prefix. */
static void check_prefixed(const struct buf *b, const char *kind, int nranks)
{
    int lines[8] = {0}, tails[8] = {0};
    long xs[8] = {0};
    char *copy = strdup(b->data ? b->data : ""), *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int rank, i, rank2, used = 0;
        char want[64];
        if (sscanf(l, "[%d] %n", &rank, &used) != 1 || used == 0 || rank < 0 ||
            rank >= nranks) {
            fail("%s line without a rank prefix: '%.80s'", kind, l);
            continue;
        }
        const char *text = l + used;
        if (!*text && xs[rank] > 0) {
            continue; /* the newline of a long line that was cut */
        } else if (text[0] == 'x' && strspn(text, "x") == strlen(text)) {
            xs[rank] += (long)strlen(text);
        } else if (sscanf(text, "tail %d", &rank2) == 1 && rank2 == rank) {
            tails[rank]++;
        } else if (sscanf(text, "%*s %d from rank %d", &i, &rank2) == 2 &&
                   rank2 == rank && i == lines[rank] &&
                   (snprintf(want, sizeof want, "%s %d from rank %d", kind, i, rank),
                    strcmp(text, want) == 0)) {
            lines[rank]++;
        } else {
            fail("%s line mixed up: '%.80s'", kind, l);
        }
    }
    bool out = strcmp(kind, "line") == 0;
    for (int i = 0; i < nranks; i++)
        if (lines[i] != 20 || (out && (tails[i] != 1 || xs[i] != 100000)))
            fail("rank %d: %d %s lines, %d tails, %ld x's", i, lines[i], kind, tails[i],
                 xs[i]);
    free(copy);
}

static void prefixed_3(const struct run *r)
{
    check_prefixed(&r->out, "line", 3);
    check_prefixed(&r->err, "err", 3);
}

/* Rank 0 read nothing until the feed was stuck: flitrun's read-ahead is
   bounded. Then all of it went through. */
static void feed_stuck_then_whole(const struct run *r)
{
    if (!r->stuck)
        fail("flitrun read all %zu bytes of its stdin while rank 0 read none", r->fed);
    if (r->fed != STDIN_LEN || r->broken)
        fail("the driver fed %zu of %u bytes%s", r->fed, STDIN_LEN,
             r->broken ? ", then EPIPE" : "");
}

/* flitrun let go of its stdin once rank 0 stopped reading: EPIPE. */
static void feed_broken(const struct run *r)
{
    if (!r->broken)
        fail("flitrun kept its stdin after rank 0 stopped reading (fed %zu bytes)",
             r->fed);
}

/* flitrun and its ranks (reaped, so counted as the driver's children) used
   little CPU: flitrun slept in poll while the ranks slept. CPU time, not
   wall time: a busy machine makes it smaller, never larger. */
static void little_cpu(const struct run *r)
{
    (void)r;
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0) {
        fail("getrusage: %s", strerror(errno));
        return;
    }
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    if (cpu > 0.25)
        fail("flitrun and its ranks used %.2f s of CPU while the ranks slept", cpu);
}

/* Each rank printed the shared file it made; flitrun removed them. */
static void shm_removed(const struct run *r)
{
    const char *p = r->out.data ? r->out.data : "";
    int seen = 0, used = 0;
    char name[128];
    while (sscanf(p, "shm %127s%n", name, &used) == 1 && used > 0) {
        p += used + (p[used] == '\n');
        char path[256];
        snprintf(path, sizeof path, "/dev/shm%s", name);
        if (access(path, F_OK) == 0) {
            fail("%s is still there", path);
            unlink(path);
        }
        seen++;
        used = 0;
    }
    if (seen != 2)
        fail("the ranks made %d shared files, expected 2:\n%s", seen, r->out.data);
}

/* Arguments that a remote shell would split, expand or glob. */
#define SHELL_ARGS                                                                       \
    "a b", "it's", "$HOME", "x;y", "", "t\tab", "new\nline", "*", "\"q\"", "\\"

/* SHELL_ARGS as the rank's "args" mode prints them, one line each. */
#define SHELL_ARGS_SHOWN                                                                 \
    "a b", "it's", "$HOME", "x;y", "", "t\tab", "new\\nline", "*", "\"q\"", "\\\\"

/* Through ssh every word arrived as it was, in flitrun's directory. */
static void ssh_words_kept(const struct run *r)
{
    static const char *const args[] = {SHELL_ARGS_SHOWN, NULL};
    char cwd[4096], line[4200];
    if (!getcwd(cwd, sizeof cwd))
        fail("getcwd: %s", strerror(errno));
    snprintf(line, sizeof line, "cwd [%s]\n", cwd);
    expect_in(&r->out, "stdout", line);
    for (size_t i = 0; args[i]; i++) {
        snprintf(line, sizeof line, "arg [%s]\n", args[i]);
        expect_in(&r->out, "stdout", line);
    }
}

/* ---- preparations ---- */

static void write_file(const char *name, const void *data, size_t len, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        fail("cannot write %s", path);
    if (fd >= 0)
        close(fd);
}

static void make_not_executable(void)
{
    write_file("not-executable", "#!/bin/sh\n", 10, 0644);
}

static void make_stdin_file(void)
{
    uint8_t *data = malloc(STDIN_LEN);
    if (!data) {
        fail("out of memory");
        return;
    }
    fill_pattern(data, 0, STDIN_LEN);
    write_file("stdin.bin", data, STDIN_LEN, 0600);
    free(data);
}

/* A stand-in for ssh, first on PATH: joins its arguments into one command
   line and runs it in a shell, as ssh has sshd do, and stays while it runs,
   as ssh does, its command line to be seen; -o options are ignored. */
static void make_fake_ssh(void)
{
    static const char script[] = "#!/bin/sh\n"
                                 "while [ \"$1\" = -o ]; do shift 2; done\n"
                                 "host=$1; shift\n"
                                 "FAKEHOST=$host /bin/sh -c \"$*\"\n";
    write_file("ssh", script, sizeof script - 1, 0755);
}

/* ---- the cases ----
 *
 * A case is one or more rows with its name, run in order: flitrun with the
 * row's arguments and stdin, then what the row expects of its exit, its
 * output, its time; then nothing of the job may be left running, and the
 * number of ranks that wrote a pid file must be the row's.
 *
 * Jobs over several hosts: every "host" is this machine. The --launch
 * template `env FAKEHOST={host}` starts each rank here, through env, with
 * FAKEHOST saying where it was sent. The rendezvous is TCP all the same (on
 * loopback, --boot-addr 127.0.0.1, so that no host name is looked up), and
 * with tcp set the stand-in ranks check that (FLRUN_TEST_TCP). A fake ssh
 * stands in for ssh.
 */

#define ANY         (-1) /* ranks: any number of pid files */
#define USAGE       "Usage: flitrun -n N"
#define STDIN_LEN_S "1048576" /* STDIN_LEN, as an argument */
#define FAKE_LAUNCH "env FAKEHOST={host}"
/* A launcher that forks, as ssh does: the rank is not the launcher's process,
   and its death by a signal reaches flitrun as the shell's 128+signal. */
#define FORKING_LAUNCH "sh -c \"$@\";exit {host}"
#define ON_HOSTS(hosts, launch)                                                          \
    "--hosts", hosts, "--launch", launch, "--boot-addr", "127.0.0.1"

struct tcase {
    const char *name;
    const char *args[MAX_ARGS];  /* "RANK": the stand-in rank; "DIR/x": see expand() */
    struct run run;              /* stdin, feed, gate, terminal, signal on "ready" */
    bool tcp;                    /* the ranks check that the rendezvous is TCP */
    void (*prepare)(void);       /* files in the test's directory */
    bool fake_ssh;               /* the test's directory first on PATH */
    int exit;                    /* flitrun's exit status; or */
    int killed_by;               /* the signal that killed flitrun */
    const char *out[6], *err[8]; /* on stdout, on stderr */
    const char *not_out[2], *not_err[4];
    struct rank_lines lines;
    struct rank_msg msg[2];
    double min_s, max_s; /* max_s 0: any time */
    bool quiet;          /* nothing on stderr */
    int ranks;           /* pid files; ANY */
    void (*check)(const struct run *r);
};

#define BAD_USAGE(...)                                                                   \
    {                                                                                    \
        .name = "usage", .args = {__VA_ARGS__}, .exit = 2, .err = { USAGE }              \
    }
#define BAD_HOSTS(msg, ...)                                                              \
    {                                                                                    \
        .name = "hosts_usage", .args = {__VA_ARGS__}, .exit = 2, .err = { msg, USAGE }   \
    }
#define GATHER(n)                                                                        \
    {                                                                                    \
        .name = "gather" #n, .args = {"-n", #n, "RANK", "gather", "3"}, .quiet = true,   \
        .lines = {n, "rank %1$d of %2$d ok\n"}, .ranks = n                               \
    }
#define STOP_SIGNAL(case, sig, signame)                                                  \
    {                                                                                    \
        .name = case, .args = {"-n", "4", "RANK", "wait"}, .run = {.ready_signal = sig}, \
        .exit = 128 + sig, .err = {"flitrun: caught " signame ", stopping the job\n"},   \
        .max_s = 5, .ranks = 4                                                           \
    }
/* One launcher call a rank (--no-proxy): the ranks share flitrun's job
   group, which rank.c's gather checks. */
#define TCP_GATHER(np, hosts, placement)                                                 \
    {                                                                                    \
        .name = "tcp_gather", .tcp = true,                                               \
        .args = {"-n",          #np,       ON_HOSTS(hosts, FAKE_LAUNCH),                 \
                 "--placement", placement, "--no-proxy",                                 \
                 "RANK",        "gather",  "3"},                                         \
        .quiet = true, .lines = {np, "rank %1$d of %2$d ok\n"}, .ranks = np              \
    }
/* Host c's launcher is rank.c's fake proxy, misbehaving as `how` says. */
#define BAD_PROXY(how, msg)                                                              \
    {                                                                                    \
        .name = "tcp_proxy_bad", .tcp = true,                                            \
        .args = {"-n", "6", ON_HOSTS("a,b,c", "RANK fakeproxy c {host} " how), "RANK",   \
                 "wait"},                                                                \
        .exit = 1, .err = {"flitrun: the proxy on c ", msg "; treating it as failed\n"}, \
        .max_s = 6, .ranks = ANY                                                         \
    }
/* rank.c's reject: the first stranger of each kind told, all counted; the
   three with the job's key (no such rank, a rank connected, no such proxy)
   told each */
#define REJECTED                                                                         \
    "claims rank 0 without this job's id and key (FLIT_JOB_KEY) (more like it are "      \
    "counted, not told",                                                                 \
        "with this job's key: pid ", " claims rank 2 of a job of 2",                     \
        ", which already connected", "instead of HELLO",                                 \
        " says it is the proxy of a host whose first rank is 1; no such proxy was "      \
        "started\n",                                                                     \
        "flitrun: rejected 4 connections in all that did not prove they were this "      \
        "job's: 2 sent garbage, 2 had not this job's key\n"
/* with -v, each stranger told */
#define REJECTED_V                                                                       \
    "claims rank 1 without this job's id and key",                                       \
        "declared a 67108864-byte frame before its HELLO"

/* a reason one byte longer than FL_PROTO_ABORT_TEXT allows */
#define REASON_8  "reason, "
#define REASON_64 REASON_8 REASON_8 REASON_8 REASON_8 REASON_8 REASON_8 REASON_8 REASON_8
#define REASON_512                                                                       \
    REASON_64 REASON_64 REASON_64 REASON_64 REASON_64 REASON_64 REASON_64 REASON_64

static const struct tcase cases[] = {
    BAD_USAGE(NULL),
    BAD_USAGE("-n", "2"),
    BAD_USAGE("-n", "0", "true"),
    BAD_USAGE("-n", "4097", "true"),
    BAD_USAGE("-n", "x", "true"),
    BAD_USAGE("-n"),
    BAD_USAGE("-n", "2", "--bogus", "true"),
    BAD_USAGE("-n", "2", "-q", "true"),
    BAD_USAGE("-n", "1", "--timeout", "-1", "true"),
    BAD_USAGE("-n", "1", "--timeout", "soon", "true"),
    BAD_USAGE("-n", "1", "--stdin", "all", "true"),
    BAD_USAGE("-n", "1", "--stdin"),
    {.name = "usage",
     .args = {"--help"},
     .out = {"Usage: flitrun -n N [options] [--] program [args...]"}},
    {.name = "usage", .args = {"--version"}, .out = {"flitrun (flit) "}},

    GATHER(1),
    GATHER(2),
    GATHER(4),
    GATHER(8),
    GATHER(32),
    {.name = "verbose",
     .args = {"-v", "-n", "2", "RANK", "gather", "1"},
     .err = {"flitrun: rank 1 is pid ", "flitrun: allgather round 1 complete",
             "flitrun: rank 1 finalized"},
     .msg = {{0, NULL, "connected\n"}, {1, NULL, "exited with status 0\n"}},
     .ranks = 2},

    /* a rank fails: the others die at SIGTERM, no grace used */
    {.name = "exit_code",
     .args = {"-n", "4", "RANK", "fail", "2", "3"},
     .exit = 3,
     .msg = {{2, NULL, "exited with status 3\n"}},
     .max_s = 4,
     .ranks = 4},
    {.name = "signal",
     .args = {"-n", "3", "RANK", "sigkill", "1"},
     .exit = 137,
     .msg = {{1, NULL, "was killed by signal 9 (SIGKILL)\n"}},
     .max_s = 4,
     .ranks = 3},
    {.name = "timeout",
     .args = {"-n", "2", "--timeout", "1", "RANK", "hang"},
     .exit = 124,
     .err = {"flitrun: job timed out after 1 s; stopping it\n", "DUMP rank 0\n",
             "DUMP rank 1\n"},
     .min_s = 1,
     .max_s = 6,
     .ranks = 2,
     .check = dumps_first},
    /* rank 1 ignores DUMP and SIGTERM: the dump wait and the grace both run out */
    {.name = "timeout_stubborn",
     .args = {"-n", "2", "--timeout", "0.5", "RANK", "hang", "1"},
     .exit = 124,
     .err = {"DUMP rank 0\n", "flitrun: job timed out after 0.5 s; stopping it\n"},
     .not_err = {"DUMP rank 1"},
     .min_s = 4.4,
     .max_s = 5.5,
     .ranks = 2},

    {.name = "prefix",
     .args = {"-n", "3", "-p", "RANK", "print", "split"},
     .ranks = ANY,
     .check = prefixed_3},
    /* like a shell pipe into `head`: when nobody reads flitrun's stdout, the
       ranks writing there get SIGPIPE, with --prefix as without it */
    {.name = "prefix_epipe",
     .args = {"-n", "2", "-p", "RANK", "spam"},
     .run = {.close_stdout = true},
     .exit = 128 + SIGPIPE,
     .err = {"was killed by signal 13 (SIGPIPE)\n"},
     .ranks = ANY},
    {.name = "no_prefix",
     .args = {"-n", "2", "RANK", "print", "whole"},
     .out = {"\nline 19 from rank 0\n", "\nline 19 from rank 1\n"},
     .err = {"err 19 from rank 1\n"},
     .not_out = {"[0]"},
     .not_err = {"[1]"},
     .ranks = ANY},

    STOP_SIGNAL("sigterm", SIGTERM, "SIGTERM"),
    STOP_SIGNAL("sigint", SIGINT, "SIGINT"),
    STOP_SIGNAL("sighup", SIGHUP, "SIGHUP"),
    /* flitrun itself killed: the ranks die of PR_SET_PDEATHSIG */
    {.name = "launcher_killed",
     .args = {"-n", "3", "RANK", "wait"},
     .run = {.ready_signal = SIGKILL},
     .killed_by = SIGKILL,
     .ranks = 3},

    {.name = "noexec",
     .args = {"-n", "2", "/nonexistent/flitrun-test"},
     .exit = 127,
     .err = {"flitrun: cannot execute '/nonexistent/flitrun-test': No such file or "
             "directory\n"}},
    {.name = "noexec",
     .args = {"-n", "3", "flitrun-test-not-on-path"},
     .exit = 127,
     .err = {"cannot execute 'flitrun-test-not-on-path'"}},
    {.name = "noexec",
     .args = {"-n", "2", "DIR/not-executable"},
     .prepare = make_not_executable,
     .exit = 127,
     .err = {"': Permission denied\n"}},

    {.name = "stdin",
     .args = {"-n", "3", "RANK", "stdin"},
     .run = {.stdin_text = "hello from stdin\n"},
     .lines = {3, "rank %1$d stdin ok\n"},
     .ranks = ANY},
    /* 1 MiB through a pipe, fed in pieces; rank 0 reads nothing until the
       feed is stuck, then all of it, in order, to EOF */
    {.name = "stdin_pipe",
     .args = {"-n", "3", "RANK", "stdin_pattern", STDIN_LEN_S, "gate"},
     .run = {.feed_len = STDIN_LEN, .gate = GATE_ON_STUCK},
     .lines = {3, "rank %1$d stdin 0 bytes ok",
               "rank %1$d stdin " STDIN_LEN_S " bytes ok"},
     .ranks = 3,
     .check = feed_stuck_then_whole},
    /* a regular file is always readable: read in bounded chunks all the same */
    {.name = "stdin_file",
     .args = {"-n", "2", "RANK", "stdin_pattern", STDIN_LEN_S},
     .run = {.stdin_path = "DIR/stdin.bin"},
     .prepare = make_stdin_file,
     .lines = {2, "rank %1$d stdin 0 bytes ok",
               "rank %1$d stdin " STDIN_LEN_S " bytes ok"},
     .ranks = 2},
    /* --stdin none: rank 0 reads EOF at once, though stdin is a pipe still
       open and full of bytes */
    {.name = "stdin_none",
     .args = {"-n", "2", "--stdin", "none", "RANK", "stdin", ""},
     .run = {.feed_len = STDIN_LEN},
     .lines = {2, "rank %1$d stdin ok"},
     .ranks = 2},
    /* rank 0 stops reading while the feed goes on, by exiting or by closing
       its stdin; rank 1 runs on until the feed has ended. flitrun must
       neither die of SIGPIPE nor hang, and lets go of its own stdin */
    {.name = "stdin_early_exit",
     .args = {"-v", "-n", "2", "RANK", "stdin_early", "exit", "1000"},
     .run = {.feed_len = STDIN_LEN, .gate = GATE_ON_END},
     .lines = {2, "rank %1$d stdin early ok"},
     .ranks = 2,
     .check = feed_broken},
    /* not a flit job: rank 0 exits 0 at once, rank 1 sleeps past the 2 s
       within which flitrun judges an exit without flit_finalize. Nothing to
       judge (no rank said HELLO), and no deadline: flitrun must not spin
       (it did on 4a8a188 once the 2 s had passed) */
    {.name = "early_exit_idle",
     .args = {"-n", "2", "sh", "-c", "test $FLIT_RANK = 0 || sleep 4"},
     .check = little_cpu},
    {.name = "stdin_early_close",
     .args = {"-v", "-n", "2", "RANK", "stdin_early", "close", "1000"},
     .run = {.feed_len = STDIN_LEN, .gate = GATE_ON_END},
     .lines = {2, "rank %1$d stdin early ok"},
     .ranks = 2,
     .check = feed_broken,
     .err = {"flitrun: rank 0 no longer reads its stdin"}},
    /* the bug this guards against: flitrun in the foreground of a terminal,
       the ranks in its background; rank 0 reading the terminal itself would
       be stopped by SIGTTIN, and the job hang */
    {.name = "stdin_tty",
     .args = {"-n", "2", "RANK", "stdin", "hello from the terminal\n"},
     .run = {.term = TERM_FG, .stdin_text = "hello from the terminal\n\4"},
     .lines = {2, "rank %1$d stdin ok"},
     .ranks = 2},
    /* flitrun in the background of its terminal does not read it (that
       would stop flitrun): rank 0 reads /dev/null, and -v says so */
    {.name = "stdin_tty_bg",
     .args = {"-v", "-n", "2", "RANK", "stdin", ""},
     .run = {.term = TERM_BG, .stdin_text = "not for rank 0\n"},
     .lines = {2, "rank %1$d stdin ok"},
     .err = {"flitrun: flitrun runs in the background of its terminal"},
     .ranks = 2},

    {.name = "badframe",
     .args = {"-n", "3", "RANK", "badframe", "1"},
     .exit = 1,
     .msg = {{1, NULL, "sent a malformed frame: "}},
     .max_s = 4,
     .ranks = 3},
    /* flit_job_abort: flitrun names the rank and why (a tab shown as '?'),
       answers ABORTED before the rank exits, and takes its status */
    {.name = "abort",
     .args = {"-n", "3", "RANK", "abort", "1", "7"},
     .exit = 7,
     .out = {"rank 1: ABORTED\n"},
     .msg = {{1, NULL, "aborted the job with status 7: a reason?of the test's\n"}},
     .max_s = 4,
     .ranks = 3},
    /* under --keep-going too: the program asked to end the job */
    {.name = "abort",
     .args = {"-k", "-n", "3", "RANK", "abort", "2", "255", ""},
     .exit = 255,
     .out = {"rank 2: ABORTED\n"},
     .msg = {{2, NULL, "aborted the job with status 255\n"}},
     .max_s = 4,
     .ranks = 3},
    /* a status out of 1..255, or a reason too long: a malformed frame */
    {.name = "abort",
     .args = {"-n", "2", "RANK", "abort", "1", "0"},
     .exit = 1,
     .msg = {{1, NULL, "sent a malformed ABORT: status 0 with 22 bytes of text"}},
     .not_out = {"ABORTED"},
     .max_s = 4,
     .ranks = 2},
    {.name = "abort",
     .args = {"-n", "2", "RANK", "abort", "0", "256"},
     .exit = 1,
     .msg = {{0, NULL, "sent a malformed ABORT: status 256 with 22 bytes of text"}},
     .not_out = {"ABORTED"},
     .max_s = 4,
     .ranks = 2},
    {.name = "abort",
     .args = {"-n", "2", "RANK", "abort", "1", "5", REASON_512 "!"},
     .exit = 1,
     .msg = {{1, NULL, "sent a malformed ABORT: status 5 with 513 bytes of text"}},
     .not_out = {"ABORTED"},
     .max_s = 4,
     .ranks = 2},
    {.name = "reject",
     .args = {"-n", "2", "RANK", "reject"},
     .err = {"flitrun: rejected a connection: pid", REJECTED},
     .ranks = 2},
    {.name = "reject",
     .args = {"-v", "-n", "2", "RANK", "reject"},
     .err = {"flitrun: rejected a connection: pid", REJECTED_V},
     .ranks = 2},
    /* a connection without HELLO is told BUSY when dropped, for a newer
       stranger or when its wait is over; a rank told so connects again */
    {.name = "busy",
     .args = {"-n", "2", "RANK", "busy", "drop"},
     .lines = {2, "rank %1$d of %2$d ok\n"},
     .err = {"too many connections without a HELLO; dropped the oldest"},
     .ranks = 2},
    {.name = "busy",
     .args = {"-n", "2", "RANK", "busy", "late"},
     .lines = {2, "rank %1$d of %2$d ok\n"},
     .err = {"no HELLO within 3 s"},
     .ranks = 2},
    {.name = "shm",
     .args = {"-n", "2", "RANK", "shm"},
     .ranks = ANY,
     .check = shm_removed},

    BAD_HOSTS("the host list is empty", "--hosts", "", "true"),
    BAD_HOSTS("an empty host name in 'a,,b'", "-n", "2", "--hosts", "a,,b", "true"),
    BAD_HOSTS("an empty host name", "-n", "2", "--hosts", ",a", "true"),
    BAD_HOSTS("an empty host name", "-n", "2", "--hosts", "a,", "true"),
    BAD_HOSTS("bad count in 'a:0'", "--hosts", "a:0", "true"),
    BAD_HOSTS("bad count in 'a:x'", "--hosts", "a:x", "true"),
    BAD_HOSTS("bad count in 'a:'", "--hosts", "a:", "true"),
    BAD_HOSTS("bad count", "--hosts", "a:-1", "true"),
    BAD_HOSTS("bad count", "--hosts", "a:4097", "true"),
    BAD_HOSTS("bad count", "--hosts", "a:2:3", "true"),
    BAD_HOSTS("bad host name '-oProxyCommand=x'", "-n", "2", "--hosts",
              "-oProxyCommand=x", "true"),
    BAD_HOSTS("bad host name 'a b'", "-n", "2", "--hosts", "a b", "true"),
    BAD_HOSTS("bad host name", "-n", "2", "--hosts", "a;b", "true"),
    BAD_HOSTS("bad host name", "-n", "2", "--hosts", ":2", "true"),
    BAD_HOSTS("give a count to every host in 'a:2,b' or to none", "--hosts", "a:2,b",
              "true"),
    BAD_HOSTS("5 ranks, but the host counts add up to 4", "-n", "5", "--hosts", "a:2,b:2",
              "true"),
    BAD_HOSTS("-n N is required (or a count for every host", "--hosts", "a,b", "true"),
    BAD_HOSTS("add up to 6000 ranks, more than 4096", "--hosts", "a:3000,b:3000", "true"),
    BAD_HOSTS("--placement wants block or round-robin, not 'scatter'", "-n", "2",
              "--hosts", "a", "--placement", "scatter", "true"),
    BAD_HOSTS("the --launch template 'env X=1' has no {host}", "-n", "2", "--hosts", "a",
              "--launch", "env X=1", "true"),
    BAD_HOSTS("has no {host}", "-n", "2", "--hosts", "a", "--launch", " ", "true"),
    BAD_HOSTS("--launch goes with --hosts", "-n", "2", "--launch", "env {host}", "true"),
    BAD_HOSTS("--map-by goes with --hosts", "-n", "2", "--map-by", "host", "true"),
    BAD_HOSTS("--map-by wants slot or host, not 'core'", "-n", "2", "--hosts", "a,b",
              "--map-by", "core", "true"),
    BAD_HOSTS("--map-by and --placement: one placement", "-n", "2", "--hosts", "a,b",
              "--map-by", "host", "--placement", "block", "true"),
    BAD_HOSTS("--proxy wants HOST:RANKS", "-n", "2", "--proxy", "a", "true"),
    BAD_HOSTS("--proxy: bad ranks '2' (of 2)", "-n", "2", "--proxy", "a:0,2", "true"),
    BAD_HOSTS("--placement goes with --hosts", "-n", "2", "--placement", "block", "true"),
    BAD_HOSTS("--boot-addr wants an IPv4 address", "-n", "2", "--boot-addr", "10.1.2",
              "true"),
    BAD_HOSTS("--boot-addr wants", "-n", "2", "--hosts", "a", "--boot-addr", "::1",
              "true"),
    BAD_HOSTS("option '--hosts' needs a value", "-n", "2", "--hosts"),

    /* where each rank went: "rank R of N on HOST" */
    {.name = "hosts_place",
     .args = {"-n", "5", ON_HOSTS("a,b,c", FAKE_LAUNCH), "RANK", "where"},
     .out = {"rank 0 of 5 on a\n", "rank 1 of 5 on a\n", "rank 2 of 5 on b\n",
             "rank 3 of 5 on b\n", "rank 4 of 5 on c\n"},
     .ranks = ANY},
    {.name = "hosts_place",
     .args = {"-n", "5", ON_HOSTS("a,b,c", FAKE_LAUNCH), "--placement", "round-robin",
              "RANK", "where"},
     .out = {"rank 0 of 5 on a\n", "rank 1 of 5 on b\n", "rank 2 of 5 on c\n",
             "rank 3 of 5 on a\n", "rank 4 of 5 on b\n"},
     .ranks = ANY},
    /* no -n: the counts' sum */
    {.name = "hosts_place",
     .args = {ON_HOSTS("a:1,b:3", FAKE_LAUNCH), "RANK", "where"},
     .out = {"rank 0 of 4 on a\n", "rank 1 of 4 on b\n", "rank 2 of 4 on b\n",
             "rank 3 of 4 on b\n"},
     .ranks = ANY},
    /* round-robin skips a full host */
    {.name = "hosts_place",
     .args = {"-n", "4", ON_HOSTS("a:1,b:3,c:1", FAKE_LAUNCH), "--placement",
              "round-robin", "RANK", "where"},
     .out = {"rank 0 of 4 on a\n", "rank 1 of 4 on b\n", "rank 2 of 4 on c\n",
             "rank 3 of 4 on b\n"},
     .ranks = ANY},
    /* fewer ranks than counts: block fills the first hosts */
    {.name = "hosts_place",
     .args = {"-n", "3", ON_HOSTS("a:2,b:2", FAKE_LAUNCH), "RANK", "where"},
     .out = {"rank 0 of 3 on a\n", "rank 1 of 3 on a\n", "rank 2 of 3 on b\n"},
     .ranks = ANY},
    /* more hosts than ranks; localhost is started here, without the launcher */
    {.name = "hosts_place",
     .args = {"-n", "2", ON_HOSTS("localhost,b,c", FAKE_LAUNCH), "RANK", "where"},
     .out = {"rank 0 of 2 on here\n", "rank 1 of 2 on b\n"},
     .ranks = ANY},
    /* all here: no launcher, no TCP */
    {.name = "hosts_place",
     .args = {"--hosts", "localhost:3", "--launch", FAKE_LAUNCH, "RANK", "where"},
     .out = {"rank 0 of 3 on here\n", "rank 1 of 3 on here\n", "rank 2 of 3 on here\n"},
     .ranks = ANY},

    /* allgather rounds over TCP, one of 2 MiB (partial sends); local ranks
       (localhost) use TCP too when the job does */
    TCP_GATHER(4, "a,b", "block"),
    TCP_GATHER(32, "a,b,c", "round-robin"),
    TCP_GATHER(4, "localhost:2,b:2", "block"),
    /* --boot-addr alone: a job on this host, over TCP */
    {.name = "tcp_gather",
     .tcp = true,
     .args = {"-n", "3", "--boot-addr", "127.0.0.1", "RANK", "gather", "2"},
     .out = {"rank 2 of 3 ok\n"},
     .ranks = 3},
    /* no --boot-addr: the address on the route to the first other host; a
       numeric host, so that nothing is looked up (127.0.0.2 is reached from
       127.0.0.1) */
    {.name = "tcp_route",
     .tcp = true,
     .args = {"-v", "-n", "2", "--hosts", "localhost,127.0.0.2", "--launch", FAKE_LAUNCH,
              "RANK", "gather", "1"},
     .err = {"flitrun: boot address tcp:127.0.0.1:", "(on the route to 127.0.0.2)"},
     .out = {"rank 1 of 2 ok\n"},
     .ranks = 2},
    {.name = "tcp_verbose",
     .tcp = true,
     .args = {"-v", "-n", "3", ON_HOSTS("a:2,b:1", FAKE_LAUNCH), "--no-proxy", "RANK",
              "gather", "1"},
     .err = {"flitrun: boot address tcp:127.0.0.1:", "(--boot-addr)",
             "flitrun: host a: 2 ranks\n", "flitrun: host b: 1 rank\n",
             "flitrun: rank 2 -> b: env FAKEHOST=b sh -c read -r FLIT_JOB_KEY && "
             "export FLIT_JOB_KEY && exec \"$@\" sh env FLIT_",
             " FLIT_RANK=2", "flitrun: rank 1 (pid ", " on a) connected from 127.0.0.1:"},
     .msg = {{2, "b", "exited with status 0\n"}},
     .not_err = {"FLIT_JOB_KEY="},
     .ranks = 3},
    {.name = "tcp_fail",
     .tcp = true,
     .args = {"-n", "4", ON_HOSTS("a,b", FAKE_LAUNCH), "--no-proxy", "RANK", "fail", "2",
              "3"},
     .exit = 3,
     .msg = {{2, "b", "exited with status 3\n"}},
     .max_s = 4,
     .ranks = 4},
    /* a host of several ranks: one launcher call, which starts a proxy there
       (flitrun --proxy) that forks them; host a's is rank 0's, b's rank 2's */
    {.name = "tcp_proxy",
     .tcp = true,
     .args = {"-v", "-n", "4", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "where"},
     .out = {"rank 0 of 4 on a\n", "rank 1 of 4 on a\n", "rank 2 of 4 on b\n",
             "rank 3 of 4 on b\n"},
     .err = {"flitrun: rank 0 -> a: env FAKEHOST=a sh -c read -r FLIT_JOB_KEY && ",
             "flitrun --proxy a:0-1 -n 4 -v -- ",
             "flitrun: rank 2 -> b: ", "flitrun --proxy b:2-3 -n 4 -v -- "},
     .not_err = {"flitrun: rank 1 -> a", "flitrun: rank 3 -> b"},
     .ranks = ANY},
    /* one connection to flitrun a host: the ranks say HELLO to their proxy,
       which speaks for them; every round of the exchange completes */
    {.name = "tcp_proxy",
     .tcp = true,
     .args = {"-v", "-n", "5", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "gather", "3",
              "proxied"},
     .lines = {5, "rank %1$d of %2$d ok\n"},
     .err = {"flitrun: the proxy on a (pid ", "flitrun: the proxy on b (pid ",
             "flitrun: rank 1 (pid ", " on a) connected through its proxy\n",
             "flitrun: rank 4 (pid ", " on b) connected through its proxy\n",
             "flitrun: allgather round 3 complete"},
     .not_err = {"on a) connected from", "on b) connected from"},
     .ranks = 5},
    {.name = "tcp_proxy",
     .tcp = true,
     .args = {"-n", "5", ON_HOSTS("a,b", FAKE_LAUNCH), "--map-by", "host", "RANK",
              "where"},
     .out = {"rank 0 of 5 on a\n", "rank 1 of 5 on b\n", "rank 2 of 5 on a\n",
             "rank 3 of 5 on b\n", "rank 4 of 5 on a\n"},
     .ranks = ANY},
    /* a proxy's rank aborts: the proxy passes ABORT on, and flitrun's
       ABORTED back to that rank */
    {.name = "tcp_proxy",
     .tcp = true,
     .args = {"-n", "4", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "abort", "3", "9"},
     .exit = 9,
     .out = {"rank 3: ABORTED\n"},
     .err = {"flitrun: rank 3 on b (proxy pid ",
             "aborted the job with status 9: a reason?of the test's\n"},
     .max_s = 6,
     .ranks = ANY},
    /* a proxy's rank exits 0 without BYE while the others wait: the proxy
       tells flitrun, which judges it then, not when the host's proxy ends
       (it would not: rank 2 waits) */
    {.name = "tcp_proxy",
     .tcp = true,
     .args = {"-n", "4", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "fail", "3", "0"},
     .exit = 1,
     .err = {"flitrun: rank 3 on b (proxy pid ",
             ") exited with status 0 without calling flit_finalize while other ranks "
             "still ran; stopping the job"},
     .max_s = 12,
     .ranks = 4},
    /* a proxy that breaks the protocol fails the job, named */
    BAD_PROXY("short", "sent a malformed frame: type 11 with 3 bytes (rank 4294967295)"),
    BAD_PROXY("alien", "sent a malformed frame: type 11 with 9 bytes (rank 0)"),
    BAD_PROXY("unheard", "sent a frame (type 2) for rank 4, which never connected"),
    BAD_PROXY("type", "sent a malformed frame: type 99 with 0 bytes for rank 4"),
    /* a rank of a proxy fails: the proxy names it, ends with its status, and
       flitrun names the host */
    {.name = "tcp_proxy",
     .tcp = true,
     .args = {"-n", "4", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "fail", "2", "3"},
     .exit = 3,
     .err = {"flitrun: rank 2 on b (pid ", ") exited with status 3\n",
             "flitrun: the proxy on b (pid ",
             ") exited with status 3; 2 ranks (2..3) there ended with it\n"},
     .max_s = 4,
     .ranks = 4},
    /* killed by a signal: seen as such when the launcher is the rank (env,
       ip netns exec); as 128+signal through a launcher that forks */
    {.name = "tcp_signal",
     .tcp = true,
     .args = {"-n", "3", ON_HOSTS("a,b,c", FAKE_LAUNCH), "RANK", "sigkill", "1"},
     .exit = 137,
     .msg = {{1, "b", "was killed by signal 9 (SIGKILL)\n"}},
     .ranks = 3},
    {.name = "tcp_signal",
     .tcp = true,
     .args = {"-n", "3", ON_HOSTS("a,b,c", FORKING_LAUNCH), "RANK", "sigkill", "1"},
     .exit = 137,
     .err = {"flitrun: rank 1 on b (launcher pid ",
             ") exited with status 137 (perhaps killed by signal 9 (SIGKILL) there)\n"},
     .max_s = 4,
     .ranks = 3},
    /* the dumps through a proxy: DUMP once a host, each rank's DUMPED back */
    {.name = "tcp_timeout",
     .tcp = true,
     .args = {"-n", "4", ON_HOSTS("a,b", FAKE_LAUNCH), "--timeout", "1", "RANK", "hang"},
     .exit = 124,
     .err = {"DUMP rank 0\n", "DUMP rank 1\n", "DUMP rank 2\n", "DUMP rank 3\n",
             "flitrun: job timed out after 1 s; stopping it\n"},
     .min_s = 1,
     .max_s = 6,
     .ranks = 4},
    {.name = "tcp_timeout",
     .tcp = true,
     .args = {"-n", "2", ON_HOSTS("a,b", FORKING_LAUNCH), "--timeout", "1", "RANK",
              "hang"},
     .exit = 124,
     .err = {"DUMP rank 0\n", "DUMP rank 1\n",
             "flitrun: job timed out after 1 s; stopping it\n"},
     .min_s = 1,
     .max_s = 6,
     .ranks = 2},
    /* rank 0 on another host reads flitrun's stdin through its launcher's */
    {.name = "tcp_stdin",
     .args = {"-n", "3", ON_HOSTS("a,b", FORKING_LAUNCH), "RANK", "stdin"},
     .run = {.stdin_text = "hello from stdin\n"},
     .lines = {3, "rank %1$d stdin ok\n"},
     .ranks = ANY},
    {.name = "tcp_prefix",
     .args = {"-n", "3", "-p", ON_HOSTS("a,b,c", FORKING_LAUNCH), "RANK", "print",
              "split"},
     .ranks = ANY,
     .check = prefixed_3},
    /* the same through a proxy (host a's two ranks): it prefixes, flitrun
       passes the lines on as they are */
    {.name = "tcp_prefix",
     .args = {"-n", "3", "-p", ON_HOSTS("a:2,b:1", FORKING_LAUNCH), "RANK", "print",
              "split"},
     .ranks = ANY,
     .check = prefixed_3},
    {.name = "tcp_reject",
     .tcp = true,
     .args = {"-n", "2", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "reject"},
     .err = {"flitrun: rejected a connection from 127.0.0.1:", REJECTED},
     .ranks = 2},
    {.name = "tcp_reject",
     .tcp = true,
     .args = {"-v", "-n", "2", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "reject"},
     .err = {"flitrun: rejected a connection from 127.0.0.1:", REJECTED_V},
     .ranks = 2},
    {.name = "tcp_busy",
     .tcp = true,
     .args = {"-n", "2", ON_HOSTS("a,b", FAKE_LAUNCH), "RANK", "busy", "drop"},
     .lines = {2, "rank %1$d of %2$d ok\n"},
     .err = {"flitrun: rejected a connection from 127.0.0.1:",
             "too many connections without a HELLO; dropped the oldest"},
     .ranks = 2},
    /* flitrun killed: a rank that its launcher became dies of
       PR_SET_PDEATHSIG (set before the launcher's exec, kept across env's) */
    {.name = "tcp_launcher_killed",
     .tcp = true,
     .args = {"-n", "3", ON_HOSTS("a,b,c", FAKE_LAUNCH), "RANK", "wait"},
     .run = {.ready_signal = SIGKILL},
     .killed_by = SIGKILL,
     .ranks = 3},
    {.name = "tcp_noexec",
     .args = {"-n", "2", ON_HOSTS("a,b", "/nonexistent/launcher {host}"), "true"},
     .exit = 127,
     .err = {"flitrun: cannot execute '/nonexistent/launcher': No such file or "
             "directory\n"}},
    /* the launcher runs, the program is not there: env says so, 127 */
    {.name = "tcp_noexec",
     .args = {"-n", "2", ON_HOSTS("a,b", FAKE_LAUNCH), "/nonexistent/program"},
     .exit = 127,
     .err = {"(launcher pid ", ") exited with status 127\n"}},
    /* the default launcher, ssh (here the fake one, first on PATH): every
       word quoted for the remote shell, the working directory kept, 255
       explained */
    {.name = "tcp_ssh",
     .args = {"-n", "2", "--hosts", "a,b", "--boot-addr", "127.0.0.1", "RANK", "args",
              SHELL_ARGS},
     .prepare = make_fake_ssh,
     .fake_ssh = true,
     .ranks = ANY,
     .check = ssh_words_kept},
    {.name = "tcp_ssh",
     .tcp = true,
     .args = {"-n", "2", "--hosts", "a,b", "--boot-addr", "127.0.0.1", "RANK", "fail",
              "1", "255"},
     .prepare = make_fake_ssh,
     .fake_ssh = true,
     .exit = 255,
     .err = {"exited with status 255 (ssh's own failure, or the rank was killed by a "
             "signal there)\n"},
     .ranks = ANY},
    /* the job's key is on no command line while the job runs: not ssh's
       (nor the remote shell's), not that of a --launch template's process
       that stays, as `sh -c` here does (tcp_stdin: rank 0 on another host reads the
       key's line, then flitrun's stdin) */
    {.name = "tcp_nokey",
     .tcp = true,
     .args = {"-n", "3", "--hosts", "a,b,c", "--boot-addr", "127.0.0.1", "RANK", "nokey"},
     .prepare = make_fake_ssh,
     .fake_ssh = true,
     .lines = {3, "rank %1$d: the key is on no command line\n"},
     .ranks = 3},
    {.name = "tcp_nokey",
     .tcp = true,
     .args = {"-n", "3", ON_HOSTS("a,b,c", FORKING_LAUNCH), "RANK", "nokey"},
     .lines = {3, "rank %1$d: the key is on no command line\n"},
     .ranks = 3},
};

/* ---- the runner ---- */

static void set_path(bool fake_ssh, const char *old_path)
{
    char path[4096];
    snprintf(path, sizeof path, "%s:%s", test_dir, old_path ? old_path : "/usr/bin:/bin");
    if (fake_ssh)
        setenv("PATH", path, 1);
    else if (old_path)
        setenv("PATH", old_path, 1);
}

static void run_row(const struct tcase *c)
{
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    struct run r = c->run;
    if (c->prepare)
        c->prepare();
    if (c->tcp)
        setenv("FLRUN_TEST_TCP", "127.0.0.1", 1);
    set_path(c->fake_ssh, old_path);
    run_flitrun(&r, c->args);
    unsetenv("FLRUN_TEST_TCP");
    set_path(false, old_path);
    free(old_path);

    expect_status(&r, c->exit, c->killed_by);
    for (size_t i = 0; i < 6 && c->out[i]; i++)
        expect_in(&r.out, "stdout", c->out[i]);
    for (size_t i = 0; i < 8 && c->err[i]; i++)
        expect_in(&r.err, "stderr", c->err[i]);
    for (size_t i = 0; i < 2 && c->not_out[i]; i++)
        expect_not_in(&r.out, "stdout", c->not_out[i]);
    for (size_t i = 0; i < 4 && c->not_err[i]; i++)
        expect_not_in(&r.err, "stderr", c->not_err[i]);
    expect_rank_lines(&r, &c->lines);
    for (size_t i = 0; i < 2 && c->msg[i].tail; i++)
        expect_rank_msg(&r, &c->msg[i]);
    if (c->max_s > 0)
        expect_secs(&r, c->min_s, c->max_s);
    if (c->quiet && r.err.len)
        fail("stderr is not empty:\n%s", r.err.data);
    if (c->check)
        c->check(&r);
    check_nothing_left(c->ranks);
    clear_pidfiles();
    run_free(&r);
}

/* Runs every row of the case; false if it has none. */
static bool run_case(const char *name)
{
    bool known = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].name, name) != 0)
            continue;
        known = true;
        run_row(&cases[i]);
    }
    return known;
}

/* ---- main ---- */

static void clean_environment(void)
{
    extern char **environ;
    char names[64][128];
    int n = 0;
    for (char **e = environ; *e && n < 64; e++)
        if (strncmp(*e, "FLIT_", 5) == 0)
            snprintf(names[n++], sizeof names[0], "%.*s", (int)strcspn(*e, "="), *e);
    for (int i = 0; i < n; i++)
        unsetenv(names[i]);
}

static int setup(void)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(test_dir, sizeof test_dir, "%s/flitrun-test-XXXXXX", tmp);
    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
    if (!mkdtemp(test_dir) || setenv("FLRUN_TEST_DIR", test_dir, 1) != 0 ||
        sigaction(SIGALRM, &sa, NULL) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 ||
        signal(SIGPIPE, SIG_IGN) == SIG_ERR) { /* feeding a stdin flitrun let go of */
        perror("flitrun_test: setup");
        return -1;
    }
    clean_environment();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: flitrun_test CASE FLITRUN RANK\n");
        return 1;
    }
    flitrun_path = argv[2];
    rank_path = argv[3];
    if (setup() != 0)
        return 1;
    bool known = run_case(argv[1]);
    clear_pidfiles();
    rmdir(test_dir);
    if (!known) {
        fprintf(stderr, "flitrun_test: no case '%s'\n", argv[1]);
        return 1;
    }
    if (!failed)
        printf("PASS: %s\n", argv[1]);
    return failed ? 1 : 0;
}
