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
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define RUN_LIMIT_S 20.0        /* a run past this is a hang: kill it, fail */
#define MAX_ARGS 32
#define STDIN_LEN (1u << 20)    /* fed to flitrun's stdin */
#define PIECE_MAX 16384         /* the feed goes in pieces of 1..PIECE_MAX bytes */
/* The feed blocked this long with rank 0 not reading yet: flitrun holds no
   more. Only a lower bound: on a slow machine the check may pass early. */
#define STUCK_MS 300

static const char *flitrun_path, *rank_path;
static char test_dir[256];
static bool failed;

__attribute__((format(printf, 1, 2)))
static void fail(const char *fmt, ...)
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

enum term {                     /* flitrun's stdin and stdout a terminal */
    TERM_NONE,
    TERM_FG,                    /* in its foreground */
    TERM_BG,                    /* in its background, as a shell's job */
};

enum gate {                     /* when the ranks waiting on the gate go on */
    GATE_NONE,                  /* no gate */
    GATE_ON_STUCK,              /* the feed is stuck (or over) */
    GATE_ON_END,                /* the feed is over: all written, or EPIPE */
};

struct run {
    const char *stdin_text;     /* NULL: /dev/null; with term, typed on it */
    const char *stdin_path;     /* stdin is this file */
    size_t feed_len;            /* stdin a pipe fed this many pattern bytes */
    enum gate gate;
    enum term term;
    int ready_signal;           /* sent to flitrun once stdout says "ready" */
    bool close_stdout;          /* nobody reads flitrun's stdout */
    int status;                 /* flitrun's wait status */
    struct buf out, err;
    double secs;                /* until both its pipes reached EOF */
    size_t fed;                 /* feed: bytes written */
    bool stuck;                 /* feed: blocked STUCK_MS before the gate */
    bool broken;                /* feed: EPIPE, flitrun let go of its stdin */
    int feed_fd, gate_fd;       /* the driver's ends; -1 when closed */
    uint32_t lcg;               /* piece sizes */
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
    signal(SIGPIPE, SIG_DFL);   /* the driver's own SIG_IGN is not the ranks' */
    dup2(in_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv);
    _exit(126);
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
    if (r->stdin_path)
        return open(r->stdin_path, O_RDONLY | O_CLOEXEC);
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
    close(p[1]);                /* small enough for the pipe: EOF after it */
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
        feed_end(r, true);      /* EPIPE: nobody reads flitrun's stdin now */
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
    t.c_cc[VEOF] = 4;           /* ^D, as the driver types it */
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
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* the driver kills the shell on a hang */
        if (getppid() != shell)
            _exit(126);
        child_exec(argv, slave, slave, err_fd);
    }
    if (job < 0 || (setpgid(job, job) != 0 && errno != EACCES))
        _exit(126);             /* EACCES: it has exec'd, so it did it itself */
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
            start = now_s();    /* give the kill a new window */
            continue;
        }
        if (p[0].revents)
            out_open = drain(out_fd, &r->out);
        if (p[1].revents)
            err_open = drain(err_fd, &r->err);
        if (p[2].revents && r->feed_fd >= 0)
            feed_piece(r);
        if (r->ready_signal && !signalled && r->out.data && strstr(r->out.data, "ready\n")) {
            kill(pid, r->ready_signal);
            signalled = true;
        }
    }
}

static void run_flitrun(struct run *r, const char *const *args)
{
    char *argv[MAX_ARGS + 2];
    int n = 0;
    argv[n++] = (char *)flitrun_path;
    for (; args[n - 1] && n < MAX_ARGS; n++)
        argv[n] = strcmp(args[n - 1], "RANK") == 0 ? (char *)rank_path : (char *)args[n - 1];
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
    (void)sig;                  /* only interrupts waitpid */
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
            return;             /* ECHILD: nothing left */
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

static void expect_exit(const struct run *r, int code)
{
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != code)
        fail("flitrun: wanted exit status %d, got wait status 0x%x\n--- stdout:\n%s"
             "--- stderr:\n%s---", code, r->status, r->out.data ? r->out.data : "",
             r->err.data ? r->err.data : "");
}

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

static void expect_secs(const struct run *r, double lo, double hi)
{
    if (r->secs < lo || r->secs > hi)
        fail("flitrun took %.2f s, expected %.1f..%.1f s", r->secs, lo, hi);
}

/* "flitrun: rank R (pid P) <tail>" with P from rank R's pid file. */
static void expect_rank_msg(const struct run *r, int rank, const char *tail)
{
    char name[32], msg[256];
    snprintf(name, sizeof name, "pid.%d", rank);
    snprintf(msg, sizeof msg, "flitrun: rank %d (pid %d) %s", rank, pidfile_pid(name), tail);
    expect_in(&r->err, "stderr", msg);
}

/* ---- cases ---- */

