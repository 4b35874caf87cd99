/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many imports of the same regions. Rank 0 exports two regions of
 * flit_rma_alloc memory (on different pages); rank 1 imports them 70,000
 * times in all, keeping every handle (more than the kernel's default
 * limit of 65,530 mappings per process), then puts and gets through the
 * first and the last handle of each and releases them all.
 *
 * Proves: imports of one region share one mapping (the process's mapping
 * count stays where it was); every handle works; releasing them all gives
 * the mappings back; the process can still open files throughout.
 */
#include <dirent.h>
#include <flit/rma.h>

#include "mp.h"
#include "rma/rma.h"

enum { H_ID = 1, H_DONE = 2 };
#define NREG 2

static struct {
    flit_ep_t *ep;
    uint64_t ids[NREG];
    int nids;
    int done;
} g;

static void on_id(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                  void *user)
{
    (void)t, (void)buf, (void)n, (void)user;
    CHECK(na == 3 && a[0] < NREG);
    g.ids[a[0]] = (uint64_t)a[2] << 32 | a[1];
    g.nids++;
}

static void on_done(flit_token_t *t, void *buf, size_t n, const uint32_t *a, unsigned na,
                    void *user)
{
    (void)t, (void)buf, (void)n, (void)a, (void)na, (void)user;
    g.done = 1;
}

/* Mappings of the owner's flit_rma_alloc blocks in this process (the shm
   transport's files "/dev/shm/flit-...-rma<key>"; the control file, key 0,
   aside). Counted by name: a sanitizer's allocator maps memory of its own
   meanwhile. */
static size_t mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f);
    char line[512];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        const char *rma = strstr(line, "-rma");
        if (strstr(line, "/flit-") && rma && strncmp(rma, "-rma0 ", 6) != 0 &&
            strcmp(rma, "-rma0\n") != 0)
            n++;
    }
    fclose(f);
    return n;
}

static void owner(void)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *mem;
    CHECK_OK(flit_rma_alloc(g.ep, (size_t)page * 4, (void **)&mem));
    flit_rma_region_t *reg[NREG];
    for (uint32_t i = 0; i < NREG; i++) {
        CHECK_OK(flit_rma_export(g.ep, mem + (size_t)page * 2 * i, (size_t)page,
                                 FLIT_RMA_READ | FLIT_RMA_WRITE, NULL, 0, &reg[i]));
        uint64_t id = flit_rma_region_id(reg[i]);
        uint32_t a[3] = {i, (uint32_t)id, (uint32_t)(id >> 32)};
        CHECK_OK(flit_am_short(g.ep, flit_rank(1), flit_handler(H_ID), a, 3, 0));
    }
    MP_WAIT(g.ep, g.done);
    for (uint32_t i = 0; i < NREG; i++) {
        size_t bad = mp_pattern_check(mem + (size_t)page * 2 * i, 256, i + 1);
        if (bad != 256)
            FAIL("region %u: byte %zu differs from what rank 1 put", i, bad);
        CHECK_OK(flit_rma_unexport(reg[i]));
    }
    CHECK_OK(flit_rma_free(g.ep, mem));
    printf("rma_imports: rank 0 OK\n");
}

static void importer(uint64_t count)
{
    MP_WAIT(g.ep, g.nids == NREG);
    flit_rma_remote_t **r = calloc(count, sizeof *r);
    CHECK(r);
    CHECK_OK(flit_rma_import(g.ep, flit_rank(0), g.ids[0], &r[0]));
    bool mapped = fl_rma_remote_of(r[0])->path == FL_RMA_PATH_MAP;
    size_t before = mappings();
    for (uint64_t i = 1; i < count; i++) {
        flit_status st = flit_rma_import(g.ep, flit_rank(0), g.ids[i % NREG], &r[i]);
        if (st != FLIT_OK)
            FAIL("import %llu: %s", (unsigned long long)i, flit_status_name(st));
    }
    size_t after = mappings();
    DIR *d = opendir("/proc/self/fd"); /* the process can still map and open */
    CHECK(d);
    closedir(d);
    if (mapped && (before != 1 || after != NREG))
        FAIL("%llu imports of %d regions: %zu mappings of the owner's memory after the "
             "first, %zu after all",
             (unsigned long long)count, NREG, before, after);
    uint8_t buf[256], back[256];
    /* The first and the last handles of each region (handle i: region
       i % NREG). */
    uint64_t pick[4] = {0, 1, count - 2, count - 1};
    for (int e = 0; e < 4; e++) {
        uint32_t k = (uint32_t)(pick[e] % NREG);
        mp_pattern_fill(buf, sizeof buf, k + 1);
        CHECK_OK(
            flit_rma_put(r[pick[e]], 0, buf, sizeof buf, FLIT_RMA_REMOTE_DONE, NULL));
        CHECK_OK(flit_rma_get(r[pick[e]], 0, back, sizeof back, 0, NULL));
        CHECK(memcmp(buf, back, sizeof buf) == 0);
    }
    for (uint64_t i = 0; i < count; i++)
        CHECK_OK(flit_rma_release(r[i]));
    size_t released = mappings();
    /* Both shared mappings go with the last handles of their regions. */
    if (mapped && released != 0)
        FAIL("after releasing every import %zu of the %zu mappings remain", released,
             after);
    free(r);
    CHECK_OK(flit_am_short(g.ep, flit_rank(0), flit_handler(H_DONE), NULL, 0, 0));
    printf("rma_imports: rank 1 OK: %llu imports, %s, %zu mappings -> %zu -> %zu\n",
           (unsigned long long)count, mapped ? "mapped" : "not mapped", before, after,
           released);
}

int main(int argc, char **argv)
{
    uint64_t count = mp_arg_u64(argc, argv, "--count", 70000);
    CHECK_OK(flit_init(NULL));
    if (flit_job_size() != 2) {
        fprintf(stderr, "rma_imports runs with 2 ranks\n");
        return TEST_SKIP;
    }
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_ID), on_id, NULL));
    CHECK_OK(flit_am_register(g.ep, flit_handler(H_DONE), on_done, NULL));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    CHECK_OK(flit_barrier(g.ep));
    if (flit_job_rank().idx == 0)
        owner();
    else
        importer(count < NREG ? NREG : count);
    CHECK_OK(flit_barrier(g.ep));
    CHECK_OK(flit_finalize());
    return 0;
}
