/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_pingpong: the same figures as flit-bench, over MPI, for
 * bench/compare.sh. Not built by CMake (MPI is optional):
 *
 *     mpicc -O2 -o mpi_pingpong bench/mpi_pingpong.c
 *     mpirun -n 2 ./mpi_pingpong [--quick] [--max-size BYTES]
 *
 * Prints CSV in flit-bench's format (name,size,value,unit,baseline,ratio,
 * the last two empty):
 *   latency     MPI_Send / MPI_Recv ping-pong, one way = round trip / 2,
 *               median of 5 runs
 *   bandwidth   windows of 64 MPI_Isend + MPI_Waitall against 64 MPI_Irecv,
 *               one acknowledgement at the end (as the OSU benchmark does)
 *   rate        the same with 8-byte messages, windows of 256
 * and with --coll (compat/bench/mpi_compare.sh, make bench-mpi), the
 * collectives of the same 2 ranks, time per call:
 *   allreduce   MPI_Allreduce of size / 4 ints, MPI_SUM
 *   bcast       MPI_Bcast of size bytes, from each rank in turn
 *   alltoall    MPI_Alltoall of size bytes to each rank
 *   allgather   MPI_Allgather of size bytes from each rank
 *   reduce_scatter_block  MPI_Reduce_scatter_block of a vector of size / 4
 *               ints, MPI_SUM, each rank getting its share
 *   reduce      MPI_Reduce of size / 4 ints, MPI_SUM, to each rank in turn
 *   gather      MPI_Gather of size bytes from each rank, to each in turn
 *   scatter     MPI_Scatter of size bytes to each rank, from each in turn
 * and with --coll-only the collectives alone, on any number of ranks (2
 * or more: the ping-pongs need 2; rank 0's time), --only NAME for one of
 * them, --min-size BYTES to start there;
 * and with --strided, non-contiguous data: size bytes in rows of 4 KiB 64
 * bytes apart (MPI_Type_vector), sent and received with the type,
 * ping-pong, one way:
 *   strided     from 8 KiB to half of --max-size
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_SIZE (4u << 20)
#define BW_WINDOW        64
#define RATE_WINDOW      256
#define LAT_REPS         5
#define BW_REPS          5
#define MAX_N            (1LL << 24)

static int rank;
static char *sbuf, *rbuf;
static MPI_Request req[RATE_WINDOW];

typedef void (*run_fn)(size_t size, long long n);

static void pingpong(size_t size, long long n)
{
    for (long long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
}

static void stream(size_t size, long long n, int window)
{
    for (long long i = 0; i < n; i++) {
        for (int w = 0; w < window; w++) {
            if (rank == 0)
                MPI_Isend(sbuf, (int)size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &req[w]);
            else
                MPI_Irecv(rbuf, (int)size, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &req[w]);
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
    }
    char ack = 0;
    if (rank == 0)
        MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
}

static void bw_run(size_t size, long long n)
{
    stream(size, n, BW_WINDOW);
}

static void rate_run(size_t size, long long n)
{
    stream(size, n, RATE_WINDOW);
}

#define ROW     4096
#define ROW_GAP 64

/* Rows of ROW bytes ROW_GAP apart, size bytes in all. */
static MPI_Datatype rows_of(size_t size)
{
    MPI_Datatype t;
    MPI_Type_vector((int)(size / ROW), ROW, ROW + ROW_GAP, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
}

static MPI_Datatype rows; /* strided_run's type, made outside the timing */

static void strided_run(size_t size, long long n)
{
    (void)size;
    MPI_Datatype t = rows;
    for (long long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, 1, t, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, 1, t, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, 1, t, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, 1, t, 0, 1, MPI_COMM_WORLD);
        }
    }
}

static void allreduce_run(size_t size, long long n)
{
    for (long long i = 0; i < n; i++)
        MPI_Allreduce(sbuf, rbuf, (int)(size / 4), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

static void allgather_run(size_t size, long long n)
{
    for (long long i = 0; i < n; i++)
        MPI_Allgather(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                      MPI_COMM_WORLD);
}

/* size: the whole vector; each of the ranks gets its n-th */
static void reduce_scatter_run(size_t size, long long n)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (long long i = 0; i < n; i++)
        MPI_Reduce_scatter_block(sbuf, rbuf, (int)(size / 4 / (size_t)np), MPI_INT,
                                 MPI_SUM, MPI_COMM_WORLD);
}

/* The root turns (as IMB's Bcast does): a root only sends, and with one
   root rank 0 would time its sends, not their arrival. */
static void bcast_run(size_t size, long long n)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (long long i = 0; i < n; i++)
        MPI_Bcast(sbuf, (int)size, MPI_BYTE, (int)(i % np), MPI_COMM_WORLD);
}

/* Reduce, gather and scatter: the root turns, as bcast_run's. */
static void reduce_run(size_t size, long long n)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (long long i = 0; i < n; i++)
        MPI_Reduce(sbuf, rbuf, (int)(size / 4), MPI_INT, MPI_SUM, (int)(i % np),
                   MPI_COMM_WORLD);
}

static void gather_run(size_t size, long long n)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (long long i = 0; i < n; i++)
        MPI_Gather(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, (int)(i % np),
                   MPI_COMM_WORLD);
}

static void scatter_run(size_t size, long long n)
{
    int np;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (long long i = 0; i < n; i++)
        MPI_Scatter(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, (int)(i % np),
                    MPI_COMM_WORLD);
}

