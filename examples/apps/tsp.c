/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The travelling salesman by branch and bound on shared objects, as Orca's
 * TSP: the best tour so far is a replicated object (read at every job and
 * every few thousand nodes, locally; written, an ordered multicast applied
 * by every copy, only when a worker finds a better tour), and the jobs, the
 * tours' first cities, sit in a queue owned by rank 0 whose "get" is a
 * guarded operation: it waits until there is a job or the queue is closed
 * and empty, and then answers "no more". Rank 0 fills the queue and works
 * like the others. Rank 0 then checks the best tour and its length against
 * a sequential search of the same cities, and prints the time, the object
 * operations and the messages.
 *
 * One answer, whatever the interleaving: among the shortest tours the
 * object keeps the one that comes first (city by city), and a branch is cut
 * only when its bound exceeds the best length (not when it equals it), so
 * every search, sequential or parallel, reaches every shortest tour.
 *
 * The search polls the endpoint every few thousand nodes, so that rank 0
 * hands out jobs and every rank applies the others' better bounds while it
 * computes.
 *
 *     flitrun -n 2 tsp [--n 13] [--seed 1] [--depth 3]
 */
#include "app.h"

#include <math.h>

#define MAXN  24
#define EVERY 4096 /* nodes between two polls and reads of the bound */

struct cities {
    uint32_t n;
    int32_t d[MAXN][MAXN];
    uint8_t order[MAXN][MAXN - 1]; /* the other cities, nearest first */
    int32_t minedge[MAXN];
};

static void cities_make(struct cities *c, uint32_t n, uint64_t seed)
{
    double x[MAXN], y[MAXN];
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (uint32_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (double)(s >> 40) / (double)(1u << 24) * 1000;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        y[i] = (double)(s >> 40) / (double)(1u << 24) * 1000;
    }
    c->n = n;
    for (uint32_t i = 0; i < n; i++) {
        c->minedge[i] = INT32_MAX;
        for (uint32_t j = 0; j < n; j++) {
            c->d[i][j] = (int32_t)lround(hypot(x[i] - x[j], y[i] - y[j]));
            if (j != i && c->d[i][j] < c->minedge[i])
                c->minedge[i] = c->d[i][j];
        }
    }
    for (uint32_t i = 0; i < n; i++) { /* insertion: nearest, then lowest first */
        uint32_t k = 0;
        for (uint32_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            uint32_t at = k++;
            for (; at > 0 && c->d[i][c->order[i][at - 1]] > c->d[i][j]; at--)
                c->order[i][at] = c->order[i][at - 1];
            c->order[i][at] = (uint8_t)j;
        }
    }
}

/* ---------------------------------------------------------------- the bound */

/* The best tour: its length, then its cities from 0. */
struct best {
    int32_t len;
    uint8_t tour[MAXN];
};

/* Shorter, or as short and first city by city. */
static int better(int32_t len, const uint8_t *tour, const struct best *b, uint32_t n)
{
    return len < b->len || (len == b->len && memcmp(tour, b->tour, n) < 0);
}

static void best_init(void *state, const void *arg, size_t len, void *user)
{
    (void)user;
    memcpy(state, arg, len);
}

/* The write: a tour found ([struct best]); the result, the best after it. */
static size_t best_offer(void *state, const void *arg, size_t len, void *res, void *user)
{
    const struct cities *c = user;
    struct best *b = state, o;
    (void)len;
    memcpy(&o, arg, sizeof o);
    if (better(o.len, o.tour, b, c->n))
        *b = o;
    memcpy(res, b, sizeof *b);
    return sizeof *b;
}

static size_t best_read(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    memcpy(res, state, sizeof(struct best));
    return sizeof(struct best);
}

enum { OFFER, READ };

/* ---------------------------------------------------------------- the queue */

/* Every job (depth cities after 0 each), handed out in order. */
struct queue {
    uint32_t depth, count, next, closed;
    uint8_t job[];
};

static void queue_init(void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    memcpy(&((struct queue *)state)->depth, arg, sizeof(uint32_t));
}

/* The write: jobs to add, depth bytes each. */
static size_t queue_put(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)res, (void)user;
    struct queue *q = state;
    memcpy(q->job + (size_t)q->count * q->depth, arg, len);
    q->count += (uint32_t)(len / q->depth);
    return 0;
}

static size_t queue_close(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)res, (void)user;
    ((struct queue *)state)->closed = 1;
    return 0;
}

static int queue_ready(const void *state, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    const struct queue *q = state;
    return q->next < q->count || q->closed;
}

/* The next job, or nothing (0 bytes) once closed and empty. */
static size_t queue_get(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    struct queue *q = state;
    if (q->next == q->count)
        return 0;
    memcpy(res, q->job + (size_t)q->next++ * q->depth, q->depth);
    return q->depth;
}

enum { PUT, CLOSE, GET };

/* ---------------------------------------------------------------- search */

