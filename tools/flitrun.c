/*
 * flitrun: the job launcher. Starts N ranks of a program on this host, or
 * on several hosts (--hosts) through ssh or a --launch command, serves the
 * boot protocol they speak (boot/proto.h), and stops the whole job when a
 * rank fails, when the --timeout expires, or when flitrun itself is told to
 * stop.
 *
 * One process, no threads, one poll() loop over: the socket the ranks
 * connect to, their connections, the pipes of their output (--prefix only),
 * flitrun's stdin and the pipe that carries it on to rank 0, and a signalfd
 * for SIGCHLD and the signals that stop the job. Deadlines (the timeout, the
 * dump window, the grace before SIGKILL) are the poll timeout, so nothing
 * spins.
 *
 * The ranks share one process group of their own: a terminal's Ctrl-C
 * reaches only flitrun, which then stops them in order. That group is in the
 * background of the terminal, where reading it would stop a rank (SIGTTIN);
 * so rank 0 reads flitrun's stdin from a pipe that flitrun fills, and the
 * other ranks read /dev/null. Every way out goes through job_stop() and the
 * loop runs until every rank has been reaped, so no process is left behind.
 *
 * A rank on another host is, to flitrun, the process that starts it there
 * (ssh, or the --launch command): flitrun signals and reaps that one, and
 * its exit status stands for the rank's. Its stdin, stdout and stderr carry
 * the rank's. The ranks then reach flitrun over TCP instead of a unix
 * socket, at an address of this host on their route to it (hosts.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot/proto.h"
#include "flit/flit.h"
#include "hosts.h"
#include "platform/os.h"

#define MAX_RANKS 4096u
#define MAX_TIMEOUT_S 1e9               /* keeps the deadline inside a u64 of ns */
#define NS_PER_S 1000000000ull
#define GRACE_NS (2 * NS_PER_S)         /* between SIGTERM and SIGKILL */
#define DUMP_WAIT_NS (2 * NS_PER_S)     /* for the ranks' DUMPED answers */
#define DRAIN_NS (NS_PER_S / 2)         /* for output held by strays at the end */
#define LINE_CAP (64u * 1024)           /* a longer line is cut, not buffered */
#define RELAY_CAP (LINE_CAP + 8192u)    /* one cut line plus a read */
#define EXTRA_CONNS 32u                 /* connections yet to say who they are */
#define HELLO_WAIT_NS (10 * NS_PER_S)   /* for a new connection's HELLO */
#define READS_PER_TURN 16               /* so one chatty rank cannot starve others */
#define STDIN_CAP (64u * 1024)          /* stdin read ahead of rank 0, at most */
/* GATHERED body: u32 round, u32 n, then n x (u32 len, bytes); plus its type byte. */
#define GATHERED_HEAD 8u
#define GATHERED_MAX (FL_PROTO_MAX_FRAME - 1u)

enum {
    EXIT_OWN_ERROR = 1,                 /* flitrun itself, or a rank's protocol */
    EXIT_USAGE = 2,
    EXIT_TIMEOUT = 124,
    EXIT_NOEXEC = 127,
};

static const char usage_line[] =
    "Usage: flitrun -n N [options] [--] program [args...]\n";

static const char help_text[] =
    "Start N ranks of program as one flit job, on this host or on the hosts\n"
    "named by --hosts, and wait for them.\n"
    "\n"
    "  -n, --np N             number of ranks (1..4096); required unless every\n"
    "                         host in --hosts has a count (then their sum)\n"
    "  -H, --hosts LIST       run the ranks on these hosts: \"a,b,c\" (ranks\n"
    "                         shared out evenly) or \"a:2,b:4\" (at most that\n"
    "                         many on each); localhost and this host's name\n"
    "                         start here, the others through the launcher\n"
    "      --placement block|round-robin\n"
    "                         ranks 0..k-1 on the first host, k.. on the next\n"
    "                         (block, the default), or one host after another\n"
    "      --launch TEMPLATE  start a rank on another host with this command\n"
    "                         instead of ssh: split at blanks, {host} replaced\n"
    "                         by the host's name, then `env FLIT_...=... program\n"
    "                         args` appended as separate words, no shell here;\n"
    "                         e.g. 'ip netns exec {host}'. A template that\n"
    "                         starts with ssh gets the command as ssh does\n"
    "      --boot-addr IP     the IPv4 address of this host that the ranks\n"
    "                         connect to (default: the source address of the\n"
    "                         route to the first other host, or the first\n"
    "                         interface up if that name does not resolve);\n"
    "                         without --hosts, a job here over TCP\n"
    "      --timeout SECONDS  stop the job after SECONDS (fractions allowed);\n"
    "                         the ranks print their state to stderr first\n"
    "  -p, --prefix           prefix every line the ranks print with \"[rank] \"\n"
    "  -k, --keep-going       when a rank fails, let the others run on (they\n"
    "                         see it as a peer going down); report it at the end\n"
    "      --stdin 0|none     who reads flitrun's stdin: rank 0 (the default)\n"
    "                         or no rank. The others read /dev/null; so does\n"
    "                         rank 0 when flitrun runs in the background of the\n"
    "                         terminal that is its stdin\n"
    "  -v, --verbose          tell what flitrun does, on stderr (FLIT_VERBOSE\n"
    "                         set to 1 or more does too)\n"
    "  -h, --help             print this help and exit\n"
    "      --version          print the version and exit\n"
    "\n"
    "When a rank exits non-zero or is killed, the others are stopped (SIGTERM,\n"
    "then SIGKILL 2 s later) and flitrun exits with that rank's status, or\n"
    "128+signal. Other exit statuses: 0 every rank exited 0; 124 timed out;\n"
    "127 program cannot be executed; 128+signal flitrun was interrupted;\n"
    "2 bad usage; 1 any other error.\n"
    "\n"
    "On other hosts: the default launcher is `ssh -o BatchMode=yes HOST`\n"
    "running `cd DIR && exec env FLIT_...=... program args` in the login\n"
    "shell there (DIR: flitrun's working directory; every word quoted); so\n"
    "program must be at the same path there, and only the FLIT_* variables\n"
    "travel. The ranks connect back to flitrun over TCP (FLIT_BOOT=tcp:IP:PORT;\n"
    "the job id is the only credential). What flitrun watches and stops is\n"
    "the launcher process: its exit status is the rank's (ssh says 255 for\n"
    "its own failure and for a rank killed by a signal). ssh ends without\n"
    "ending the remote rank; the rank ends itself when its connection to\n"
    "flitrun breaks. Shared-memory files that crashed ranks leave behind are\n"
    "removed on flitrun's host only.\n";

struct options {
    uint32_t nranks;
    double timeout_s;                   /* 0: none */
    bool prefix, verbose, keep_going;
    bool stdin_none;                    /* --stdin none: no rank reads it */
    char **argv;                        /* the program and its arguments */
    const char *hosts_spec;             /* --hosts; NULL: every rank here */
    const char *launch_spec;            /* --launch; NULL: ssh */
    const char *placement_spec;         /* --placement */
    const char *boot_spec;              /* --boot-addr */
    struct fr_hosts hosts;              /* parsed --hosts */
    struct fr_launch launch;            /* parsed --launch, or ssh */
    uint32_t *host_of;                  /* [nranks]: index in hosts; NULL: all here */
    uint32_t boot_ip;                   /* --boot-addr, host order; 0: none */
};

struct frame {                          /* outgoing, shared by its receivers */
    size_t refs;
    size_t len;                         /* of bytes[], header included */
    uint8_t bytes[];
};

struct sendq {                          /* a frame not yet fully sent */
    struct sendq *next;
    struct frame *frame;
    size_t off;
};

struct conn {
    int fd;
    int rank;                           /* -1 until its HELLO was accepted */
    bool dead;                          /* freed at the end of the loop turn */
    uint64_t hello_by;                  /* closed if still anonymous then (ns) */
    char peer[32];                      /* " from a.b.c.d:port" over TCP; else "" */
    struct fl_proto_rx rx;
    struct sendq *head, *tail;
};

