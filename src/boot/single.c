/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * No launcher: the program was started by hand and is a job of one rank.
 *
 * Unless the environment says otherwise. A process that a launcher started
 * as one of several tasks, but whose launcher flit cannot reach (srun with
 * no PMI plugin, srun --mpi=pmix for a flit built without PMIx, PMI over a
 * channel flit does not speak), would otherwise run on as one of N
 * independent jobs of one rank, each giving its answer and exiting 0. So
 * the launchers' own variables are read here, and any sign of another task
 * (a task count above one, a rank above zero) fails flit_init with
 * FLIT_ERR_NO_LAUNCHER and a message naming what was found and what to do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/blobs.h"
#include "platform/os.h"
#include "util/log.h"

/* One launcher's pair of variables: this task's number and how many. */
struct sign {
    const char *who, *rank_var, *size_var;
};

static const struct sign signs[] = {
    {"Slurm's srun", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS"},
    {"a PMI launcher", "PMI_RANK", "PMI_SIZE"},
    {"Open MPI's mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"a PMIx launcher", "PMIX_RANK", NULL},
};
#define NSIGNS (sizeof signs / sizeof signs[0])

/* A variable's value as a count: 1 set and valid, 0 unset, -1 not a number
   (which a launcher never writes: taken as a sign, named in the message). */
static int env_count(const char *name, unsigned long *out)
{
    const char *s = name ? getenv(name) : NULL;
    if (!s)
        return 0;
    char *end;
    errno = 0;
    *out = *s >= '0' && *s <= '9' ? strtoul(s, &end, 10) : 0;
    return *s >= '0' && *s <= '9' && !errno && !*end ? 1 : -1;
}

/* Appends "VAR=value" for a variable that is set. */
static void name_var(char *buf, size_t len, const char *var)
{
    const char *v = var ? getenv(var) : NULL;
    size_t at = strlen(buf);
    if (v && at < len)
        snprintf(buf + at, len - at, "%s%s=%.32s", at ? ", " : "", var, v);
}

/* What to do, given who started the process. */
static const char *advice(const struct sign *s)
{
    bool pmix_vars = getenv("PMIX_RANK") || getenv("PMIX_NAMESPACE");
#ifdef FLIT_HAVE_PMIX
    (void)pmix_vars;
    if (s == &signs[0])
        return "srun started it without a PMI plugin: run srun --mpi=pmix or "
               "srun --mpi=pmi2 (srun --mpi=list names the plugins this Slurm has; "
               "MpiDefault in slurm.conf sets the default), or flitrun inside the "
               "allocation";
#else
    if (pmix_vars)
        return "its launcher offers PMIx, but this flit was built without PMIx: "
               "install PMIx (Debian: libpmix-dev) and rebuild flit "
               "(-DFLIT_WITH_PMIX=ON), or start it with srun --mpi=pmi2 or flitrun";
    if (s == &signs[0])
        return "srun started it without a PMI plugin, and this flit was built without "
               "PMIx: run srun --mpi=pmi2 (or rebuild flit with PMIx, Debian: "
               "libpmix-dev, for srun --mpi=pmix), or flitrun inside the allocation";
#endif
    if (s == &signs[1])
        return "its launcher offers PMI without a file descriptor (no PMI_FD: PMI-1, "
               "or PMI_PORT), which flit does not speak: use srun --mpi=pmi2, "
               "mpiexec with PMI-2, a PMIx launcher, or flitrun";
    return "start it with flitrun, srun --mpi=pmix or --mpi=pmi2, or an mpirun that "
           "offers PMIx to a flit built with PMIx";
}

/* FLIT_OK when nothing says another task exists; else says why not. */
static flit_status check_alone(void)
{
    for (size_t i = 0; i < NSIGNS; i++) {
        const struct sign *s = &signs[i];
        unsigned long rank = 0, size = 0;
        int r = env_count(s->rank_var, &rank), n = env_count(s->size_var, &size);
        bool pmix_only = !s->size_var && r != 0;
#ifdef FLIT_HAVE_PMIX
        pmix_only = false; /* the PMIx launcher would have been chosen */
#endif
        if (r >= 0 && n >= 0 && rank == 0 && size <= 1 && !pmix_only)
            continue;
        char found[256] = "";
        for (size_t j = 0; j < NSIGNS; j++) {
            name_var(found, sizeof found, signs[j].rank_var);
            name_var(found, sizeof found, signs[j].size_var);
        }
        fl_error("this process was started as one of several tasks by %s (%s), but no "
                 "launcher flit supports can be reached, and it will not run on as a "
                 "job of one rank: %s",
                 s->who, found, advice(s));
        return FLIT_ERR_NO_LAUNCHER;
    }
    return FLIT_OK;
}

static bool single_detect(void)
{
    return true;
}

static flit_status single_open(struct fl_boot_info *info)
{
    flit_status st = check_alone();
    if (st != FLIT_OK)
        return st;
    info->rank = 0;
    info->size = 1;
    info->launcher = "singleton";
    if (fl_random_bytes(&info->job_id, sizeof info->job_id) != 0)
        return FLIT_ERR_SYSTEM;
    info->job_id_unique = true;
    return FLIT_OK;
}

static flit_status single_allgather(const void *mine, size_t len, struct fl_blobs **out)
{
    struct fl_blobs *b = fl_blobs_alloc(1, len);
    if (!b)
        return FLIT_ERR_NO_MEMORY;
    fl_blobs_add(b, 0, mine, len);
    *out = b;
    return FLIT_OK;
}

static void single_close(bool clean)
{
    (void)clean;
}

const struct fl_boot_ops fl_boot_single = {
    .name = "singleton",
    .detect = single_detect,
    .open = single_open,
    .allgather = single_allgather,
    .close = single_close,
};
