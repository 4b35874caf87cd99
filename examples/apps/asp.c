/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * All-pairs shortest paths (Floyd-Warshall) on shared objects, as Orca's
 * ASP: each rank owns a band of rows; at step k the owner of row k writes
 * it into a replicated object (the pivot row's broadcast: a write, applied
 * by every copy), and every rank's guarded read waits for it. At the end
 * each rank writes its rows there too, and rank 0 checks the whole matrix
 * bit for bit against a sequential run, printing time, object operations
 * and messages.
 *
 *     flitrun -n 2 asp [--n 200]
 */
#include "app.h"

#define INF 1000000000

/* n*n pivot rows, n*n final rows, and which of each are in. */
struct rows {
    uint32_t n, finals;
    int32_t *pivot, *final; /* into data */
    uint8_t *have;          /* pivot row k written */
    int32_t data[];
};

static void init_rows(void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    struct rows *r = state;
    memcpy(&r->n, arg, sizeof r->n);
    r->pivot = r->data;
    r->final = r->data + (size_t)r->n * r->n;
    r->have = (uint8_t *)(r->final + (size_t)r->n * r->n);
}

/* [uint32 which (0 pivot, 1 final), uint32 row][int32 values, n] */
static size_t put_row(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)res, (void)user;
    struct rows *r = state;
    uint32_t h[2];
    memcpy(h, arg, sizeof h);
    int32_t *to = (h[0] ? r->final : r->pivot) + (size_t)h[1] * r->n;
    memcpy(to, (const char *)arg + sizeof h, r->n * sizeof(int32_t));
    if (h[0])
        r->finals++;
    else
        r->have[h[1]] = 1;
    return 0;
}

static int pivot_in(const void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    const struct rows *r = state;
    uint32_t k;
    memcpy(&k, arg, sizeof k);
    return r->have[k];
}

static size_t get_pivot(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    struct rows *r = state;
    uint32_t k;
    memcpy(&k, arg, sizeof k);
    memcpy(res, r->pivot + (size_t)k * r->n, r->n * sizeof(int32_t));
    return r->n * sizeof(int32_t);
}

static int finals_in(const void *state, const void *arg, size_t len, void *user)
{
    (void)arg, (void)len, (void)user;
    const struct rows *r = state;
    return r->finals == r->n;
}

static size_t get_finals(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)arg, (void)len, (void)user;
    struct rows *r = state;
    memcpy(res, r->final, (size_t)r->n * r->n * sizeof(int32_t));
    return (size_t)r->n * r->n * sizeof(int32_t);
}

/* The graph: a deterministic sparse-ish set of weighted edges. */
static int32_t edge(uint32_t n, uint32_t i, uint32_t j)
{
    if (i == j)
        return 0;
    uint64_t h = ((uint64_t)i * n + j) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return h % 4 == 0 ? (int32_t)(h % 97 + 1) : INF;
}

static void relax(uint32_t n, int32_t *row, const int32_t *pivot, uint32_t k)
{
    int32_t dk = row[k];
    if (dk >= INF)
        return;
    for (uint32_t j = 0; j < n; j++)
        if (pivot[j] < INF && dk + pivot[j] < row[j])
            row[j] = dk + pivot[j];
}

