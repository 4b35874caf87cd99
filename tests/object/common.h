/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What object_test.c and placement_test.c share (included after their
 * ep, objs, nranks and me): the start, and for the tests that kill the
 * last rank a replicated object on which survivors agree (every copy the
 * same value and history), the handlers that expect that rank's death and
 * the survivors' end.
 */
#ifndef OBJECT_TEST_COMMON_H
#define OBJECT_TEST_COMMON_H

struct hist {
    int64_t value;
    uint64_t hist, done, heard, agreed;
};

static size_t hist_add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)res, (void)user;
    struct hist *h = state;
    int64_t by;
    memcpy(&by, arg, sizeof by);
    h->value += by;
    h->hist = (h->hist ^ (uint64_t)h->value) * 0x100000001b3ull;
    return 0;
}

static size_t hist_done(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)res, (void)user;
    ((struct hist *)state)->done++;
    return 0;
}

static int all_done(const void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    uint64_t want;
    memcpy(&want, arg, sizeof want);
    return ((const struct hist *)state)->done >= want;
}

static int all_heard(const void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    uint64_t want;
    memcpy(&want, arg, sizeof want);
    return ((const struct hist *)state)->heard >= want;
}

static size_t hist_read(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(struct hist));
    return sizeof(struct hist);
}

static size_t hist_agree(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)res, (void)user;
    struct hist *h = state;
    int64_t said[2];
    memcpy(said, arg, sizeof said);
    h->heard++;
    h->agreed += said[0] == h->value && (uint64_t)said[1] == h->hist;
    return 0;
}

static const flit_object_op_t hist_ops[] = {
    {FLIT_OBJECT_WRITE, 8, 0, hist_add, NULL},
    {FLIT_OBJECT_WRITE, 0, 0, hist_done, NULL},
    {FLIT_OBJECT_READ, 8, sizeof(struct hist), hist_read, all_done},
    {FLIT_OBJECT_WRITE, 16, 0, hist_agree, NULL},
    {FLIT_OBJECT_READ, 8, sizeof(struct hist), hist_read, all_heard},
};
static const flit_object_type_t hist_type = {
    sizeof(struct hist), NULL, NULL, hist_ops, 5, NULL};

static atomic_int victim_down;

static void on_down(flit_ep_t *e, flit_rank_t peer, flit_status why, void *user)
{
    (void)e, (void)why, (void)user;
    CHECK(peer.idx == nranks - 1);
    atomic_store(&victim_down, 1);
}

static void on_returned(flit_ep_t *e, const flit_returned_t *r, void *user)
{
    if (r->reason == FLIT_ERR_PEER_DOWN && r->peer.idx == nranks - 1)
        return; /* what was on its way to the victim */
    mp_returned_fail(e, r, user);
}

/* flit, an endpoint (thread-safe for --threads above 1) and its objects;
   returns --threads. */
static unsigned start(int argc, char **argv, unsigned max_threads)
{
    CHECK_OK(flit_init(NULL));
    nranks = flit_job_size();
    me = flit_job_rank().idx;
    unsigned threads = (unsigned)mp_arg_u64(argc, argv, "--threads", 1);
    CHECK(threads >= 1 && threads <= max_threads);
    flit_ep_params_t p = {.field_mask = FLIT_EP_PARAM_THREAD_MODE,
                          .thread_mode =
                              threads > 1 ? FLIT_THREAD_SAFE : FLIT_THREAD_SINGLE};
    CHECK_OK(flit_ep_create(&p, &ep));
    CHECK_OK(flit_am_set_returned_handler(ep, mp_returned_fail, NULL));
    CHECK_OK(flit_objects_create(ep, &objs));
    return threads;
}

/* A survivor: says it is done with rep (a hist), waits for every survivor,
   says what it saw, and returns the history once every survivor said. */
static struct hist survivors_agree(flit_object_t *rep, uint64_t survivors)
{
    struct hist h, seen;
    CHECK_OK(flit_object_invoke(rep, 1, NULL, 0, NULL, 0, NULL));
    CHECK_OK(flit_object_invoke(rep, 2, &survivors, 8, &seen, sizeof seen, NULL));
    int64_t said[2] = {seen.value, (int64_t)seen.hist};
    CHECK_OK(flit_object_invoke(rep, 3, said, sizeof said, NULL, 0, NULL));
    CHECK_OK(flit_object_invoke(rep, 4, &survivors, 8, &h, sizeof h, NULL));
    CHECK(h.heard == survivors && h.agreed == survivors);
    return h;
}

/* One thread's share of a test: count operations on o; id = me * 16 + its
   thread. */
struct worker {
    flit_object_t *o;
    int64_t id;
    uint64_t count;
    pthread_t tid;
};

/* fn for each of threads workers: on threads of their own, joined here
   (they make progress in their calls), or on this one when alone. */
static void run_workers(void *(*fn)(void *), flit_object_t *o, uint64_t count,
                        unsigned threads)
{
    struct worker w[16];
    CHECK(threads <= 16);
    for (unsigned t = 0; t < threads; t++) {
        w[t] = (struct worker){o, (int64_t)(me * 16 + t), count, 0};
        if (threads > 1)
            CHECK(pthread_create(&w[t].tid, NULL, fn, &w[t]) == 0);
        else
            fn(&w[t]);
    }
    if (threads > 1)
        for (unsigned t = 0; t < threads; t++)
            CHECK(pthread_join(w[t].tid, NULL) == 0);
}

/* A survivor destroys the n objects and ends; title names the test. */
static void survivor_end(flit_object_t *const *o, unsigned n, const char *title)
{
    for (unsigned i = 0; i < n; i++) {
        flit_status st = flit_object_destroy(o[i]);
        CHECK(st == FLIT_OK || st == FLIT_ERR_PEER_DOWN);
    }
    printf("%s: rank %u OK\n", title, me);
    /* The objects' RPC object ends with a barrier, which a dead rank
       fails; flit_finalize still ends the job here. */
    flit_status st = flit_objects_destroy(objs);
    CHECK(st == FLIT_OK || st == FLIT_ERR_PEER_DOWN);
    flit_finalize();
    exit(0);
}

#endif /* OBJECT_TEST_COMMON_H */
