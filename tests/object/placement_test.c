/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run-time placement of shared objects (FLIT_OBJECT_AUTO, <flit/object.h>)
 * under flitrun:
 *   --test converge  a read-mostly object (95% reads from every rank,
 *                    starting owned) ends replicated, and a write-mostly
 *                    one written most by the last rank ends owned by it,
 *                    each within --bound operations of the whole job (the
 *                    ranks keep step: a barrier after each round)
 *   --test switch    every rank (and --threads threads on each) appends
 *                    --count numbered entries to one log object while the
 *                    mix of reads and writes turns over and every rank pins
 *                    it to owners and replicas and hands it back: the final log
 *                    has every entry once, in each writer's order, and each
 *                    writer read back its own last entry every time;
 *                    --deep: the log's state holds a pointer and moves
 *                    through the type's pack and unpack
 *   --test kill      the last rank owns one object (pinned there) and is
 *                    handing another over to the replicas when it dies
 *                    (SIGKILL): the first answers FLIT_ERR_PEER_DOWN, the
 *                    second that or goes on replicated; a replicated
 *                    object goes on, the survivors agreeing on it; an
 *                    AUTO object the victim wrote most before it died is
 *                    never placed on it once the survivors agreed it left
 */
#include <flit/object.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "mp.h"

static flit_ep_t *ep;
static flit_objects_t *objs;
static uint32_t nranks, me;

#include "common.h"

static const flit_object_strategy R = FLIT_OBJECT_REPLICATED, O = FLIT_OBJECT_OWNED,
                                  A = FLIT_OBJECT_AUTO;

static flit_object_stats_t stats_of(flit_object_t *o)
{
    flit_object_stats_t s = {.struct_size = sizeof s};
    CHECK_OK(flit_object_stats(o, &s));
    return s;
}

/* ---------------------------------------------------------------- counter */

static size_t cnt_add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    int64_t *v = state, by;
    memcpy(&by, arg, sizeof by);
    *v += by;
    memcpy(res, v, sizeof *v);
    return sizeof *v;
}

static size_t cnt_get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(int64_t));
    return sizeof(int64_t);
}

/* waits until the counter reaches its argument */
static int cnt_at_least(const void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    int64_t want;
    memcpy(&want, arg, sizeof want);
    return *(const int64_t *)state >= want;
}

static const flit_object_op_t cnt_ops[] = {
    {FLIT_OBJECT_WRITE, 8, 8, cnt_add, NULL},
    {FLIT_OBJECT_READ, 0, 8, cnt_get, NULL},
    {FLIT_OBJECT_READ, 8, 8, cnt_get, cnt_at_least},
};
static const flit_object_type_t cnt_type = {sizeof(int64_t), NULL, NULL,
                                            cnt_ops,         3,    NULL};

/* rounds of ops operations of this rank, writes of them writes, with a
   barrier after each; returns the rounds after which the object was where
   want says and stayed there */
static uint64_t stream(flit_object_t *o, uint64_t rounds, unsigned ops, unsigned writes,
                       flit_object_strategy want, uint32_t owner, int64_t *written)
{
    uint64_t since = UINT64_MAX;
    int64_t one = 1, v;
    for (uint64_t r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < ops; i++) {
            if (i < writes) {
                CHECK_OK(flit_object_invoke(o, 0, &one, 8, &v, 8, NULL));
                ++*written;
            } else {
                CHECK_OK(flit_object_invoke(o, 1, NULL, 0, &v, 8, NULL));
            }
        }
        flit_object_stats_t s = stats_of(o);
        bool there = s.strategy == want && (want != O || s.owner.idx == owner);
        if (!there)
            since = UINT64_MAX;
        else if (since == UINT64_MAX)
            since = r + 1;
        CHECK_OK(flit_barrier(ep));
    }
    return since;
}