static void case_usage(void)
{
    static const char *const bad[][6] = {
        {NULL}, {"-n", "2", NULL}, {"-n", "0", "true", NULL}, {"-n", "4097", "true", NULL},
        {"-n", "x", "true", NULL}, {"-n", NULL}, {"-n", "2", "--bogus", "true", NULL},
        {"-n", "2", "-q", "true", NULL}, {"-n", "1", "--timeout", "-1", "true", NULL},
        {"-n", "1", "--timeout", "soon", "true", NULL},
        {"-n", "1", "--stdin", "all", "true", NULL}, {"-n", "1", "--stdin", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct run r = {0};
        run_flitrun(&r, bad[i]);
        expect_exit(&r, 2);
        expect_in(&r.err, "usage error", "Usage: flitrun -n N");
        run_free(&r);
    }
    struct run help = {0}, version = {0};
    run_flitrun(&help, (const char *const[]){"--help", NULL});
    expect_exit(&help, 0);
    expect_in(&help.out, "--help", "Usage: flitrun -n N [options] [--] program [args...]");
    run_flitrun(&version, (const char *const[]){"--version", NULL});
    expect_exit(&version, 0);
    expect_in(&version.out, "--version", "flitrun (flit) ");
    run_free(&help);
    run_free(&version);
}

static void case_gather(int n)
{
    char np[16];
    snprintf(np, sizeof np, "%d", n);
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", np, "RANK", "gather", "3", NULL});
    expect_exit(&r, 0);
    for (int i = 0; i < n; i++) {
        char line[64];
        snprintf(line, sizeof line, "rank %d of %d ok\n", i, n);
        expect_in(&r.out, "stdout", line);
    }
    if (r.err.len)
        fail("stderr is not empty:\n%s", r.err.data);
    check_nothing_left(n);
    run_free(&r);
}

static void case_verbose(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-v", "-n", "2", "RANK", "gather", "1", NULL});
    expect_exit(&r, 0);
    expect_rank_msg(&r, 0, "connected\n");
    expect_in(&r.err, "stderr", "flitrun: rank 1 is pid ");
    expect_in(&r.err, "stderr", "flitrun: allgather round 1 complete");
    expect_in(&r.err, "stderr", "flitrun: rank 1 finalized");
    expect_rank_msg(&r, 1, "exited with status 0\n");
    check_nothing_left(2);
    run_free(&r);
}

static void case_exit_code(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "4", "RANK", "fail", "2", "3", NULL});
    expect_exit(&r, 3);
    expect_rank_msg(&r, 2, "exited with status 3\n");
    expect_secs(&r, 0, 4);      /* the others die at SIGTERM, no grace used */
    check_nothing_left(4);
    run_free(&r);
}

static void case_signal(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "3", "RANK", "sigkill", "1", NULL});
    expect_exit(&r, 137);
    expect_rank_msg(&r, 1, "was killed by signal 9 (SIGKILL)\n");
    expect_secs(&r, 0, 4);
    check_nothing_left(3);
    run_free(&r);
}

static void case_timeout(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "2", "--timeout", "1", "RANK", "hang", NULL});
    expect_exit(&r, 124);
    const char *msg = "flitrun: job timed out after 1 s; stopping it\n";
    expect_in(&r.err, "stderr", msg);
    expect_in(&r.err, "stderr", "DUMP rank 0\n");
    expect_in(&r.err, "stderr", "DUMP rank 1\n");
    const char *at = r.err.data ? strstr(r.err.data, msg) : NULL;
    if (at && (strstr(at, "DUMP rank 0") || strstr(at, "DUMP rank 1")))
        fail("the dumps came after the timeout message:\n%s", r.err.data);
    expect_secs(&r, 1, 6);
    check_nothing_left(2);
    run_free(&r);
}

/* Rank 1 ignores DUMP and SIGTERM: the dump wait and the grace both run out. */
static void case_timeout_stubborn(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "2", "--timeout", "0.5", "RANK", "hang", "1",
                                          NULL});
    expect_exit(&r, 124);
    expect_in(&r.err, "stderr", "DUMP rank 0\n");
    expect_not_in(&r.err, "stderr", "DUMP rank 1");
    expect_in(&r.err, "stderr", "flitrun: job timed out after 0.5 s; stopping it\n");
    expect_secs(&r, 4.4, 5.5);
    check_nothing_left(2);
    run_free(&r);
}

/* Counts stdout lines of one rank; every line must be one of the rank's
   own, whole, behind the right prefix. */
static void check_prefixed(const struct buf *b, const char *kind, int nranks)
{
    int lines[8] = {0}, tails[8] = {0};
    long xs[8] = {0};
    char *copy = strdup(b->data ? b->data : ""), *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int rank, i, rank2, used = 0;
        char want[64];
        if (sscanf(l, "[%d] %n", &rank, &used) != 1 || used == 0 || rank < 0 || rank >= nranks) {
            fail("%s line without a rank prefix: '%.80s'", kind, l);
            continue;
        }
        const char *text = l + used;
        if (!*text && xs[rank] > 0) {
            continue;           /* the newline of a long line that was cut */
        } else if (text[0] == 'x' && strspn(text, "x") == strlen(text)) {
            xs[rank] += (long)strlen(text);
        } else if (sscanf(text, "tail %d", &rank2) == 1 && rank2 == rank) {
            tails[rank]++;
        } else if (sscanf(text, "%*s %d from rank %d", &i, &rank2) == 2 && rank2 == rank &&
                   i == lines[rank] &&
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
            fail("rank %d: %d %s lines, %d tails, %ld x's", i, lines[i], kind, tails[i], xs[i]);
    free(copy);
}

static void case_prefix(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "3", "-p", "RANK", "print", "split", NULL});
    expect_exit(&r, 0);
    check_prefixed(&r.out, "line", 3);
    check_prefixed(&r.err, "err", 3);
    check_nothing_left(-1);
    run_free(&r);
}

/* Like a shell pipe into `head`: when nobody reads flitrun's stdout, the
   ranks writing there get SIGPIPE, with --prefix as without it. */
