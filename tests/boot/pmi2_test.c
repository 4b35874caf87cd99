/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMI-2 launcher (src/boot/pmi2.c) against a fake launcher that speaks
 * the server's side over a socketpair per rank (pmi2_fake.h): each rank is
 * a child process that finds PMI_FD, PMI_RANK, PMI_SIZE and PMI_JOBID as
 * srun --mpi=pmi2 leaves them.
 *
 * Proves: the pmi2 launcher is chosen, agrees with the launcher on rank and
 * size, and gives every rank the same job id; allgathers return every
 * rank's blob in rank order with its exact length, for lengths around the
 * size of one PMI-2 value (empty, one byte, one value, one more, many
 * values) over many rounds; values with ';' and '=' cross the wire
 * escaped; finalize is sent; each allgather is one fence, and a job of one
 * rank gathers without the launcher; the gets of every rank's blob are
 * asked for before their answers are read (a fake that answers them only
 * together would leave a client that waits for each one hanging). Under srun's step name
 * the job id needs no exchange and the ranks' nodes come from PMI_process_mapping (block
 * and cyclic); a mapping flit cannot read, none, or the attribute refused, leave the
 * placement to flit_init's exchange, silently; another launcher's job name is not asked
 * for a mapping. When the mapping puts every rank on one node, exchanges go through the
 * node's attributes with no fence at all, rank 0 gathering every blob and the others
 * getting them all as one (also when no key is there yet and every one is fetched by a
 * get that waits, one at a time), and through the job's key-value space and
 * fences when the launcher refuses node attributes. Every fault of the launcher's (not
 * PMI-2, a garbled length or answer, an error code, a rank out of range or not the one
 * PMI_RANK says, a hang-up in the fence, missing keys, bad hex, a bad blob length) is
 * exactly FLIT_ERR_BOOT with a message saying what was wrong, on every rank, never a
 * crash or a hang.
 */
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>

#include "boot/boot.h"
#include "child.h"
#include "pmi2_fake.h"
#include "test.h"
#include "util/config.h"

#define CHUNK 500 /* blob bytes per PMI-2 value (pmi2.c; the first holds 484) */

static const size_t lens[] = {0, 1, 483, 484, 485, CHUNK + 484, 7 * CHUNK + 3, 16};
#define NLENS (sizeof lens / sizeof lens[0])

/* How the launcher names the job and places the ranks. */
struct name_case {
    const char *name, *jobid, *mapping;
    bool refuse_attr;    /* info-getjobattr answers rc=3 */
    bool unique;         /* the job id is the Slurm step's: no exchange for it */
    const char *host_of; /* each rank's node as a digit, from the mapping */
    unsigned asks;       /* info-getjobattr asks, all ranks */
    bool refuse_node;    /* info-putnodeattr answers rc=1 */
    bool not_yet;        /* gets that do not wait never find a node attribute */
};

struct rank_arg {
    struct pmi2_fake *f;
    unsigned rank;
    const struct name_case *nc;
    bool leave; /* returns right after opening, as a rank that left the job */
};

static uint8_t byte_of(unsigned rank, unsigned round, size_t i)
{
    return (uint8_t)(rank * 31 + round * 7 + i * 13 + (i >> 8));
}

/* Every round's blobs, checked. FLIT_OK or the first failure. */
static flit_status exchange(const struct fl_boot_info *info)
{
    uint8_t buf[8 * CHUNK];
    for (unsigned round = 0; round < 2 * NLENS; round++) {
        size_t len = lens[(info->rank + round) % NLENS];
        for (size_t i = 0; i < len; i++)
            buf[i] = byte_of(info->rank, round, i);
        struct fl_blobs *all;
        flit_status st = fl_boot_allgather(buf, len, &all);
        if (st != FLIT_OK)
            return st;
        if (all->n != info->size)
            return 101;
        for (uint32_t r = 0; r < all->n; r++) {
            if (all->len[r] != lens[(r + round) % NLENS])
                return 102;
            for (size_t i = 0; i < all->len[r]; i++)
                if (all->blob[r][i] != byte_of(r, round, i))
                    return 103;
        }
        fl_blobs_free(all);
    }
    struct fl_blobs *ids;
    flit_status st = fl_boot_allgather(&info->job_id, sizeof info->job_id, &ids);
    if (st != FLIT_OK)
        return st;
    for (uint32_t r = 0; r < ids->n; r++)
        if (ids->len[r] != 8 || memcmp(ids->blob[r], &info->job_id, 8) != 0)
            return 104;
    fl_blobs_free(ids);
    return FLIT_OK;
}