static void test_converge(uint64_t bound)
{
    CHECK(nranks >= 2);
    const uint64_t rounds = 25;
    int64_t zero = 0, written = 0, v;
    flit_object_t *o;
    CHECK_OK(
        flit_object_create(objs, 1, &cnt_type, NULL, 0, A, flit_rank(0), &zero, 8, &o));
    /* Start owned by rank 0, then the runtime's again. */
    if (me == 0) {
        CHECK_OK(flit_object_place(o, O, flit_rank(0)));
        CHECK_OK(flit_object_place(o, A, flit_rank(0)));
    }
    CHECK_OK(flit_barrier(ep));
    /* the place requests were delivered at rank 0 before it passed the
       barrier: a write is ordered after them */
    CHECK_OK(flit_object_invoke(o, 0, &zero, 8, &v, 8, NULL));
    flit_object_stats_t s = stats_of(o);
    CHECK(s.strategy == O && s.owner.idx == 0 && s.placement == A && s.switches == 1);
    CHECK_OK(flit_barrier(ep));

    /* read-mostly: 19 reads to a write from every rank, 20 a round each */
    uint64_t at = stream(o, rounds, 20, 1, R, 0, &written);
    uint64_t job_ops = at == UINT64_MAX ? UINT64_MAX : at * 20 * nranks;
    s = stats_of(o);
    printf("converge: rank %u: replicated within %llu operations of the job (%llu "
           "switches)\n",
           me, (unsigned long long)job_ops, (unsigned long long)s.switches);
    CHECK(job_ops <= bound);
    CHECK(s.strategy == R && s.switches >= 2);

    /* write-mostly, the last rank writing most: 20 writes a round there, 2
       writes and 2 reads on each other rank */
    uint32_t k = nranks - 1;
    at = stream(o, rounds, me == k ? 20 : 4, me == k ? 20 : 2, O, k, &written);
    job_ops = at == UINT64_MAX ? UINT64_MAX : at * (20 + 4 * (nranks - 1));
    s = stats_of(o);
    printf("converge: rank %u: owned by %u within %llu operations of the job (%llu "
           "switches)\n",
           me, k, (unsigned long long)job_ops, (unsigned long long)s.switches);
    CHECK(job_ops <= bound);
    CHECK(s.strategy == O && s.owner.idx == k);

    /* nothing lost: every rank's writes, once */
    int64_t total = 0;
    for (uint32_t r = 0; r < nranks; r++)
        total += (int64_t)rounds * (1 + (r == k ? 20 : 2));
    CHECK(written == (int64_t)rounds * (1 + (me == k ? 20 : 2)));
    CHECK_OK(flit_object_invoke(o, 2, &total, 8, &v, 8, NULL));
    CHECK(v == total);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_object_destroy(o));
}

/* ---------------------------------------------------------------- switch */

#define MAXW 128 /* writers: rank * 16 + thread */

/* The log: each writer's entries numbered 1, 2, ...; an entry out of turn
   (lost, doubled or reordered) is counted as bad. */
struct logs {
    int64_t count, bad;
    int64_t last[MAXW];
};

static size_t log_append(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    struct logs *l = state;
    int64_t e[2];
    memcpy(e, arg, sizeof e);
    if (e[0] < 0 || e[0] >= MAXW || e[1] != l->last[e[0]] + 1)
        l->bad++;
    else
        l->last[e[0]] = e[1];
    l->count++;
    memcpy(res, &l->count, sizeof l->count);
    return sizeof l->count;
}

/* a writer's last entry */
static size_t log_last(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    const struct logs *l = state;
    int64_t w;
    memcpy(&w, arg, sizeof w);
    memcpy(res, &l->last[w], sizeof w);
    return sizeof w;
}

/* the whole log, as a write: ordered after every write before it */
static size_t log_all(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(struct logs));
    return sizeof(struct logs);
}

static const flit_object_op_t log_ops[] = {
    {FLIT_OBJECT_WRITE, 16, 8, log_append, NULL},
    {FLIT_OBJECT_READ, 8, 8, log_last, NULL},
    {FLIT_OBJECT_WRITE, 0, sizeof(struct logs), log_all, NULL},
};
static const flit_object_type_t log_type = {
    sizeof(struct logs), NULL, NULL, log_ops, 3, NULL};

/*
 * The same log behind a pointer (--deep): state that is not flat. It moves
 * through pack and unpack as the count, the bad entries, and the writers'
 * last entries up to the highest writer seen: its length varies. A copy
 * that took the owner's pointer instead would read another process's
 * address.
 */