static void case_prefix_epipe(void)
{
    struct run r = {.close_stdout = true};
    run_flitrun(&r, (const char *const[]){"-n", "2", "-p", "RANK", "spam", NULL});
    expect_exit(&r, 128 + SIGPIPE);
    expect_in(&r.err, "stderr", "was killed by signal 13 (SIGPIPE)\n");
    check_nothing_left(-1);
    run_free(&r);
}

static void case_no_prefix(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "2", "RANK", "print", "whole", NULL});
    expect_exit(&r, 0);
    expect_in(&r.out, "stdout", "\nline 19 from rank 0\n");
    expect_in(&r.out, "stdout", "\nline 19 from rank 1\n");
    expect_in(&r.err, "stderr", "err 19 from rank 1\n");
    expect_not_in(&r.out, "stdout", "[0]");
    expect_not_in(&r.err, "stderr", "[1]");
    check_nothing_left(-1);
    run_free(&r);
}

static void case_stop_signal(int sig, const char *name)
{
    struct run r = {.ready_signal = sig};
    char msg[64];
    run_flitrun(&r, (const char *const[]){"-n", "4", "RANK", "wait", NULL});
    expect_exit(&r, 128 + sig);
    snprintf(msg, sizeof msg, "flitrun: caught %s, stopping the job\n", name);
    expect_in(&r.err, "stderr", msg);
    expect_secs(&r, 0, 5);
    check_nothing_left(4);
    run_free(&r);
}

/* flitrun itself killed: the ranks die of PR_SET_PDEATHSIG. */
static void case_launcher_killed(void)
{
    struct run r = {.ready_signal = SIGKILL};
    run_flitrun(&r, (const char *const[]){"-n", "3", "RANK", "wait", NULL});
    if (!WIFSIGNALED(r.status) || WTERMSIG(r.status) != SIGKILL)
        fail("flitrun was not killed: status 0x%x", r.status);
    check_nothing_left(3);
    run_free(&r);
}

static void case_noexec(void)
{
    struct run a = {0}, b = {0}, c = {0};
    run_flitrun(&a, (const char *const[]){"-n", "2", "/nonexistent/flitrun-test", NULL});
    expect_exit(&a, 127);
    expect_in(&a.err, "stderr",
              "flitrun: cannot execute '/nonexistent/flitrun-test': No such file or directory\n");
    run_flitrun(&b, (const char *const[]){"-n", "3", "flitrun-test-not-on-path", NULL});
    expect_exit(&b, 127);
    expect_in(&b.err, "stderr", "cannot execute 'flitrun-test-not-on-path'");
    char path[512];
    snprintf(path, sizeof path, "%s/not-executable", test_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "#!/bin/sh\n", 10) != 10)
        fail("cannot create %s", path);
    close(fd);
    run_flitrun(&c, (const char *const[]){"-n", "2", path, NULL});
    expect_exit(&c, 127);
    expect_in(&c.err, "stderr", "': Permission denied\n");
    check_nothing_left(0);
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

static void case_stdin(void)
{
    struct run r = {.stdin_text = "hello from stdin\n"};
    run_flitrun(&r, (const char *const[]){"-n", "3", "RANK", "stdin", NULL});
    expect_exit(&r, 0);
    for (int i = 0; i < 3; i++) {
        char line[64];
        snprintf(line, sizeof line, "rank %d stdin ok\n", i);
        expect_in(&r.out, "stdout", line);
    }
    check_nothing_left(-1);
    run_free(&r);
}

/* The rank lines of the stdin cases, whatever the line ends (a terminal
   adds \r). */
static void expect_rank_lines(const struct run *r, int nranks, const char *fmt0,
                              const char *fmt)
{
    for (int i = 0; i < nranks; i++) {
        char line[96];
        snprintf(line, sizeof line, i == 0 ? fmt0 : fmt, i);
        expect_in(&r->out, "stdout", line);
    }
}

/* 1 MiB through a pipe, fed in pieces. Rank 0 reads nothing until the feed
   is stuck, which shows that flitrun's read-ahead is bounded; then all of
   it, in order, to EOF. */
static void case_stdin_pipe(void)
{
    struct run r = {.feed_len = STDIN_LEN, .gate = GATE_ON_STUCK};
    char len[32];
    snprintf(len, sizeof len, "%u", STDIN_LEN);
    run_flitrun(&r, (const char *const[]){"-n", "3", "RANK", "stdin_pattern", len, "gate",
                                          NULL});
    expect_exit(&r, 0);
    snprintf(len, sizeof len, "rank %%d stdin %u bytes ok", STDIN_LEN);
    expect_rank_lines(&r, 3, len, "rank %d stdin 0 bytes ok");
    if (!r.stuck)
        fail("flitrun read all %zu bytes of its stdin while rank 0 read none", r.fed);
    if (r.fed != STDIN_LEN || r.broken)
        fail("the driver fed %zu of %u bytes%s", r.fed, STDIN_LEN,
             r.broken ? ", then EPIPE" : "");
    check_nothing_left(3);
    run_free(&r);
}