struct relay {                          /* one rank's stdout or stderr (-p) */
    int fd;                             /* read end of its pipe; -1 at EOF */
    int dest;                           /* flitrun's fd the lines go to */
    uint32_t rank;
    char *buf;                          /* what is not yet a whole line */
    size_t len, cap;
};

struct rank {
    pid_t pid;                          /* as forked; 0 if never started */
    bool remote;                        /* pid is its launcher (ssh, --launch) */
    char **argv;                        /* its launcher's argv, until exec'd */
    bool live;                          /* started and not yet reaped */
    bool said_hello, said_bye, dump_asked, dumped;
    struct conn *conn;                  /* NULL while not connected */
    uint32_t gather_round;              /* the last round it sent GATHER for */
    uint8_t *blob;                      /* its part of the open round */
    uint32_t blob_len;
    struct relay out, err;
};

struct stdin_fwd {                      /* flitrun's stdin, on to rank 0 */
    int in_fd;                          /* what is read; -1 when not (any more) */
    int pipe_fd;                        /* to rank 0's stdin; -1 once closed */
    int rank_end;                       /* the pipe's other end, until rank 0 forks */
    bool in_sock;                       /* read with MSG_DONTWAIT */
    bool eof;                           /* close pipe_fd once buf is written */
    char *buf;                          /* STDIN_CAP bytes */
    size_t off, len;                    /* buf[off, off + len) is not yet written */
};

enum phase {
    PHASE_RUNNING,
    PHASE_DUMPING,                      /* timed out; waiting for the dumps */
    PHASE_STOPPING,                     /* ranks told to stop; reaping them */
};

enum watch_kind {
    WATCH_SIGNAL, WATCH_LISTEN, WATCH_CONN, WATCH_RELAY, WATCH_STDIN, WATCH_STDIN_PIPE,
};

struct watch {                          /* what a pollfd entry stands for */
    enum watch_kind kind;
    void *obj;
};

struct job {
    struct options opt;
    uint64_t id;
    char id_hex[17];
    char boot_addr[64];
    bool tcp;                           /* boot_addr is tcp: some rank may be remote */
    char *cwd;                          /* for ssh's `cd`; NULL if unknown */
    pid_t self;                         /* flitrun, as its ranks' parent */
    pid_t pgid;                         /* the ranks' group; 0 until rank 0 */
    struct rank *ranks;
    uint32_t live;                      /* ranks started and not reaped */
    struct conn **conns;
    uint32_t nconns, max_conns;
    int listen_fd, signal_fd, devnull_fd;
    bool listen_paused;                 /* out of fds until a conn closes */
    sigset_t old_mask;                  /* what the ranks get back */
    struct sigaction old_pipe, old_chld;
    struct rlimit old_nofile;
    bool nofile_raised;
    enum phase phase;
    int exit_code;
    bool decided;                       /* exit_code set by the first reason */
    uint64_t timeout_at, dump_until, kill_at, drain_until;  /* ns; 0: none */
    bool killed;                        /* SIGKILL already sent */
    uint32_t round;                     /* allgather rounds completed */
    uint32_t round_count;               /* GATHERs in for the open round */
    size_t round_bytes;                 /* its GATHERED body so far */
    struct pollfd *pfds;
    struct watch *watches;
    char *scratch;                      /* prefixed output being written */
    size_t scratch_cap;
    bool dest_gone[3];                  /* by fd: stdout or stderr hit EPIPE */
    struct stdin_fwd in;
};

/* ---- messages ---- */

/* Blocking write of everything. 0, or -errno if the output is lost. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            /* someone made the shared stdout nonblocking: wait, not spin */
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, -1);
        } else if (n < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

/* One write per message, so it never splits a rank's relayed line. */
static void vsay(const char *fmt, va_list ap)
{
    char buf[1024];
    size_t head = (size_t)snprintf(buf, sizeof buf, "flitrun: ");
    int n = vsnprintf(buf + head, sizeof buf - head - 1, fmt, ap);
    size_t len = head + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    write_all(STDERR_FILENO, buf, len);
}

__attribute__((format(printf, 1, 2)))
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

/* Only with --verbose. */
__attribute__((format(printf, 2, 3)))
static void note(const struct job *job, const char *fmt, ...)
{
    if (!job->opt.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

static void signal_name(int sig, char *buf, size_t len)
{
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else
        snprintf(buf, len, "signal %d", sig);
}

/* ---- options ---- */

__attribute__((format(printf, 1, 2)))
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flitrun: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n%sTry 'flitrun --help' for more.\n", usage_line);
    va_end(ap);
}

static bool parse_nranks(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > (long)MAX_RANKS)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_timeout(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > MAX_TIMEOUT_S)
        return false;
    *out = v;
    return true;
}

/* getopt's error for the option just seen, in our words. */
static void option_error(int c, char **argv)
{
    const char *seen = argv[optind - 1];
    if (c == ':') {
        usage_error("option '%s' needs a value", seen);
    } else if (optopt && strncmp(seen, "--", 2) != 0) {
        char shortopt[3] = {'-', (char)optopt, '\0'};
        usage_error("unknown option '%s'", shortopt);
    } else {
        usage_error("unknown option '%s'", seen);
    }
}

/* 0: go on; 1: done (help, version); -1: bad usage, already reported. */
static int parse_one(int c, char **argv, struct options *opt)
{
    switch (c) {
    case 'n':
        if (parse_nranks(optarg, &opt->nranks))
            return 0;
        usage_error("-n wants a number of ranks from 1 to 4096, not '%s'", optarg);
        return -1;
    case 'T':
        if (parse_timeout(optarg, &opt->timeout_s))
            return 0;
        usage_error("--timeout wants a positive number of seconds, not '%s'", optarg);
        return -1;
    case 'S':
        if (strcmp(optarg, "0") == 0 || strcmp(optarg, "none") == 0) {
            opt->stdin_none = optarg[0] == 'n';
            return 0;
        }
        usage_error("--stdin wants 0 or none, not '%s'", optarg);
        return -1;
    case 'H': opt->hosts_spec = optarg; return 0;
    case 'L': opt->launch_spec = optarg; return 0;
    case 'P': opt->placement_spec = optarg; return 0;
    case 'B': opt->boot_spec = optarg; return 0;
    case 'p': opt->prefix = true; return 0;
    case 'k': opt->keep_going = true; return 0;
    case 'v': opt->verbose = true; return 0;
    case 'h': printf("%s%s", usage_line, help_text); return 1;
    case 'V':
        printf("flitrun (flit) %d.%d.%d\n", FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR,
               FLIT_VERSION_PATCH);
        return 1;
    default:
        option_error(c, argv);
        return -1;
    }
}

/* --hosts, --launch, --placement, --boot-addr: checked, parsed. 0 or -1. */
static int parse_hosts(struct options *opt)
{
    char why[512];
    struct in_addr a;
    if (opt->boot_spec && inet_pton(AF_INET, opt->boot_spec, &a) != 1) {
        usage_error("--boot-addr wants an IPv4 address, not '%s'", opt->boot_spec);
        return -1;
    }
    opt->boot_ip = opt->boot_spec ? ntohl(a.s_addr) : 0;
    if (!opt->hosts_spec) {
        if (opt->launch_spec || opt->placement_spec) {
            usage_error("--%s goes with --hosts",
                        opt->launch_spec ? "launch" : "placement");
            return -1;
        }
        return 0;
    }
    if (opt->placement_spec && strcmp(opt->placement_spec, "block") != 0 &&
        strcmp(opt->placement_spec, "round-robin") != 0) {
        usage_error("--placement wants block or round-robin, not '%s'",
                    opt->placement_spec);
        return -1;
    }
    if (fr_hosts_parse(opt->hosts_spec, &opt->hosts, why, sizeof why) != 0 ||
        fr_launch_parse(opt->launch_spec, &opt->launch, why, sizeof why) != 0) {
        usage_error("%s", why);
        return -1;
    }
    if (opt->nranks > 0 || !opt->hosts.counted)
        return 0;
    if (opt->hosts.slots > MAX_RANKS) {
        usage_error("the host counts add up to %llu ranks, more than %u",
                    (unsigned long long)opt->hosts.slots, MAX_RANKS);
        return -1;
    }
    opt->nranks = (uint32_t)opt->hosts.slots;
    return 0;
}

static int place_ranks(struct options *opt)
{
    char why[256];
    enum fr_placement how = opt->placement_spec && opt->placement_spec[0] == 'r'
                                ? FR_PLACE_ROUND_ROBIN
                                : FR_PLACE_BLOCK;
    opt->host_of = calloc(opt->nranks, sizeof *opt->host_of);
    if (!opt->host_of) {
        say("out of memory for %u ranks", opt->nranks);
        return -1;
    }
    int err = fr_hosts_place(&opt->hosts, opt->nranks, how, opt->host_of, why, sizeof why);
    if (err)
        usage_error("%s", why);
    return err;
}

static void options_free(struct options *opt)
{
    fr_hosts_free(&opt->hosts);
    fr_launch_free(&opt->launch);
    free(opt->host_of);
    opt->host_of = NULL;
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"np", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 'T'},
        {"prefix", no_argument, NULL, 'p'},
        {"keep-going", no_argument, NULL, 'k'},
        {"stdin", required_argument, NULL, 'S'},
        {"hosts", required_argument, NULL, 'H'},
        {"launch", required_argument, NULL, 'L'},
        {"placement", required_argument, NULL, 'P'},
        {"boot-addr", required_argument, NULL, 'B'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    /* '+': the program's own options are not ours */
    while ((c = getopt_long(argc, argv, "+:n:H:pkvh", longopts, NULL)) != -1) {
        int r = parse_one(c, argv, opt);
        if (r != 0)
            return r;
    }
    if (parse_hosts(opt) != 0)
        return -1;
    if (opt->nranks == 0) {
        usage_error("-n N is required (or a count for every host in --hosts)");
        return -1;
    }
    if (opt->hosts_spec && place_ranks(opt) != 0)
        return -1;
    if (optind >= argc) {
        usage_error("no program to run");
        return -1;
    }
    opt->argv = argv + optind;
    const char *v = getenv("FLIT_VERBOSE");
    if (v && atoi(v) > 0)
        opt->verbose = true;            /* the ranks will say more; so do we */
    return 0;
}

/* ---- setup ---- */

/* With 0, 1 or 2 closed, our own fds could land there, and the ranks would
   inherit a socket or pipe of ours as their stdio. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (nfd >= 0 && nfd != fd) {
            dup2(nfd, fd);
            close(nfd);
        }
    }
}

static int alloc_tables(struct job *job)
{
    uint32_t n = job->opt.nranks;
    job->max_conns = n + EXTRA_CONNS;
    size_t nwatch = 4 + (size_t)job->max_conns + 2 * (size_t)n;
    job->ranks = calloc(n, sizeof *job->ranks);
    job->conns = calloc(job->max_conns, sizeof *job->conns);
    job->pfds = calloc(nwatch, sizeof *job->pfds);
    job->watches = calloc(nwatch, sizeof *job->watches);
    if (!job->ranks || !job->conns || !job->pfds || !job->watches) {
        say("out of memory for %u ranks", n);
        free(job->ranks);               /* its relays are not set up to close */
        job->ranks = NULL;
        return -1;
    }
    for (uint32_t r = 0; r < n; r++) {
        job->ranks[r].out = (struct relay){.fd = -1, .dest = STDOUT_FILENO, .rank = r};
        job->ranks[r].err = (struct relay){.fd = -1, .dest = STDERR_FILENO, .rank = r};
    }
    return 0;
}

