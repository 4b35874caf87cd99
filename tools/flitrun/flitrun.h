/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flitrun: the job launcher. Starts N ranks of a program on this host, or
 * on several hosts (--hosts) through ssh or a --launch command, serves the
 * boot protocol they speak (boot/proto.h), and stops the whole job when a
 * rank fails, when the --timeout expires, or when flitrun itself is told to
 * stop.
 *
 * One process, no threads, one poll() loop over: the socket the ranks
 * connect to, their connections, the pipes of their output (several ranks),
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
 *
 * One concept to a file; each owns its piece of struct job, and this header
 * declares what the others may call, under the name of the file that
 * defines it:
 *
 *   main.c     the order of things: setup, start, loop, teardown
 *   options.c  the command line
 *   hosts.c    host lists, placement, launch templates, boot address (hosts.h)
 *   say.c      messages on stderr
 *   server.c   the rendezvous socket and the ranks' connections to it
 *   boot.c     what travels on them: HELLO, allgather rounds, DUMP, BYE
 *   spawn.c    starting ranks: fork, process group, exec reports
 *   remote.c   ranks on other hosts: which, their launcher's command, what
 *              its exit status may mean
 *   proxy.c    a host's proxy: one launcher call per host starts flitrun
 *              --proxy there, which forks that host's ranks
 *   upstream.c a proxy's one connection to flitrun, which speaks for the
 *              host's ranks
 *   reap.c     ranks ending: reaping, and what an exit means for the job
 *   leave.c    ranks gone before the others: who is told, and an exit
 *              without flit_finalize that fails the job
 *   stop.c     ending the job: signals, the timeout and its dumps, SIGTERM
 *              then SIGKILL
 *   relay.c    the ranks' output, line by line (several ranks, or --prefix)
 *   stdin.c    flitrun's stdin, on to rank 0
 *   loop.c     the poll() loop that serves them all
 *   cleanup.c  teardown, and the shared-memory files crashed ranks leave
 */
#ifndef FR_FLITRUN_H
#define FR_FLITRUN_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "boot/proto.h"
#include "hosts.h"

#define MAX_RANKS   4096u
#define NS_PER_S    1000000000ull
#define EXTRA_CONNS 32u          /* connections yet to say who they are */
#define STDIN_CAP   (64u * 1024) /* stdin read ahead of rank 0, at most */
/* GATHERED body: u32 round, u32 n, then n x (u32 len, bytes); plus its type byte. */
#define GATHERED_HEAD 8u
#define GATHERED_MAX  (FL_PROTO_MAX_FRAME - 1u)

enum {
    EXIT_OWN_ERROR = 1, /* flitrun itself, or a rank's protocol */
    EXIT_USAGE = 2,
    EXIT_TIMEOUT = 124,
    EXIT_NOEXEC = 127,
};

/* ---- options.c ---- */

struct options {
    uint32_t nranks;
    double timeout_s; /* 0: none */
    bool prefix, verbose, keep_going;
    bool stdin_none;            /* --stdin none: no rank reads it */
    bool allow_unfinalized;     /* --allow-exit-without-finalize */
    char **argv;                /* the program and its arguments */
    const char *hosts_spec;     /* --hosts, or from --hostfile or the Slurm
                                   allocation; NULL: every rank here */
    const char *hostfile;       /* --hostfile */
    char *hosts_owned;          /* hosts_spec when made here (free it) */
    const char *launch_spec;    /* --launch; NULL: ssh */
    const char *placement_spec; /* --placement */
    const char *map_by;         /* --map-by, as a --placement */
    const char *boot_spec;      /* --boot-addr */
    struct fr_hosts hosts;      /* parsed --hosts */
    struct fr_launch launch;    /* parsed --launch, or ssh */
    uint32_t *host_of;          /* [nranks]: index in hosts; NULL: all here */
    uint32_t boot_ip;           /* --boot-addr, host order; 0: none */
    bool no_proxy;              /* --no-proxy: a launcher call per rank */
    const char *proxy_spec;     /* --proxy HOST:RANKS: this is a host's proxy */
    char *proxy_host;           /* its HOST, for messages */
    bool *here;                 /* [nranks], with --proxy: the ranks it starts */
};

/* 0: go on; 1: done (help, version); -1: bad usage, already reported. */
int parse_options(int argc, char **argv, struct options *opt);
void options_free(struct options *opt);

/* ---- server.c: the rendezvous socket and the connections ---- */

struct frame { /* outgoing, shared by its receivers */
    size_t refs;
    size_t len; /* of bytes[], header included */
    uint8_t bytes[];
};

struct sendq { /* a frame not yet fully sent */
    struct sendq *next;
    struct frame *frame;
    size_t off;
};