struct deep {
    struct logs *l; /* malloc'ed by init, freed by fini */
    uint64_t magic;
};
#define DEEP_MAGIC 0x64656570u

static void deep_init(void *state, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    struct deep *d = state;
    CHECK((d->l = calloc(1, sizeof *d->l)) != NULL);
    d->magic = DEEP_MAGIC;
}

static void deep_fini(void *state, void *user)
{
    (void)user;
    struct deep *d = state;
    CHECK(d->magic == DEEP_MAGIC);
    free(d->l);
    d->l = NULL;
}

static size_t deep_pack(const void *state, void *buf, size_t cap, void *user)
{
    (void)user;
    const struct logs *l = ((const struct deep *)state)->l;
    int64_t nw = MAXW;
    while (nw > 0 && l->last[nw - 1] == 0)
        nw--;
    size_t need = (size_t)(3 + nw) * sizeof(int64_t);
    if (need > cap)
        return need;
    int64_t head[3] = {l->count, l->bad, nw};
    memcpy(buf, head, sizeof head);
    memcpy((char *)buf + sizeof head, l->last, (size_t)nw * sizeof(int64_t));
    return need;
}

static void deep_unpack(void *state, const void *buf, size_t len, void *user)
{
    (void)user;
    struct deep *d = state;
    CHECK(d->magic == DEEP_MAGIC && d->l != NULL);
    int64_t head[3];
    CHECK(len >= sizeof head);
    memcpy(head, buf, sizeof head);
    CHECK(head[2] >= 0 && head[2] <= MAXW &&
          len == (size_t)(3 + head[2]) * sizeof(int64_t));
    /* a fresh log replaces the old one, as a state with more to free would */
    struct logs *l = calloc(1, sizeof *l);
    CHECK(l != NULL);
    l->count = head[0];
    l->bad = head[1];
    memcpy(l->last, (const char *)buf + sizeof head, (size_t)head[2] * sizeof(int64_t));
    free(d->l);
    d->l = l;
}

static size_t deep_append(void *state, const void *arg, size_t len, void *res, void *user)
{
    return log_append(((struct deep *)state)->l, arg, len, res, user);
}

static size_t deep_last(void *state, const void *arg, size_t len, void *res, void *user)
{
    return log_last(((struct deep *)state)->l, arg, len, res, user);
}

static size_t deep_all(void *state, const void *arg, size_t len, void *res, void *user)
{
    return log_all(((struct deep *)state)->l, arg, len, res, user);
}

static const flit_object_op_t deep_ops[] = {
    {FLIT_OBJECT_WRITE, 16, 8, deep_append, NULL},
    {FLIT_OBJECT_READ, 8, 8, deep_last, NULL},
    {FLIT_OBJECT_WRITE, 0, sizeof(struct logs), deep_all, NULL},
};
static const flit_object_type_t deep_type = {
    sizeof(struct deep), deep_init, deep_fini, deep_ops, 3, NULL, deep_pack, deep_unpack};

static void *write_log(void *arg)
{
    struct worker *w = arg;
    int64_t last_count = 0;
    for (uint64_t i = 1; i <= w->count; i++) {
        int64_t e[2] = {w->id, (int64_t)i}, count, seen;
        CHECK_OK(flit_object_invoke(w->o, 0, e, sizeof e, &count, 8, NULL));
        CHECK(count > last_count); /* this writer's entries in its order */
        last_count = count;
        /* the mix turns over every 40 entries: 4 reads an entry, then none */
        unsigned reads = (i / 40) % 2 ? 4 : 0;
        for (unsigned r = 0; r < reads; r++) {
            CHECK_OK(flit_object_invoke(w->o, 1, &w->id, 8, &seen, 8, NULL));
            CHECK(seen == (int64_t)i); /* its own entry, never lost */
        }
        /* each rank's first writer pins it to an owner, to the replicas,
           and hands it back to the runtime in turn, every 8 entries */
        uint64_t j = i / 8;
        if (w->id % 16 == 0 && i % 8 == 0) {
            if (j % 3 == 0)
                CHECK_OK(
                    flit_object_place(w->o, O, flit_rank((uint32_t)(j + me) % nranks)));
            else
                CHECK_OK(flit_object_place(w->o, j % 3 == 1 ? R : A, flit_rank(0)));
        }
    }
    return NULL;
}