/* A regular file is always readable: read in bounded chunks all the same. */
static void case_stdin_file(void)
{
    char path[512], len[32], line[64];
    snprintf(path, sizeof path, "%s/stdin.bin", test_dir);
    uint8_t *data = malloc(STDIN_LEN);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (data)
        fill_pattern(data, 0, STDIN_LEN);
    if (!data || fd < 0 || write(fd, data, STDIN_LEN) != (ssize_t)STDIN_LEN) {
        fail("cannot write %s", path);
        return;
    }
    close(fd);
    free(data);
    struct run r = {.stdin_path = path};
    snprintf(len, sizeof len, "%u", STDIN_LEN);
    run_flitrun(&r, (const char *const[]){"-n", "2", "RANK", "stdin_pattern", len, NULL});
    expect_exit(&r, 0);
    snprintf(line, sizeof line, "rank %%d stdin %u bytes ok", STDIN_LEN);
    expect_rank_lines(&r, 2, line, "rank %d stdin 0 bytes ok");
    check_nothing_left(2);
    run_free(&r);
}

/* --stdin none: rank 0 reads EOF at once, though stdin is a pipe still open
   and full of bytes. */
static void case_stdin_none(void)
{
    struct run r = {.feed_len = STDIN_LEN};
    run_flitrun(&r, (const char *const[]){"-n", "2", "--stdin", "none", "RANK", "stdin",
                                          "", NULL});
    expect_exit(&r, 0);
    expect_rank_lines(&r, 2, "rank %d stdin ok", "rank %d stdin ok");
    check_nothing_left(2);
    run_free(&r);
}

/* Rank 0 stops reading while the feed goes on, by exiting or (how "close")
   by closing its stdin; rank 1 runs on until the feed has ended. flitrun
   must neither die of SIGPIPE nor hang, and lets go of its own stdin: the
   feed sees EPIPE. */
static void case_stdin_early(const char *how)
{
    struct run r = {.feed_len = STDIN_LEN, .gate = GATE_ON_END};
    bool closes = strcmp(how, "close") == 0;
    run_flitrun(&r, (const char *const[]){"-v", "-n", "2", "RANK", "stdin_early", how,
                                          "1000", NULL});
    expect_exit(&r, 0);
    expect_rank_lines(&r, 2, "rank %d stdin early ok", "rank %d stdin early ok");
    if (!r.broken)
        fail("flitrun kept its stdin after rank 0 %s (fed %zu bytes)",
             closes ? "closed its own" : "exited", r.fed);
    if (closes)
        expect_in(&r.err, "stderr", "flitrun: rank 0 no longer reads its stdin");
    check_nothing_left(2);
    run_free(&r);
}

/* The bug this guards against: flitrun in the foreground of a terminal, the
   ranks in a group of their own, in its background. Rank 0 reading the
   terminal itself would be stopped by SIGTTIN, and the job hang. */
static void case_stdin_tty(void)
{
    struct run r = {.term = TERM_FG, .stdin_text = "hello from the terminal\n\4"};
    run_flitrun(&r, (const char *const[]){"-n", "2", "RANK", "stdin",
                                          "hello from the terminal\n", NULL});
    expect_exit(&r, 0);
    expect_rank_lines(&r, 2, "rank %d stdin ok", "rank %d stdin ok");
    check_nothing_left(2);
    run_free(&r);
}

/* flitrun in the background of its terminal does not read it (that would
   stop flitrun): rank 0 reads /dev/null, and -v says so. */
static void case_stdin_tty_bg(void)
{
    struct run r = {.term = TERM_BG, .stdin_text = "not for rank 0\n"};
    run_flitrun(&r, (const char *const[]){"-v", "-n", "2", "RANK", "stdin", "", NULL});
    expect_exit(&r, 0);
    expect_rank_lines(&r, 2, "rank %d stdin ok", "rank %d stdin ok");
    expect_in(&r.err, "stderr",
              "flitrun: flitrun runs in the background of its terminal");
    check_nothing_left(2);
    run_free(&r);
}

static void case_badframe(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "3", "RANK", "badframe", "1", NULL});
    expect_exit(&r, 1);
    expect_rank_msg(&r, 1, "sent a malformed frame: ");
    expect_secs(&r, 0, 4);
    check_nothing_left(3);
    run_free(&r);
}

static void case_reject(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "2", "RANK", "reject", NULL});
    expect_exit(&r, 0);
    expect_in(&r.err, "stderr", "flitrun: rejected a connection: pid");
    expect_in(&r.err, "stderr", "not this job's");
    expect_in(&r.err, "stderr", "claims rank 2 of a job of 2");
    expect_in(&r.err, "stderr", "claims rank 0, which already connected");
    expect_in(&r.err, "stderr", "instead of HELLO");
    check_nothing_left(2);
    run_free(&r);
}

static void case_shm(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "2", "RANK", "shm", NULL});
    expect_exit(&r, 0);
    const char *p = r.out.data ? r.out.data : "";
    int seen = 0;
    char name[128];
    int used = 0;
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
        fail("the ranks made %d shared files, expected 2:\n%s", seen, r.out.data);
    check_nothing_left(-1);
    run_free(&r);
}

/* ---- jobs over several hosts ----
 *
 * Every "host" is this machine: the --launch template `env FAKEHOST={host}`
 * starts each rank here, through env, with FAKEHOST saying where it was sent.
 * The rendezvous is TCP all the same (on loopback, --boot-addr 127.0.0.1, so
 * that no host name is looked up), and the stand-in ranks check that
 * (FLRUN_TEST_TCP). A fake ssh stands in for ssh.
 */

#define FAKE_LAUNCH "env FAKEHOST={host}"
/* A launcher that forks, as ssh does: the rank is not the launcher's process,
   and its death by a signal reaches flitrun as the shell's 128+signal. */
