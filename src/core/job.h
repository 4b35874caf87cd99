/* SPDX-License-Identifier: BSD-3-Clause */
/* The job: one per process, made by flit_init. */
#ifndef FL_CORE_JOB_H
#define FL_CORE_JOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/layer.h"
#include "flit/flit.h"
#include "transport/transport.h"

enum fl_job_state {
    FL_JOB_NONE = 0, /* before flit_init */
    FL_JOB_ACTIVE,
    FL_JOB_FINALIZED,
    FL_JOB_FORKED, /* this process is a fork() child of a flit process */
};

struct fl_job {
    uint32_t rank, size;
    uint64_t job_id;
    const char *launcher;
    uint64_t default_tag;
    /* Which host each rank is on (dense host numbers), from the exchange of
       host identities at flit_init. */
    uint32_t *host_of;
    uint32_t nhosts, local_size, local_rank;
    uint32_t net_hint; /* our IPv4 address towards the launcher; 0 */
    const struct fl_transport *const *transports; /* preferred first */
    pthread_mutex_t lock;                         /* endpoint list */
    struct flit_ep *eps;
    uint32_t next_ep_index;
};

extern struct fl_job fl_job;
extern _Atomic int fl_job_state;

/*
 * flit_init's work, with what this build is made of (src/flit.c): the
 * transports in preference order and the layers bottom up, both
 * NULL-terminated. Each list is checked once.
 */
flit_status fl_job_init(const flit_init_params_t *params,
                        const struct fl_transport *const *transports,
                        struct fl_layer *const *layers);

/* The status for a call made while the job is not active. */
flit_status fl_job_state_error(void);

static inline flit_status fl_job_check(void)
{
    if (__builtin_expect(atomic_load_explicit(&fl_job_state, memory_order_relaxed) !=
                             FL_JOB_ACTIVE,
                         0))
        return fl_job_state_error();
    return FLIT_OK;
}

/* Names /dev/shm objects of this job: "/flit-<job>-<rank>-<ep><suffix>". */
void fl_job_shm_name(char *buf, size_t len, uint32_t rank, uint32_t ep,
                     const char *suffix);

#endif /* FL_CORE_JOB_H */
