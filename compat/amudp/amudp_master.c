/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The SPMD master: a process started the AMUDP way,
 *
 *     prog NPROCS [SPAWNFN] args...
 *
 * NPROCS is read when the program passed nproc 0 to AMUDP_SPMDStartup;
 * SPAWNFN (L local, S ssh, C custom, either case) when it passed no spawn
 * function. As in AMUDP the letter may be left out: then AMUDP_SPAWNFN
 * names it, and without that variable the default is AMUDP's, S. An
 * argument that is not one letter of the table is the program's first.
 *
 * The master starts flitrun (amudp_flitrun.c says which) with NPROCS
 * workers running `prog args...` — argv[0] as the master was given it,
 * AMUDP's spawners pass it on as it is — serves as their console through
 * flitrun, and exits with the job's status: the code of AMUDP_SPMDExit,
 * else flitrun's. A worker that dies without ending (killed by a signal)
 * ends the job with 255, AMUDP's exit(-1) for a lost worker; so the
 * master tells a crash from an exit code in 129..192 by the word each
 * worker leaves when it ends in order (a datagram on a socket the workers
 * inherit: workers on other hosts leave none).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amudp_internal.h"
#include "amudp_spmd.h"

#define CRASH_STATUS 255 /* AMUDP's exit(-1) when a worker is lost */

/* AMUDP's ident(1) string: the AMUDP release whose API this library follows. */
__attribute__((used)) static const char amx_ident[] =
    "$AMUDPLibraryVersion: " AMUDP_LIBRARY_VERSION_STR " $";

/* ---------------------------------------------------------------- flitrun */

static volatile sig_atomic_t interrupted;
static volatile pid_t job_pid;

/* A signal for the master is one for the job: flitrun stops it (the
   terminal's own signals reach flitrun by themselves). */
static void on_signal(int sig)
{
    interrupted = 1;
    if ((sig == SIGTERM || sig == SIGHUP) && job_pid > 0)
        kill(job_pid, sig);
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

pid_t amx_start_flitrun(char **fa)
{
    pid_t master = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* the job does not outlive its master (killed, or a test timing out) */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != master)
            _exit(1);
        execvp(fa[0], fa);
        fprintf(stderr,
                "AMUDP: cannot run %s: %s (AMUDP_FLITRUN names the flitrun to use)\n",
                fa[0], strerror(errno));
        _exit(127);
    }
    if (pid > 0)
        job_pid = pid;
    return pid;
}

/* ---------------------------------------------------------------- the job's status */

/* Notes the codes of the exit words waiting on fd ("X CODE"). */
static void read_words(int fd, unsigned char said[256])
{
    char buf[64];
    ssize_t n;
    while (fd >= 0 && (n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0) {
        buf[n] = 0;
        int code;
        if (sscanf(buf, "X %d", &code) == 1)
            said[code & 255] = 1;
    }
}

int amx_wait_job(pid_t pid, int fd)
{
    unsigned char said[256] = {0};
    int status = 0;
    catch_signals();
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return 1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        poll(&p, fd >= 0 ? 1 : 0, 100); /* SIGCHLD or EINTR: look again */
        read_words(fd, said);
    }
    read_words(fd, said);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code > 128 && code <= 128 + 64 && !interrupted && !said[code])
        return CRASH_STATUS; /* flitrun's 128+signal of a worker that died */
    return code;
}

/* The socket the workers leave their exit word on: its other end is
   passed to them (AMX_ENV_EXIT_FD). -1 when there is none. */