static int new_job_id(struct job *job)
{
    int err = fl_random_bytes(&job->id, sizeof job->id);
    if (err) {
        say("cannot draw a job id: %s", strerror(-err));
        return -1;
    }
    snprintf(job->id_hex, sizeof job->id_hex, "%016llx", (unsigned long long)job->id);
    return 0;
}

/* Each rank costs a socket, and with --prefix two pipes; while starting,
   the exec-report pipe stands where the socket will be. */
static int raise_fd_limit(struct job *job)
{
    rlim_t need = (rlim_t)job->opt.nranks * (job->opt.prefix ? 3 : 1) + EXTRA_CONNS + 64;
    if (getrlimit(RLIMIT_NOFILE, &job->old_nofile) != 0 ||
        job->old_nofile.rlim_cur == RLIM_INFINITY || job->old_nofile.rlim_cur >= need)
        return 0;
    if (job->old_nofile.rlim_max != RLIM_INFINITY && job->old_nofile.rlim_max < need) {
        say("%u ranks need %llu open files, but the limit is %llu (ulimit -n)",
            job->opt.nranks, (unsigned long long)need,
            (unsigned long long)job->old_nofile.rlim_max);
        return -1;
    }
    struct rlimit raised = {.rlim_cur = need, .rlim_max = job->old_nofile.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
        say("cannot raise the open-file limit to %llu: %s", (unsigned long long)need,
            strerror(errno));
        return -1;
    }
    job->nofile_raised = true;
    return 0;
}

