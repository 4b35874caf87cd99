/* SPDX-License-Identifier: BSD-3-Clause */
/* Chooses the launcher and offers the exchange on top of it. */
#include "boot/blobs.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os.h"
#include "util/log.h"

static const struct fl_boot_ops *const launchers[] = {
    &fl_boot_flitrun,
#ifdef FLIT_HAVE_PMIX
    &fl_boot_pmix, /* mpirun, prterun, srun; flitrun may run under them */
#endif
    &fl_boot_pmi2,   /* srun --mpi=pmi2, Hydra */
    &fl_boot_single, /* always detects: a program started by hand, or a
                        task whose launcher is out of reach (it says so) */
    NULL,
};

static const struct fl_boot_ops *cur;
static uint32_t job_size, my_rank;
static void (*_Atomic dump_fn)(int fd);
/* The exchange in progress, for dumps: the public call it serves (NULL:
   none), since when, and which one it is. */
static const char *_Atomic waiting_call;
static _Atomic uint64_t waiting_since_ns;
static _Atomic uint32_t exchanges;

flit_status fl_boot_open(struct fl_boot_info *info)
{
    for (int i = 0; launchers[i]; i++) {
        if (!launchers[i]->detect())
            continue;
        flit_status st = launchers[i]->open(info);
        if (st == FLIT_OK) {
            cur = launchers[i];
            job_size = info->size;
            my_rank = info->rank;
        }
        if (st == FLIT_OK)
            fl_debug("launcher %s: rank %u of %u", info->launcher, info->rank,
                     info->size);
        return st;
    }
    return FLIT_ERR_BOOT;
}

flit_status fl_boot_allgather(const void *mine, size_t len, struct fl_blobs **out)
{
    return fl_boot_allgather_in(NULL, mine, len, out);
}

flit_status fl_boot_allgather_in(const char *call, const void *mine, size_t len,
                                 struct fl_blobs **out)
{
    if (!cur)
        return FLIT_ERR_BOOT;
    /* A job of one gathers its own blob: no fence in the launcher. */
    if (job_size == 1)
        return fl_boot_single.allgather(mine, len, out);
    atomic_fetch_add(&exchanges, 1);
    atomic_store(&waiting_since_ns, fl_now_ns());
    atomic_store(&waiting_call, call ? call : "an exchange with the launcher");
    flit_status st = cur->allgather(mine, len, out);
    atomic_store(&waiting_call, NULL);
    return st;
}

const char *fl_boot_waiting_call(void)
{
    return atomic_load(&waiting_call);
}

/* FNV-1a, then a finalizer so that nearby names spread. */
static uint64_t hash64(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

uint64_t fl_boot_job_mix(uint64_t job_id, const uint8_t nonce[8])
{
    return hash64(hash64(0xcbf29ce484222325ull, &job_id, sizeof job_id), nonce, 8);
}

/* Slurm's variables for the step, all set by srun in every task. */
static bool slurm_step(const char **job, const char **step, const char **host,
                       const char **port)
{
    *job = getenv("SLURM_JOB_ID");
    *step = getenv("SLURM_STEP_ID");
    *host = getenv("SLURM_SRUN_COMM_HOST");
    *port = getenv("SLURM_SRUN_COMM_PORT");
    return *job && **job && *step && **step && *host && **host && *port && **port;
}

void fl_boot_name_job(struct fl_boot_info *info, const char *launcher_job,
                      const char *slurm_prefix)
{
    const char *job, *step, *host, *port, *cluster = getenv("SLURM_CLUSTER_NAME");
    char expected[256], name[1024];
    bool slurm = slurm_step(&job, &step, &host, &port);
    if (slurm) {
        snprintf(expected, sizeof expected, "%s%s.%s", slurm_prefix, job, step);
        slurm = strcmp(expected, launcher_job) == 0;
    }
    /* The step is unique in its cluster; srun's host and port tell apart
       clusters that number jobs alike (two test clusters on one machine)
       while that srun lives, which is as long as the step does. */
    if (slurm)
        snprintf(name, sizeof name, "%s|slurm:%s:%s.%s@%s:%s", launcher_job,
                 cluster ? cluster : "", job, step, host, port);
    else
        snprintf(name, sizeof name, "%s", launcher_job);
    info->job_id = hash64(0xcbf29ce484222325ull, name, strlen(name));
    info->job_id_unique = slurm;
}

void fl_boot_close(bool clean)
{
    if (cur)
        cur->close(clean);
    cur = NULL;
}

void fl_boot_abort(int status, const char *why)
{
    if (cur && cur->abort)
        cur->abort(status, why);
}

void fl_boot_set_dump_fn(void (*fn)(int fd))
{
    dump_fn = fn;
}

/* Which flit call waits for the launcher, if one does: the endpoints'
   dumps cannot say, as flit_init and flit_ep_create have none yet. */
static void dump_waiting(int fd)
{
    const char *call = atomic_load(&waiting_call);
    uint64_t since = atomic_load(&waiting_since_ns);
    if (call)
        dprintf(fd,
                "flit[%u] state: in %s for %.1f s, waiting for the exchange with the "
                "launcher (this rank's exchange %u), which every rank must join\n",
                my_rank, call, (double)(fl_now_ns() - since) / 1e9,
                atomic_load(&exchanges));
    else
        dprintf(fd, "flit[%u] state: not waiting for the launcher\n", my_rank);
}

void fl_boot_run_dump(int fd)
{
    dump_waiting(fd);
    void (*fn)(int) = dump_fn;
    if (fn)
        fn(fd);
}
