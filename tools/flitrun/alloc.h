/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where flitrun's host list comes from besides --hosts: a hostfile as
 * mpirun reads it (--hostfile), or the Slurm allocation flitrun runs in
 * (SLURM_JOB_NODELIST in Slurm's bracket syntax, SLURM_JOB_CPUS_PER_NODE).
 * Each becomes a --hosts spec ("a:2,b:4", or "a,b"), which hosts.c parses
 * as if the user had typed it. Pure text work; messages go to why.
 */
#ifndef FR_ALLOC_H
#define FR_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Slurm's node list -> names, in order: "n[1-3,07-08],login" is n1 n2 n3
 * n07 n08 login (a range keeps the width of its first number's digits);
 * several bracket groups in one name multiply ("r[1-2]n[1-2]": r1n1 r1n2
 * r2n1 r2n2). At most max names. The names go to out, each ended by '\0',
 * *n counting them. 0, or -1 with why filled.
 */
int fr_nodelist_expand(const char *list, char *out, size_t out_len, uint32_t max,
                       uint32_t *n, char *why, size_t why_len);

/*
 * Slurm's per-node counts ("2(x3),1" is 2 2 2 1) -> counts[0..n). There must
 * be exactly n of them, each 1..4096. 0, or -1 with why filled.
 */
int fr_node_counts(const char *spec, uint32_t *counts, uint32_t n, char *why,
                   size_t why_len);

/*
 * A hostfile: one host per line, "name [slots=N]"; '#' starts a comment,
 * blank lines are skipped. A host without slots= has 1 when another line
 * gives slots, else none has a count. The spec is malloc'ed. 0, or -1
 * with why filled (naming the line).
 */
int fr_hostfile_read(const char *path, char **spec, char *why, size_t why_len);

/*
 * The allocation flitrun runs in, as a spec: NULL (and 0) when it is not
 * in one, when it runs inside a job step (its ranks are then srun's
 * business), or when the allocation is this host alone (the ranks start
 * here as without it). 0, or -1 with why filled.
 */
int fr_slurm_hosts(char **spec, char *why, size_t why_len);

/* The launch template for ranks on the allocation's other nodes. */
#define FR_SLURM_LAUNCH                                                                  \
    "srun --nodes=1 --ntasks=1 --overlap --mpi=none --kill-on-bad-exit=1 "               \
    "--nodelist={host}"

#endif /* FR_ALLOC_H */