#define FORKING_LAUNCH "sh -c \"$@\";exit {host}"

static void tcp_on(void)
{
    setenv("FLRUN_TEST_TCP", "127.0.0.1", 1);
}

static void tcp_off(void)
{
    unsetenv("FLRUN_TEST_TCP");
}

/* "flitrun: rank R on HOST (launcher pid P) <tail>", P from the pid file
   (the launcher is the rank, through env). */
static void expect_remote_msg(const struct run *r, int rank, const char *host,
                              const char *tail)
{
    char name[32], msg[256];
    snprintf(name, sizeof name, "pid.%d", rank);
    snprintf(msg, sizeof msg, "flitrun: rank %d on %s (launcher pid %d) %s", rank, host,
             pidfile_pid(name), tail);
    expect_in(&r->err, "stderr", msg);
}

static void case_hosts_usage(void)
{
    static const struct {
        const char *args[10];
        const char *msg;
    } bad[] = {
        {{"--hosts", "", "true"}, "the host list is empty"},
        {{"-n", "2", "--hosts", "a,,b", "true"}, "an empty host name in 'a,,b'"},
        {{"-n", "2", "--hosts", ",a", "true"}, "an empty host name"},
        {{"-n", "2", "--hosts", "a,", "true"}, "an empty host name"},
        {{"--hosts", "a:0", "true"}, "bad count in 'a:0'"},
        {{"--hosts", "a:x", "true"}, "bad count in 'a:x'"},
        {{"--hosts", "a:", "true"}, "bad count in 'a:'"},
        {{"--hosts", "a:-1", "true"}, "bad count"},
        {{"--hosts", "a:4097", "true"}, "bad count"},
        {{"--hosts", "a:2:3", "true"}, "bad count"},
        {{"-n", "2", "--hosts", "-oProxyCommand=x", "true"},
         "bad host name '-oProxyCommand=x'"},
        {{"-n", "2", "--hosts", "a b", "true"}, "bad host name 'a b'"},
        {{"-n", "2", "--hosts", "a;b", "true"}, "bad host name"},
        {{"-n", "2", "--hosts", ":2", "true"}, "bad host name"},
        {{"--hosts", "a:2,b", "true"},
         "give a count to every host in 'a:2,b' or to none"},
        {{"-n", "5", "--hosts", "a:2,b:2", "true"},
         "5 ranks, but the host counts add up to 4"},
        {{"--hosts", "a,b", "true"}, "-n N is required (or a count for every host"},
        {{"--hosts", "a:3000,b:3000", "true"}, "add up to 6000 ranks, more than 4096"},
        {{"-n", "2", "--hosts", "a", "--placement", "scatter", "true"},
         "--placement wants block or round-robin, not 'scatter'"},
        {{"-n", "2", "--hosts", "a", "--launch", "env X=1", "true"},
         "the --launch template 'env X=1' has no {host}"},
        {{"-n", "2", "--hosts", "a", "--launch", " ", "true"}, "has no {host}"},
        {{"-n", "2", "--launch", "env {host}", "true"}, "--launch goes with --hosts"},
        {{"-n", "2", "--placement", "block", "true"}, "--placement goes with --hosts"},
        {{"-n", "2", "--boot-addr", "10.1.2", "true"},
         "--boot-addr wants an IPv4 address"},
        {{"-n", "2", "--hosts", "a", "--boot-addr", "::1", "true"}, "--boot-addr wants"},
        {{"-n", "2", "--hosts", NULL}, "option '--hosts' needs a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct run r = {0};
        run_flitrun(&r, bad[i].args);
        expect_exit(&r, 2);
        expect_in(&r.err, "usage error", bad[i].msg);
        expect_in(&r.err, "usage error", "Usage: flitrun -n N");
        run_free(&r);
    }
    check_nothing_left(0);
}

/* Where each rank went: "rank R of N on HOST" lines, in want[R]. */
static void expect_places(const struct run *r, int n, const char *const *want)
{
    char line[96];
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof line, "rank %d of %d on %s\n", i, n, want[i]);
        expect_in(&r->out, "stdout", line);
    }
}

static void place_case(const char *const *args, int n, const char *const *want)
{
    struct run r = {0};
    run_flitrun(&r, args);
    expect_exit(&r, 0);
    expect_places(&r, n, want);
    check_nothing_left(-1);
    run_free(&r);
}

