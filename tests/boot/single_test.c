/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Never a silent singleton (src/boot/single.c): flit_init in a plain
 * process whose environment is what a launcher would have left, each case
 * in a child of its own with only that environment.
 *
 * Proves: a process started by hand is a job of one rank; every sign that
 * it is one of several tasks (Slurm's, PMI's, Open MPI's, PMIx's variables)
 * without a launcher flit can reach fails flit_init with exactly
 * FLIT_ERR_NO_LAUNCHER, and the message names the variables found and
 * what to do; a launcher that is named but fails is FLIT_ERR_BOOT, never
 * a fallback to one rank.
 */
#include <stdbool.h>
#include <stdio.h>

#include "child.h"
#include "test.h"

struct env_case {
    const char *name;
    const char *env[8]; /* "NAME=value", NULL-terminated */
    flit_status want;
    const char *said[3]; /* each must be in flit's stderr */
};

#ifdef FLIT_HAVE_PMIX
#define PMIX_ADVICE "srun --mpi=pmix"
#else
#define PMIX_ADVICE "built without PMIx"
#endif

static const struct env_case cases[] = {
    {"by hand", {NULL}, FLIT_OK, {NULL}},
    {"batch script: one process",
     {"SLURM_NTASKS=4", "SLURM_PROCID=0", "SLURM_JOB_ID=7"},
     FLIT_OK,
     {NULL}},
    {"srun -n 1 without PMI",
     {"SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0"},
     FLIT_OK,
     {NULL}},
    {"srun -n 4 without PMI",
     {"SLURM_STEP_NUM_TASKS=4", "SLURM_PROCID=2", "SLURM_STEP_ID=0"},
     FLIT_ERR_NO_LAUNCHER,
     {"by Slurm's srun (SLURM_PROCID=2, SLURM_STEP_NUM_TASKS=4)", "srun --mpi=pmi2",
      "will not run on as a job of one rank"}},
    {"srun task 3, count unset",
     {"SLURM_PROCID=3"},
     FLIT_ERR_NO_LAUNCHER,
     {"SLURM_PROCID=3", NULL}},
    {"srun: a count that is not a number",
     {"SLURM_STEP_NUM_TASKS=four", "SLURM_PROCID=0"},
     FLIT_ERR_NO_LAUNCHER,
     {"SLURM_STEP_NUM_TASKS=four", NULL}},
    {"PMI without PMI_FD",
     {"PMI_SIZE=4", "PMI_RANK=1"},
     FLIT_ERR_NO_LAUNCHER,
     {"a PMI launcher (PMI_RANK=1, PMI_SIZE=4)", "no PMI_FD", NULL}},
    {"PMI, one rank", {"PMI_SIZE=1", "PMI_RANK=0"}, FLIT_OK, {NULL}},
    {"Open MPI without PMIx",
     {"OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_RANK=0"},
     FLIT_ERR_NO_LAUNCHER,
     {"Open MPI's mpirun (OMPI_COMM_WORLD_RANK=0, OMPI_COMM_WORLD_SIZE=3)", "flitrun",
      NULL}},
    {"Open MPI: a rank that is not a number",
     {"OMPI_COMM_WORLD_RANK=-1"},
     FLIT_ERR_NO_LAUNCHER,
     {"OMPI_COMM_WORLD_RANK=-1", NULL}},
#ifdef FLIT_HAVE_PMIX
    /* The PMIx launcher is chosen, and fails: not a job of one. */
    {"PMIx half named", {"PMIX_RANK=1"}, FLIT_ERR_BOOT, {"PMIX_NAMESPACE", NULL}},
#else
    {"PMIx, flit without PMIx",
     {"PMIX_RANK=1", "PMIX_NAMESPACE=slurm.pmix.4.0", "SLURM_STEP_NUM_TASKS=2",
      "SLURM_PROCID=1"},
     FLIT_ERR_NO_LAUNCHER,
     {"built without PMIx", "libpmix-dev", NULL}},
#endif
    {"srun --mpi=pmix, advice",
     {"SLURM_STEP_NUM_TASKS=2", "SLURM_PROCID=0"},
     FLIT_ERR_NO_LAUNCHER,
     {PMIX_ADVICE, NULL}},
    /* A launcher named but unreachable is an error of its own. */
    {"PMI_FD not open",
     {"PMI_FD=987", "PMI_RANK=0", "PMI_SIZE=2"},
     FLIT_ERR_BOOT,
     {"PMI_FD=\"987\" is not an open file descriptor", NULL}},
    {"PMI_FD not a number",
     {"PMI_FD=x", "PMI_RANK=0", "PMI_SIZE=2"},
     FLIT_ERR_BOOT,
     {"PMI_FD=\"x\"", NULL}},
    {"flitrun's variable, garbage",
     {"FLIT_BOOT=nowhere", "FLIT_RANK=0", "FLIT_SIZE=2"},
     FLIT_ERR_BOOT,
     {NULL}},
};

static int run_case(void *arg)
{
    const struct env_case *c = arg;
    /* Never empty: config.c reads environ, which clearenv() leaves NULL. */
    clearenv();
    putenv((char *)"HOME=/");
    for (int i = 0; c->env[i]; i++)
        putenv((char *)c->env[i]);
    flit_status st = flit_init(NULL);
    if (st == FLIT_OK && (flit_job_size() != 1 || flit_job_rank().idx != 0))
        return 100;
    if (st == FLIT_OK)
        flit_finalize();
    return (int)st;
}

int main(void)
{
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct env_case *c = &cases[i];
        struct child ch;
        CHECK(child_start(&ch, run_case, (void *)c) == 0);
        int code = child_wait(&ch);
        bool ok = code == (int)c->want;
        for (int j = 0; ok && j < 3 && c->said[j]; j++)
            ok = strstr(ch.text, c->said[j]) != NULL;
        if (c->want == FLIT_OK && strstr(ch.text, "error"))
            ok = false;
        printf("%s: %s: exit %d (%s)\n", ok ? "ok" : "FAILED", c->name, code,
               code < FLIT_STATUS_COUNT ? flit_status_name((flit_status)code) : "?");
        if (!ok) {
            printf("  expected %s; stderr:\n%s\n", flit_status_name(c->want), ch.text);
            failed = 1;
        }
    }
    return failed;
}