static void alltoall_run(size_t size, long long n)
{
    for (long long i = 0; i < n; i++)
        MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                     MPI_COMM_WORLD);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rank 0 decides how many iterations, both run them: a warm-up growing n
   until a run lasts a tenth of target, then reps runs; median seconds per
   iteration (rank 0's answer; rank 1 returns 0). */
static double measure(run_fn run, size_t size, double target, int reps)
{
    long long n = 1;
    double t = 0, v[LAT_REPS > BW_REPS ? LAT_REPS : BW_REPS];
    int phase = 0, r = 0; /* 0: warm-up, 1: measuring */
    for (;;) {
        MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        if (n == 0)
            break;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run(size, n);
        t = MPI_Wtime() - t0;
        if (rank != 0)
            continue;
        if (phase == 0) {
            if (t < target / 10 && n < MAX_N) {
                double grow = t > 0 ? target / 10 * 1.3 / t : 16;
                grow = grow < 2 ? 2 : grow > 16 ? 16 : grow;
                n = (long long)(n * grow);
                n = n > MAX_N ? MAX_N : n;
            } else {
                phase = 1;
                double want = target / reps / (t / (double)n);
                n = want < 1 ? 1 : want > MAX_N ? MAX_N : (long long)want;
            }
        } else {
            v[r++] = t / (double)n;
            if (r == reps)
                n = 0;
        }
    }
    if (rank != 0)
        return 0;
    qsort(v, (size_t)reps, sizeof v[0], cmp_double);
    return v[reps / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t max = DEFAULT_MAX_SIZE;
    double target = 0.15;
    int coll = 0, strided = 0, pt2pt = 1;
    const char *only = NULL;
    size_t min = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            target = 0.025;
        else if (strcmp(argv[i], "--coll") == 0)
            coll = 1;
        else if (strcmp(argv[i], "--coll-only") == 0)
            coll = 1, pt2pt = 0;
        else if (strcmp(argv[i], "--strided") == 0)
            strided = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--min-size") == 0 && i + 1 < argc)
            min = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc)
            max = strtoull(argv[++i], NULL, 0);
    }
    if ((pt2pt ? size != 2 : size < 2) || max < 8) {
        if (rank == 0)
            fprintf(stderr, "mpi_pingpong: needs exactly 2 ranks (--coll-only: 2 or "
                            "more) and --max-size >= 8\n");
        MPI_Finalize();
        return 2;
    }
    /* room for max bytes, and for an alltoall's or allgather's blocks of
       up to max / 2 bytes to or from every rank */
    size_t room = max / 2 * (size_t)size > max ? max / 2 * (size_t)size : max;
    sbuf = aligned_alloc(4096, (room + 4095) / 4096 * 4096);
    rbuf = aligned_alloc(4096, (room + 4095) / 4096 * 4096);
    if (!sbuf || !rbuf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(sbuf, 0xa5, room);
    memset(rbuf, 0, room);
    if (rank == 0)
        printf("name,size,value,unit,baseline,ratio\n");

    size_t sizes[64];
    int ns = 0;
    sizes[ns++] = 0;
    for (size_t s = 8; s <= max && ns < 63; s *= 2)
        sizes[ns++] = s;
    if (sizes[ns - 1] != max)
        sizes[ns++] = max;
    for (int i = 0; pt2pt && i < ns; i++) {
        double t = measure(pingpong, sizes[i], target, LAT_REPS);
        if (rank == 0)
            printf("latency,%zu,%.4f,us,,\n", sizes[i], t / 2 * 1e6);
        fflush(stdout);
    }
    for (int i = 1; pt2pt && i < ns; i++) {
        double t = measure(bw_run, sizes[i], target, BW_REPS);
        if (rank == 0)
            printf("bandwidth,%zu,%.2f,MB/s,,\n", sizes[i],
                   (double)sizes[i] * BW_WINDOW / t / 1e6);
        fflush(stdout);
    }
    double t = pt2pt ? measure(rate_run, 8, target, BW_REPS) : 0;
    if (rank == 0 && pt2pt)
        printf("rate,8,%.4f,Mmsg/s,,\n", RATE_WINDOW / t / 1e6);
    static const struct {
        const char *name;
        run_fn run;
    } colls[] = {{"allreduce", allreduce_run},
                 {"bcast", bcast_run},
                 {"alltoall", alltoall_run},
                 {"allgather", allgather_run},
                 {"reduce_scatter_block", reduce_scatter_run},
                 {"reduce", reduce_run},
                 {"gather", gather_run},
                 {"scatter", scatter_run}};
    for (int c = 0; coll && c < (int)(sizeof colls / sizeof colls[0]); c++)
        for (int i = 1; i < ns && sizes[i] <= max / 2; i++) {
            if ((only && strcmp(only, colls[c].name) != 0) || sizes[i] < min)
                continue;
            double tc = measure(colls[c].run, sizes[i], target, LAT_REPS);
            if (rank == 0)
                printf("%s,%zu,%.4f,us,,\n", colls[c].name, sizes[i], tc * 1e6);
            fflush(stdout);
        }
    /* rows and gaps of size bytes fit in half of --max-size twice over */
    for (size_t sz = 2 * ROW; strided && sz <= max / 2; sz *= 2) {
        rows = rows_of(sz);
        double ts = measure(strided_run, sz, target, LAT_REPS);
        MPI_Type_free(&rows);
        if (rank == 0)
            printf("strided,%zu,%.4f,us,,\n", sz, ts / 2 * 1e6);
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