static void case_hosts_place(void)
{
    place_case((const char *const[]){"-n", "5", "--hosts", "a,b,c", "--launch",
                                     FAKE_LAUNCH, "--boot-addr", "127.0.0.1", "RANK",
                                     "where", NULL},
               5, (const char *const[]){"a", "a", "b", "b", "c"});
    place_case((const char *const[]){"-n", "5", "--hosts", "a,b,c", "--placement",
                                     "round-robin", "--launch", FAKE_LAUNCH,
                                     "--boot-addr", "127.0.0.1", "RANK", "where", NULL},
               5, (const char *const[]){"a", "b", "c", "a", "b"});
    /* no -n: the counts' sum */
    place_case((const char *const[]){"-H", "a:1,b:3", "--launch", FAKE_LAUNCH,
                                     "--boot-addr", "127.0.0.1", "RANK", "where", NULL},
               4, (const char *const[]){"a", "b", "b", "b"});
    /* round-robin skips a full host */
    place_case((const char *const[]){"-n", "4", "-H", "a:1,b:3,c:1", "--placement",
                                     "round-robin", "--launch", FAKE_LAUNCH,
                                     "--boot-addr", "127.0.0.1", "RANK", "where", NULL},
               4, (const char *const[]){"a", "b", "c", "b"});
    /* fewer ranks than counts: block fills the first hosts */
    place_case((const char *const[]){"-n", "3", "-H", "a:2,b:2", "--launch", FAKE_LAUNCH,
                                     "--boot-addr", "127.0.0.1", "RANK", "where", NULL},
               3, (const char *const[]){"a", "a", "b"});
    /* more hosts than ranks; localhost is started here, without the launcher */
    place_case((const char *const[]){"-n", "2", "--hosts", "localhost,b,c", "--launch",
                                     FAKE_LAUNCH, "--boot-addr", "127.0.0.1", "RANK",
                                     "where", NULL},
               2, (const char *const[]){"here", "b"});
    /* all here: no launcher, no TCP */
    place_case((const char *const[]){"--hosts", "localhost:3", "--launch", FAKE_LAUNCH,
                                     "RANK", "where", NULL},
               3, (const char *const[]){"here", "here", "here"});
}

static void tcp_gather_case(const char *np, const char *hosts, const char *placement)
{
    struct run r = {0};
    int n = atoi(np);
    tcp_on();
    run_flitrun(&r,
                (const char *const[]){"-n", np, "--hosts", hosts, "--placement",
                                      placement, "--launch", FAKE_LAUNCH, "--boot-addr",
                                      "127.0.0.1", "RANK", "gather", "3", NULL});
    tcp_off();
    expect_exit(&r, 0);
    for (int i = 0; i < n; i++) {
        char line[64];
        snprintf(line, sizeof line, "rank %d of %d ok\n", i, n);
        expect_in(&r.out, "stdout", line);
    }
    if (r.err.len)
        fail("stderr is not empty:\n%s", r.err.data);
    check_nothing_left(n);
    clear_pidfiles();
    run_free(&r);
}

/* Allgather rounds over TCP, one of 2 MiB (partial sends); local ranks
   (localhost) use TCP too when the job does. */
static void case_tcp_gather(void)
{
    tcp_gather_case("4", "a,b", "block");
    tcp_gather_case("32", "a,b,c", "round-robin");
    tcp_gather_case("4", "localhost:2,b:2", "block");
    /* --boot-addr alone: a job on this host, over TCP */
    struct run r = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-n", "3", "--boot-addr", "127.0.0.1", "RANK",
                                          "gather", "2", NULL});
    tcp_off();
    expect_exit(&r, 0);
    expect_in(&r.out, "stdout", "rank 2 of 3 ok\n");
    check_nothing_left(3);
    run_free(&r);
}

/* No --boot-addr: the address on the route to the first other host. A
   numeric host, so that nothing is looked up; 127.0.0.2 is reached from
   127.0.0.1. */
static void case_tcp_route(void)
{
    struct run r = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-v", "-n", "2", "--hosts",
                                          "localhost,127.0.0.2", "--launch", FAKE_LAUNCH,
                                          "RANK", "gather", "1", NULL});
    tcp_off();
    expect_exit(&r, 0);
    expect_in(&r.err, "stderr", "flitrun: boot address tcp:127.0.0.1:");
    expect_in(&r.err, "stderr", "(on the route to 127.0.0.2)");
    expect_in(&r.out, "stdout", "rank 1 of 2 ok\n");
    check_nothing_left(2);
    run_free(&r);
}

static void case_tcp_verbose(void)
{
    struct run r = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-v", "-n", "3", "--hosts", "a:2,b:1",
                                          "--launch", FAKE_LAUNCH, "--boot-addr",
                                          "127.0.0.1", "RANK", "gather", "1", NULL});
    tcp_off();
    expect_exit(&r, 0);
    expect_in(&r.err, "stderr", "flitrun: boot address tcp:127.0.0.1:");
    expect_in(&r.err, "stderr", "(--boot-addr)");
    expect_in(&r.err, "stderr", "flitrun: host a: 2 ranks\n");
    expect_in(&r.err, "stderr", "flitrun: host b: 1 rank\n");
    expect_in(&r.err, "stderr", "flitrun: rank 2 -> b: env FAKEHOST=b env FLIT_");
    expect_in(&r.err, "stderr", " FLIT_RANK=2");
    expect_in(&r.err, "stderr", "flitrun: rank 1 (pid ");
    expect_in(&r.err, "stderr", " on a) connected from 127.0.0.1:");
    expect_remote_msg(&r, 2, "b", "exited with status 0\n");
    check_nothing_left(3);
    run_free(&r);
}

static void case_tcp_fail(void)
{
    struct run r = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-n", "4", "--hosts", "a,b", "--launch",
                                          FAKE_LAUNCH, "--boot-addr", "127.0.0.1", "RANK",
                                          "fail", "2", "3", NULL});
    tcp_off();
    expect_exit(&r, 3);
    expect_remote_msg(&r, 2, "b", "exited with status 3\n");
    expect_secs(&r, 0, 4);
    check_nothing_left(4);
    run_free(&r);
}

/* Killed by a signal: seen as such when the launcher is the rank (env, ip
   netns exec); as 128+signal through a launcher that forks. */
