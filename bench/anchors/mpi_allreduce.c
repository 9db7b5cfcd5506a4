/*
 * mpi_allreduce: the system MPI's allreduce as an anchor beside boltmesh's
 * (float32 sum, sizes in bytes from argv). Per size: a warm-up, then per
 * call a barrier, the call, and the slowest rank's time; iterations scale
 * down with size (2000 at 8 B, at least 20). Rank 0 prints one line per
 * size:
 *
 *   bytes p50_us p99_us algbw_GBps busbw_GBps
 *
 *   mpicc -O2 -o /tmp/mpi_allreduce bench/anchors/mpi_allreduce.c
 *   mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 \
 *     --mca btl vader,self /tmp/mpi_allreduce 8 65536 1048576 16777216
 *
 * It checks the sum and exits non-zero (MPI_Abort) if it is wrong.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (int a = 1; a < argc; a++) {
    long bytes = atol(argv[a]);
    long count = bytes / 4;
    if (count < 1) count = 1;
    float *in = malloc(count * 4), *out = malloc(count * 4);
    for (long i = 0; i < count; i++) in[i] = (float)(rank + 1);
    long it = 200000000L / (bytes > 0 ? bytes : 1);
    if (it > 2000) it = 2000;
    if (it < 20) it = 20;
    double *t = malloc(sizeof(double) * it);
    for (int w = 0; w < 3 + it / 10; w++) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (long i = 0; i < it; i++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double dt = MPI_Wtime() - t0, mx;
      MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t[i] = mx;
    }
    float want = (float)n * (n + 1) / 2;
    if (out[0] != want || out[count - 1] != want) {
      fprintf(stderr, "mpi_allreduce: wrong sum %g, want %g\n", out[0], want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    qsort(t, it, sizeof(double), cmp);
    double p50 = t[it / 2], p99 = t[(it * 99) / 100];
    double algbw = (count * 4.0) / p50 / 1e9;
    if (rank == 0) printf("%ld %.2f %.2f %.3f %.3f\n", count * 4, p50 * 1e6, p99 * 1e6, algbw, algbw * 2.0 * (n - 1) / n);
    free(in); free(out); free(t);
  }
  MPI_Finalize();
  return 0;
}
