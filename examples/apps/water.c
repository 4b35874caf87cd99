/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Water, after the SPLASH n-body simulation of water molecules as Orca ran
 * it: the molecules are split into bands over the ranks, and each rank has
 * one owned object holding its molecules' positions. At each time step a
 * rank writes its positions there (a local write: it owns the object), then
 * fetches from every other rank's object, by a remote object invocation,
 * the molecules that lie within the cutoff of its own (the owner selects
 * them; a guarded read waits until the owner has written that step),
 * computes the forces on its molecules and moves them. Rank 0 then fetches
 * every molecule and checks the positions bit for bit against a sequential
 * run of the same steps, and prints the time, the object operations and the
 * messages.
 *
 * The force field is simplified, not SPLASH's: each molecule is three
 * sites, O and two H, with SPC/Fw's charges and Lennard-Jones oxygen; two
 * molecules interact when their oxygens are closer than the cutoff (the
 * cutoff is by molecule, as in SPLASH): Lennard-Jones between the oxygens
 * and Coulomb between the nine site pairs, truncated there. Inside a
 * molecule: harmonic O-H bonds and a harmonic H-H distance standing for the
 * angle. No periodic box: a cube of molecules in vacuum, turned at random
 * on a lattice, far from equilibrium: it warms up over the first hundred
 * femtoseconds or so (the run prints the temperature before and after).
 * Velocity Verlet, in angstrom, femtosecond, amu and kcal/mol.
 *
 * Bit for bit: the force on a molecule is summed in the same order in both
 * runs, by the same function: its own bonds, then the molecules of the 27
 * cells (of the cutoff's size, on a grid fixed in space) around its oxygen,
 * cell by cell and by index inside a cell, those beyond the cutoff skipped.
 * A rank knows every molecule within the cutoff of its own, so its cells
 * give the same molecules within the cutoff in the same order.
 *
 *     flitrun -n 2 water [--n 512] [--steps 10]
 */
#include "app.h"

#include <math.h>

#define PI      3.14159265358979323846
#define SITES   3 /* O, H1, H2 */
#define DOF     (SITES * 3)
#define DT      0.5                   /* fs */
#define CONV    4.184e-4              /* kcal/mol/A per amu -> A/fs^2 */
#define KE      332.0637              /* Coulomb, kcal A / (mol e^2) */
#define CUTOFF  9.0                   /* A, between oxygens */
#define SPACING 3.1                   /* A, between lattice points */
#define KB_K    0.0019872             /* Boltzmann, kcal/mol/K */
#define LJ_SIG  3.165492              /* A */
#define LJ_EPS  0.1554253             /* kcal/mol */
#define OH_K    1059.162              /* kcal/mol/A^2 */
#define OH_R0   1.012                 /* A */
#define HH_K    100.0                 /* kcal/mol/A^2 */
#define HH_R0   1.6903                /* A: 2 OH_R0 sin(113.24 deg / 2) */
#define MARGIN  (CUTOFF * 1.01 + 0.1) /* the owner's selection: beyond rounding */

static const double mass[SITES] = {15.9994, 1.008, 1.008};
static const double charge[SITES] = {-0.82, 0.41, 0.41};

/* ---------------------------------------------------------------- physics */

static double unit_rand(uint64_t *s) /* splitmix64, in [0, 1) */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* Molecule i of n: on a cubic lattice, jittered, turned at random, with
   thermal velocities of about 300 K. */
static void molecule_init(uint32_t n, uint32_t i, double *x, double *v)
{
    uint32_t m = 1;
    while ((uint64_t)m * m * m < n)
        m++;
    uint64_t s = 0x5eed0000ull + i;
    double o[3] = {(i % m) * SPACING, (i / m % m) * SPACING,
                   (double)(i / m / m) * SPACING};
    for (int a = 0; a < 3; a++)
        o[a] += 0.2 * (unit_rand(&s) - 0.5);
    double th = acos(2 * unit_rand(&s) - 1), ph = 2 * PI * unit_rand(&s);
    double u[3] = {sin(th) * cos(ph), sin(th) * sin(ph), cos(th)};
    double w[3] = {-sin(ph), cos(ph), 0}; /* perpendicular to u */
    double half = 113.24 / 2 * PI / 180;
    for (int a = 0; a < 3; a++) {
        x[a] = o[a];
        x[3 + a] = o[a] + OH_R0 * (cos(half) * u[a] + sin(half) * w[a]);
        x[6 + a] = o[a] + OH_R0 * (cos(half) * u[a] - sin(half) * w[a]);
    }
    for (int k = 0; k < SITES; k++) {
        double sd = sqrt(KB_K * 300 * CONV / mass[k]) * sqrt(3.0);
        for (int a = 0; a < 3; a++)
            v[k * 3 + a] = sd * (2 * unit_rand(&s) - 1);
    }
}

/* A harmonic spring between sites a and b of one molecule. */
static void spring(const double *x, double *f, int a, int b, double k, double r0)
{
    double d[3], r2 = 0;
    for (int c = 0; c < 3; c++) {
        d[c] = x[a * 3 + c] - x[b * 3 + c];
        r2 += d[c] * d[c];
    }
    double r = sqrt(r2), s = -k * (r - r0) / r;
    for (int c = 0; c < 3; c++) {
        f[a * 3 + c] += s * d[c];
        f[b * 3 + c] -= s * d[c];
    }
}

/* Adds to fi the force of molecule xj on molecule xi, if within the cutoff. */
static void pair(const double *xi, const double *xj, double *fi)
{
    double d[3], r2 = 0;
    for (int c = 0; c < 3; c++) {
        d[c] = xi[c] - xj[c];
        r2 += d[c] * d[c];
    }
    if (r2 >= CUTOFF * CUTOFF)
        return;
    double s2 = LJ_SIG * LJ_SIG / r2, s6 = s2 * s2 * s2;
    double lj = 24 * LJ_EPS * (2 * s6 * s6 - s6) / r2;
    for (int c = 0; c < 3; c++)
        fi[c] += lj * d[c];
    for (int a = 0; a < SITES; a++)
        for (int b = 0; b < SITES; b++) {
            double e[3], q2 = 0;
            for (int c = 0; c < 3; c++) {
                e[c] = xi[a * 3 + c] - xj[b * 3 + c];
                q2 += e[c] * e[c];
            }
            double k = KE * charge[a] * charge[b] / (q2 * sqrt(q2));
            for (int c = 0; c < 3; c++)
                fi[a * 3 + c] += k * e[c];
        }
}

/* The known molecules by cell of the oxygen, in cells of CUTOFF on a grid
   fixed in space: whichever molecules a run knows, the ones within the
   cutoff of a molecule come out of its 27 cells in one order (cell by cell,
   by index inside each). */
struct cells {
    int64_t c0[3], dim[3];
    uint32_t *start; /* dim[0]*dim[1]*dim[2] + 1 */
    uint32_t *list;
};

static int64_t cell_of(double x)
{
    return (int64_t)floor(x / CUTOFF);
}

static size_t cell_index(const struct cells *g, const int64_t c[3])
{
    return (size_t)(((c[2] - g->c0[2]) * g->dim[1] + c[1] - g->c0[1]) * g->dim[0] + c[0] -
                    g->c0[0]);
}

static void cells_build(struct cells *g, const double *pos, const uint32_t *cand,
                        uint32_t ncand)
{
    int64_t hi[3];
    for (int a = 0; a < 3; a++) {
        g->c0[a] = INT64_MAX;
        hi[a] = INT64_MIN;
    }
    for (uint32_t k = 0; k < ncand; k++)
        for (int a = 0; a < 3; a++) {
            int64_t c = cell_of(pos[(size_t)cand[k] * DOF + a]);
            g->c0[a] = c < g->c0[a] ? c : g->c0[a];
            hi[a] = c > hi[a] ? c : hi[a];
        }
    size_t total = 1;
    for (int a = 0; a < 3; a++) {
        g->dim[a] = hi[a] - g->c0[a] + 1;
        total *= (size_t)g->dim[a];
    }
    if (total > ((size_t)1 << 24)) { /* molecules flew apart: a bug here */
        fprintf(stderr, "water: the molecules span %zu cells\n", total);
        exit(1);
    }
    g->start = calloc(total + 1, sizeof *g->start);
    g->list = malloc((ncand ? ncand : 1) * sizeof *g->list);
    size_t *at = malloc(ncand ? ncand * sizeof *at : 1);
    if (!g->start || !g->list || !at)
        app_check(FLIT_ERR_NO_MEMORY, "malloc");
    for (uint32_t k = 0; k < ncand; k++) { /* counting sort, stable: by index */
        const double *o = pos + (size_t)cand[k] * DOF;
        int64_t c[3] = {cell_of(o[0]), cell_of(o[1]), cell_of(o[2])};
        at[k] = cell_index(g, c);
        g->start[at[k] + 1]++;
    }
    for (size_t i = 0; i < total; i++)
        g->start[i + 1] += g->start[i];
    uint32_t *fill = malloc((total ? total : 1) * sizeof *fill);
    if (!fill)
        app_check(FLIT_ERR_NO_MEMORY, "malloc");
    memcpy(fill, g->start, total * sizeof *fill);
    for (uint32_t k = 0; k < ncand; k++)
        g->list[fill[at[k]]++] = cand[k];
    free(fill);
    free(at);
}

/* The forces on molecules lo .. hi-1 (f: their DOF values each) from pos
   (DOF per molecule, by index), over the molecules cand[0 .. ncand-1]:
   ascending, holding every molecule within the cutoff of one of ours. */
static void forces(const double *pos, const uint32_t *cand, uint32_t ncand, uint32_t lo,
                   uint32_t hi, double *f)
{
    struct cells g;
    cells_build(&g, pos, cand, ncand);
    for (uint32_t i = lo; i < hi; i++) {
        double *fi = f + (size_t)(i - lo) * DOF;
        const double *xi = pos + (size_t)i * DOF;
        memset(fi, 0, DOF * sizeof *fi);
        spring(xi, fi, 0, 1, OH_K, OH_R0);
        spring(xi, fi, 0, 2, OH_K, OH_R0);
        spring(xi, fi, 1, 2, HH_K, HH_R0);
        int64_t ci[3] = {cell_of(xi[0]), cell_of(xi[1]), cell_of(xi[2])}, c[3];
        for (c[2] = ci[2] - 1; c[2] <= ci[2] + 1; c[2]++)
            for (c[1] = ci[1] - 1; c[1] <= ci[1] + 1; c[1]++)
                for (c[0] = ci[0] - 1; c[0] <= ci[0] + 1; c[0]++) {
                    if (c[0] < g.c0[0] || c[0] >= g.c0[0] + g.dim[0] || c[1] < g.c0[1] ||
                        c[1] >= g.c0[1] + g.dim[1] || c[2] < g.c0[2] ||
                        c[2] >= g.c0[2] + g.dim[2])
                        continue;
                    size_t b = cell_index(&g, c);
                    for (uint32_t k = g.start[b]; k < g.start[b + 1]; k++)
                        if (g.list[k] != i)
                            pair(xi, pos + (size_t)g.list[k] * DOF, fi);
                }
    }
    free(g.start);
    free(g.list);
}

/* Half a step's velocity change from the forces, k molecules. */
static void kick(double *v, const double *f, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++)
        for (int s = 0; s < SITES; s++)
            for (int c = 0; c < 3; c++)
                v[(size_t)i * DOF + s * 3 + c] +=
                    0.5 * DT * CONV / mass[s] * f[(size_t)i * DOF + s * 3 + c];
}