static void case_tcp_signal(void)
{
    struct run r = {0}, f = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-n", "3", "--hosts", "a,b,c", "--launch",
                                          FAKE_LAUNCH, "--boot-addr", "127.0.0.1", "RANK",
                                          "sigkill", "1", NULL});
    expect_exit(&r, 137);
    expect_remote_msg(&r, 1, "b", "was killed by signal 9 (SIGKILL)\n");
    check_nothing_left(3);
    clear_pidfiles();
    run_flitrun(&f, (const char *const[]){"-n", "3", "--hosts", "a,b,c", "--launch",
                                          FORKING_LAUNCH, "--boot-addr", "127.0.0.1",
                                          "RANK", "sigkill", "1", NULL});
    tcp_off();
    expect_exit(&f, 137);
    expect_in(&f.err, "stderr", "flitrun: rank 1 on b (launcher pid ");
    expect_in(&f.err, "stderr",
              ") exited with status 137 (perhaps killed by signal 9 "
              "(SIGKILL) there)\n");
    expect_secs(&f, 0, 4);
    check_nothing_left(3);
    run_free(&r);
    run_free(&f);
}

static void case_tcp_timeout(void)
{
    struct run r = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-n", "2", "--hosts", "a,b", "--launch",
                                          FORKING_LAUNCH, "--boot-addr", "127.0.0.1",
                                          "--timeout", "1", "RANK", "hang", NULL});
    tcp_off();
    expect_exit(&r, 124);
    expect_in(&r.err, "stderr", "DUMP rank 0\n");
    expect_in(&r.err, "stderr", "DUMP rank 1\n");
    expect_in(&r.err, "stderr", "flitrun: job timed out after 1 s; stopping it\n");
    expect_secs(&r, 1, 6);
    check_nothing_left(2);
    run_free(&r);
}

/* Rank 0 on another host reads flitrun's stdin through its launcher's. */
static void case_tcp_stdin(void)
{
    struct run r = {.stdin_text = "hello from stdin\n"};
    run_flitrun(&r, (const char *const[]){"-n", "3", "--hosts", "a,b", "--launch",
                                          FORKING_LAUNCH, "--boot-addr", "127.0.0.1",
                                          "RANK", "stdin", NULL});
    expect_exit(&r, 0);
    for (int i = 0; i < 3; i++) {
        char line[64];
        snprintf(line, sizeof line, "rank %d stdin ok\n", i);
        expect_in(&r.out, "stdout", line);
    }
    check_nothing_left(-1);
    run_free(&r);
}

static void case_tcp_prefix(void)
{
    struct run r = {0};
    run_flitrun(&r, (const char *const[]){"-n", "3", "-p", "--hosts", "a,b,c", "--launch",
                                          FORKING_LAUNCH, "--boot-addr", "127.0.0.1",
                                          "RANK", "print", "split", NULL});
    expect_exit(&r, 0);
    check_prefixed(&r.out, "line", 3);
    check_prefixed(&r.err, "err", 3);
    check_nothing_left(-1);
    run_free(&r);
}

static void case_tcp_reject(void)
{
    struct run r = {0};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-n", "2", "--hosts", "a,b", "--launch",
                                          FAKE_LAUNCH, "--boot-addr", "127.0.0.1", "RANK",
                                          "reject", NULL});
    tcp_off();
    expect_exit(&r, 0);
    expect_in(&r.err, "stderr", "flitrun: rejected a connection from 127.0.0.1:");
    expect_in(&r.err, "stderr", "not this job's");
    expect_in(&r.err, "stderr", "claims rank 2 of a job of 2");
    expect_in(&r.err, "stderr", "claims rank 0, which already connected");
    expect_in(&r.err, "stderr", "instead of HELLO");
    check_nothing_left(2);
    run_free(&r);
}

/* flitrun killed: a rank that its launcher became dies of PR_SET_PDEATHSIG
   (set before the launcher's exec, kept across env's). */
static void case_tcp_launcher_killed(void)
{
    struct run r = {.ready_signal = SIGKILL};
    tcp_on();
    run_flitrun(&r, (const char *const[]){"-n", "3", "--hosts", "a,b,c", "--launch",
                                          FAKE_LAUNCH, "--boot-addr", "127.0.0.1", "RANK",
                                          "wait", NULL});
    tcp_off();
    if (!WIFSIGNALED(r.status) || WTERMSIG(r.status) != SIGKILL)
        fail("flitrun was not killed: status 0x%x", r.status);
    check_nothing_left(3);
    run_free(&r);
}

static void case_tcp_noexec(void)
{
    struct run a = {0}, b = {0};
    run_flitrun(&a, (const char *const[]){"-n", "2", "--hosts", "a,b", "--launch",
                                          "/nonexistent/launcher {host}", "--boot-addr",
                                          "127.0.0.1", "true", NULL});
    expect_exit(&a, 127);
    expect_in(
        &a.err, "stderr",
        "flitrun: cannot execute '/nonexistent/launcher': No such file or directory\n");
    /* the launcher runs, the program is not there: env says so, 127 */
    run_flitrun(&b, (const char *const[]){"-n", "2", "--hosts", "a,b", "--launch",
                                          FAKE_LAUNCH, "--boot-addr", "127.0.0.1",
                                          "/nonexistent/program", NULL});
    expect_exit(&b, 127);
    expect_in(&b.err, "stderr", "(launcher pid ");
    expect_in(&b.err, "stderr", ") exited with status 127\n");
    check_nothing_left(0);
    run_free(&a);
    run_free(&b);
}

