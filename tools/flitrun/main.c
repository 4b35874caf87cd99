/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flitrun's main: the options, the job's setup, starting the ranks, the
 * loop, and the teardown every path ends in. What flitrun is and how its
 * parts fit: flitrun.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "flitrun.h"
#include "platform/os.h"
#include "util/config.h"

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
    job->srv.max_conns = n + EXTRA_CONNS;
    size_t nwatch = 5 + (size_t)job->srv.max_conns + 2 * (size_t)n; /* + upstream */
    job->ranks = calloc(n, sizeof *job->ranks);
    job->srv.conns = calloc(job->srv.max_conns, sizeof *job->srv.conns);
    if (pollset_alloc(&job->ps, nwatch) != 0 || !job->ranks || !job->srv.conns) {
        say("out of memory for %u ranks", n);
        free(job->ranks); /* its relays are not set up to close */
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

/* A proxy serves flitrun's job: its id, for the files crashed ranks leave. */
static int proxy_job_id(struct job *job)
{
    const char *id = getenv(FL_ENV_JOB_ID);
    if (!id || strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16) {
        say("--proxy runs a job flitrun started: %s is not set, or not 16 hex digits",
            FL_ENV_JOB_ID);
        return -1;
    }
    memcpy(job->id_hex, id, sizeof job->id_hex);
    job->id = strtoull(id, NULL, 16); /* its ranks' HELLO names it */
    return 0;
}

static int job_setup(struct job *job)
{
    bool proxy = job->opt.proxy_spec != NULL;
    job->in = (struct stdin_fwd){.in_fd = -1, .pipe_fd = -1, .rank_end = -1};
    job->srv.listen_fd = job->stop.signal_fd = job->devnull_fd = -1;
    job->self = getpid();
    job->rounds.bytes = GATHERED_HEAD;
    if (alloc_tables(job) || (proxy ? proxy_job_id(job) : new_job_id(job)) ||
        raise_fd_limit(job) || take_signals(job) ||
        (proxy ? upstream_open(job) : server_open(job)) || set_rank_env(job) ||
        stdin_setup(job))
        return -1;
    job->self_exe = realpath("/proc/self/exe", NULL); /* NULL: "flitrun" on the PATH */
    if (proxy) {
        note(job, "proxy on %s for job %s", job->opt.proxy_host, job->id_hex);
        return 0;
    }
    if (job->opt.timeout_s > 0)
        job->stop.timeout_at = fl_now_ns() + (uint64_t)(job->opt.timeout_s * 1e9);
    if (job->opt.launch.shell)
        job->cwd = getcwd(NULL, 0); /* NULL: the ranks start in the home directory */
    note(job, "job %s: %u ranks of '%s', boot %s %s", job->id_hex, job->opt.nranks,
         job->opt.argv[0], job->srv.tcp ? "address" : "socket", job->srv.boot_addr);
    for (uint32_t i = 0; i < job->opt.hosts.n; i++) {
        const struct fr_host *h = &job->opt.hosts.host[i];
        note(job, "host %s: %u rank%s%s", h->name, h->nranks, h->nranks == 1 ? "" : "s",
             h->local ? ", started here" : "");
    }
    return 0;
}

/*
 * Every rank inherits our FLIT_* environment, and flit_init refuses a bad
 * value in it: checked here with the library's own table, before any rank
 * starts, it is said once for the job instead of once per rank.
 */
static int check_env(void)
{
    char msg[1024];
    size_t i = 0;
    int bad = 0;
    if (fl_build_settings() != FLIT_OK)
        return -1; /* our bug, said */
    while (fl_config_next_bad(&i, msg, sizeof msg) && bad < 64) {
        say("%s", msg);
        bad++;
    }
    if (bad) {
        say("no rank started: fix %s above, or unset %s",
            bad == 1 ? "the setting" : "the settings", bad == 1 ? "it" : "them");
        return -1;
    }
    /* flitrun's own: FLIT_PEER_TIMEOUT bounds the silence of a rank's host */
    return fl_config_load_table(fl_core_settings) == FLIT_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
    static struct job job;
    int r = parse_options(argc, argv, &job.opt);
    if (r != 0) {
        options_free(&job.opt);
        return r < 0 ? EXIT_USAGE : 0;
    }
    if (check_env() != 0) {
        options_free(&job.opt);
        return EXIT_USAGE;
    }
    ensure_std_fds();
    if (job_setup(&job) != 0) {
        job.stop.exit_code = EXIT_OWN_ERROR;
        return job_teardown(&job);
    }
    spawn_all(&job);
    job_run(&job);
    note(&job, "exit status %d", job.stop.exit_code);
    return job_teardown(&job);
}