static int take_signals(struct job *job)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &job->old_mask);
    struct sigaction ignore = {.sa_handler = SIG_IGN}, deflt = {.sa_handler = SIG_DFL};
    /* a closed stdout must cost the output, not the launcher */
    sigaction(SIGPIPE, &ignore, &job->old_pipe);
    /* an inherited SIG_IGN would have the kernel reap our ranks for us */
    sigaction(SIGCHLD, &deflt, &job->old_chld);
    job->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (job->signal_fd < 0) {
        say("signalfd: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Which ranks go to other hosts; any of them (or --boot-addr) makes the
   rendezvous TCP. */
static void mark_remote(struct job *job)
{
    job->tcp = job->opt.boot_ip != 0;
    for (uint32_t r = 0; job->opt.host_of && r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        rk->remote = !job->opt.hosts.host[job->opt.host_of[r]].local;
        job->tcp |= rk->remote;
    }
}

static const char *host_name(const struct job *job, uint32_t r)
{
    return job->opt.host_of ? job->opt.hosts.host[job->opt.host_of[r]].name : "localhost";
}

/* "rank 3 (pid 123)"; "rank 3 on node7 (launcher pid 123)" for a rank on
   another host, of which flitrun knows the launcher's pid. */
static const char *rank_who(const struct job *job, uint32_t r, char *buf, size_t len)
{
    const struct rank *rk = &job->ranks[r];
    if (rk->remote)
        snprintf(buf, len, "rank %u on %s (launcher pid %d)", r, host_name(job, r),
                 (int)rk->pid);
    else
        snprintf(buf, len, "rank %u (pid %d)", r, (int)rk->pid);
    return buf;
}

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
        r++;                            /* there is one: else no TCP */
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
    job->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (job->listen_fd < 0 ||
        bind(job->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(job->listen_fd, SOMAXCONN) != 0 ||
        getsockname(job->listen_fd, (struct sockaddr *)&sa, &len) != 0) {
        say("cannot listen on TCP: %s", strerror(errno));
        return -1;
    }
    struct in_addr a = {.s_addr = htonl(boot_ip)};
    inet_ntop(AF_INET, &a, ip, sizeof ip);
    snprintf(job->boot_addr, sizeof job->boot_addr, "tcp:%s:%u", ip,
             (unsigned)ntohs(sa.sin_port));
    note(job, "boot address %s: %s (%s)", job->boot_addr, ip, how);
    return 0;
}

static int open_listener(struct job *job)
{
    struct sockaddr_un sa;
    unsigned salen;
    mark_remote(job);
    if (job->tcp)
        return open_tcp_listener(job);
    snprintf(job->boot_addr, sizeof job->boot_addr, "unix:@flit-%s", job->id_hex);
    if (fl_proto_parse_addr(job->boot_addr, &sa, &salen) != 0) {
        say("cannot make a socket address of %s", job->boot_addr);
        return -1;
    }
    job->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (job->listen_fd < 0 ||
        bind(job->listen_fd, (struct sockaddr *)&sa, (socklen_t)salen) != 0 ||
        listen(job->listen_fd, SOMAXCONN) != 0) {
        say("cannot listen on %s: %s", job->boot_addr, strerror(errno));
        return -1;
    }
    return 0;
}

static int set_rank_env(struct job *job)
{
    char size[16];
    snprintf(size, sizeof size, "%u", job->opt.nranks);
    job->devnull_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (job->devnull_fd < 0) {
        say("cannot open /dev/null: %s", strerror(errno));
        return -1;
    }
    /* FLIT_RANK is set before each fork; no other FLIT_* is ours to set */
    if (setenv(FL_ENV_BOOT, job->boot_addr, 1) != 0 ||
        setenv(FL_ENV_SIZE, size, 1) != 0 || setenv(FL_ENV_JOB_ID, job->id_hex, 1) != 0) {
        say("cannot set the ranks' environment: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* Whether rank 0 gets flitrun's stdin. Not with --stdin none, nor when
   there is nothing to read, nor from a terminal flitrun is in the
   background of: reading it would stop flitrun (SIGTTIN). */
static bool stdin_wanted(const struct job *job, struct stat *st)
{
    struct stat null_st;
    int flags = fcntl(STDIN_FILENO, F_GETFL);
    if (job->opt.stdin_none || flags < 0 || (flags & O_ACCMODE) == O_WRONLY ||
        fstat(STDIN_FILENO, st) != 0 || fstat(job->devnull_fd, &null_st) != 0 ||
        (S_ISCHR(st->st_mode) && st->st_rdev == null_st.st_rdev))
        return false;
    /* -1 (ENOTTY) too for a terminal that is not flitrun's: no SIGTTIN there */
    pid_t fg = isatty(STDIN_FILENO) ? tcgetpgrp(STDIN_FILENO) : -1;
    if (fg >= 0 && fg != getpgrp()) {
        note(job, "flitrun runs in the background of its terminal: rank 0 reads "
                  "/dev/null, not the terminal");
        return false;
    }
    return true;
}

/* What to read stdin with, without blocking the loop. O_NONBLOCK on the
   inherited file description would reach whoever shares it (the shell; the
   ranks, when the terminal is their stdout too), so stdin is opened anew.
   Regular files do not block; sockets have MSG_DONTWAIT. Where stdin cannot
   be opened anew, it is read as it is when poll says so: that blocks only
   if something outside the job reads it too and takes the bytes first. */
static int stdin_reader(struct stdin_fwd *in, const struct stat *st)
{
    in->in_sock = S_ISSOCK(st->st_mode);
    if (in->in_sock || S_ISREG(st->st_mode) || S_ISBLK(st->st_mode))
        return STDIN_FILENO;
    int fd = open("/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    return fd >= 0 ? fd : STDIN_FILENO;
}

/* The pipe rank 0 reads as its stdin; flitrun fills it from its own. */
static int stdin_setup(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    struct stat st;
    int ends[2];
    if (!stdin_wanted(job, &st))
        return 0;
    in->buf = malloc(STDIN_CAP);
    if (!in->buf || pipe2(ends, O_CLOEXEC) != 0) {
        say("cannot make the pipe for rank 0's stdin: %s", strerror(errno));
        return -1;
    }
    in->rank_end = ends[0];
    in->pipe_fd = ends[1];
    fl_set_nonblock(in->pipe_fd);
    in->in_fd = stdin_reader(in, &st);
    note(job, "rank 0 reads flitrun's stdin; the other ranks /dev/null");
    return 0;
}

static int job_setup(struct job *job)
{
    job->in = (struct stdin_fwd){.in_fd = -1, .pipe_fd = -1, .rank_end = -1};
    job->listen_fd = job->signal_fd = job->devnull_fd = -1;
    job->self = getpid();
    job->round_bytes = GATHERED_HEAD;
    if (alloc_tables(job) || new_job_id(job) || raise_fd_limit(job) ||
        take_signals(job) || open_listener(job) || set_rank_env(job) || stdin_setup(job))
        return -1;
    if (job->opt.timeout_s > 0)
        job->timeout_at = fl_now_ns() + (uint64_t)(job->opt.timeout_s * 1e9);
    if (job->opt.launch.shell)
        job->cwd = getcwd(NULL, 0);     /* NULL: the ranks start in the home directory */
    note(job, "job %s: %u ranks of '%s', boot %s %s", job->id_hex, job->opt.nranks,
         job->opt.argv[0], job->tcp ? "address" : "socket", job->boot_addr);
    for (uint32_t i = 0; i < job->opt.hosts.n; i++) {
        const struct fr_host *h = &job->opt.hosts.host[i];
        note(job, "host %s: %u rank%s%s", h->name, h->nranks, h->nranks == 1 ? "" : "s",
             h->local ? ", started here" : "");
    }
    return 0;
}

/* ---- stopping ---- */

/* The group reaches the ranks' own children too; the pids reach ranks that
   left the group. Only while a rank is unreaped: its zombie keeps the pgid
   from being reused by a stranger. */
static void signal_job(struct job *job, int sig)
{
    if (job->live == 0)
        return;
    if (job->pgid > 0)
        kill(-job->pgid, sig);
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].live)
            kill(job->ranks[r].pid, sig);
}

static void kill_now(struct job *job)
{
    signal_job(job, SIGKILL);
    job->killed = true;
}

/* The one way to end a job early. The first caller decides the exit status. */
static void job_stop(struct job *job, int exit_code)
{
    if (!job->decided) {
        job->exit_code = exit_code;
        job->decided = true;
    }
    if (job->phase == PHASE_STOPPING)
        return;
    job->phase = PHASE_STOPPING;
    signal_job(job, SIGTERM);
    signal_job(job, SIGCONT);           /* a stopped rank must wake to die */
    job->kill_at = fl_now_ns() + GRACE_NS;
}

/* A rank failed: that stops a running job (unless --keep-going: then it
   only decides the exit status); a timed-out or stopping one is ending
   anyway, with its own reason. */
static void rank_failed(struct job *job, int exit_code)
{
    if (job->phase != PHASE_RUNNING)
        return;
    if (!job->opt.keep_going) {
        job_stop(job, exit_code);
    } else if (!job->decided) {
        job->exit_code = exit_code;
        job->decided = true;
    }
}

/* ---- frames and connections ---- */

static struct frame *frame_new(uint8_t type, size_t body_len)
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

static void frame_unref(struct frame *f)
{
    if (--f->refs == 0)
        free(f);
}

static void conn_free(struct conn *c)
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
__attribute__((format(printf, 3, 4)))
static void conn_fail(struct job *job, struct conn *c, const char *fmt, ...)
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
            return;                     /* the rest when POLLOUT says so */
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
static void conn_send(struct job *job, struct conn *c, struct frame *f)
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

static void conns_sweep(struct job *job)
{
    for (uint32_t i = 0; i < job->nconns;) {
        struct conn *c = job->conns[i];
        if (!c->dead) {
            i++;
            continue;
        }
        conn_free(c);
        job->conns[i] = job->conns[--job->nconns];
        job->listen_paused = false;     /* an fd came free */
    }
}

/* Abstract sockets have no permissions: only our own user may join. Over
   TCP anyone may connect; the job id in HELLO is what lets a rank in. */
static bool peer_is_us(const struct job *job, int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return job->tcp || (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
                        cred.uid == geteuid());
}

/* " from a.b.c.d:port" for messages; "" for a unix socket. */
static void peer_text(const struct job *job, const struct sockaddr_in *sa, char *buf,
                      size_t len)
{
    char ip[INET_ADDRSTRLEN] = "?";
    buf[0] = '\0';
    if (!job->tcp)
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
    else if (job->nconns >= job->max_conns)
        refused = "too many connections";
    else if (!(c = calloc(1, sizeof *c)))
        refused = "out of memory";
    if (refused) {
        say("rejected a connection%s: %s", peer, refused);
        close(fd);
        return;
    }
    /* the answers are small frames each waited for: no Nagle delay */
    if (job->tcp)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->rank = -1;
    c->hello_by = fl_now_ns() + HELLO_WAIT_NS;
    memcpy(c->peer, peer, sizeof peer);
    job->conns[job->nconns++] = c;
}

/* Connections that never say HELLO would take the room of ranks that will. */
static void conns_expire(struct job *job, uint64_t now)
{
    for (uint32_t i = 0; i < job->nconns; i++) {
        struct conn *c = job->conns[i];
        if (c->rank < 0 && !c->dead && now >= c->hello_by) {
            say("rejected a connection%s: no HELLO within %llu s", c->peer,
                (unsigned long long)(HELLO_WAIT_NS / NS_PER_S));
            conn_close(job, c);
        }
    }
}

/* The earliest HELLO deadline; UINT64_MAX if none. */
static uint64_t conns_next_expiry(const struct job *job)
{
    uint64_t next = UINT64_MAX;
    for (uint32_t i = 0; i < job->nconns; i++)
        if (job->conns[i]->rank < 0 && job->conns[i]->hello_by < next)
            next = job->conns[i]->hello_by;
    return next;
}

static void conns_accept(struct job *job)
{
    for (;;) {
        struct sockaddr_in sa = {0};
        socklen_t salen = sizeof sa;
        int fd = accept4(job->listen_fd, job->tcp ? (struct sockaddr *)&sa : NULL,
                         job->tcp ? &salen : NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            conn_add(job, fd, &sa);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno == EMFILE || errno == ENFILE) {
            /* the pending connection would wake poll forever: wait for an fd */
            say("accept: %s; waiting for a connection to close", strerror(errno));
            job->listen_paused = true;
        } else if (errno != EAGAIN) {
            say("accept: %s", strerror(errno));
        }
        return;
    }
}

/* ---- the protocol ---- */

static void conn_hello(struct job *job, struct conn *c, uint8_t type,
                       const uint8_t *body, size_t len)
{
    struct fl_proto_hello h;
    int err = type == FL_PROTO_HELLO ? fl_proto_hello_decode(body, len, &h) : -EPROTO;
    if (err == -EPROTONOSUPPORT) {
        conn_fail(job, c, "a rank speaks protocol version %u, this flitrun %u: "
                  "the program uses another flit", h.version, FL_PROTO_VERSION);
        return;
    }
    if (err) {
        conn_fail(job, c, "it sent frame type %u (%zu bytes) instead of HELLO", type, len);
        return;
    }
    uint64_t id = h.job_id;
    uint32_t rank = h.rank, pid = h.pid;
    if (id != job->id) {
        conn_fail(job, c, "pid %u gave job id %016llx, not this job's", pid,
                  (unsigned long long)id);
    } else if (rank >= job->opt.nranks) {
        conn_fail(job, c, "pid %u claims rank %u of a job of %u", pid, rank,
                  job->opt.nranks);
    } else if (job->ranks[rank].said_hello) {
        conn_fail(job, c, "pid %u claims rank %u, which already connected", pid, rank);
    } else {
        struct rank *rk = &job->ranks[rank];
        c->rank = (int)rank;
        rk->said_hello = true;
        rk->conn = c;
        if (rk->remote)
            note(job, "rank %u (pid %u on %s) connected%s", rank, pid,
                 host_name(job, rank), c->peer);
        else
            note(job, "rank %u (pid %u) connected%s", rank, pid, c->peer);
    }
}

/* Every rank sent its blob: one GATHERED, shared by all. */
static void round_complete(struct job *job)
{
    uint32_t n = job->opt.nranks;
    struct frame *f = frame_new(FL_PROTO_GATHERED, job->round_bytes);
    if (!f) {
        say("out of memory for allgather round %u (%zu bytes)", job->round + 1,
            job->round_bytes);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    uint8_t *p = f->bytes + 5;
    fl_put32(p, ++job->round);
    fl_put32(p + 4, n);
    p += GATHERED_HEAD;
    for (uint32_t r = 0; r < n; r++) {
        struct rank *rk = &job->ranks[r];
        fl_put32(p, rk->blob_len);
        memcpy(p + 4, rk->blob, rk->blob_len);
        p += 4 + rk->blob_len;
        free(rk->blob);
        rk->blob = NULL;
    }
    note(job, "allgather round %u complete: %zu bytes to each rank", job->round,
         job->round_bytes);
    for (uint32_t r = 0; r < n; r++)
        if (job->ranks[r].conn)
            conn_send(job, job->ranks[r].conn, f);
    frame_unref(f);
    job->round_count = 0;
    job->round_bytes = GATHERED_HEAD;
}

static void rank_gather(struct job *job, struct conn *c, const uint8_t *body, size_t len)
{
    struct rank *rk = &job->ranks[c->rank];
    uint32_t round = len >= 4 ? fl_get32(body) : 0;
    size_t blob_len = len >= 4 ? len - 4 : 0;
    if (len < 4 || round != job->round + 1 || rk->gather_round == round) {
        conn_fail(job, c, "sent a malformed frame: GATHER for round %u of %zu bytes "
                  "while round %u is open", round, len, job->round + 1);
        return;
    }
    if (job->round_bytes + 4 + blob_len > GATHERED_MAX) {
        conn_fail(job, c, "pushed allgather round %u past the %u-byte frame limit",
                  round, GATHERED_MAX);
        return;
    }
    rk->blob = malloc(blob_len ? blob_len : 1);
    if (!rk->blob) {
        conn_fail(job, c, "sent a %zu-byte blob flitrun has no memory for", blob_len);
        return;
    }
    memcpy(rk->blob, body + 4, blob_len);
    rk->blob_len = (uint32_t)blob_len;
    rk->gather_round = round;
    job->round_bytes += 4 + blob_len;
    if (++job->round_count == job->opt.nranks)
        round_complete(job);
}

static void conn_frame(struct job *job, struct conn *c, uint8_t type,
                       const uint8_t *body, size_t len)
{
    if (c->rank < 0) {
        conn_hello(job, c, type, body, len);
        return;
    }
    struct rank *rk = &job->ranks[c->rank];
    if (type == FL_PROTO_GATHER) {
        rank_gather(job, c, body, len);
    } else if (type == FL_PROTO_DUMPED && len == 0) {
        rk->dumped = true;
    } else if (type == FL_PROTO_BYE && len == 0) {
        rk->said_bye = true;
        note(job, "rank %d finalized", c->rank);
    } else {
        conn_fail(job, c, "sent a malformed frame: type %u with %zu bytes", type, len);
    }
}

static void conn_take_frames(struct job *job, struct conn *c)
{
    while (!c->dead) {
        uint8_t type;
        const uint8_t *body;
        size_t len;
        int r = fl_proto_rx_next(&c->rx, &type, &body, &len);
        if (r == 0)
            return;
        if (r < 0) {
            conn_fail(job, c, "sent a malformed frame: %s", strerror(-r));
            return;
        }
        conn_frame(job, c, type, body, len);
    }
}

static void conn_read(struct job *job, struct conn *c)
{
    for (int i = 0; i < READS_PER_TURN && !c->dead; i++) {
        int r = fl_proto_rx_fill(&c->rx, c->fd);
        if (r == -EAGAIN)
            return;
        if (r <= 0) {
            conn_lost(job, c, -r);
            return;
        }
        conn_take_frames(job, c);
    }
}

static void conn_ready(struct job *job, struct conn *c, short revents)
{
    if (!c->dead && (revents & POLLOUT))
        conn_flush(job, c);
    if (!c->dead && (revents & (POLLIN | POLLHUP | POLLERR)))
        conn_read(job, c);
}

/* ---- output relay (--prefix) ---- */

static char *scratch(struct job *job, size_t len)
{
    if (len > job->scratch_cap) {
        char *p = realloc(job->scratch, len);
        if (!p)
            return NULL;
        job->scratch = p;
        job->scratch_cap = len;
    }
    return job->scratch;
}

/* How much of r->buf goes out now: its whole lines; everything when final
   or when one line has grown past LINE_CAP. */
static size_t relay_cut(const struct relay *r, bool final)
{
    const char *nl = memrchr(r->buf, '\n', r->len);
    size_t cut = nl ? (size_t)(nl - r->buf) + 1 : 0;
    return final || r->len - cut >= LINE_CAP ? r->len : cut;
}

/* Copies src into out, each line behind prefix and ending in a newline. */
static size_t prefix_lines(char *out, const char *src, size_t len, const char *prefix,
                           size_t plen)
{
    size_t o = 0;
    while (len > 0) {
        const char *nl = memchr(src, '\n', len);
        size_t line = nl ? (size_t)(nl - src) + 1 : len;
        memcpy(out + o, prefix, plen);
        memcpy(out + o + plen, src, line);
        o += plen + line;
        if (!nl)
            out[o++] = '\n';
        src += line;
        len -= line;
    }
    return o;
}

/* One write for all the lines at hand: whole lines never interleave. */
static void relay_emit(struct job *job, struct relay *r, bool final)
{
    if (r->len == 0)
        return;                         /* and r->buf may be NULL */
    size_t cut = relay_cut(r, final);
    if (cut == 0)
        return;
    char prefix[16];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "[%u] ", r->rank);
    size_t lines = 1;
    for (const char *p = r->buf; (p = memchr(p, '\n', cut - (size_t)(p - r->buf))); p++)
        lines++;
    char *out = scratch(job, cut + lines * (plen + 1));
    int err = out ? write_all(r->dest, out, prefix_lines(out, r->buf, cut, prefix, plen))
                  : write_all(r->dest, r->buf, cut);   /* unprefixed beats lost */
    if (err == -EPIPE)
        job->dest_gone[r->dest] = true;
    memmove(r->buf, r->buf + cut, r->len - cut);
    r->len -= cut;
}

static void relay_close(struct job *job, struct relay *r)
{
    relay_emit(job, r, true);           /* the partial last line */
    close(r->fd);
    r->fd = -1;
}

static int relay_reserve(struct relay *r)
{
    if (r->cap - r->len >= 4096)
        return 0;
    size_t cap = r->cap ? r->cap * 2 : 8192;
    if (cap > RELAY_CAP)
        cap = RELAY_CAP;
    char *p = realloc(r->buf, cap);
    if (!p)
        return -1;
    r->buf = p;
    r->cap = cap;
    return 0;
}

static void relay_readable(struct job *job, struct relay *r)
{
    if (job->dest_gone[r->dest]) {
        /* nobody reads flitrun's end: the rank gets SIGPIPE, as it would
           writing there itself without --prefix */
        close(r->fd);
        r->fd = -1;
        return;
    }
    if (relay_reserve(r) != 0) {
        /* the rank then gets EPIPE: losing output beats hanging the job */
        say("out of memory relaying the output of rank %u; dropping it", r->rank);
        relay_close(job, r);
        return;
    }
    ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        relay_close(job, r);
        return;
    }
    r->len += (size_t)n;
    relay_emit(job, r, false);
}

static bool relays_open(const struct job *job)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].out.fd >= 0 || job->ranks[r].err.fd >= 0)
            return true;
    return false;
}

