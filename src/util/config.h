/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Configuration from FLIT_* environment variables, read once by flit_init.
 * The table in config.c is the single list: defaults, allowed values (with
 * their units and rules) and help. The error for a bad value and
 * FLIT_VERBOSE's listing are written from it, and config_test checks that
 * docs/settings.md's table says the same.
 */
#ifndef FL_UTIL_CONFIG_H
#define FL_UTIL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flit/flit.h"

enum fl_bulk_mode {
    FL_BULK_AUTO = 0, /* shared mapping if the library made the segment, else CMA */
    FL_BULK_CMA,      /* cross-memory attach even for shared segments */
    FL_BULK_COPY,     /* pipelined two copies through the rings */
};

enum fl_watch_mode {
    FL_WATCH_AUTO = 0, /* pidfds, else /proc where the kernel refuses them */
    FL_WATCH_PROC,     /* /proc/PID/stat, read every FLIT_PEER_CHECK_MS */
};

/* Every field is an int64_t so that one table describes them all. */
struct fl_config {
    int64_t verbose;         /* FLIT_VERBOSE */
    int64_t stats;           /* FLIT_STATS */
    int64_t spin_us;         /* FLIT_SPIN_US; -1 = fl_progress_init picks */
    int64_t progress_thread; /* FLIT_PROGRESS_THREAD */
    int64_t shm_ring_bytes;  /* FLIT_SHM_RING_KB, in bytes */
    int64_t shm_bulk;        /* FLIT_SHM_BULK: enum fl_bulk_mode */
    int64_t shm_watch;       /* FLIT_SHM_WATCH: enum fl_watch_mode */
    int64_t long_chunk;      /* FLIT_LONG_CHUNK_KB, in bytes: piece size when copying */
    int64_t shm_cma_min;     /* FLIT_SHM_CMA_MIN_KB, in bytes: smallest long AM by CMA */
    int64_t peer_check_ms;   /* FLIT_PEER_CHECK_MS: liveness check period */
    int64_t transport;       /* FLIT_TRANSPORT: enum fl_transport_choice */
    int64_t peer_timeout_ms; /* FLIT_PEER_TIMEOUT, given in seconds */
    int64_t udp_mtu;         /* FLIT_UDP_MTU: 0 = the path's */
    int64_t udp_addr;        /* FLIT_UDP_ADDR: IPv4, host order; 0 = pick one */
    int64_t udp_window;      /* FLIT_UDP_WINDOW_KB, in bytes */
    int64_t ack_delay_us;    /* FLIT_ACK_DELAY_US */
    int64_t rto_min_us;      /* FLIT_RTO_MIN_US */
    int64_t drop_ppm;        /* FLIT_DROP_RATE, in parts per million */
    int64_t dup_ppm;         /* FLIT_DUP_RATE */
    int64_t reorder_ppm;     /* FLIT_REORDER_RATE */
    int64_t fault_seed;      /* FLIT_FAULT_SEED */
    int64_t fiber_stack;     /* FLIT_FIBER_STACK_KB, in bytes */
    int64_t fibers;          /* FLIT_FIBERS: enum fl_fiber_choice */
};

enum fl_transport_choice {
    FL_TRANSPORT_AUTO = 0, /* self, shared memory on the host, UDP beyond */
    FL_TRANSPORT_UDP,      /* UDP to every other rank, even on this host */
    FL_TRANSPORT_SHM,      /* no UDP: a job confined to one host */
    FL_TRANSPORT_XDP,      /* as auto, AF_XDP between hosts (UDP where it cannot) */
};

enum fl_fiber_choice {
    FL_FIBERS_AUTO = 0, /* flit's own switch where it has one, else ucontext */
    FL_FIBERS_UCONTEXT, /* always makecontext/swapcontext */
};

extern struct fl_config fl_cfg;

/* Reads the environment; FLIT_ERR_CONFIG on a bad value, logged with the
   variable, the value given, what is wrong with it and what is allowed
   (range and unit, or the choices), by the job's first task only (FLIT_RANK
   or another launcher's task number 0 or unset): the others share the
   setting and return the status silently, so a job says it once. */
flit_status fl_config_load(void);
/* Set from above (core/pub_layer.c: the settings of layers on the public
   API): whether a FLIT_* name (len bytes) someone else reads; such a
   variable draws no "unknown variable" warning. NULL: none. */
extern bool (*fl_config_known_above)(const char *name, size_t len);
/* The environment checked without keeping it, for a launcher before it
   starts the ranks: from variable *i of the table on, the next bad one's
   message (as fl_config_load logs it) into msg and true, with *i past it;
   false when none is left. */
bool fl_config_next_bad(size_t *i, char *msg, size_t len);
/* Prints the effective configuration, one variable per line: its value,
   "(default)" when it was not set, and what a "flit picks" value such as
   FLIT_SPIN_US=-1 became once flit_init settled it, and why. */
void fl_config_print(FILE *out);
/* A variable left at its special value ("flit picks") was settled to value
   once the job was known (why: the reason, or NULL); FLIT_VERBOSE says so. */
void fl_config_settle(const char *name, int64_t value, const char *why);
/* The settings every rank of a job must share (FLIT_TRANSPORT,
   FLIT_SHM_RING_KB), in table order, as kept: at most max written to out,
   their number returned. flit_ep_create compares them across ranks. */
#define FL_CONFIG_JOB_MAX 8
unsigned fl_config_job_values(int64_t *out, unsigned max);
/* The k-th of them: its name, and val as it would be given. */
void fl_config_job_describe(unsigned k, int64_t val, const char **name, char *buf,
                            size_t len);

#define FL_CONFIG_TEXT 160

/* Variable i of the table as docs/settings.md's table writes it:
   name, default, allowed values. */
struct fl_config_doc {
    const char *name;
    char def[FL_CONFIG_TEXT];
    char allowed[FL_CONFIG_TEXT];
};
/* Fills d for variable i; false past the last one. */
bool fl_config_describe(size_t i, struct fl_config_doc *d);

#endif /* FL_UTIL_CONFIG_H */
