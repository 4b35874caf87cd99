/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMIx launcher's exchange on its own (src/boot/pmix.c, below flit_init):
 * pmix_test.sh runs it under `mpirun -n N`.
 *
 * Proves: the pmix launcher is the one chosen; rank and size match the
 * launcher's; the job id is the same on every rank; an allgather returns
 * every rank's blob in rank order with its exact length, empty blobs and
 * 1 MiB blobs included; many rounds in a row never mix (each round must
 * read its own key: PMIx can return a key's first value after it is put
 * again).
 *
 *     mpirun -n 4 pmix_boot --size 4
 */
#include <string.h>

#include "boot/boot.h"
#include "mp.h"

static struct fl_boot_info info;

static struct fl_blobs *gather(const void *mine, size_t len)
{
    struct fl_blobs *all = NULL;
    CHECK_OK(fl_boot_allgather(mine, len, &all));
    CHECK(all != NULL && all->n == info.size);
    return all;
}

/* Every rank says the same job id. */
static void check_job_id(void)
{
    uint8_t id[8];
    memcpy(id, &info.job_id, sizeof id);
    struct fl_blobs *all = gather(id, sizeof id);
    for (uint32_t r = 0; r < all->n; r++)
        if (all->len[r] != sizeof id || memcmp(all->blob[r], id, sizeof id) != 0)
            FAIL("rank %u has another job id", r);
    fl_blobs_free(all);
}

/* Rank r gives len_of(r, round) bytes of its own pattern. */
static size_t len_of(uint32_t r, unsigned round, size_t big)
{
    switch ((r + round) % 4) {
    case 0:
        return 0;
    case 1:
        return 1 + r;
    case 2:
        return 1000 + 7 * r;
    default:
        return big;
    }
}

static void check_round(unsigned round, size_t big)
{
    size_t len = len_of(info.rank, round, big);
    uint8_t *mine = malloc(len ? len : 1);
    CHECK(mine);
    mp_pattern_fill(mine, len, mp_mix(info.rank, round, 3, 0));
    struct fl_blobs *all = gather(mine, len);
    free(mine);
    for (uint32_t r = 0; r < all->n; r++) {
        size_t want = len_of(r, round, big);
        if (all->len[r] != want)
            FAIL("round %u: rank %u's blob is %zu bytes, expected %zu", round, r,
                 all->len[r], want);
        size_t bad = mp_pattern_check(all->blob[r], want, mp_mix(r, round, 3, 0));
        if (bad != want)
            FAIL("round %u: rank %u's blob differs at byte %zu", round, r, bad);
    }
    fl_blobs_free(all);
}

int main(int argc, char **argv)
{
    uint32_t want_size = (uint32_t)mp_arg_u64(argc, argv, "--size", 0);
    const char *pmix_rank = getenv("PMIX_RANK");
    CHECK(getenv("FLIT_BOOT") == NULL && pmix_rank != NULL);
    CHECK_OK(fl_boot_open(&info));
    if (strcmp(info.launcher, "pmix") != 0)
        FAIL("launcher %s, expected pmix", info.launcher);
    if (info.rank != strtoul(pmix_rank, NULL, 10) || info.rank >= info.size ||
        (want_size && info.size != want_size))
        FAIL("rank %u of %u; PMIX_RANK is %s, the launcher was asked for %u", info.rank,
             info.size, pmix_rank, want_size);
    if (info.rank == 0)
        printf("pmix_boot: launcher PMIx, %u ranks, no flitrun\n", info.size);

    check_job_id();
    for (unsigned round = 0; round < 40; round++)
        check_round(round, 64);
    /* Big blobs last: PMIx sends everything a rank ever put at each commit
       and fence, so they would slow every later round. */
    for (unsigned round = 40; round < 44; round++)
        check_round(round, 1u << 20);
    check_job_id();
    fl_boot_close(true);
    printf("pmix_boot: rank %u of %u OK\n", info.rank, info.size);
    return 0;
}