/* ---- stdin, for rank 0 ---- */

/* Lets go of flitrun's stdin: what feeds it then sees its reader gone, as
   when a program reading a pipe exits. */
static void stdin_release(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    if (in->in_fd < 0)
        return;
    if (in->in_fd != STDIN_FILENO)
        close(in->in_fd);
    dup2(job->devnull_fd, STDIN_FILENO);
    in->in_fd = -1;
}

/* No more forwarding: rank 0 sees EOF; what it was not given is dropped. */
static void stdin_stop(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    stdin_release(job);
    if (in->pipe_fd >= 0)
        close(in->pipe_fd);
    if (in->rank_end >= 0)
        close(in->rank_end);
    in->pipe_fd = in->rank_end = -1;
    free(in->buf);
    in->buf = NULL;
    in->off = in->len = 0;
}

/* Writes what the pipe to rank 0 takes now; closes it after the last byte. */
static void stdin_flush(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    while (in->pipe_fd >= 0 && in->len > 0) {
        ssize_t n = write(in->pipe_fd, in->buf + in->off, in->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;                     /* the rest when POLLOUT says so */
        if (n < 0) {
            /* EPIPE, SIGPIPE being ignored: rank 0 closed its stdin */
            note(job, "rank 0 no longer reads its stdin (%s); flitrun lets go of its own",
                 strerror(errno));
            stdin_stop(job);
            return;
        }
        in->off += (size_t)n;
        in->len -= (size_t)n;
    }
    in->off = 0;
    if (in->eof)
        stdin_stop(job);
}

/* At most what the buffer has room for: with the buffer full, stdin is not
   polled until rank 0 reads, which holds back whatever feeds it. */
static void stdin_readable(struct job *job)
{
    struct stdin_fwd *in = &job->in;
    if (in->in_fd < 0 || in->len == STDIN_CAP)
        return;
    if (in->off + in->len == STDIN_CAP) {
        memmove(in->buf, in->buf + in->off, in->len);
        in->off = 0;
    }
    char *end = in->buf + in->off + in->len;
    size_t room = STDIN_CAP - in->off - in->len;
    ssize_t n = in->in_sock ? recv(in->in_fd, end, room, MSG_DONTWAIT)
                            : read(in->in_fd, end, room);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n < 0)
        say("cannot read stdin: %s; rank 0 sees it end there", strerror(errno));
    else if (n == 0)
        note(job, "stdin is at its end; so will rank 0's be");
    if (n <= 0) {
        in->eof = true;
        stdin_release(job);
    } else {
        in->len += (size_t)n;
    }
    stdin_flush(job);
}