struct search {
    const struct cities *c;
    struct best best; /* this searcher's view of the bound */
    uint8_t path[MAXN];
    uint32_t visited; /* bit per city */
    uint64_t nodes;
    /* Parallel: the bound object and the endpoint; NULL: sequential. */
    flit_object_t *bound;
    flit_ep_t *ep;
};

static void bound_refresh(struct search *s)
{
    app_poll(s->ep);
    app_invoke(s->bound, READ, NULL, 0, &s->best, sizeof s->best, NULL, "read bound");
}

static void found(struct search *s, int32_t len)
{
    if (!better(len, s->path, &s->best, s->c->n))
        return;
    struct best o = {len, {0}};
    memcpy(o.tour, s->path, s->c->n);
    if (!s->bound) {
        s->best = o;
        return;
    }
    app_invoke(s->bound, OFFER, &o, sizeof o, &s->best, sizeof s->best, NULL, "offer");
}

/* The tours that go on from path[0 .. k-1] (len so far; rest: the sum of
   the unvisited cities' shortest edges). */
static void dfs(struct search *s, uint32_t k, int32_t len, int32_t rest)
{
    const struct cities *c = s->c;
    if (s->bound && ++s->nodes % EVERY == 0)
        bound_refresh(s);
    uint32_t last = s->path[k - 1];
    /* Every city still to leave (last and the unvisited) costs at least its
       shortest edge. Strictly above: ties are searched too. */
    if (len + c->minedge[last] + rest > s->best.len)
        return;
    if (k == c->n) {
        found(s, len + c->d[last][0]);
        return;
    }
    for (uint32_t t = 0; t < c->n - 1; t++) {
        uint32_t next = c->order[last][t];
        if (next == 0 || (s->visited >> next & 1))
            continue;
        s->path[k] = (uint8_t)next;
        s->visited |= 1u << next;
        dfs(s, k + 1, len + c->d[last][next], rest - c->minedge[next]);
        s->visited &= ~(1u << next);
    }
}

/* The search below a prefix: path[0] = 0, then the job's cities. */
static void search_from(struct search *s, const uint8_t *job, uint32_t depth)
{
    const struct cities *c = s->c;
    int32_t len = 0, rest = 0;
    s->path[0] = 0;
    s->visited = 1;
    for (uint32_t i = 1; i < c->n; i++)
        rest += c->minedge[i];
    for (uint32_t i = 0; i < depth; i++) {
        s->path[i + 1] = job[i];
        s->visited |= 1u << job[i];
        len += c->d[s->path[i]][job[i]];
        rest -= c->minedge[job[i]];
    }
    dfs(s, depth + 1, len, rest);
}

/* Every prefix of depth cities after 0, in the order the search meets them. */
static uint32_t jobs_make(const struct cities *c, uint32_t depth, uint8_t *out,
                          uint8_t *path, uint32_t k, uint32_t visited)
{
    if (k == depth + 1) {
        memcpy(out, path + 1, depth);
        return 1;
    }
    uint32_t made = 0;
    for (uint32_t t = 0; t < c->n - 1; t++) {
        uint32_t next = c->order[path[k - 1]][t];
        if (next == 0 || (visited >> next & 1))
            continue;
        path[k] = (uint8_t)next;
        made += jobs_make(c, depth, out + (size_t)made * depth, path, k + 1,
                          visited | 1u << next);
    }
    return made;
}

/* The nearest-neighbour tour: the first bound. */
static struct best greedy(const struct cities *c)
{
    struct best b = {0, {0}};
    uint32_t visited = 1, last = 0;
    for (uint32_t k = 1; k < c->n; k++) {
        uint32_t t = 0;
        while (visited >> c->order[last][t] & 1)
            t++;
        uint32_t next = c->order[last][t];
        b.tour[k] = (uint8_t)next;
        b.len += c->d[last][next];
        visited |= 1u << next;
        last = next;
    }
    b.len += c->d[last][0];
    return b;
}

static uint64_t jobs_count(uint32_t n, uint32_t depth)
{
    uint64_t k = 1;
    for (uint32_t i = 0; i < depth; i++)
        k *= n - 1 - i;
    return k;
}

