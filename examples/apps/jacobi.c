/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Jacobi's method for A x = b on shared objects (Orca's second application):
 * the solution vector is one replicated object. Each rank computes its rows
 * of the next iterate from its local copy and writes them (a write, ordered
 * and applied by every copy); a guarded read waits until every rank's rows
 * of that iteration are in. Rank 0 then checks the result bit for bit
 * against a sequential run of the same iterations, and prints the time,
 * the object operations and the messages.
 *
 *     flitrun -n 2 jacobi [--n 256] [--iters 100]
 */
#include "app.h"

/* The shared vector: two iterates (by parity) and the rows written so far. */
struct vec {
    uint32_t n;
    uint64_t rows; /* rows written, all iterations together */
    double x[];    /* x[0 .. n-1]: even iterates, x[n .. 2n-1]: odd */
};

/* The write: [uint32 iteration, uint32 first row][double values...]. */
static size_t put_rows(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)res, (void)user;
    struct vec *v = state;
    uint32_t hdr[2];
    memcpy(hdr, arg, sizeof hdr);
    size_t k = (len - sizeof hdr) / sizeof(double);
    memcpy(&v->x[(size_t)(hdr[0] % 2) * v->n + hdr[1]], (const char *)arg + sizeof hdr,
           k * sizeof(double));
    v->rows += k;
    return 0;
}

/* The guarded read: iterate k (argument) once all its rows are in. */
static int all_rows(const void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    const struct vec *v = state;
    uint32_t k;
    memcpy(&k, arg, sizeof k);
    return v->rows >= (uint64_t)v->n * k;
}

static size_t get_rows(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    struct vec *v = state;
    uint32_t k;
    memcpy(&k, arg, sizeof k);
    memcpy(res, &v->x[(size_t)(k % 2) * v->n], v->n * sizeof(double));
    return v->n * sizeof(double);
}

static void init_vec(void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    struct vec *v = state;
    memcpy(&v->n, arg, sizeof v->n); /* x_0 = 0, as calloc left it */
}

static double a_of(uint32_t n, uint32_t i, uint32_t j)
{
    if (i != j)
        return 1.0 / (1.0 + (i > j ? i - j : j - i));
    (void)n;
    return 40.0; /* above twice any row's other entries (2 ln n + 2): dominant */
}

/* Row i of the next iterate from x: the same arithmetic everywhere. */
static double row(uint32_t n, uint32_t i, const double *x)
{
    double s = (double)(i % 7 + 1);
    for (uint32_t j = 0; j < n; j++)
        if (j != i)
            s -= a_of(n, i, j) * x[j];
    return s / a_of(n, i, i);
}

int main(int argc, char **argv)
{
    uint32_t n = app_arg(argc, argv, "--n", 256),
             iters = app_arg(argc, argv, "--iters", 100);
    app_check(flit_init(NULL), "flit_init");
    uint32_t me = flit_job_rank().idx, p = flit_job_size();
    flit_ep_t *ep;
    flit_object_t *x;
    /* Collective: every rank; the endpoint comes with its object layer. */
    flit_ep_params_t ep_p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "object"};
    app_check(flit_ep_create(&ep_p, &ep), "flit_ep_create");
    size_t vec_bytes = n * sizeof(double);
    flit_object_op_t ops[] = {
        {FLIT_OBJECT_WRITE, 8 + vec_bytes, 0, put_rows, NULL},
        {FLIT_OBJECT_READ, 4, vec_bytes, get_rows, all_rows},
    };
    flit_object_type_t type = {.state_size = sizeof(struct vec) + 2 * vec_bytes,
                               .init = init_vec,
                               .ops = ops,
                               .nops = 2};
    app_check(flit_object_open(ep, 1, &type, NULL, 0, FLIT_OBJECT_REPLICATED,
                               flit_rank(0), &n, sizeof n, &x),
              "flit_object_open");

    uint32_t lo = (uint32_t)((uint64_t)n * me / p),
             hi = (uint32_t)((uint64_t)n * (me + 1) / p);
    double *cur = calloc(n, sizeof(double));
    char *out = malloc(8 + vec_bytes);
    if (!cur || !out)
        app_check(FLIT_ERR_NO_MEMORY, "malloc");
    app_check(flit_barrier(ep), "flit_barrier");
    double t0 = app_now(), c0 = app_cpu();
    for (uint32_t k = 0; k < iters; k++) {
        uint32_t hdr[2] = {k + 1, lo};
        memcpy(out, hdr, sizeof hdr);
        for (uint32_t i = lo; i < hi; i++) {
            double v = row(n, i, cur);
            memcpy(out + 8 + (size_t)(i - lo) * sizeof v, &v, sizeof v);
        }
        app_invoke(x, 0, out, 8 + (size_t)(hi - lo) * sizeof(double), NULL, 0, NULL,
                   "put rows");
        uint32_t next = k + 1;
        app_invoke(x, 1, &next, sizeof next, cur, vec_bytes, NULL, "get rows");
    }
    double t = app_now() - t0, cpu = app_cpu() - c0, in_flit = app_in_flit;
    flit_object_stats_t st = {.struct_size = sizeof st};
    app_check(flit_object_stats(x, &st), "flit_object_stats");
    unsigned long long msgs = app_messages(ep);

    int rc = 0;
    if (me == 0) { /* the same iterations, sequentially */
        double *a = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double));
        if (!a || !b)
            app_check(FLIT_ERR_NO_MEMORY, "malloc");
        double s0 = app_now();
        for (uint32_t k = 0; k < iters; k++) {
            for (uint32_t i = 0; i < n; i++)
                b[i] = row(n, i, a);
            double *tmp = a;
            a = b;
            b = tmp;
        }
        double ts = app_now() - s0;
        rc = memcmp(a, cur, vec_bytes) != 0;
        printf("jacobi: n %u, %u iterations, %u ranks: %.3f s (sequential %.3f s), "
               "%llu reads %llu writes on rank 0, %llu messages sent; result %s the "
               "sequential one\n",
               n, iters, p, t, ts, (unsigned long long)st.reads,
               (unsigned long long)st.writes, msgs, rc ? "DIFFERS from" : "identical to");
        app_profile("jacobi", t, cpu, in_flit);
        free(a);
        free(b);
    }
    free(cur);
    free(out);
    app_check(flit_object_destroy(x), "flit_object_destroy");
    app_check(flit_ep_destroy(ep), "flit_ep_destroy");
    app_check(flit_finalize(), "flit_finalize");
    return rc;
}
