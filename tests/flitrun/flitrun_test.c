/*
 * Drives flitrun through one case: flitrun_test CASE FLITRUN RANK, where
 * RANK is the stand-in rank program (rank.c). Exit 0 pass, 1 fail, 77 skip.
 *
 * The driver is a child subreaper, so a rank that outlives flitrun becomes
 * its child: after every run it reaps what is left and fails the case if a
 * process is still running. Ranks also leave their pids in a temporary
 * directory ($FLRUN_TEST_DIR), checked the same way. Synchronisation is by
 * handshake ("ready" on stdout, pipes reaching EOF), never by sleeping.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_LIMIT_S 20.0        /* a run past this is a hang: kill it, fail */
#define MAX_ARGS 32

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

struct run {
    const char *stdin_text;     /* NULL: /dev/null */
    int ready_signal;           /* sent to flitrun once stdout says "ready" */
    bool close_stdout;          /* nobody reads flitrun's stdout */
    int status;                 /* flitrun's wait status */
    struct buf out, err;
    double secs;                /* until both its pipes reached EOF */
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
    dup2(in_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execv(argv[0], argv);
    _exit(126);
}

static int open_stdin(const char *text)
{
    if (!text)
        return open("/dev/null", O_RDONLY | O_CLOEXEC);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0 || write(p[1], text, strlen(text)) < 0)
        return -1;
    close(p[1]);                /* small enough for the pipe: EOF after it */
    return p[0];
}

static void kill_pidfile_ranks(void);

/* Reads stdout and stderr to EOF, which comes once flitrun and everything
   that inherited them are gone; signals flitrun on "ready" if asked. */
static void collect(struct run *r, pid_t pid, int out_fd, int err_fd, double start)
{
    bool out_open = out_fd >= 0, err_open = true, signalled = false;
    while (out_open || err_open) {
        struct pollfd p[2] = {{.fd = out_open ? out_fd : -1, .events = POLLIN},
                              {.fd = err_open ? err_fd : -1, .events = POLLIN}};
        double left = start + RUN_LIMIT_S - now_s();
        if (left <= 0 || poll(p, 2, (int)(left * 1000) + 1) == 0) {
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
    int out[2], err[2], in_fd = open_stdin(r->stdin_text);
    if (in_fd < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        perror("flitrun_test: pipes");
        exit(1);
    }
    double start = now_s();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, in_fd, out[1], err[1]);
    close(in_fd);
    close(out[1]);
    close(err[1]);
    if (r->close_stdout) {
        close(out[0]);
        out[0] = -1;
    }
    collect(r, pid, out[0], err[0], start);
    r->secs = now_s() - start;
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
        sigaction(SIGALRM, &sa, NULL) != 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
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
        {"noexec", case_noexec}, {"stdin", case_stdin}, {"badframe", case_badframe},
        {"reject", case_reject}, {"shm", case_shm},
    };
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(name, simple[i].name) == 0) {
            simple[i].fn();
            return true;
        }
    if (strncmp(name, "gather", 6) == 0 && atoi(name + 6) > 0)
        case_gather(atoi(name + 6));
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
