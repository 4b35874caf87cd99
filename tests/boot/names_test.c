/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the launchers' own names give flit at start-up without an exchange
 * (src/boot/boot.h, pmi2_wire.h), in one process:
 *
 * Proves: the job id of a Slurm step (the launcher's name is the step's:
 * "slurm.pmix.J.S" under PMIx, "J.S" under PMI-2) is marked unique, the
 * same for the same step, and differs with srun's port or host (two Slurm
 * clusters on one machine number jobs alike) and with the step; a launcher
 * name that is not the step's, or a Slurm variable missing, is not unique
 * (flit_init then mixes in rank 0's random bits, which change the id).
 * PMI_process_mapping in MPICH's format gives each rank's node for block,
 * cyclic and mixed placements, repeating the blocks; every malformed
 * mapping (not the format, spaces, junk, numbers too large, blocks that
 * place no rank) is exactly -1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "boot/pmi2_wire.h"
#include "test.h"

static void slurm_env(const char *job, const char *step, const char *host,
                      const char *port)
{
    clearenv();
    setenv("SLURM_CLUSTER_NAME", "flittest", 1);
    if (job)
        setenv("SLURM_JOB_ID", job, 1);
    if (step)
        setenv("SLURM_STEP_ID", step, 1);
    if (host)
        setenv("SLURM_SRUN_COMM_HOST", host, 1);
    if (port)
        setenv("SLURM_SRUN_COMM_PORT", port, 1);
}

static struct fl_boot_info named(const char *launcher_job, const char *prefix)
{
    struct fl_boot_info info = {0};
    fl_boot_name_job(&info, launcher_job, prefix);
    return info;
}

static void job_ids(void)
{
    slurm_env("12", "0", "127.0.0.1", "40001");
    struct fl_boot_info a = named("slurm.pmix.12.0", "slurm.pmix.");
    CHECK(a.job_id_unique);
    CHECK(named("slurm.pmix.12.0", "slurm.pmix.").job_id == a.job_id);
    struct fl_boot_info p2 = named("12.0", "");
    CHECK(p2.job_id_unique && p2.job_id != a.job_id);

    /* Another srun (another cluster numbering alike), another step. */
    slurm_env("12", "0", "127.0.0.1", "40002");
    struct fl_boot_info other_port = named("slurm.pmix.12.0", "slurm.pmix.");
    CHECK(other_port.job_id_unique && other_port.job_id != a.job_id);
    slurm_env("12", "0", "10.0.0.7", "40001");
    CHECK(named("slurm.pmix.12.0", "slurm.pmix.").job_id != a.job_id);
    slurm_env("12", "1", "127.0.0.1", "40001");
    struct fl_boot_info step1 = named("slurm.pmix.12.1", "slurm.pmix.");
    CHECK(step1.job_id_unique && step1.job_id != a.job_id);

    /* Not the step's name: mpirun's namespace inside an allocation. */
    slurm_env("12", "0", "127.0.0.1", "40001");
    struct fl_boot_info ompi = named("prterun-vm-4242@1", "slurm.pmix.");
    CHECK(!ompi.job_id_unique);
    CHECK(!named("12.0", "slurm.pmix.").job_id_unique);
    CHECK(!named("slurm.pmix.12.0", "").job_id_unique);
    /* A variable missing or empty. */
    const char *vals[4] = {"12", "0", "127.0.0.1", "40001"};
    for (int i = 0; i < 4; i++) {
        for (int empty = 0; empty < 2; empty++) {
            const char *v[4] = {vals[0], vals[1], vals[2], vals[3]};
            v[i] = empty ? "" : NULL;
            slurm_env(v[0], v[1], v[2], v[3]);
            struct fl_boot_info b = named("slurm.pmix.12.0", "slurm.pmix.");
            if (b.job_id_unique)
                FAIL("unique with variable %d %s", i, empty ? "empty" : "unset");
        }
    }
    clearenv();
    struct fl_boot_info none = named("kvs_4242_0", "");
    CHECK(!none.job_id_unique);
    CHECK(named("kvs_4242_0", "").job_id == none.job_id);
    CHECK(named("kvs_4243_0", "").job_id != none.job_id);

    const uint8_t n1[8] = {1, 2, 3, 4, 5, 6, 7, 8}, n2[8] = {1, 2, 3, 4, 5, 6, 7, 9};
    CHECK(fl_boot_job_mix(none.job_id, n1) == fl_boot_job_mix(none.job_id, n1));
    CHECK(fl_boot_job_mix(none.job_id, n1) != fl_boot_job_mix(none.job_id, n2));
    CHECK(fl_boot_job_mix(none.job_id, n1) != none.job_id);
}

struct map_case {
    const char *text;
    uint32_t size;
    int want;            /* 0 or -1 */
    const char *node_of; /* when 0: each rank's node as a digit */
};

static const struct map_case maps[] = {
    {"(vector,(0,1,4))", 4, 0, "0000"},
    {"(vector,(0,2,2))", 4, 0, "0011"},
    {"(vector,(0,2,1))", 5, 0, "01010"}, /* cyclic: the block repeats */
    {"(vector,(0,2,2),(2,1,1))", 5, 0, "00112"},
    {"(vector,(0,2,2),(2,1,1))", 8, 0, "00112001"},
    {"(vector,(3,2,1))", 3, 0, "343"},
    {"(vector,(0,1,8))", 3, 0, "000"},        /* more slots than ranks */
    {"(vector,(0,1,1),(1,1,0))", 2, 0, "00"}, /* an empty block among others */
    {"(vector,(0,1,0))", 2, -1, NULL},        /* places nobody */
    {"(vector,(0,0,4))", 2, -1, NULL},
    {"(vector,)", 2, -1, NULL},
    {"(vector)", 2, -1, NULL},
    {"", 2, -1, NULL},
    {"(vector,(0,1,4)", 4, -1, NULL},
    {"(vector,(0,1,4)))", 4, -1, NULL},
    {"(vector,(0,1,4)) ", 4, -1, NULL},
    {"(vector, (0,1,4))", 4, -1, NULL},
    {"(vector,(0,1,4),)", 4, -1, NULL},
    {"(vector,(0,1))", 4, -1, NULL},
    {"(vector,(0,1,4,5))", 4, -1, NULL},
    {"(vector,(-1,1,4))", 4, -1, NULL},
    {"(vector,(0,x,4))", 4, -1, NULL},
    {"(vector,(0,1,+4))", 4, -1, NULL},
    {"(vector,(0,,4))", 4, -1, NULL},
    {"(vector,(1048577,1,4))", 4, -1, NULL},
    {"(vector,(99999999999999999999,1,4))", 4, -1, NULL},
    {"(vector,(1048570,7,1))", 4, -1, NULL}, /* node + count too large */
    {"(vector,(0,1,4))(vector,(0,1,4))", 4, -1, NULL},
    {"(list,(0,1,4))", 4, -1, NULL},
    {"(vector,(0,1,2),(0,1,2))x", 4, -1, NULL},
};

static void mappings(void)
{
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) {
        const struct map_case *m = &maps[i];
        uint32_t node_of[16];
        memset(node_of, 0xee, sizeof node_of);
        int got = fl_pmi2_parse_mapping(m->text, m->size, node_of);
        if (got != m->want)
            FAIL("\"%s\" for %u ranks: %d, expected %d", m->text, m->size, got, m->want);
        for (uint32_t r = 0; m->node_of && r < m->size; r++)
            if (node_of[r] != (uint32_t)(m->node_of[r] - '0'))
                FAIL("\"%s\": rank %u on node %u, expected %c", m->text, r, node_of[r],
                     m->node_of[r]);
    }
}

int main(void)
{
    job_ids();
    mappings();
    printf("ok\n");
    return 0;
}