/* A stand-in for ssh: joins its arguments into one command line and runs it
   in a shell, as ssh has sshd do; -o options are ignored. */
static void write_fake_ssh(char *path, size_t len)
{
    static const char script[] = "#!/bin/sh\n"
                                 "while [ \"$1\" = -o ]; do shift 2; done\n"
                                 "host=$1; shift\n"
                                 "FAKEHOST=$host exec /bin/sh -c \"$*\"\n";
    snprintf(path, len, "%s/ssh", test_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (fd < 0 || write(fd, script, sizeof script - 1) != (ssize_t)(sizeof script - 1))
        fail("cannot write %s", path);
    close(fd);
}

/* The default launcher, ssh (here the fake one, first on PATH): every word
   quoted for the remote shell, the working directory kept, 255 explained. */
static void case_tcp_ssh(void)
{
    static const char *const args[] = {"a b",       "it's", "$HOME", "x;y", "",  "t\tab",
                                       "new\nline", "*",    "\"q\"", "\\",  NULL};
    char ssh[512], path[4096], cwd[4096], line[4200];
    const char *old_path = getenv("PATH");
    write_fake_ssh(ssh, sizeof ssh);
    snprintf(path, sizeof path, "%s:%s", test_dir, old_path ? old_path : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    struct run r = {0}, e = {0};
    const char *argv[32] = {"-n",          "2",         "--hosts", "a,b",
                            "--boot-addr", "127.0.0.1", "RANK",    "args"};
    size_t n = 8;
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    run_flitrun(&r, argv);
    tcp_on();
    run_flitrun(&e, (const char *const[]){"-n", "2", "--hosts", "a,b", "--boot-addr",
                                          "127.0.0.1", "RANK", "fail", "1", "255", NULL});
    tcp_off();
    if (old_path)
        setenv("PATH", old_path, 1);
    expect_exit(&r, 0);
    if (!getcwd(cwd, sizeof cwd))
        fail("getcwd: %s", strerror(errno));
    snprintf(line, sizeof line, "cwd [%s]\n", cwd);
    expect_in(&r.out, "stdout", line);
    for (size_t i = 0; args[i]; i++) {
        snprintf(line, sizeof line, "arg [%s]\n", args[i]);
        expect_in(&r.out, "stdout", line);
    }
    expect_exit(&e, 255);
    expect_in(&e.err, "stderr",
              "exited with status 255 (ssh's own failure, or the rank was "
              "killed by a signal there)\n");
    check_nothing_left(-1);
    unlink(ssh);
    run_free(&r);
    run_free(&e);
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
    struct sigaction sa = {.sa_handler = on_alarm};  /* no SA_RESTART */
    if (!mkdtemp(test_dir) || setenv("FLRUN_TEST_DIR", test_dir, 1) != 0 ||
        sigaction(SIGALRM, &sa, NULL) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 ||
        signal(SIGPIPE, SIG_IGN) == SIG_ERR) {   /* feeding a stdin flitrun let go of */
        perror("flitrun_test: setup");
        return -1;
    }
    clean_environment();
    return 0;
}

static bool run_case(const char *name)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } simple[] = {
        {"usage", case_usage}, {"verbose", case_verbose}, {"exit_code", case_exit_code},
        {"signal", case_signal}, {"timeout", case_timeout},
        {"timeout_stubborn", case_timeout_stubborn}, {"prefix", case_prefix},
        {"no_prefix", case_no_prefix}, {"prefix_epipe", case_prefix_epipe}, {"launcher_killed", case_launcher_killed},
        {"noexec", case_noexec}, {"stdin", case_stdin}, {"stdin_pipe", case_stdin_pipe},
        {"stdin_file", case_stdin_file}, {"stdin_none", case_stdin_none},
        {"stdin_tty", case_stdin_tty},
        {"stdin_tty_bg", case_stdin_tty_bg}, {"badframe", case_badframe},
        {"reject", case_reject}, {"shm", case_shm},
        {"hosts_usage", case_hosts_usage}, {"hosts_place", case_hosts_place},
        {"tcp_gather", case_tcp_gather}, {"tcp_route", case_tcp_route},
        {"tcp_verbose", case_tcp_verbose}, {"tcp_fail", case_tcp_fail},
        {"tcp_signal", case_tcp_signal}, {"tcp_timeout", case_tcp_timeout},
        {"tcp_stdin", case_tcp_stdin}, {"tcp_prefix", case_tcp_prefix},
        {"tcp_reject", case_tcp_reject}, {"tcp_launcher_killed", case_tcp_launcher_killed},
        {"tcp_noexec", case_tcp_noexec}, {"tcp_ssh", case_tcp_ssh},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(name, simple[i].name) == 0) {
            simple[i].fn();
            return true;
        }
    if (strncmp(name, "gather", 6) == 0 && atoi(name + 6) > 0)
        case_gather(atoi(name + 6));
    else if (strcmp(name, "stdin_early_exit") == 0 ||
             strcmp(name, "stdin_early_close") == 0)
        case_stdin_early(name + strlen("stdin_early_"));
    else if (strcmp(name, "sigterm") == 0)
        case_stop_signal(SIGTERM, "SIGTERM");
    else if (strcmp(name, "sigint") == 0)
        case_stop_signal(SIGINT, "SIGINT");
    else if (strcmp(name, "sighup") == 0)
        case_stop_signal(SIGHUP, "SIGHUP");
    else
        return false;
    return true;
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