static int run_rank(void *arg)
{
    struct rank_arg *a = arg;
    char fd[16], rank[16], size[16];
    snprintf(fd, sizeof fd, "%d", pmi2_fake_client_fd(a->f, a->rank));
    snprintf(rank, sizeof rank, "%u", a->rank);
    snprintf(size, sizeof size, "%u", a->f->n);
    for (unsigned r = 0; r < a->f->n; r++)
        close(a->f->server[r]);
    clearenv();
    setenv("PMI_FD", fd, 1);
    setenv("PMI_RANK", rank, 1);
    setenv("PMI_SIZE", size, 1);
    setenv("PMI_JOBID", "17.0", 1);
    /* As srun leaves them: its step, and where srun listens. */
    setenv("SLURM_JOB_ID", "17", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_SRUN_COMM_HOST", "127.0.0.1", 1);
    setenv("SLURM_SRUN_COMM_PORT", "40001", 1);
    /* The client ends stay open in the child: it must not need them closed. */
    struct fl_boot_info info = {0};
    /* as flit_init: the settings first (FLIT_PEER_TIMEOUT bounds waits) */
    flit_status st = fl_config_load();
    if (st == FLIT_OK)
        st = fl_boot_open(&info);
    if (st != FLIT_OK || a->leave)
        return st; /* leaving: no finalize, the connection closed by exit */
    if (strcmp(info.launcher, "pmi2") != 0 || info.rank != a->rank ||
        info.size != a->f->n)
        return 105;
    const struct name_case *nc = a->nc;
    if (info.job_id_unique != (nc && nc->unique))
        return 106;
    for (unsigned r = 0; r < info.size && info.host_of; r++)
        if (!nc || !nc->host_of || info.host_of[r] != (uint32_t)(nc->host_of[r] - '0'))
            return 107;
    if (!info.host_of && nc && nc->host_of)
        return 108;
    free(info.host_of);
    st = exchange(&info);
    fl_boot_close(st == FLIT_OK);
    return st;
}

struct fault_case {
    enum pmi2_fault fault;
    const char *name, *said;
    const char *said_by_0; /* rank 0 says this instead, where set */
};

static const struct fault_case faults[] = {
    {PMI2_FAULT_NONE, "no fault", NULL},
    {PMI2_FAULT_NOT_PMI2, "not PMI-2", "does not speak PMI-2"},
    {PMI2_FAULT_BAD_LENGTH, "bad frame length", "no valid length (\"abcdef\")"},
    {PMI2_FAULT_GARBLED, "garbled answer", "answer is malformed"},
    {PMI2_FAULT_RC, "error code", "rc=14: no such rank; go away"},
    {PMI2_FAULT_RANK_RANGE, "rank out of range", "rank=3 in the launcher's answer"},
    {PMI2_FAULT_RANK_OTHER, "another rank", "PMI_RANK says"}, /* 3 ranks: differs */
    {PMI2_FAULT_CLOSE_AT_FENCE, "hang-up in the fence", "closed by the launcher"},
    {PMI2_FAULT_NO_KEY, "missing key", "is not in the job's key-value space"},
    {PMI2_FAULT_BAD_HEX, "bad hex", "bytes in hex"},
    {PMI2_FAULT_BAD_BLOB_LEN, "bad blob length", "blob length of \"12x\""},
    /* Run on one node (below): the others fail; rank 0, waiting for their
       blobs of the next round, sees them gone. */
    {PMI2_FAULT_BAD_GATHER, "bad gathered blobs", "do not add up", "left the job (pid "},
};

static const struct name_case names[] = {
    {"another launcher's job name", "fake;job=1", "(vector,(0,2,2))", false, false, NULL,
     0},
    {"Slurm's step, block placement", "17.0", "(vector,(0,2,2))", false, true, "0011", 4},
    {"Slurm's step, cyclic placement", "17.0", "(vector,(0,2,1))", false, true, "0101",
     4},
    {"a mapping flit cannot read", "17.0", "(vector,(0,2,2)", false, true, NULL, 4},
    {"no mapping", "17.0", NULL, false, true, NULL, 4},
    {"the mapping refused", "17.0", "(vector,(0,1,4))", true, true, NULL, 4},
    {"one node: its attributes, no fence", "17.0", "(vector,(0,1,4))", false, true,
     "0000", 4},
    {"one node, keys not there at first asked again", "17.0", "(vector,(0,1,4))", false,
     true, "0000", 4, false, true},
    {"one node, node attributes refused", "17.0", "(vector,(0,1,4))", false, true, "0000",
     4, true},
};

/* Whether the job's exchanges go through node attributes. */
static bool one_node(const struct name_case *nc, unsigned n)
{
    if (!nc || !nc->host_of || nc->refuse_node || n < 2)
        return false;
    for (unsigned r = 1; r < n; r++)
        if (nc->host_of[r] != nc->host_of[0])
            return false;
    return true;
}

static int run(const struct fault_case *fc, const struct name_case *nc, unsigned n,
               bool gets_together)
{
    struct pmi2_fake f;
    CHECK(pmi2_fake_init(&f, n, fc->fault) == 0);
    f.gets_together = gets_together;
    if (nc) {
        f.jobid = nc->jobid;
        f.mapping = nc->mapping;
        f.refuse_attr = nc->refuse_attr;
        f.refuse_node_attrs = nc->refuse_node;
        f.node_not_yet = nc->not_yet;
    }
    struct child ch[PMI2_FAKE_MAX];
    struct rank_arg args[PMI2_FAKE_MAX];
    for (unsigned r = 0; r < n; r++) {
        args[r] = (struct rank_arg){&f, r, nc};
        CHECK(child_start(&ch[r], run_rank, &args[r]) == 0);
    }
    pmi2_fake_close_clients(&f);
    int served = pmi2_fake_serve(&f, 60000);
    /* A rank still waiting for an answer gets a hang-up instead. */
    for (unsigned r = 0; served != 0 && r < n; r++)
        if (f.server[r] >= 0)
            shutdown(f.server[r], SHUT_RDWR);
    int failed = 0;
    for (unsigned r = 0; r < n; r++) {
        int code = child_wait(&ch[r]);
        flit_status want = fc->fault == PMI2_FAULT_NONE ? FLIT_OK
                           : r == 0 && fc->fault == PMI2_FAULT_BAD_GATHER
                               ? FLIT_ERR_PEER_DOWN
                               : FLIT_ERR_BOOT;
        const char *said = r == 0 && fc->said_by_0 ? fc->said_by_0 : fc->said;
        bool ok = code == (int)want && (!said || strstr(ch[r].text, said));
        if (want == FLIT_OK && (!f.finalized[r] || ch[r].len))
            ok = false;
        if (!ok) {
            printf(
                "FAILED: %s, %u ranks: rank %u exited %d, expected %s%s%s; stderr:\n%s\n",
                fc->name, n, r, code, flit_status_name(want), said ? " saying " : "",
                said ? said : "", ch[r].text);
            failed = 1;
        }
    }
    if (served != 0) {
        printf("FAILED: %s: the fake launcher: %s\n", fc->name, f.error);
        failed = 1;
    }
    /* Every allgather is one fence; a job of one needs none, nor one on
       a single node. */
    unsigned fences = n == 1 || one_node(nc, n) ? 0 : 2 * NLENS + 1;
    if (fc->fault == PMI2_FAULT_NONE && f.fences != fences) {
        printf("FAILED: %u ranks: %u fences, expected %u\n", n, f.fences, fences);
        failed = 1;
    }
    if (one_node(nc, n) != (f.node_puts > 0)) {
        printf("FAILED: %s: %u node attributes put\n", nc ? nc->name : fc->name,
               f.node_puts);
        failed = 1;
    }
    /* A key not there yet is asked for again; never by a get that waits,
       which would block the connection for good if the rank that owes the
       key left. */
    if (f.wait_asks) {
        printf("FAILED: %s: %u gets waited\n", nc ? nc->name : fc->name, f.wait_asks);
        failed = 1;
    }
    if (f.stray_gets) {
        printf("FAILED: %s: ranks other than 0 got %u of the ranks' own keys\n",
               nc ? nc->name : fc->name, f.stray_gets);
        failed = 1;
    }
    if (nc && f.attr_asks != nc->asks) {
        printf("FAILED: %s: %u asks for PMI_process_mapping, expected %u\n", nc->name,
               f.attr_asks, nc->asks);
        failed = 1;
    }
    if (!failed)
        printf("ok: %s, %u ranks%s\n", nc ? nc->name : fc->name, n,
               gets_together ? ", gets answered together" : "");
    pmi2_fake_free(&f);
    return failed;
}

/*
 * Rank 1 of n returns right after opening, without finalize: PMI-2 never
 * says so, yet every other rank's first exchange must end with
 * FLIT_ERR_PEER_DOWN, never hang. On one node (mapping) they see its pid
 * gone and name it; across nodes the fence is bounded by FLIT_PEER_TIMEOUT. The fake
 * launcher must then not be left waiting either.
 */
static int run_leave(const struct name_case *nc, const char *said)
{
    enum { N = 3 };
    const char *mapping = nc->mapping;
    struct pmi2_fake f;
    CHECK(pmi2_fake_init(&f, N, PMI2_FAULT_NONE) == 0);
    f.jobid = nc->jobid;
    f.mapping = mapping;
    struct child ch[N];
    struct rank_arg args[N];
    for (unsigned r = 0; r < N; r++) {
        args[r] = (struct rank_arg){&f, r, nc, r == 1};
        CHECK(child_start(&ch[r], run_rank, &args[r]) == 0);
    }
    pmi2_fake_close_clients(&f);
    pmi2_fake_serve(&f, 60000); /* ends when all have closed: none hangs */
    int failed = 0;
    for (unsigned r = 0; r < N; r++) {
        int code = child_wait(&ch[r]);
        int want = r == 1 ? FLIT_OK : FLIT_ERR_PEER_DOWN;
        if (code != want || (r != 1 && !strstr(ch[r].text, said))) {
            printf("FAILED: a rank left (%s): rank %u exited %d, expected %s saying "
                   "\"%s\"; stderr:\n%s\n",
                   mapping, r, code, flit_status_name((flit_status)want), said,
                   ch[r].text);
            failed = 1;
        }
    }
    if (!failed)
        printf("ok: rank 1 left after opening (%s): the others' exchange failed\n",
               mapping);
    pmi2_fake_free(&f);
    return failed;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int failed = 0;
    for (unsigned n = 1; n <= 4; n++)
        failed |= run(&faults[0], NULL, n, false);
    /* The first pieces of all blobs are asked for before any answer. */
    failed |= run(&faults[0], NULL, 4, true);
    size_t nfaults = sizeof faults / sizeof faults[0];
    for (size_t i = 1; i < nfaults - 1; i++)
        failed |= run(&faults[i], NULL, 3, false);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        failed |= run(&faults[0], &names[i], 4, false);
    failed |= run(&faults[nfaults - 1], &names[6], 4, false);
    static const struct name_case
        one = {"one node", "17.0", "(vector,(0,1,3))", false, true, "000", 4},
        three = {"three nodes", "17.0", "(vector,(0,3,1))", false, true, "012", 4};
    failed |= run_leave(&one, "left the job (pid "); /* rank 1; or 0, gone since */
    failed |= run_leave(&three, "s (FLIT_PEER_TIMEOUT): a rank on another node left");
    return failed;
}