struct conn {
    int fd;
    int rank;          /* -1 until its HELLO was accepted; a proxy's: the
                          first rank of its host */
    bool proxy;        /* a host's proxy, speaking for its ranks (FOR) */
    uint64_t mark;     /* conn_send_once: the last frame it was sent */
    bool dead;         /* freed at the end of the loop turn */
    bool send_failed;  /* the peer is gone: nothing more is sent */
    uint64_t hello_by; /* closed if still anonymous then (ns) */
    uint64_t serial;   /* order of arrival: the oldest stranger goes first */
    char peer[32];     /* " from a.b.c.d:port" over TCP; else "" */
    struct fl_proto_rx rx;
    struct sendq *head, *tail;
};

/* Why a connection that did not prove it is the job's was closed. Each
   kind is told once, and all are counted (flooding the port cannot flood
   flitrun's stderr). */
enum refusal {
    REFUSED_USER,    /* unix socket: another user */
    REFUSED_GARBAGE, /* a frame that is not a HELLO, or malformed */
    REFUSED_VERSION, /* a HELLO of another protocol version */
    REFUSED_KEY,     /* a HELLO without this job's id and key */
    REFUSED_LATE,    /* no HELLO in time */
    REFUSED_DROPPED, /* the oldest stranger, dropped for a newer one */
    REFUSED_KINDS
};

struct server {
    int listen_fd;
    bool listen_paused; /* out of fds until a conn closes */
    bool tcp;           /* boot_addr is tcp: some rank may be remote */
    char boot_addr[64];
    struct conn **conns;
    uint32_t nconns, max_conns;
    uint32_t strangers;   /* live conns without an accepted HELLO */
    uint64_t next_serial; /* for conn.serial */
    uint64_t marks;       /* conn_send_once */
    uint64_t refused[REFUSED_KINDS];
    uint8_t key[FL_PROTO_KEY_LEN]; /* the job's secret: FLIT_JOB_KEY */
};

struct job;

int server_open(struct job *job);
/* A proxy's: TCP at ip (host order; the proxy's own address towards
   flitrun), an ephemeral port; the host's ranks get it as their FLIT_BOOT. */
int server_open_proxy(struct job *job, uint32_t ip);
void conns_accept(struct job *job);
void conn_ready(struct job *job, struct conn *c, short revents);
/* Reads what c has, up to a few reads: one chatty rank cannot starve others. */
void conn_read(struct job *job, struct conn *c);
void conn_send(struct job *job, struct conn *c, struct frame *f);
/* conn_send, unless c was sent the frame of this mark already: a proxy's
   connection stands for several ranks, and gets what they all get once.
   A sending loop takes a fresh mark (++job->srv.marks). */
void conn_send_once(struct job *job, struct conn *c, struct frame *f, uint64_t mark);
/* "rank 3 (pid 123)", or "the proxy on node7" for a proxy's connection. */
const char *conn_who(const struct job *job, const struct conn *c, char *buf, size_t len);
__attribute__((format(printf, 3, 4))) void conn_fail(struct job *job, struct conn *c,
                                                     const char *fmt, ...);
/* Closes c, which did not prove it is the job's: the first of each kind is
   told (why), every one counted. */
__attribute__((format(printf, 4, 5))) void
conn_refuse(struct job *job, struct conn *c, enum refusal kind, const char *fmt, ...);
/* Marks c for freeing at the end of the turn: a pollfd may still name it. */
void conn_close(struct job *job, struct conn *c);
/* A rank's HELLO was accepted on c: it is a stranger no more. */
void conn_welcome(struct job *job, struct conn *c, uint32_t rank);
/* The count of refused connections, if some were not told one by one. */
void server_report(const struct job *job);
void conn_free(struct conn *c);
void conns_sweep(struct job *job);
void conns_expire(struct job *job, uint64_t now);
uint64_t conns_next_expiry(const struct job *job);
struct frame *frame_new(uint8_t type, size_t body_len);
void frame_unref(struct frame *f);

/* ---- boot.c: the frames on the connections ---- */

struct rounds {     /* allgather */
    uint32_t done;  /* rounds completed */
    uint32_t count; /* GATHERs in for the open round */
    size_t bytes;   /* its GATHERED body so far */
};

/* Draws the job's key and puts it in the ranks' environment. 0 or -1. */
int boot_make_key(struct job *job);
void boot_take_frames(struct job *job, struct conn *c);
/* Sends DUMP to every connected rank. */
void boot_ask_dumps(struct job *job);
/* Every rank asked for a dump answered, hung up, or died. */
bool boot_dumps_done(const struct job *job);

/* ---- upstream.c: a proxy's connection to flitrun ---- */

/* Connects to flitrun (FLIT_BOOT), says PROXY and waits for WELCOME; then
   opens the proxy's own listener for its ranks on the address that reached
   flitrun. 0, or -1 said. */
