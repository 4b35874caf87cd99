/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The end of every run: what is still buffered goes out, everything is
 * closed and freed, and the shared-memory files that ranks which died
 * without finalizing left in /dev/shm (named after the job) are removed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "flitrun.h"
#include "platform/os.h"

/* The library names its shared-memory files flit-<job id>-...: a rank that
   dies before flit_finalize leaves them. Only this host's are reached. */
static void remove_shm_leftovers(const struct job *job)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "flit-%s-", job->id_hex);
    int removed = fl_shm_unlink_prefix(prefix);
    if (removed > 0)
        note(job, "removed %d shared-memory files the ranks left behind", removed);
}

int job_teardown(struct job *job)
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
    upstream_close(job); /* a proxy's: its ranks' last words to flitrun */
    for (uint32_t i = 0; i < job->srv.nconns; i++)
        conn_free(job->srv.conns[i]);
    server_report(job);
    stdin_stop(job);
    if (job->id_hex[0])
        remove_shm_leftovers(job);
    int fds[] = {job->srv.listen_fd, job->stop.signal_fd, job->devnull_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(job->ranks);
    free(job->srv.conns);
    pollset_free(&job->ps);
    free(job->out.scratch);
    free(job->cwd);
    free(job->self_exe);
    options_free(&job->opt);
    return job->stop.exit_code;
}