static void drift(double *x, const double *v, uint32_t k)
{
    for (size_t i = 0; i < (size_t)k * DOF; i++)
        x[i] += DT * v[i];
}

static double temperature(const double *v, uint32_t n)
{
    double ke = 0;
    for (uint32_t i = 0; i < n; i++)
        for (int s = 0; s < SITES; s++)
            for (int c = 0; c < 3; c++)
                ke += 0.5 * mass[s] * v[(size_t)i * DOF + s * 3 + c] *
                      v[(size_t)i * DOF + s * 3 + c] / CONV;
    return 2 * ke / (DOF * (double)n * KB_K);
}

/* ---------------------------------------------------------------- the object */

/* One rank's molecules: two steps' positions, by parity. */
struct band {
    uint32_t lo, count;
    uint64_t have[2]; /* step + 1 whose positions are in slot 0 / 1 */
    double x[];       /* 2 * count * DOF */
};

/* The fetch: the molecules of step whose oxygen lies in the box. */
struct near {
    uint64_t step;
    double lo[3], hi[3];
};

/* A molecule in a fetch's result, after [uint32 count, uint32 0]. */
struct entry {
    uint32_t idx, pad;
    double x[DOF];
};

static void band_init(void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    struct band *b = state;
    memcpy(&b->lo, arg, 2 * sizeof(uint32_t));
}