int main(int argc, char **argv)
{
    uint32_t n = app_arg(argc, argv, "--n", 200);
    app_check(flit_init(NULL), "flit_init");
    uint32_t me = flit_job_rank().idx, p = flit_job_size();
    flit_ep_t *ep;
    flit_object_t *obj;
    /* Collective: every rank; the endpoint comes with its object layer. */
    flit_ep_params_t ep_p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "object"};
    app_check(flit_ep_create(&ep_p, &ep), "flit_ep_create");
    size_t row_bytes = n * sizeof(int32_t), all = (size_t)n * row_bytes;
    flit_object_op_t ops[] = {
        {FLIT_OBJECT_WRITE, 8 + row_bytes, 0, put_row, NULL},
        {FLIT_OBJECT_READ, 4, row_bytes, get_pivot, pivot_in},
        {FLIT_OBJECT_READ, 0, all, get_finals, finals_in},
    };
    flit_object_type_t type = {.state_size = sizeof(struct rows) + 2 * all + n,
                               .init = init_rows,
                               .ops = ops,
                               .nops = 3};
    app_check(flit_object_open(ep, 1, &type, NULL, 0, FLIT_OBJECT_REPLICATED,
                               flit_rank(0), &n, sizeof n, &obj),
              "flit_object_open");

    uint32_t lo = (uint32_t)((uint64_t)n * me / p),
             hi = (uint32_t)((uint64_t)n * (me + 1) / p);
    int32_t *d = malloc(all), *pivot = malloc(row_bytes);
    char *out = malloc(8 + row_bytes);
    if (!d || !pivot || !out)
        app_check(FLIT_ERR_NO_MEMORY, "malloc");
    for (uint32_t i = lo; i < hi; i++)
        for (uint32_t j = 0; j < n; j++)
            d[(size_t)i * n + j] = edge(n, i, j);
    app_check(flit_barrier(ep), "flit_barrier");
    double t0 = app_now(), c0 = app_cpu();
    for (uint32_t k = 0; k < n; k++) {
        if (k >= lo && k < hi) { /* the pivot row is ours: broadcast it */
            uint32_t h[2] = {0, k};
            memcpy(out, h, sizeof h);
            memcpy(out + 8, d + (size_t)k * n, row_bytes);
            app_invoke(obj, 0, out, 8 + row_bytes, NULL, 0, NULL, "put");
        }
        app_invoke(obj, 1, &k, sizeof k, pivot, row_bytes, NULL, "get");
        for (uint32_t i = lo; i < hi; i++)
            relax(n, d + (size_t)i * n, pivot, k);
    }
    double t = app_now() - t0, cpu = app_cpu() - c0, in_flit = app_in_flit;
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t h[2] = {1, i};
        memcpy(out, h, sizeof h);
        memcpy(out + 8, d + (size_t)i * n, row_bytes);
        app_invoke(obj, 0, out, 8 + row_bytes, NULL, 0, NULL, "final");
    }
    flit_object_stats_t st = {.struct_size = sizeof st};
    app_check(flit_object_stats(obj, &st), "flit_object_stats");
    unsigned long long msgs = app_messages(ep);

    int rc = 0;
    if (me == 0) {
        int32_t *got = malloc(all), *s = malloc(all);
        if (!got || !s)
            app_check(FLIT_ERR_NO_MEMORY, "malloc");
        app_invoke(obj, 2, NULL, 0, got, all, NULL, "finals");
        double s0 = app_now();
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                s[(size_t)i * n + j] = edge(n, i, j);
        for (uint32_t k = 0; k < n; k++)
            for (uint32_t i = 0; i < n; i++)
                relax(n, s + (size_t)i * n, s + (size_t)k * n, k);
        double ts = app_now() - s0;
        rc = memcmp(s, got, all) != 0;
        printf(
            "asp: n %u, %u ranks: %.3f s (sequential %.3f s), %llu reads %llu writes on "
            "rank 0, %llu messages sent; result %s the sequential one\n",
            n, p, t, ts, (unsigned long long)st.reads, (unsigned long long)st.writes,
            msgs, rc ? "DIFFERS from" : "identical to");
        app_profile("asp", t, cpu, in_flit);
        free(got);
        free(s);
    }
    free(d);
    free(pivot);
    free(out);
    app_check(flit_barrier(ep), "flit_barrier");
    app_check(flit_object_destroy(obj), "flit_object_destroy");
    app_check(flit_ep_destroy(ep), "flit_ep_destroy");
    app_check(flit_finalize(), "flit_finalize");
    return rc;
}