static void test_switch(uint64_t count, unsigned threads, bool deep)
{
    CHECK(nranks * 16 <= MAXW);
    flit_object_t *o;
    CHECK_OK(flit_object_create(objs, 2, deep ? &deep_type : &log_type, NULL, 0, A,
                                flit_rank(0), NULL, 0, &o));
    run_workers(write_log, o, count, threads);
    CHECK_OK(flit_barrier(ep));
    struct logs l;
    size_t n;
    CHECK_OK(flit_object_invoke(o, 2, NULL, 0, &l, sizeof l, &n));
    CHECK(n == sizeof l);
    CHECK(l.bad == 0);
    CHECK(l.count == (int64_t)(count * threads * nranks));
    for (uint32_t r = 0; r < nranks; r++)
        for (unsigned t = 0; t < 16; t++)
            CHECK(l.last[r * 16 + t] == (t < threads ? (int64_t)count : 0));
    flit_object_stats_t s = stats_of(o);
    printf("switch%s: rank %u: %lld entries, %llu switches, %llu retries, now %s\n",
           deep ? " (state behind a pointer)" : "", me, (long long)l.count,
           (unsigned long long)s.switches, (unsigned long long)s.retries,
           s.strategy == O ? "owned" : "replicated");
    /* every rank pinned it to an owner and to the replicas count / 24
       times each: the last pin of a run of them at least moves it */
    CHECK(s.switches >= count / 24);
    CHECK_OK(flit_barrier(ep));
    CHECK_OK(flit_object_destroy(o));
}

/* ---------------------------------------------------------------- kill */