/* ---- ranks: start and reap ---- */

enum child_stage { STAGE_GROUP, STAGE_PARENT, STAGE_STDIO, STAGE_EXEC, STAGE_COUNT };

static const char *const stage_what[STAGE_COUNT] = {
    [STAGE_GROUP] = "joining the job's process group",
    [STAGE_PARENT] = "tying its life to flitrun's",
    [STAGE_STDIO] = "redirecting its stdio",
    [STAGE_EXEC] = "exec",
};

struct child_error {                    /* one write, so atomic on the pipe */
    int32_t stage, err;
};

/* In the child: undo what flitrun changed for itself. */
static void child_restore(const struct job *job)
{
    sigaction(SIGPIPE, &job->old_pipe, NULL);
    sigaction(SIGCHLD, &job->old_chld, NULL);
    sigprocmask(SIG_SETMASK, &job->old_mask, NULL);
    if (job->nofile_raised)
        setrlimit(RLIMIT_NOFILE, &job->old_nofile);
}

/* In the child, between fork and exec; the report pipe closes on exec, so
   flitrun reads either EOF (it ran) or why it did not. */
static _Noreturn void child_exec(const struct job *job, uint32_t rank, int report_fd,
                                 int out_fd, int err_fd)
{
    struct child_error ce = {STAGE_GROUP, 0};
    if (setpgid(0, job->pgid) != 0)     /* rank 0: pgid 0, a group of its own */
        goto fail;
    ce.stage = STAGE_PARENT;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        goto fail;
    if (getppid() != job->self)         /* flitrun died before prctl */
        _exit(EXIT_NOEXEC);
    ce.stage = STAGE_STDIO;
    if (dup2(rank == 0 && job->in.rank_end >= 0 ? job->in.rank_end : job->devnull_fd,
             STDIN_FILENO) < 0)
        goto fail;
    if (out_fd >= 0 && (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0))
        goto fail;
    child_restore(job);
    char *const *argv = job->ranks[rank].argv ? job->ranks[rank].argv : job->opt.argv;
    execvp(argv[0], argv);
    ce.stage = STAGE_EXEC;
fail:
    ce.err = errno;
    ssize_t ignored = write(report_fd, &ce, sizeof ce);   /* nothing to do if it fails */
    (void)ignored;
    _exit(EXIT_NOEXEC);
}

