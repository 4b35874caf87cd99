/*
 * Configuration from FLIT_* environment variables, read once by flit_init.
 * The table in config.c is the single list: defaults, bounds and the help
 * text that FLIT_VERBOSE prints and the README repeats.
 */
#ifndef FL_CORE_CONFIG_H
#define FL_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flit/flit.h"

enum fl_bulk_mode {
    FL_BULK_AUTO = 0,   /* shared mapping if the library made the segment, else CMA */
    FL_BULK_CMA,        /* cross-memory attach even for shared segments */
    FL_BULK_COPY,       /* pipelined two copies through the rings */
};

/* Every field is an int64_t so that one table describes them all. */
struct fl_config {
    int64_t verbose;        /* FLIT_VERBOSE */
    int64_t stats;          /* FLIT_STATS */
    int64_t spin_us;        /* FLIT_SPIN_US; -1 = pick from cores vs local ranks */
    int64_t progress_thread;    /* FLIT_PROGRESS_THREAD */
    int64_t shm_ring_bytes; /* FLIT_SHM_RING_KB, in bytes */
    int64_t shm_bulk;       /* FLIT_SHM_BULK: enum fl_bulk_mode */
    int64_t long_chunk;     /* FLIT_LONG_CHUNK_KB, in bytes: piece size when copying */
    int64_t peer_check_ms;  /* FLIT_PEER_CHECK_MS: liveness check period */
};

extern struct fl_config fl_cfg;

/* Reads the environment; FLIT_ERR_INVALID_ARG (logged) on a bad value. */
flit_status fl_config_load(void);
/* Prints the effective configuration, one variable per line. */
void fl_config_print(FILE *out);

#endif /* FL_CORE_CONFIG_H */