static void print_tour(const char *what, const struct best *b, uint32_t n)
{
    printf("tsp: %s: length %d:", what, b->len);
    for (uint32_t i = 0; i < n; i++)
        printf(" %u", b->tour[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    uint32_t n = app_arg(argc, argv, "--n", 13), seed = app_arg(argc, argv, "--seed", 1),
             depth = app_arg(argc, argv, "--depth", 3);
    if (n < 3 || n > MAXN) {
        fprintf(stderr, "tsp: --n %u: from 3 to %d cities\n", n, MAXN);
        return 1;
    }
    if (depth < 1 || depth > n - 2) {
        fprintf(stderr, "tsp: --depth %u: from 1 to %u (--n minus 2)\n", depth, n - 2);
        return 1;
    }
    static struct cities c;
    cities_make(&c, n, seed);
    uint64_t njobs = jobs_count(n, depth);
    app_check(flit_init(NULL), "flit_init");
    uint32_t me = flit_job_rank().idx, p = flit_job_size();
    flit_ep_t *ep;
    flit_object_t *bound, *queue;
    /* Collective: every rank; the endpoint comes with its object layer. */
    flit_ep_params_t ep_p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "object"};
    app_check(flit_ep_create(&ep_p, &ep), "flit_ep_create");
    static const flit_object_op_t best_ops[] = {
        [OFFER] = {FLIT_OBJECT_WRITE, sizeof(struct best), sizeof(struct best),
                   best_offer, NULL},
        [READ] = {FLIT_OBJECT_READ, 0, sizeof(struct best), best_read, NULL},
    };
    flit_object_type_t best_type = {.state_size = sizeof(struct best),
                                    .init = best_init,
                                    .ops = best_ops,
                                    .nops = 2,
                                    .user = &c};
    flit_object_op_t queue_ops[] = {
        [PUT] = {FLIT_OBJECT_WRITE, njobs * depth, 0, queue_put, NULL},
        [CLOSE] = {FLIT_OBJECT_WRITE, 0, 0, queue_close, NULL},
        [GET] = {FLIT_OBJECT_WRITE, 0, depth, queue_get, queue_ready},
    };
    flit_object_type_t queue_type = {.state_size = sizeof(struct queue) + njobs * depth,
                                     .init = queue_init,
                                     .ops = queue_ops,
                                     .nops = 3};
    struct best first = greedy(&c);
    app_check(flit_object_open(ep, 1, &best_type, NULL, 0, FLIT_OBJECT_REPLICATED,
                               flit_rank(0), &first, sizeof first, &bound),
              "flit_object_open");
    app_check(flit_object_open(ep, 2, &queue_type, NULL, 0, FLIT_OBJECT_OWNED,
                               flit_rank(0), &depth, sizeof depth, &queue),
              "flit_object_open");

    uint8_t *jobs = NULL, path[MAXN] = {0}, job[MAXN];
    app_check(flit_barrier(ep), "flit_barrier");
    double t0 = app_now(), c0 = app_cpu();
    if (me == 0) { /* the manager: every job, then closed */
        if (!(jobs = malloc(njobs * depth)))
            app_check(FLIT_ERR_NO_MEMORY, "malloc");
        jobs_make(&c, depth, jobs, path, 1, 1);
        app_invoke(queue, PUT, jobs, njobs * depth, NULL, 0, NULL, "put");
        app_invoke(queue, CLOSE, NULL, 0, NULL, 0, NULL, "close");
    }
    struct search s = {.c = &c, .bound = bound, .ep = ep};
    uint64_t done = 0;
    for (;;) {
        size_t got;
        /* Rank 0's own "get" is local: serve the others' first. */
        app_poll(ep);
        app_invoke(queue, GET, NULL, 0, job, sizeof job, &got, "get");
        if (got == 0)
            break;
        app_invoke(bound, READ, NULL, 0, &s.best, sizeof s.best, NULL, "read bound");
        search_from(&s, job, depth);
        done++;
    }
    app_check(flit_barrier(ep), "flit_barrier");
    /* A write after the barrier is ordered after every write before it:
       once it is applied here, so are they. */
    struct best none = {INT32_MAX, {0}}, final;
    app_invoke(bound, OFFER, &none, sizeof none, &final, sizeof final, NULL, "offer");
    double t = app_now() - t0, cpu = app_cpu() - c0, in_flit = app_in_flit;
    flit_object_stats_t sb = {.struct_size = sizeof sb}, sq = {.struct_size = sizeof sq};
    app_check(flit_object_stats(bound, &sb), "flit_object_stats");
    app_check(flit_object_stats(queue, &sq), "flit_object_stats");
    unsigned long long msgs = app_messages(ep);

    int rc = 0;
    if (me == 0) {
        struct search q = {.c = &c, .best = first};
        double s0 = app_now();
        search_from(&q, NULL, 0);
        double ts = app_now() - s0;
        rc = final.len != q.best.len || memcmp(final.tour, q.best.tour, n) != 0;
        print_tour("shared best", &final, n);
        print_tour("sequential", &q.best, n);
        printf("tsp: n %u cities (seed %u, %llu jobs), %u ranks: %.3f s (sequential %.3f "
               "s), %llu reads %llu writes on rank 0, %llu messages sent; result %s the "
               "sequential one (rank 0 did %llu jobs)\n",
               n, seed, (unsigned long long)njobs, p, t, ts,
               (unsigned long long)(sb.reads + sq.reads),
               (unsigned long long)(sb.writes + sq.writes), msgs,
               rc ? "DIFFERS from" : "identical to", (unsigned long long)done);
        app_profile("tsp", t, cpu, in_flit);
    }
    free(jobs);
    app_check(flit_barrier(ep), "flit_barrier");
    app_check(flit_object_destroy(queue), "flit_object_destroy");
    app_check(flit_object_destroy(bound), "flit_object_destroy");
    app_check(flit_ep_destroy(ep), "flit_ep_destroy");
    app_check(flit_finalize(), "flit_finalize");
    return rc;
}
