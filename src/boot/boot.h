/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bootstrap: who am I, how many are we, and the address exchange that fills
 * every endpoint's translation table. One launcher is chosen at flit_init
 * from the environment, first match wins: flitrun (FLIT_BOOT set), a PMIx
 * server (mpirun, prterun, srun --mpi=pmix; when built with PMIx), PMI-2
 * over PMI_FD (srun --mpi=pmi2, Hydra), or none: a job of one, unless the
 * environment shows the process is one of several tasks whose launcher
 * flit cannot reach (FLIT_ERR_NO_LAUNCHER, never a silent singleton).
 *
 * The exchange is an allgather of opaque blobs: each rank contributes one,
 * every rank gets all of them in rank order. It is collective and blocking,
 * used only at setup, but under srun each one is a fence in slurmstepd (none
 * under PMI-2 for a job on one node: node attributes) and, under PMI-2, a
 * round trip per rank: start-up uses as few as it can. What
 * the launcher already says (its name for the job, each rank's node; under
 * flitrun on one host, that every rank is on it) is taken from it; flit_init
 * exchanges only what it does not say, in one round, and each flit_ep_create uses one
 * (addresses), and a second only where a transport asks for a rendezvous.
 */
#ifndef FL_BOOT_H
#define FL_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

struct fl_boot_info {
    uint64_t job_id; /* same on every rank; names shared files */
    /* Whether job_id alone names this job among those alive on its hosts:
       the launcher's own names for it are unique (flitrun's id, a Slurm
       step's). When not, rank 0's random bits join it in flit_init's
       exchange (fl_boot_job_mix), at no extra exchange. */
    bool job_id_unique;
    /* Which host each rank is on (size numbers, malloc'd; flit_init takes
       it), when the launcher says so itself; NULL: flit_init exchanges the
       ranks' host identities. */
    uint32_t *host_of;
    uint32_t rank, size;
    const char *launcher; /* "flitrun", "pmix", "pmi2", "singleton" */
    uint32_t net_hint;    /* this rank's IPv4 address (host order) on the
                             route to the launcher, where the launcher
                             knows it (flitrun over TCP); else 0 */
};

/* The result of an allgather: blob[i] of len[i] bytes from rank i. */
struct fl_blobs {
    uint32_t n;
    size_t *len;
    const uint8_t **blob;
};

/* A launcher: how the library talks to whoever started it. */
struct fl_boot_ops {
    const char *name;
    bool (*detect)(void); /* does the environment name this launcher? */
    flit_status (*open)(struct fl_boot_info *info);
    flit_status (*allgather)(const void *mine, size_t len, struct fl_blobs **out);
    void (*close)(bool clean);
    /* Tells the launcher that this rank ends the job with status (1..255)
       and why, and returns once it has taken that in (or a bounded time
       later); the caller exits. NULL: no launcher to tell (a singleton). */
    void (*abort)(int status, const char *why);
};

flit_status fl_boot_open(struct fl_boot_info *info);
flit_status fl_boot_allgather(const void *mine, size_t len, struct fl_blobs **out);
/* The same, for the public call named (e.g. "flit_ep_create"), which dumps
   and errors name while it waits. */
flit_status fl_boot_allgather_in(const char *call, const void *mine, size_t len,
                                 struct fl_blobs **out);
/* The public call an exchange in progress is for; NULL when none. */
const char *fl_boot_waiting_call(void);
void fl_blobs_free(struct fl_blobs *b);
/* clean: the rank finalized (as opposed to a failed start). */
void fl_boot_close(bool clean);
/* The launcher's abort, if the job has one open (see fl_boot_ops). */
void fl_boot_abort(int status, const char *why);

/*
 * The launcher may ask for a state dump (flitrun --timeout). fn writes it to
 * fd; it runs on the boot thread, concurrently with the program, after a
 * line that says which flit call waits for the launcher, if one does.
 */
void fl_boot_set_dump_fn(void (*fn)(int fd));
void fl_boot_run_dump(int fd);

/*
 * Sets info's job id from the launcher's name for the job (a PMIx
 * namespace, a PMI-2 job id), the same on every rank. Where that name is
 * Slurm's name of the step the process runs in (slurm_prefix, then
 * SLURM_JOB_ID.SLURM_STEP_ID: "slurm.pmix.12.0", "12.0"), the id also hashes
 * srun's address, so it is unique among the steps alive on a host even
 * when two Slurm clusters share it, and job_id_unique is set. Otherwise
 * (another launcher, or a name that does not match the step's), two jobs
 * may be named alike: flit_init mixes in rank 0's random bits.
 */
void fl_boot_name_job(struct fl_boot_info *info, const char *launcher_job,
                      const char *slurm_prefix);

/* The job id after rank 0's random bits joined it (the same on every rank;
   differs between jobs that share a host even when named alike). */
uint64_t fl_boot_job_mix(uint64_t job_id, const uint8_t nonce[8]);

extern const struct fl_boot_ops fl_boot_single;
extern const struct fl_boot_ops fl_boot_flitrun;
extern const struct fl_boot_ops fl_boot_pmi2;
#ifdef FLIT_HAVE_PMIX
extern const struct fl_boot_ops fl_boot_pmix;
#endif

#endif /* FL_BOOT_H */
