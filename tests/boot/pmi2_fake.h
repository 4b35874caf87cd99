/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A PMI-2 launcher's server side, small and strict, for testing flit's
 * PMI-2 boot module without Slurm: it speaks what srun --mpi=pmi2 speaks
 * (the PMI-1 style handshake, then fullinit, job-getid, info-getjobattr,
 * kvs-put, kvs-fence, kvs-get, info-putnodeattr, info-getnodeattr with and
 * without wait, finalize) to n ranks over one socketpair each, and fails a
 * rank that sends anything else. A fault can be injected into its answers.
 *
 *     struct pmi2_fake f;
 *     pmi2_fake_init(&f, n, PMI2_FAULT_NONE);
 *     ... give rank r the fd pmi2_fake_client_fd(&f, r) as PMI_FD ...
 *     pmi2_fake_serve(&f, timeout_ms);   // until every rank closed its end
 */
#ifndef FLIT_TEST_PMI2_FAKE_H
#define FLIT_TEST_PMI2_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#define PMI2_FAKE_MAX 64

enum pmi2_fault {
    PMI2_FAULT_NONE,
    PMI2_FAULT_NOT_PMI2,       /* the handshake answers pmi_version=1 */
    PMI2_FAULT_BAD_LENGTH,     /* fullinit's answer has "abcdef" as its length */
    PMI2_FAULT_GARBLED,        /* fullinit's answer has a pair without '=' */
    PMI2_FAULT_RC,             /* fullinit answers rc=14 with an errmsg */
    PMI2_FAULT_RANK_RANGE,     /* fullinit says rank = size */
    PMI2_FAULT_RANK_OTHER,     /* fullinit says another rank than PMI_RANK */
    PMI2_FAULT_CLOSE_AT_FENCE, /* the launcher hangs up at the first fence */
    PMI2_FAULT_NO_KEY,         /* every kvs-get answers found=FALSE */
    PMI2_FAULT_BAD_HEX,        /* blob chunks come back with a non-hex digit */
    PMI2_FAULT_BAD_BLOB_LEN,   /* a blob's length comes back as "12x" */
    PMI2_FAULT_BAD_GATHER,     /* rank 0's gathered blobs come back as 12 zero bytes */
};

struct pmi2_fake_kv {
    char *key, *val;
};

struct pmi2_fake {
    unsigned n;
    enum pmi2_fault fault;
    int server[PMI2_FAKE_MAX], client[PMI2_FAKE_MAX];
    bool pmi2[PMI2_FAKE_MAX];   /* past the handshake */
    bool fenced[PMI2_FAKE_MAX]; /* waits for the fence to complete */
    bool finalized[PMI2_FAKE_MAX];
    char *in[PMI2_FAKE_MAX];
    size_t inlen[PMI2_FAKE_MAX];
    struct pmi2_fake_kv *kv;
    size_t nkv;
    /* Node attributes (all ranks are on one node): a space of their own.
       waiting[r]: the key rank r waits for (info-getnodeattr wait=TRUE
       before anyone put it), answered by the put; a rank waits for one at
       a time. refuse_node_attrs: info-putnodeattr answers rc=1;
       node_not_yet: every third get that does not wait (of each rank's,
       counted in not_yet_turn) answers found=FALSE, as for a key not put
       yet. */
    struct pmi2_fake_kv *node;
    size_t nnode;
    char *waiting[PMI2_FAKE_MAX];
    bool refuse_node_attrs, node_not_yet;
    unsigned not_yet_turn[PMI2_FAKE_MAX];
    unsigned node_puts, wait_asks; /* puts taken; gets asked with wait=TRUE */
    unsigned node_gets, stray_gets; /* gets; of them, a rank's key got by rank > 0 */
    unsigned fences; /* completed */
    /* What job-getid answers ("fake;job=1" from init), and what
       info-getjobattr answers for PMI_process_mapping: the value, NULL for
       found=FALSE; refuse_attr: rc=3 instead. attr_asks counts the asks. */
    const char *jobid, *mapping;
    bool refuse_attr;
    unsigned attr_asks;
    /* gets_together: a rank's gets of blobs' first pieces ("flit.R.r") are
       answered only once it has asked for all n ranks' (a client that waits
       for each answer before the next ask never gets one). */
    bool gets_together;
    char *held[PMI2_FAKE_MAX][PMI2_FAKE_MAX];
    unsigned nheld[PMI2_FAKE_MAX];
    char error[256]; /* what a rank did wrong, when serve fails */
};

/* 0, or -1 with errno. */
int pmi2_fake_init(struct pmi2_fake *f, unsigned n, enum pmi2_fault fault);
/* The end rank r uses (close it in the parent once the rank has it). */
int pmi2_fake_client_fd(struct pmi2_fake *f, unsigned r);
void pmi2_fake_close_clients(struct pmi2_fake *f);
/*
 * Serves until every rank closed its end: 0; -1 when a rank broke the
 * protocol (f->error says how) or nothing happened for timeout_ms.
 */
int pmi2_fake_serve(struct pmi2_fake *f, int timeout_ms);
void pmi2_fake_free(struct pmi2_fake *f);

#endif