/* The write: [uint64 step][count * DOF doubles]. */
static size_t band_put(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)res, (void)user;
    struct band *b = state;
    uint64_t step;
    memcpy(&step, arg, sizeof step);
    memcpy(b->x + (size_t)(step % 2) * b->count * DOF, (const char *)arg + sizeof step,
           (size_t)b->count * DOF * sizeof(double));
    b->have[step % 2] = step + 1;
    return 0;
}

static int band_has(const void *state, const void *arg, size_t len, void *user)
{
    (void)len, (void)user;
    const struct band *b = state;
    struct near q;
    memcpy(&q, arg, sizeof q);
    return b->have[q.step % 2] == q.step + 1;
}

static size_t band_near(void *state, const void *arg, size_t len, void *res, void *user)
{
    (void)len, (void)user;
    struct band *b = state;
    struct near q;
    memcpy(&q, arg, sizeof q);
    const double *x = b->x + (size_t)(q.step % 2) * b->count * DOF;
    uint32_t k = 0;
    char *out = (char *)res + 8;
    for (uint32_t i = 0; i < b->count; i++) {
        const double *o = x + (size_t)i * DOF;
        if (o[0] < q.lo[0] || o[0] > q.hi[0] || o[1] < q.lo[1] || o[1] > q.hi[1] ||
            o[2] < q.lo[2] || o[2] > q.hi[2])
            continue;
        struct entry e = {b->lo + i, 0, {0}};
        memcpy(e.x, o, sizeof e.x);
        memcpy(out + (size_t)k++ * sizeof e, &e, sizeof e);
    }
    uint32_t h[2] = {k, 0};
    memcpy(res, h, sizeof h);
    return 8 + (size_t)k * sizeof(struct entry);
}