static int exit_words(int *theirs)
{
    int sv[2];
    *theirs = -1;
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    char num[16];
    snprintf(num, sizeof num, "%d", sv[1]);
    if (fcntl(sv[1], F_SETFD, 0) != 0 || setenv(AMX_ENV_EXIT_FD, num, 1) != 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    *theirs = sv[1];
    return sv[0];
}

/* ---------------------------------------------------------------- spawn functions */

/* Starts flitrun with nproc workers of argv and exits with the job's
   status. Returns only when nothing could be started (0). */
static int spawn(int nproc, int argc, char **argv, const char *hosts, const char *launch)
{
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char count[16];
    snprintf(count, sizeof count, "%d", nproc);
    char **fa = calloc((size_t)argc + 10, sizeof *fa);
    if (!fa || setenv(AMX_ENV_ARGV0, argv[0], 1) != 0) {
        free(fa);
        return 0;
    }
    int k = 0;
    fa[k++] = (char *)amx_flitrun_path();
    fa[k++] = (char *)"-n";
    fa[k++] = count;
    if (hosts) {
        fa[k++] = (char *)"--hosts";
        fa[k++] = (char *)hosts;
    }
    if (launch) {
        fa[k++] = (char *)"--launch";
        fa[k++] = (char *)launch;
    }
    fa[k++] = (char *)"--";
    fa[k++] = n > 0 ? exe : argv[0]; /* the same file wherever flitrun runs it */
    for (int i = 1; i < argc; i++)
        fa[k++] = argv[i];
    int theirs, fd = exit_words(&theirs);
    pid_t pid = amx_start_flitrun(fa);
    free(fa);
    if (theirs >= 0)
        close(theirs);
    if (pid < 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int code = amx_wait_job(pid, fd);
    fflush(NULL);
    exit(code);
}

int AMUDP_SPMDLocalSpawn(int nproc, int argc, char **argv)
{
    return spawn(nproc, argc, argv, NULL, NULL);
}

/* SSH_SERVERS: host names separated by blanks or commas. */
static const char *servers(void)
{
    static char list[4096];
    const char *s = getenv("SSH_SERVERS");
    if (!s || !*s || strlen(s) >= sizeof list) {
        fprintf(stderr, "AMUDP: set SSH_SERVERS to the hosts to run on\n");
        return NULL;
    }
    strcpy(list, s);
    for (char *p = list; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = ',';
    return list;
}

int AMUDP_SPMDSshSpawn(int nproc, int argc, char **argv)
{
    const char *hosts = servers();
    return hosts ? spawn(nproc, argc, argv, hosts, NULL) : 0;
}

int AMUDP_SPMDCustomSpawn(int nproc, int argc, char **argv)
{
    const char *cmd = getenv("CSPAWN_CMD"), *hosts = servers();
    if (!cmd || !*cmd) {
        fprintf(stderr, "AMUDP: set CSPAWN_CMD to the command that starts a worker on "
                        "{host} (flitrun --launch)\n");
        return 0;
    }
    return hosts ? spawn(nproc, argc, argv, hosts, cmd) : 0;
}

amudp_spawnfn_desc_t const AMUDP_Spawnfn_Desc[] = {
    {'S', "Ssh spawn: start the workers on the hosts in SSH_SERVERS", AMUDP_SPMDSshSpawn},
    {'L', "Local spawn: start the workers on this host", AMUDP_SPMDLocalSpawn},
    {'C', "Custom spawn: CSPAWN_CMD starts each worker on a host of SSH_SERVERS",
     AMUDP_SPMDCustomSpawn},
    {0, NULL, NULL}};

/* ---------------------------------------------------------------- the command line */

/* AMUDP's banner, then how to run the program. */
static int usage(const char *prog, int with_nprocs)
{
    fprintf(stderr,
            "AMUDP SPMD Runtime Layer v%s (on flit %d.%d.%d)\n"
            "Usage: %s%s [SPAWNFN] args...\n"
            " SPAWNFN, else $AMUDP_SPAWNFN, else S: how to start the workers:\n",
            AMUDP_LIBRARY_VERSION_STR, FLIT_VERSION_MAJOR, FLIT_VERSION_MINOR,
            FLIT_VERSION_PATCH, prog, with_nprocs ? " NPROCS" : "");
    for (int i = 0; AMUDP_Spawnfn_Desc[i].abbrev; i++)
        fprintf(stderr, "    '%c'  %s\n", AMUDP_Spawnfn_Desc[i].abbrev,
                AMUDP_Spawnfn_Desc[i].desc);
    fprintf(stderr, "or: flitrun -n NPROCS %s args...\n", prog);
    return amx_err(AM_ERR_BAD_ARG, "AMUDP_SPMDStartup", "bad command line");
}

/* The spawn function of a letter (either case); NULL for none. */
static amudp_spawnfn_t spawn_fn(const char *letter)
{
    int c = letter && letter[0] && !letter[1] ? letter[0] : 0;
    if (c >= 'a' && c <= 'z')
        c += 'A' - 'a';
    for (int i = 0; c && AMUDP_Spawnfn_Desc[i].abbrev; i++)
        if (AMUDP_Spawnfn_Desc[i].abbrev == c)
            return AMUDP_Spawnfn_Desc[i].fnptr;
    return NULL;
}

static int known_fn(amudp_spawnfn_t fn)
{
    for (int i = 0; AMUDP_Spawnfn_Desc[i].abbrev; i++)
        if (AMUDP_Spawnfn_Desc[i].fnptr == fn)
            return 1;
    return 0;
}

/* AMUDP_SPAWNFN's letter, or AMUDP's default. */
static amudp_spawnfn_t spawn_fn_of_env(void)
{
    const char *v = getenv("AMUDP_SPAWNFN");
    char letter[2] = {v && *v ? v[0] : 'S', 0};
    return spawn_fn(letter);
}

int amx_master_start(int argc, char **argv, int nproc, int depth, amudp_spawnfn_t fn)
{
    int i = 1, with_nprocs = nproc == 0;
    if (nproc == 0) {
        char *end;
        long v = argc > 1 ? strtol(argv[1], &end, 10) : 0;
        if (argc < 2 || *end || v < 1 || v > AMUDP_MAX_SPMDPROCS)
            return usage(argv[0], 1);
        nproc = (int)v;
        i++;
    }
    if (!fn && i < argc && (fn = spawn_fn(argv[i])) != NULL)
        i++;
    if (!fn && !(fn = spawn_fn_of_env()))
        return usage(argv[0], with_nprocs);
    char d[16];
    snprintf(d, sizeof d, "%d", depth);
    setenv(AMX_ENV_DEPTH, d, 1);
    argv[i - 1] = argv[0]; /* the workers' command line: prog args */
    if (!known_fn(fn))     /* the program's own */
        return amx_spawn_custom(nproc, argc - i + 1, argv + i - 1, fn);
    fn(nproc, argc - i + 1, argv + i - 1);
    return amx_err(AM_ERR_RESOURCE, "AMUDP_SPMDStartup",
                   "the workers could not be started");
}
