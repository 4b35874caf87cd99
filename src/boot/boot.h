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
 * used only at setup, so its cost does not matter.
 */
#ifndef FL_BOOT_H
#define FL_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flit/flit.h"

struct fl_boot_info {
    uint64_t job_id; /* same on every rank; names shared files */
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
};

flit_status fl_boot_open(struct fl_boot_info *info);
flit_status fl_boot_allgather(const void *mine, size_t len, struct fl_blobs **out);
void fl_blobs_free(struct fl_blobs *b);
/* clean: the rank finalized (as opposed to a failed start). */
void fl_boot_close(bool clean);

/*
 * The launcher may ask for a state dump (flitrun --timeout). fn writes it to
 * fd; it runs on the boot thread, concurrently with the program.
 */
void fl_boot_set_dump_fn(void (*fn)(int fd));
void fl_boot_run_dump(int fd);

/*
 * A job id from the launcher's name for the job and rank 0's random bits
 * (the same on every rank; differs between jobs that share a host even when
 * the launcher names them alike).
 */
uint64_t fl_boot_job_hash(const char *launcher_job, const uint8_t nonce[8]);

extern const struct fl_boot_ops fl_boot_single;
extern const struct fl_boot_ops fl_boot_flitrun;
extern const struct fl_boot_ops fl_boot_pmi2;
#ifdef FLIT_HAVE_PMIX
extern const struct fl_boot_ops fl_boot_pmix;
#endif

#endif /* FL_BOOT_H */