enum { PUT, NEAR };

/* ---------------------------------------------------------------- the run */

struct rank_run {
    uint32_t n, me, p, lo, hi;
    flit_object_t **band; /* rank r's object */
    double *pos;          /* every molecule's positions, by index (those known) */
    double *v, *f;        /* ours */
    uint32_t *cand, ncand;
    char *buf; /* a fetch's result, then our write */
    size_t cap;
};

static uint32_t band_lo(uint32_t n, uint32_t p, uint32_t r)
{
    return (uint32_t)((uint64_t)n * r / p);
}

/* Every rank's molecules of step q->step inside q's box, ours included:
   their positions into pos (by index), their indices, ascending, into cand
   (NULL: not wanted); answers how many. */
static uint32_t collect(struct rank_run *w, const struct near *q, double *pos,
                        uint32_t *cand)
{
    uint32_t k = 0;
    for (uint32_t r = 0; r < w->p; r++) {
        if (r == w->me) {
            if (pos != w->pos)
                memcpy(pos + (size_t)w->lo * DOF, w->pos + (size_t)w->lo * DOF,
                       (size_t)(w->hi - w->lo) * DOF * sizeof(double));
            for (uint32_t i = w->lo; cand && i < w->hi; i++)
                cand[k++] = i;
            continue;
        }
        app_invoke(w->band[r], NEAR, q, sizeof *q, w->buf, w->cap, NULL, "near");
        uint32_t h[2];
        memcpy(h, w->buf, sizeof h);
        for (uint32_t e = 0; e < h[0]; e++) {
            struct entry m;
            memcpy(&m, w->buf + 8 + (size_t)e * sizeof m, sizeof m);
            memcpy(pos + (size_t)m.idx * DOF, m.x, sizeof m.x);
            if (cand)
                cand[k++] = m.idx;
        }
    }
    return k;
}