int upstream_open(struct job *job);
/* A frame of rank r (or about it: HELLO, LOST, EXITED), on to flitrun. */
void upstream_tell(struct job *job, uint32_t r, uint8_t type, const uint8_t *body,
                   size_t len);
/* A frame flitrun sent the proxy. */
void upstream_frame(struct job *job, uint8_t type, const uint8_t *body, size_t len);
/* The connection to flitrun ended: the job is over here too. */
void upstream_lost(struct job *job, int err);
/* Before the proxy exits: what is queued for flitrun goes out (bounded). */
void upstream_close(struct job *job);

/* ---- relay.c: the ranks' output, by lines ---- */

struct relay { /* one rank's stdout or stderr */
    int fd;    /* read end of its pipe; -1 at EOF */
    int dest;  /* flitrun's fd the lines go to */
    bool plain; /* a proxy's: its lines carry their prefix already */
    uint32_t rank;
    char *buf; /* what is not yet a whole line */
    size_t len, cap;
};

struct output {
    char *scratch; /* prefixed output being written */
    size_t scratch_cap;
    bool dest_gone[3]; /* by fd: stdout or stderr hit EPIPE */
};

/* Whether the ranks' output goes through flitrun: with several ranks (so
   that lines of different ranks never splice) or --prefix. */
bool relaying(const struct job *job);
void relay_readable(struct job *job, struct relay *r);
/* Writes out the partial last line and closes the pipe. */
void relay_close(struct job *job, struct relay *r);
bool relays_open(const struct job *job);

/* ---- stdin.c: for rank 0 ---- */

struct stdin_fwd {   /* flitrun's stdin, on to rank 0 */
    int in_fd;       /* what is read; -1 when not (any more) */
    int pipe_fd;     /* to rank 0's stdin; -1 once closed */
    int rank_end;    /* the pipe's other end, until rank 0 forks */
    bool in_sock;    /* read with MSG_DONTWAIT */
    bool eof;        /* close pipe_fd once buf is written */
    char *buf;       /* STDIN_CAP bytes */
    size_t off, len; /* buf[off, off + len) is not yet written */
};

int stdin_setup(struct job *job);
void stdin_readable(struct job *job);
void stdin_flush(struct job *job);
/* No more forwarding: rank 0 sees EOF; what it was not given is dropped. */
void stdin_stop(struct job *job);

/* ---- the ranks ---- */

struct rank {
    pid_t pid;     /* as forked; 0 if never started */
    bool remote;   /* pid is its launcher (ssh, --launch) */
    bool proxied;  /* pid is its host's proxy, shared by the host's ranks */
    uint32_t lead; /* proxied: the host's first rank, which starts the proxy */
    char **argv; /* its launcher's argv, until exec'd */
    bool live;   /* started and not yet reaped */
    /* boot.c */
    bool said_hello, said_bye, dump_asked, dumped;
    struct conn *conn;     /* NULL while not connected */
    uint32_t gather_round; /* the last round it sent GATHER for */
    uint8_t *blob;         /* its part of the open round */
    uint32_t blob_len;
    struct relay out, err; /* relay.c */
    /* leave.c */
    bool exited, exit_zero;  /* reaped; with status 0 */
    uint64_t leave_judge_at; /* ns: its exit 0 without BYE is judged by
                                then; 0: nothing to judge */
    uint32_t told_round;     /* the doomed round it was told of; 0: none */
    uint64_t lost_at;        /* ns: seen hung up without BYE; 0: not */
};

/* ---- leave.c ---- */

struct leaving {        /* the earliest round a rank that left cannot join */
    uint32_t round;     /* 0: none */
    uint32_t rank, why; /* FL_PROTO_LEFT_* */
    bool flit_job;      /* some rank said HELLO */
};

/* Rank r was reaped with exit status code (reap.c). */
void leave_rank_exited(struct job *job, uint32_t r, int code);
/* Rank r ended with exit status code, its frames before its end all read
   (a proxy's EXITED comes behind them). */
void leave_rank_ended(struct job *job, uint32_t r, int code);
/* Rank failed ended badly: ranks that left without flit_finalize before it
   are named first, as the cause. */
void leave_judge_all(struct job *job, uint32_t failed);
/* Tells the ranks who left; judges exits without flit_finalize when due. */
void leave_check(struct job *job, uint64_t now);
uint64_t leave_next_deadline(const struct job *job);
/* At --timeout: which ranks the open exchange round waits for. */
void leave_report_rounds(const struct job *job);

/* ---- spawn.c ---- */

struct inherit { /* what flitrun changed, that ranks get back */
    sigset_t mask;
    struct sigaction pipe, chld;
    struct rlimit nofile;
    bool nofile_raised;
};