static void close_pair(int fds[2])
{
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Parent side after a fork: the rank is live from here on. */
static void rank_started(struct job *job, uint32_t r, pid_t pid, int out_fd, int err_fd)
{
    struct rank *rk = &job->ranks[r];
    if (r == 0) {
        job->pgid = pid;
        if (job->in.rank_end >= 0) {    /* rank 0 sees EOF when flitrun closes */
            close(job->in.rank_end);
            job->in.rank_end = -1;
        }
    }
    /* the child does it too: whichever runs first, the group exists before
       the next rank is forked to join it */
    setpgid(pid, job->pgid);
    rk->pid = pid;
    rk->live = true;
    job->live++;
    rk->out.fd = out_fd;
    rk->err.fd = err_fd;
    if (out_fd >= 0) {
        fl_set_nonblock(out_fd);
        fl_set_nonblock(err_fd);
    }
}

/* The FLIT_* part of the environment, FLIT_RANK included: what travels to
   another host. NULL-terminated; the strings are environ's. */
static char **flit_env(void)
{
    extern char **environ;
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n += strncmp(*e, "FLIT_", 5) == 0;
    char **out = malloc((n + 1) * sizeof *out);
    if (!out)
        return NULL;
    n = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "FLIT_", 5) == 0)
            out[n++] = *e;
    out[n] = NULL;
    return out;
}

/* -v: where rank r goes, and the command that takes it there. */
static void note_placement(const struct job *job, uint32_t r)
{
    char cmd[768];
    size_t len = 0;
    char *const *w = job->ranks[r].argv;
    if (!job->opt.verbose || !job->opt.host_of)
        return;
    if (!w) {
        note(job, "rank %u -> %s: started here", r, host_name(job, r));
        return;
    }
    for (cmd[0] = '\0'; *w && len < sizeof cmd - 1; w++)
        len += (size_t)snprintf(cmd + len, sizeof cmd - len, "%s%s", len ? " " : "", *w);
    note(job, "rank %u -> %s: %s", r, host_name(job, r), cmd);
}

/* Rank r's argv when it is on another host: its launcher's. 0 or -1. */
static int launch_argv(struct job *job, uint32_t r)
{
    struct rank *rk = &job->ranks[r];
    if (rk->remote) {
        char **env = flit_env();
        rk->argv = env ? fr_launch_argv(&job->opt.launch, host_name(job, r), env,
                                        job->opt.argv, job->cwd)
                       : NULL;
        free(env);
        if (!rk->argv) {
            errno = ENOMEM;
            return -1;
        }
    }
    note_placement(job, r);
    return 0;
}

/* Forks rank r; *report_fd will say whether its exec worked. 0 or -1. */
static int spawn_rank(struct job *job, uint32_t r, int *report_fd)
{
    int rep[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    char num[16];
    snprintf(num, sizeof num, "%u", r);
    if (pipe2(rep, O_CLOEXEC) != 0 ||
        (job->opt.prefix && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) ||
        setenv(FL_ENV_RANK, num, 1) != 0 || launch_argv(job, r) != 0)
        goto err_close_pipes;
    pid_t pid = fork();
    if (pid == 0)
        child_exec(job, r, rep[1], out[1], err[1]);
    if (pid < 0)
        goto err_close_pipes;
    close(rep[1]);
    if (job->opt.prefix) {
        close(out[1]);
        close(err[1]);
    }
    rank_started(job, r, pid, out[0], err[0]);
    *report_fd = rep[0];
    return 0;

err_close_pipes:
    say("cannot start rank %u: %s", r, strerror(errno));
    close_pair(rep);
    close_pair(out);
    close_pair(err);
    return -1;
}

/* Blocks until rank r has exec'd or failed to. */
static void check_exec(struct job *job, uint32_t r, int report_fd)
{
    struct child_error ce;
    ssize_t n;
    do
        n = read(report_fd, &ce, sizeof ce);
    while (n < 0 && errno == EINTR);
    struct rank *rk = &job->ranks[r];
    char exe[256];
    snprintf(exe, sizeof exe, "%s", rk->argv ? rk->argv[0] : job->opt.argv[0]);
    free(rk->argv);
    rk->argv = NULL;
    if (n != (ssize_t)sizeof ce) {
        note(job, "rank %u is pid %d%s", r, (int)rk->pid,
             rk->remote ? ", its launcher's" : "");
        return;
    }
    if (job->decided)
        return;                         /* the first failure speaks for all */
    if (ce.stage == STAGE_EXEC) {
        say("cannot execute '%s': %s", exe, strerror(ce.err));
        job_stop(job, EXIT_NOEXEC);
    } else {
        say("cannot start rank %u: %s: %s", r,
            ce.stage >= 0 && ce.stage < STAGE_COUNT ? stage_what[ce.stage] : "?",
            strerror(ce.err));
        job_stop(job, EXIT_OWN_ERROR);
    }
}

/* Forks every rank, then collects their exec reports: the ranks exec in
   parallel instead of one after the other. */
static void job_spawn_all(struct job *job)
{
    uint32_t n = job->opt.nranks, started = 0;
    int *report_fds = malloc(n * sizeof *report_fds);
    if (!report_fds) {
        say("out of memory for %u ranks", n);
        job_stop(job, EXIT_OWN_ERROR);
        return;
    }
    while (started < n && spawn_rank(job, started, &report_fds[started]) == 0)
        started++;
    if (started < n)
        job_stop(job, EXIT_OWN_ERROR);
    for (uint32_t r = 0; r < started; r++) {
        check_exec(job, r, report_fds[r]);
        close(report_fds[r]);
    }
    free(report_fds);
}

static struct rank *find_rank(struct job *job, pid_t pid)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++)
        if (job->ranks[r].live && job->ranks[r].pid == pid)
            return &job->ranks[r];
    return NULL;
}

/* "exited with status C" or "was killed by signal S (SIGNAME)"; returns
   the exit status flitrun takes on for it. */
static int describe_exit(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status)) {
        char name[32];
        signal_name(WTERMSIG(status), name, sizeof name);
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), name);
        return 128 + WTERMSIG(status);
    }
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

/* What the launcher's exit status may mean for a rank on another host:
   ssh passes the rank's status on, but says 255 both for its own failure
   and for a rank killed by a signal; through a shell, death by signal S
   reads 128+S. */
static void describe_remote(const struct job *job, int code, char *buf, size_t len)
{
    size_t used = strlen(buf);
    char name[32];
    if (code == 255 && job->opt.launch.shell) {
        snprintf(buf + used, len - used, " (ssh's own failure, or the rank was killed "
                 "by a signal there)");
    } else if (code > 128 && code <= 128 + 64) {
        signal_name(code - 128, name, sizeof name);
        snprintf(buf + used, len - used, " (perhaps killed by signal %d (%s) there)",
                 code - 128, name);
    }
}

static void rank_exited(struct job *job, struct rank *rk, int status)
{
    uint32_t r = (uint32_t)(rk - job->ranks);
    rk->live = false;
    if (r == 0)
        stdin_stop(job);                /* nobody else to give it to */
    if (--job->live == 0)
        job->drain_until = fl_now_ns() + DRAIN_NS;
    char what[192], who[160];
    int code = describe_exit(status, what, sizeof what);
    if (rk->remote && WIFEXITED(status))
        describe_remote(job, code, what, sizeof what);
    rank_who(job, r, who, sizeof who);
    if (code == 0 || job->phase == PHASE_STOPPING) {
        note(job, "%s %s", who, what);
        return;
    }
    say("%s %s", who, what);
    rank_failed(job, code);
}

static void reap_ranks(struct job *job)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        /* look before reaping: see below */
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
            return;
        struct rank *rk = find_rank(job, si.si_pid);
        /* The last rank's zombie still holds the job's process group: take
           whatever the ranks left running in it along, while that is safe. */
        if (rk && job->live == 1 && job->pgid > 0)
            kill(-job->pgid, SIGKILL);
        int status;
        if (waitpid(si.si_pid, &status, 0) != si.si_pid)
            return;
        if (rk)
            rank_exited(job, rk, status);
    }
}