/* Writes our positions of step, fetches the others' near ours, sums the
   forces on ours. */
static void step_forces(struct rank_run *w, uint64_t step)
{
    uint32_t k = w->hi - w->lo;
    memcpy(w->buf, &step, sizeof step);
    memcpy(w->buf + 8, w->pos + (size_t)w->lo * DOF, (size_t)k * DOF * sizeof(double));
    app_invoke(w->band[w->me], PUT, w->buf, 8 + (size_t)k * DOF * sizeof(double), NULL, 0,
               NULL, "put");
    struct near q = {
        step, {INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
    for (uint32_t i = w->lo; i < w->hi; i++)
        for (int c = 0; c < 3; c++) {
            double o = w->pos[(size_t)i * DOF + c];
            q.lo[c] = o < q.lo[c] ? o : q.lo[c];
            q.hi[c] = o > q.hi[c] ? o : q.hi[c];
        }
    for (int c = 0; c < 3; c++) {
        q.lo[c] -= MARGIN;
        q.hi[c] += MARGIN;
    }
    w->ncand = collect(w, &q, w->pos, w->cand);
    forces(w->pos, w->cand, w->ncand, w->lo, w->hi, w->f);
}

/* Velocity Verlet over steps: fill(ctx, step) puts the forces on the k
   molecules x (and v) into f, from their positions at that step. */
static void verlet(uint32_t steps, double *x, double *v, const double *f, uint32_t k,
                   void (*fill)(void *ctx, uint64_t step), void *ctx)
{
    fill(ctx, 0);
    for (uint32_t s = 1; s <= steps; s++) {
        kick(v, f, k);
        drift(x, v, k);
        fill(ctx, s);
        kick(v, f, k);
    }
}

static void fill_parallel(void *ctx, uint64_t step)
{
    step_forces(ctx, step);
}

/* The sequential run: every molecule, in one array. */
struct all_run {
    const double *x;
    const uint32_t *all;
    uint32_t n;
    double *f;
};

static void fill_sequential(void *ctx, uint64_t step)
{
    (void)step;
    struct all_run *a = ctx;
    forces(a->x, a->all, a->n, 0, a->n, a->f);
}

static void run_sequential(uint32_t n, uint32_t steps, double *x, double *v)
{
    double *f = malloc((size_t)n * DOF * sizeof *f);
    uint32_t *all = malloc((size_t)n * sizeof *all);
    if (!f || !all)
        app_check(FLIT_ERR_NO_MEMORY, "malloc");
    for (uint32_t i = 0; i < n; i++)
        all[i] = i;
    struct all_run a = {x, all, n, f};
    verlet(steps, x, v, f, n, fill_sequential, &a);
    free(f);
    free(all);
}

/* Rank 0: every molecule's positions after the last step, into got. */
static void gather(struct rank_run *w, uint64_t step, double *got)
{
    struct near q = {
        step, {-INFINITY, -INFINITY, -INFINITY}, {INFINITY, INFINITY, INFINITY}};
    collect(w, &q, got, NULL);
}

int main(int argc, char **argv)
{
    uint32_t n = app_arg(argc, argv, "--n", 512),
             steps = app_arg(argc, argv, "--steps", 10);
    app_check(flit_init(NULL), "flit_init");
    struct rank_run w = {.n = n, .me = flit_job_rank().idx, .p = flit_job_size()};
    if (n < w.p) {
        fprintf(stderr, "water: --n %u is fewer molecules than ranks\n", n);
        return 1;
    }
    w.lo = band_lo(n, w.p, w.me);
    w.hi = band_lo(n, w.p, w.me + 1);
    flit_ep_t *ep;
    /* Collective: every rank; the endpoint comes with its object layer. */
    flit_ep_params_t ep_p = {.field_mask = FLIT_EP_PARAM_LAYERS, .layers = "object"};
    app_check(flit_ep_create(&ep_p, &ep), "flit_ep_create");
    uint32_t most = (n + w.p - 1) / w.p;
    size_t mol_bytes = DOF * sizeof(double);
    w.cap = 8 + (size_t)most * sizeof(struct entry);
    flit_object_op_t ops[] = {
        [PUT] = {FLIT_OBJECT_WRITE, 8 + most * mol_bytes, 0, band_put, NULL},
        [NEAR] = {FLIT_OBJECT_READ, sizeof(struct near), w.cap, band_near, band_has},
    };
    flit_object_type_t type = {.state_size = sizeof(struct band) + 2 * most * mol_bytes,
                               .init = band_init,
                               .ops = ops,
                               .nops = 2};
    w.band = calloc(w.p, sizeof *w.band);
    w.pos = malloc((size_t)n * mol_bytes);
    w.v = malloc((size_t)most * mol_bytes);
    w.f = malloc((size_t)most * mol_bytes);
    w.cand = malloc((size_t)n * sizeof *w.cand);
    w.buf = malloc(w.cap > 8 + most * mol_bytes ? w.cap : 8 + most * mol_bytes);
    if (!w.band || !w.pos || !w.v || !w.f || !w.cand || !w.buf)
        app_check(FLIT_ERR_NO_MEMORY, "malloc");
    for (uint32_t r = 0; r < w.p; r++) { /* rank r's band, owned by r */
        uint32_t b[2] = {band_lo(n, w.p, r), band_lo(n, w.p, r + 1) - band_lo(n, w.p, r)};
        app_check(flit_object_open(ep, 1 + r, &type, NULL, 0, FLIT_OBJECT_OWNED,
                                   flit_rank(r), b, sizeof b, &w.band[r]),
                  "flit_object_open");
    }
    for (uint32_t i = w.lo; i < w.hi; i++)
        molecule_init(n, i, w.pos + (size_t)i * DOF, w.v + (size_t)(i - w.lo) * DOF);

    app_check(flit_barrier(ep), "flit_barrier");
    double t0 = app_now(), c0 = app_cpu();
    verlet(steps, w.pos + (size_t)w.lo * DOF, w.v, w.f, w.hi - w.lo, fill_parallel, &w);
    double t = app_now() - t0, cpu = app_cpu() - c0, in_flit = app_in_flit;
    uint64_t reads = 0, writes = 0;
    for (uint32_t r = 0; r < w.p; r++) {
        flit_object_stats_t st = {.struct_size = sizeof st};
        app_check(flit_object_stats(w.band[r], &st), "flit_object_stats");
        reads += st.reads;
        writes += st.writes;
    }
    unsigned long long msgs = app_messages(ep);

    int rc = 0;
    if (w.me == 0) {
        double *got = malloc((size_t)n * mol_bytes), *x = malloc((size_t)n * mol_bytes),
               *v = calloc(n, mol_bytes);
        if (!got || !x || !v)
            app_check(FLIT_ERR_NO_MEMORY, "malloc");
        gather(&w, steps, got);
        for (uint32_t i = 0; i < n; i++)
            molecule_init(n, i, x + (size_t)i * DOF, v + (size_t)i * DOF);
        double t_start = temperature(v, n), s0 = app_now();
        run_sequential(n, steps, x, v);
        double ts = app_now() - s0;
        rc = memcmp(x, got, (size_t)n * mol_bytes) != 0;
        printf("water: n %u molecules, %u steps, %u ranks: %.3f s (sequential %.3f s), "
               "%llu reads %llu writes on rank 0, %llu messages sent; result %s the "
               "sequential one (%.0f K -> %.0f K)\n",
               n, steps, w.p, t, ts, (unsigned long long)reads,
               (unsigned long long)writes, msgs, rc ? "DIFFERS from" : "identical to",
               t_start, temperature(v, n));
        app_profile("water", t, cpu, in_flit);
        free(got);
        free(x);
        free(v);
    }
    /* Nobody's band may go while another rank still fetches from it. */
    app_check(flit_barrier(ep), "flit_barrier");
    for (uint32_t r = 0; r < w.p; r++)
        app_check(flit_object_destroy(w.band[r]), "flit_object_destroy");
    free(w.band);
    free(w.pos);
    free(w.v);
    free(w.f);
    free(w.cand);
    free(w.buf);
    app_check(flit_ep_destroy(ep), "flit_ep_destroy");
    app_check(flit_finalize(), "flit_finalize");
    return rc;
}