static void test_kill(uint64_t count)
{
    CHECK(nranks >= 3);
    CHECK_OK(flit_ep_set_peer_down_handler(ep, on_down, NULL));
    CHECK_OK(flit_am_set_returned_handler(ep, on_returned, NULL));
    uint32_t victim = nranks - 1;
    int64_t zero = 0, one = 1, v;
    flit_object_t *pinned, *moving, *rep;
    CHECK_OK(flit_object_create(objs, 3, &cnt_type, NULL, 0, A, flit_rank(0), &zero, 8,
                                &pinned));
    CHECK_OK(flit_object_create(objs, 4, &cnt_type, NULL, 0, A, flit_rank(0), &zero, 8,
                                &moving));
    CHECK_OK(
        flit_object_create(objs, 5, &hist_type, NULL, 0, A, flit_rank(0), NULL, 0, &rep));
    flit_object_t *w;
    CHECK_OK(
        flit_object_create(objs, 6, &cnt_type, NULL, 0, A, flit_rank(0), &zero, 8, &w));
    /* pinned and moving owned by the victim (a switch each), moving handed
       back to the runtime; rep pinned replicated */
    if (me == 0) {
        CHECK_OK(flit_object_place(pinned, O, flit_rank(victim)));
        CHECK_OK(flit_object_place(moving, O, flit_rank(victim)));
        CHECK_OK(flit_object_place(moving, A, flit_rank(0)));
        CHECK_OK(flit_object_place(rep, R, flit_rank(0)));
    }
    CHECK_OK(flit_barrier(ep));
    for (uint64_t i = 0; i < count; i++) {
        CHECK_OK(flit_object_invoke(pinned, 0, &one, 8, &v, 8, NULL));
        CHECK_OK(flit_object_invoke(rep, 0, &one, 8, NULL, 0, NULL));
    }
    /* the writes were ordered after the place requests */
    flit_object_stats_t s = stats_of(pinned);
    CHECK(s.strategy == O && s.owner.idx == victim && s.placement == O);
    s = stats_of(rep);
    CHECK(s.strategy == R && s.placement == R);
    /* w, replicated: the victim writes it 50 times (its reports count 48
       of them in the window, 64 decide) and nobody else touches it; the
       others see the 50th, so its last report before it too */
    if (me == victim)
        for (int i = 0; i < 50; i++)
            CHECK_OK(flit_object_invoke(w, 0, &one, 8, &v, 8, NULL));
    else
        MP_WAIT(ep, stats_of(w).applied == 50); /* (reads would count) */
    CHECK_OK(flit_barrier(ep));
    if (me == victim) {
        /* hands moving over to the replicas, and dies with the switch
           just delivered here */
        CHECK_OK(flit_object_place(moving, R, flit_rank(0)));
        raise(SIGKILL);
    }
    /* survivors: moving answers from a replica, or says its owner is gone;
       never a hang */
    flit_status mst;
    do {
        mst = flit_object_invoke(moving, 1, NULL, 0, &v, 8, NULL);
        CHECK(mst == FLIT_OK || mst == FLIT_ERR_PEER_DOWN);
        s = stats_of(moving);
    } while (mst == FLIT_OK && s.strategy == O);
    CHECK(mst != FLIT_OK || v == 0);
    MP_WAIT(ep, atomic_load(&victim_down));
    CHECK_ST(flit_object_invoke(pinned, 1, NULL, 0, &v, 8, NULL), FLIT_ERR_PEER_DOWN);
    CHECK_ST(flit_object_invoke(pinned, 0, &one, 8, &v, 8, NULL), FLIT_ERR_PEER_DOWN);
    /* Once every survivor agreed the victim left (at one place of w's
       order), the window forgets its 48 writes: the survivors' writes
       (rank 0 writes most) never move w to the dead victim, which its 48
       would have made the top writer, and a pin to it is refused. */
    MP_WAIT(ep, stats_of(w).departed == 1);
    CHECK_ST(flit_object_place(w, O, flit_rank(victim)), FLIT_ERR_PEER_DOWN);
    for (int i = 0; i < (me == 0 ? 64 : 16); i++)
        CHECK_OK(flit_object_invoke(w, 0, &one, 8, &v, 8, NULL));
    s = stats_of(w);
    CHECK(s.departed == 1 && !(s.strategy == O && s.owner.idx == victim));
    /* the replicated one goes on among the survivors, who agree on it */
    uint64_t survivors = nranks - 1;
    for (uint64_t i = 0; i < count; i++)
        CHECK_OK(flit_object_invoke(rep, 0, &one, 8, NULL, 0, NULL));
    struct hist h = survivors_agree(rep, survivors);
    CHECK(h.value >= (int64_t)(2 * survivors * count) &&
          h.value <= (int64_t)((2 * survivors + 1) * count));
    printf("placement kill: rank %u: %lld, moving %s, the same history as %llu of %llu "
           "survivors\n",
           me, (long long)h.value, mst == FLIT_OK ? "replicated" : "lost",
           (unsigned long long)h.agreed, (unsigned long long)survivors);
    /* every write the survivors and the victim made, once: an add of 0
       is ordered after all of them */
    int64_t zero8 = 0, want = 50 + 64 + 16 * (int64_t)(survivors - 1);
    CHECK_OK(flit_object_invoke(w, 0, &zero8, 8, &v, 8, NULL));
    CHECK(v == want);
    s = stats_of(w);
    printf("placement kill: rank %u: w %lld after the victim left, %s %u\n", me,
           (long long)v, s.strategy == O ? "owned by" : "replicated", s.owner.idx);
    flit_object_t *const mine[] = {w, rep, moving, pinned};
    survivor_end(mine, 4, "placement kill");
}

int main(int argc, char **argv)
{
    unsigned threads = start(argc, argv, 8);
    const char *test = "switch";
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--test"))
            test = argv[i + 1];
    if (!strcmp(test, "converge"))
        test_converge(mp_arg_u64(argc, argv, "--bound", 400));
    else if (!strcmp(test, "switch"))
        test_switch(test_scaled(mp_arg_u64(argc, argv, "--count", 300)), threads,
                    mp_arg_flag(argc, argv, "--deep"));
    else if (!strcmp(test, "kill"))
        test_kill(test_scaled(mp_arg_u64(argc, argv, "--count", 50)));
    else
        FAIL("unknown test %s", test);
    CHECK_OK(flit_objects_destroy(objs));
    CHECK_OK(flit_finalize());
    printf("placement %s: rank %u OK\n", test, me);
    return 0;
}