/* When the loop itself cannot go on: nothing is left behind even so. */
static void reap_blocking(struct job *job)
{
    kill_now(job);
    while (job->live > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno != EINTR)
            return;
        struct rank *rk = pid > 0 ? find_rank(job, pid) : NULL;
        if (rk)
            rank_exited(job, rk, status);
    }
}

/* ---- the loop ---- */

static void stop_signal(struct job *job, int sig)
{
    char name[32];
    signal_name(sig, name, sizeof name);
    if (job->phase != PHASE_STOPPING) {
        say("caught %s, stopping the job", name);
        job_stop(job, 128 + sig);
    } else if (!job->killed) {
        say("caught %s while stopping; killing the job now", name);
        kill_now(job);
    }
}

static void signals_readable(struct job *job)
{
    struct signalfd_siginfo si;
    while (read(job->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            reap_ranks(job);
        else
            stop_signal(job, (int)si.ssi_signo);
    }
}

static void dump_start(struct job *job)
{
    job->phase = PHASE_DUMPING;
    job->dump_until = fl_now_ns() + DUMP_WAIT_NS;
    note(job, "timeout expired; asking the ranks for their state");
    struct frame *f = frame_new(FL_PROTO_DUMP, 0);
    if (!f)
        return;                         /* no dumps, then: stop right away */
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (rk->conn) {
            rk->dump_asked = true;
            conn_send(job, rk->conn, f);
        }
    }
    frame_unref(f);
}

/* Every asked rank answered, hung up, or died. */
static bool dumps_done(const struct job *job)
{
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        const struct rank *rk = &job->ranks[r];
        if (rk->dump_asked && !rk->dumped && rk->conn && rk->live)
            return false;
    }
    return true;
}

static void check_deadlines(struct job *job)
{
    uint64_t now = fl_now_ns();
    conns_expire(job, now);
    if (job->phase == PHASE_RUNNING && job->timeout_at && now >= job->timeout_at)
        dump_start(job);
    if (job->phase == PHASE_DUMPING && (now >= job->dump_until || dumps_done(job))) {
        say("job timed out after %.9g s; stopping it", job->opt.timeout_s);
        job_stop(job, EXIT_TIMEOUT);
    }
    if (job->phase == PHASE_STOPPING && !job->killed && job->live > 0 &&
        now >= job->kill_at) {
        note(job, "%u ranks still running 2 s after SIGTERM; sending SIGKILL", job->live);
        kill_now(job);
    }
}

static int poll_timeout_ms(const struct job *job)
{
    uint64_t next = UINT64_MAX;
    if (job->phase == PHASE_RUNNING && job->timeout_at)
        next = job->timeout_at;
    else if (job->phase == PHASE_DUMPING)
        next = job->dump_until;
    else if (job->phase == PHASE_STOPPING && !job->killed && job->live > 0)
        next = job->kill_at;
    if (job->live == 0 && job->drain_until < next)
        next = job->drain_until;
    uint64_t expiry = conns_next_expiry(job);
    if (expiry < next)
        next = expiry;
    if (next == UINT64_MAX)
        return -1;
    uint64_t now = fl_now_ns();
    if (next <= now)
        return 0;
    uint64_t ms = (next - now + 999999) / 1000000;   /* round up: no early wake */
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void watch(struct job *job, nfds_t *n, int fd, short events, enum watch_kind kind,
                  void *obj)
{
    job->pfds[*n] = (struct pollfd){.fd = fd, .events = events};
    job->watches[*n] = (struct watch){.kind = kind, .obj = obj};
    (*n)++;
}

static nfds_t pollset_build(struct job *job)
{
    nfds_t n = 0;
    watch(job, &n, job->signal_fd, POLLIN, WATCH_SIGNAL, NULL);
    if (!job->listen_paused)
        watch(job, &n, job->listen_fd, POLLIN, WATCH_LISTEN, NULL);
    for (uint32_t i = 0; i < job->nconns; i++) {
        struct conn *c = job->conns[i];
        watch(job, &n, c->fd, (short)(POLLIN | (c->head ? POLLOUT : 0)), WATCH_CONN, c);
    }
    for (uint32_t r = 0; r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (rk->out.fd >= 0)
            watch(job, &n, rk->out.fd, POLLIN, WATCH_RELAY, &rk->out);
        if (rk->err.fd >= 0)
            watch(job, &n, rk->err.fd, POLLIN, WATCH_RELAY, &rk->err);
    }
    if (job->in.in_fd >= 0 && job->in.len < STDIN_CAP)
        watch(job, &n, job->in.in_fd, POLLIN, WATCH_STDIN, NULL);
    if (job->in.pipe_fd >= 0 && job->in.len > 0)
        watch(job, &n, job->in.pipe_fd, POLLOUT, WATCH_STDIN_PIPE, NULL);
    return n;
}

static void pollset_dispatch(struct job *job, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++) {
        short revents = job->pfds[i].revents;
        if (!revents)
            continue;
        struct watch *w = &job->watches[i];
        switch (w->kind) {
        case WATCH_SIGNAL: signals_readable(job); break;
        case WATCH_LISTEN: conns_accept(job); break;
        case WATCH_CONN: conn_ready(job, w->obj, revents); break;
        case WATCH_RELAY: relay_readable(job, w->obj); break;
        case WATCH_STDIN: stdin_readable(job); break;
        case WATCH_STDIN_PIPE: stdin_flush(job); break;
        }
    }
}

/* Done once every rank is reaped and its output drained; output still held
   open by something that escaped the job gets DRAIN_NS, no more. */
static bool job_done(const struct job *job)
{
    if (job->live > 0 || job->phase == PHASE_DUMPING)
        return false;
    return fl_now_ns() >= job->drain_until || !relays_open(job);
}

static void job_run(struct job *job)
{
    check_deadlines(job);
    while (!job_done(job)) {
        nfds_t n = pollset_build(job);
        int r = poll(job->pfds, n, poll_timeout_ms(job));
        if (r < 0 && errno != EINTR) {
            say("poll: %s; killing the job", strerror(errno));
            job_stop(job, EXIT_OWN_ERROR);
            reap_blocking(job);
            return;
        }
        if (r > 0)
            pollset_dispatch(job, n);
        conns_sweep(job);
        check_deadlines(job);
    }
    /* what ranks sent just before they exited (a BYE) may still be unread */
    for (uint32_t i = 0; i < job->nconns; i++)
        conn_read(job, job->conns[i]);
}

/* Every path ends here, with every rank reaped. */
static int job_teardown(struct job *job)
{
    for (uint32_t r = 0; job->ranks && r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        if (rk->out.fd >= 0)
            relay_close(job, &rk->out);
        if (rk->err.fd >= 0)
            relay_close(job, &rk->err);
        free(rk->out.buf);
        free(rk->err.buf);
        free(rk->blob);
        free(rk->argv);
    }
    for (uint32_t i = 0; i < job->nconns; i++)
        conn_free(job->conns[i]);
    stdin_stop(job);
    if (job->id_hex[0]) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "flit-%s-", job->id_hex);
        int removed = fl_shm_unlink_prefix(prefix);
        if (removed > 0)
            note(job, "removed %d shared-memory files the ranks left behind", removed);
    }
    int fds[] = {job->listen_fd, job->signal_fd, job->devnull_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(job->ranks);
    free(job->conns);
    free(job->pfds);
    free(job->watches);
    free(job->scratch);
    free(job->cwd);
    options_free(&job->opt);
    return job->exit_code;
}

int main(int argc, char **argv)
{
    static struct job job;
    int r = parse_options(argc, argv, &job.opt);
    if (r != 0) {
        options_free(&job.opt);
        return r < 0 ? EXIT_USAGE : 0;
    }
    ensure_std_fds();
    if (job_setup(&job) != 0) {
        job.exit_code = EXIT_OWN_ERROR;
        return job_teardown(&job);
    }
    job_spawn_all(&job);
    job_run(&job);
    note(&job, "exit status %d", job.exit_code);
    return job_teardown(&job);
}
