/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * docs/objects.md's shared objects: a replicated counter and a job queue owned by
 * rank 0, whose "get" waits (a guard) until there is a job or the queue is
 * closed. Run it as flitrun -n 3 object_jobs.
 */
#include <flit/object.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(flit_status st, const char *what)
{
    if (st != FLIT_OK) {
        fprintf(stderr, "%s: %s\n", what, flit_strerror(st));
        exit(1);
    }
}

/* The counter: add (a write: every copy applies it, in one order). */
static size_t add(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    int64_t *v = state, by;
    memcpy(&by, arg, sizeof by);
    *v += by;
    memcpy(res, v, sizeof *v);
    return sizeof *v;
}
static const flit_object_op_t counter_ops[] = {
    {FLIT_OBJECT_WRITE, sizeof(int64_t), sizeof(int64_t), add, NULL},
};
static const flit_object_type_t counter = {
    .state_size = sizeof(int64_t), .ops = counter_ops, .nops = 1};

/* The job queue: put and close by the producer, get by everyone. */
struct queue {
    int64_t job[16];
    unsigned head, count, closed;
};
static int has_room(const void *s, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    return ((const struct queue *)s)->count < 16;
}
static int has_job(const void *s, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    const struct queue *q = s;
    return q->count > 0 || q->closed;
}
static size_t put(void *s, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)res, (void)user;
    struct queue *q = s;
    memcpy(&q->job[(q->head + q->count++) % 16], arg, sizeof(int64_t));
    return 0;
}
static size_t close_q(void *s, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)res, (void)user;
    ((struct queue *)s)->closed = 1;
    return 0;
}
static size_t get(void *s, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    struct queue *q = s;
    int64_t job = -1; /* closed and empty: no more jobs */
    if (q->count > 0) {
        job = q->job[q->head];
        q->head = (q->head + 1) % 16;
        q->count--;
    }
    memcpy(res, &job, sizeof job);
    return sizeof job;
}
enum { PUT, CLOSE, GET };
static const flit_object_op_t queue_ops[] = {
    [PUT] = {FLIT_OBJECT_WRITE, sizeof(int64_t), 0, put, has_room},
    [CLOSE] = {FLIT_OBJECT_WRITE, 0, 0, close_q, NULL},
    [GET] = {FLIT_OBJECT_WRITE, 0, sizeof(int64_t), get, has_job},
};
static const flit_object_type_t queue = {
    .state_size = sizeof(struct queue), .ops = queue_ops, .nops = 3};

int main(void)
{
    flit_ep_t *ep;
    flit_object_t *sum, *jobs;
    check(flit_init(NULL), "flit_init");
    /* Collective: every rank; the endpoint comes with its object layer. */
    flit_ep_params_t ep_p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "object"};
    check(flit_ep_create(&ep_p, &ep), "flit_ep_create");
    /* Collective over the job (NULL, 0): object 1 replicated, 2 owned by 0. */
    check(flit_object_open(ep, 1, &counter, NULL, 0, FLIT_OBJECT_REPLICATED, flit_rank(0),
                           NULL, 0, &sum),
          "flit_object_open");
    check(flit_object_open(ep, 2, &queue, NULL, 0, FLIT_OBJECT_OWNED, flit_rank(0), NULL,
                           0, &jobs),
          "flit_object_open");

    uint32_t me = flit_job_rank().idx;
    int64_t job, total, done = 0;
    if (me == 0) { /* the producer: 100 jobs, waiting while the queue is full */
        for (job = 1; job <= 100; job++)
            check(flit_object_invoke(jobs, PUT, &job, sizeof job, NULL, 0, NULL), "put");
        check(flit_object_invoke(jobs, CLOSE, NULL, 0, NULL, 0, NULL), "close");
    }
    for (;;) { /* everyone: take jobs until there are none, add them up */
        check(flit_object_invoke(jobs, GET, NULL, 0, &job, sizeof job, NULL), "get");
        if (job < 0)
            break;
        check(flit_object_invoke(sum, 0, &job, sizeof job, &total, sizeof total, NULL),
              "add");
        done++;
    }
    check(flit_barrier(ep), "flit_barrier");
    /* A write after the barrier is ordered after every write before it. */
    int64_t zero = 0;
    check(flit_object_invoke(sum, 0, &zero, sizeof zero, &total, sizeof total, NULL),
          "add");
    printf("jobs: rank %u did %lld jobs; their sum is %lld\n", me, (long long)done,
           (long long)total);

    check(flit_object_destroy(jobs), "flit_object_destroy"); /* collective */
    check(flit_object_destroy(sum), "flit_object_destroy");
    check(flit_ep_destroy(ep), "flit_ep_destroy");
    check(flit_finalize(), "flit_finalize");
    return total == 5050 ? 0 : 1;
}
