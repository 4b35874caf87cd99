/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A call always ends (issue 36, item 3): when the server's reply cannot be
 * sent, the caller's call ends with the status that stopped it, at once,
 * without a timeout of its own. 2 ranks: rank 0 serves, rank 1 calls with
 * no timeout (a call that never ends is caught by flitrun's --timeout):
 *
 *  huge     a procedure replies with more bytes than any block can hold
 *           (from handler context, so the reply must be copied to be
 *           queued): FLIT_ERR_NO_MEMORY at both ends, no bytes.
 *  deferred a deferred reply sent the same way from inside another
 *           procedure: the deferred call ends FLIT_ERR_NO_MEMORY, the
 *           other with its own reply.
 *  rlimit   a 64 MiB reply made while the server's address space is
 *           limited (RLIMIT_AS) to 16 MiB more than it uses: the copy
 *           fails, the call ends FLIT_ERR_NO_MEMORY. Left out, and said
 *           so, where the limit cannot be set.
 *  after    a plain call still gets its reply; the server counted each
 *           failed reply (flit_rpc_stats.failed_replies).
 * Each rank prints "rpc_fail: rank R OK".
 */
#include <sys/resource.h>

#include <flit/rpc.h>

#include "mp.h"

/* The sanitizers' allocators must answer an impossible malloc with NULL,
   as the C library does, for the library to see a shortage. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "allocator_may_return_null=1";
}

enum { P_HUGE, P_DEFER, P_RELEASE, P_LIMITED, P_ECHO, NPROCS };

#define BIG     (64u << 20)
#define HEADWAY (16u << 20)

static struct {
    flit_ep_t *ep;
    flit_rpc_t *rpc;
    uint32_t me;
    flit_rpc_reply_t *kept;  /* P_DEFER's reply */
    flit_status got[NPROCS]; /* what the server's reply calls returned */
    bool limited;            /* P_LIMITED ran under the limit */
    uint8_t *big;            /* BIG bytes, touched before the limit */
    uint8_t small[64];
} g;

/* An iovec no block can hold: never read, the copy fails first. */
static struct iovec huge_iov(void)
{
    return (struct iovec){.iov_base = g.small, .iov_len = SIZE_MAX / 2};
}

static void proc_huge(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    struct iovec v = huge_iov();
    g.got[P_HUGE] = flit_rpc_reply(req, &v, 1);
}

static void proc_defer(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK_OK(flit_rpc_defer(req, &g.kept));
}

static void proc_release(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    CHECK(g.kept != NULL);
    struct iovec v = huge_iov();
    g.got[P_DEFER] = flit_rpc_reply_send(g.kept, &v, 1);
    g.kept = NULL;
    struct iovec ok = {.iov_base = "released", .iov_len = 9};
    g.got[P_RELEASE] = flit_rpc_reply(req, &ok, 1);
}

/* The address space this process has mapped, in bytes; 0 if unknown. */
static size_t vm_size(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return pages * (size_t)sysconf(_SC_PAGESIZE);
}

static void proc_limited(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)len, (void)user;
    struct rlimit was, lim;
    size_t vm = vm_size();
    g.limited = vm && getrlimit(RLIMIT_AS, &was) == 0 &&
                (was.rlim_max == RLIM_INFINITY || was.rlim_max > vm + HEADWAY);
    if (g.limited) {
        lim = (struct rlimit){.rlim_cur = vm + HEADWAY, .rlim_max = was.rlim_max};
        g.limited = setrlimit(RLIMIT_AS, &lim) == 0;
    }
    struct iovec v = {.iov_base = g.big, .iov_len = BIG};
    g.got[P_LIMITED] = flit_rpc_reply(req, &v, 1);
    if (g.limited)
        CHECK(setrlimit(RLIMIT_AS, &was) == 0);
    else
        printf("rpc_fail: rank %u: RLIMIT_AS cannot be set: the rlimit case is left "
               "out\n",
               g.me);
}

static void proc_echo(flit_rpc_req_t *req, size_t len, void *user)
{
    (void)user;
    uint8_t buf[64];
    CHECK(len <= sizeof buf);
    CHECK_OK(flit_rpc_recv(req, buf, len));
    struct iovec v = {.iov_base = buf, .iov_len = len};
    g.got[P_ECHO] = flit_rpc_reply(req, &v, 1);
}

/* A call with no timeout of its own; its status and result. */
static flit_status call(unsigned proc, flit_rpc_result_t *res)
{
    flit_rpc_opts_t o = {.field_mask = FLIT_RPC_OPT_FLAGS, .flags = FLIT_RPC_REPLY_ALLOC};
    return flit_rpc_call(g.rpc, flit_rank(0), proc, NULL, 0, NULL, 0, &o, res);
}

