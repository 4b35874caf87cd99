/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks on other hosts: which ranks they are, the command that starts each
 * one there (ssh or --launch, carrying the FLIT_* environment), and what
 * the exit status of that command may say about the rank.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flitrun.h"

/* Which ranks go to other hosts; any of them (or --boot-addr) makes the
   rendezvous TCP. */
void mark_remote(struct job *job)
{
    job->srv.tcp = job->opt.boot_ip != 0;
    for (uint32_t r = 0; job->opt.host_of && r < job->opt.nranks; r++) {
        struct rank *rk = &job->ranks[r];
        rk->remote = !job->opt.hosts.host[job->opt.host_of[r]].local;
        job->srv.tcp |= rk->remote;
    }
    mark_proxied(job);
}

const char *host_name(const struct job *job, uint32_t r)
{
    return job->opt.host_of ? job->opt.hosts.host[job->opt.host_of[r]].name : "localhost";
}

/* "rank 3 (pid 123)"; "rank 3 on node7 (launcher pid 123)" for a rank on
   another host, of which flitrun knows the launcher's pid. */
const char *rank_who(const struct job *job, uint32_t r, char *buf, size_t len)
{
    const struct rank *rk = &job->ranks[r];
    if (rk->proxied)
        snprintf(buf, len, "rank %u on %s (proxy pid %d)", r, host_name(job, r),
                 (int)rk->pid);
    else if (rk->remote)
        snprintf(buf, len, "rank %u on %s (launcher pid %d)", r, host_name(job, r),
                 (int)rk->pid);
    else if (job->opt.proxy_host)
        snprintf(buf, len, "rank %u on %s (pid %d)", r, job->opt.proxy_host,
                 (int)rk->pid);
    else
        snprintf(buf, len, "rank %u (pid %d)", r, (int)rk->pid);
    return buf;
}

/* Whether the variable travels on the launcher's command line: FLIT_*, but
   not the job's key, which anyone on either host could read there
   (/proc/PID/cmdline); it goes on the launcher's stdin (key_stdin). */
static bool travels(const char *var)
{
    size_t klen = strlen(FL_ENV_JOB_KEY);
    return strncmp(var, "FLIT_", 5) == 0 &&
           !(strncmp(var, FL_ENV_JOB_KEY, klen) == 0 && var[klen] == '=');
}

/* The FLIT_* part of the environment, FLIT_RANK included, the key left
   out: what travels to another host. NULL-terminated; the strings are
   environ's. */
static char **flit_env(void)
{
    extern char **environ;
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n += travels(*e);
    char **out = malloc((n + 1) * sizeof *out);
    if (!out)
        return NULL;
    n = 0;
    for (char **e = environ; *e; e++)
        if (travels(*e))
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
int launch_argv(struct job *job, uint32_t r)
{
    struct rank *rk = &job->ranks[r];
    if (rk->remote) {
        char **env = flit_env();
        char **prog = rk->proxied ? proxy_prog(job, r) : job->opt.argv;
        struct fr_launch_cmd cmd = {
            .env = env, .prog = prog, .cwd = job->cwd, .key_on_stdin = true};
        rk->argv = env && prog ? fr_launch_argv(&job->opt.launch, host_name(job, r), &cmd)
                               : NULL;
        free(env);
        if (rk->proxied)
            free(prog);
        if (!rk->argv) {
            errno = ENOMEM;
            return -1;
        }
    }
    note_placement(job, r);
    return 0;
}

/* The key's line, "<64 hex digits>\n", written whole to fd (a pipe that
   is empty: it fits at once). 0 or -1. */
static int write_key(int fd)
{
    char line[2 * FL_PROTO_KEY_LEN + 2];
    const char *key = getenv(FL_ENV_JOB_KEY);
    int len = snprintf(line, sizeof line, "%s\n", key ? key : "");
    ssize_t n;
    do
        n = write(fd, line, (size_t)len);
    while (n < 0 && errno == EINTR);
    if (n == len)
        return 0;
    if (n >= 0)
        errno = EIO;
    return -1;
}

/* Rank r's stdin when it is on another host: the job's key comes first on
   it (see launch_argv). For rank 0 fed flitrun's stdin, the key goes ahead
   of it in that pipe, and *fd stays -1 (spawn.c's usual stdin); any other
   gets a pipe of its own holding the key alone, its read end in *fd. 0, or
   -1 with errno. */
int key_stdin(struct job *job, uint32_t r, int *fd)
{
    int ends[2];
    *fd = -1;
    if (!job->ranks[r].remote)
        return 0;
    if (r == 0 && job->in.pipe_fd >= 0)
        return write_key(job->in.pipe_fd);
    if (pipe2(ends, O_CLOEXEC) != 0)
        return -1;
    int rc = write_key(ends[1]);
    int err = errno;
    close(ends[1]);
    if (rc != 0) {
        close(ends[0]);
        errno = err;
        return -1;
    }
    *fd = ends[0];
    return 0;
}

/* What the launcher's exit status may mean for a rank on another host:
   ssh passes the rank's status on, but says 255 both for its own failure
   and for a rank killed by a signal; through a shell, death by signal S
   reads 128+S. */
void describe_remote(const struct job *job, int code, char *buf, size_t len)
{
    size_t used = strlen(buf);
    char name[32];
    if (code == 255 && job->opt.launch.shell) {
        snprintf(buf + used, len - used,
                 " (ssh's own failure, or the rank was killed "
                 "by a signal there)");
    } else if (code > 128 && code <= 128 + 64) {
        signal_name(code - 128, name, sizeof name);
        snprintf(buf + used, len - used, " (perhaps killed by signal %d (%s) there)",
                 code - 128, name);
    }
}