int raise_fd_limit(struct job *job);
int set_rank_env(struct job *job);
/* Forks every rank, then collects their exec reports. */
void spawn_all(struct job *job);

/* ---- proxy.c ---- */

/* --proxy HOST:RANKS, after -n: fills opt->proxy_host and opt->here. 0, or
   -1 with why filled. */
int proxy_parse(struct options *opt, char *why, size_t why_len);
/* Which ranks are started by their host's proxy: those of another host that
   has several (unless --no-proxy). */
void mark_proxied(struct job *job);
/* Whether this process forks rank r itself (a proxied rank: only its lead,
   which is the proxy's launcher). */
bool spawns_rank(const struct job *job, uint32_t r);
/* The program the launcher of lead's host runs: this flitrun, --proxy, and
   the options its ranks need. NULL-terminated, one allocation; NULL when
   out of memory. */
char **proxy_prog(const struct job *job, uint32_t lead);

/* ---- remote.c ---- */

/* Which ranks go to other hosts; any of them (or --boot-addr) makes the
   rendezvous TCP. */
void mark_remote(struct job *job);
const char *host_name(const struct job *job, uint32_t r);
/* "rank 3 (pid 123)"; "rank 3 on node7 (launcher pid 123)". */
const char *rank_who(const struct job *job, uint32_t r, char *buf, size_t len);
/* Rank r's argv when it is on another host: its launcher's. 0 or -1. */
int launch_argv(struct job *job, uint32_t r);
/* The read end of a pipe holding the job's key, rank r's stdin when it is
   on another host (*fd -1: its usual stdin). 0, or -1 with errno. */
int key_stdin(struct job *job, uint32_t r, int *fd);
/* Appends to buf what a remote launcher's exit status code may mean. */
void describe_remote(const struct job *job, int code, char *buf, size_t len);

/* ---- reap.c ---- */

void reap_ranks(struct job *job);
/* When the loop itself cannot go on: nothing is left behind even so. */
void reap_blocking(struct job *job);

/* ---- stop.c ---- */

enum phase {
    PHASE_RUNNING,
    PHASE_DUMPING,  /* timed out; waiting for the dumps */
    PHASE_STOPPING, /* ranks told to stop; reaping them */
};

struct stopping {
    int signal_fd;
    enum phase phase;
    int exit_code;
    bool decided;                             /* exit_code set by the first reason */
    uint64_t timeout_at, dump_until, kill_at; /* ns; 0: none */
    bool killed;                              /* SIGKILL already sent */
};

int take_signals(struct job *job);
void signals_readable(struct job *job);
/* The one way to end a job early. The first caller decides the exit status. */
void job_stop(struct job *job, int exit_code);
void kill_now(struct job *job);
void rank_failed(struct job *job, int exit_code);
void check_deadlines(struct job *job);

/* ---- loop.c ---- */

struct watch;

struct pollset {
    struct pollfd *pfds;
    struct watch *watches;
};

int pollset_alloc(struct pollset *ps, size_t n);
void pollset_free(struct pollset *ps);
void job_run(struct job *job);

/* ---- cleanup.c ---- */

/* Every path ends here, with every rank reaped; returns the exit status. */
int job_teardown(struct job *job);

/* ---- say.c ---- */

/* Blocking write of everything. 0, or -errno if the output is lost. */
int write_all(int fd, const void *buf, size_t len);
/* "flitrun: ..." on stderr, one write. */
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
/* Only with --verbose. */
__attribute__((format(printf, 2, 3))) void note(const struct job *job, const char *fmt,
                                                ...);
void signal_name(int sig, char *buf, size_t len);

/* ---- main.c: the job ---- */

struct job {
    struct options opt;
    uint64_t id;
    char id_hex[17];
    struct rank *ranks; /* [opt.nranks] */
    uint32_t live;      /* ranks started and not reaped */
    pid_t self;         /* flitrun, as its ranks' parent */
    pid_t pgid;         /* the ranks' group; 0 until rank 0 */
    char *cwd;          /* for ssh's `cd`; NULL if unknown */
    char *self_exe;     /* this flitrun, which proxies run; NULL if unknown */
    int devnull_fd;
    uint64_t drain_until;   /* ns; after the last rank, for strays' output */
    struct inherit inherit; /* spawn.c */
    struct server srv;      /* server.c */
    struct conn *up;        /* upstream.c: a proxy's, to flitrun; else NULL */
    struct rounds rounds;   /* boot.c */
    struct stopping stop;   /* stop.c */
    struct leaving leave;   /* leave.c */
    struct output out;      /* relay.c */
    struct stdin_fwd in;    /* stdin.c */
    struct pollset ps;      /* loop.c */
};

#endif /* FR_FLITRUN_H */