static void caller(void)
{
    flit_rpc_result_t res;
    CHECK_ST(call(P_HUGE, &res), FLIT_ERR_NO_MEMORY);
    CHECK(res.length == 0 && res.data == NULL);
    printf("rpc_fail: huge reply: the call ended FLIT_ERR_NO_MEMORY\n");

    flit_rpc_call_t *kept;
    CHECK_OK(flit_rpc_icall(g.rpc, flit_rank(0), P_DEFER, NULL, 0, NULL, 0, NULL, &kept));
    CHECK_OK(call(P_RELEASE, &res));
    CHECK(res.length == 9 && memcmp(res.data, "released", 9) == 0);
    free(res.data);
    CHECK_ST(flit_rpc_wait(&kept, -1, &res), FLIT_ERR_NO_MEMORY);
    CHECK(kept == NULL && res.length == 0);
    printf("rpc_fail: deferred reply: the call ended FLIT_ERR_NO_MEMORY\n");

    flit_status st = call(P_LIMITED, &res);
    if (st == FLIT_OK) { /* the server could not limit itself: said there */
        CHECK(res.length == BIG);
        free(res.data);
    } else {
        CHECK_ST(st, FLIT_ERR_NO_MEMORY);
        CHECK(res.length == 0);
        printf("rpc_fail: 64 MiB reply under RLIMIT_AS: the call ended "
               "FLIT_ERR_NO_MEMORY\n");
    }

    struct iovec q = {.iov_base = "after", .iov_len = 6};
    char back[16] = "";
    struct iovec r = {.iov_base = back, .iov_len = sizeof back};
    CHECK_OK(flit_rpc_call(g.rpc, flit_rank(0), P_ECHO, &q, 1, &r, 1, NULL, &res));
    CHECK(res.length == 6 && strcmp(back, "after") == 0);
}

static void server_check(void)
{
    CHECK_ST(g.got[P_HUGE], FLIT_ERR_NO_MEMORY);
    CHECK_ST(g.got[P_DEFER], FLIT_ERR_NO_MEMORY);
    CHECK_OK(g.got[P_RELEASE]);
    CHECK_ST(g.got[P_LIMITED], g.limited ? FLIT_ERR_NO_MEMORY : FLIT_OK);
    CHECK_OK(g.got[P_ECHO]);
    flit_rpc_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_rpc_stats(g.rpc, &s));
    uint64_t want = g.limited ? 3 : 2;
    if (s.failed_replies != want)
        FAIL("failed_replies %llu, expected %llu", (unsigned long long)s.failed_replies,
             (unsigned long long)want);
    CHECK(s.refused == 0);
}

int main(void)
{
    CHECK_OK(flit_init(NULL));
    g.me = flit_job_rank().idx;
    if (flit_job_size() != 2)
        FAIL("run with 2 ranks");
    CHECK_OK(flit_ep_create(NULL, &g.ep));
    CHECK_OK(flit_am_set_returned_handler(g.ep, mp_returned_fail, NULL));
    flit_rpc_params_t p = {.field_mask = FLIT_RPC_PARAM_PROCS, .procs = NPROCS};
    CHECK_OK(flit_rpc_create(g.ep, &p, &g.rpc));
    if (g.me == 0) {
        CHECK((g.big = malloc(BIG)) != NULL);
        memset(g.big, 0x5a, BIG); /* mapped before any limit */
        for (unsigned i = 0; i < NPROCS; i++)
            g.got[i] = FLIT_ERR_AGAIN; /* not run */
        CHECK_OK(flit_rpc_register(g.rpc, P_HUGE, proc_huge, NULL));
        CHECK_OK(flit_rpc_register(g.rpc, P_DEFER, proc_defer, NULL));
        CHECK_OK(flit_rpc_register(g.rpc, P_RELEASE, proc_release, NULL));
        CHECK_OK(flit_rpc_register(g.rpc, P_LIMITED, proc_limited, NULL));
        CHECK_OK(flit_rpc_register(g.rpc, P_ECHO, proc_echo, NULL));
    }
    CHECK_OK(flit_barrier(g.ep)); /* the procedures are in */
    if (g.me == 1)
        caller();
    CHECK_OK(flit_barrier(g.ep)); /* rank 0 serves while it waits here */
    if (g.me == 0)
        server_check();
    CHECK_OK(flit_rpc_destroy(g.rpc));
    free(g.big);
    CHECK_OK(flit_ep_destroy(g.ep));
    CHECK_OK(flit_finalize());
    printf("rpc_fail: rank %u OK\n", g.me);
    return 0;
}
