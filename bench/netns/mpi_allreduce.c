// mpi_allreduce: OpenMPI's float32 sum allreduce, the comparison of
// netns-bench.sh, scale-bench.sh and boltmesh cores. For each size in argv
// (bytes): warm-up calls, then per call a barrier, the call and the
// slowest rank's time, over iterations that scale down with size (2000 at
// 8 B, at least 20). Prints one line per size on rank 0:
// bytes median_us algbw_GBps busbw_GBps p99_us, with busbw = algbw *
// 2(n-1)/n as nccl-tests define it. It checks the sum.
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
    long count = atol(argv[a]) / 4;
    if (count < 1) count = 1;
    float *in = malloc(count * 4), *out = malloc(count * 4);
    for (long i = 0; i < count; i++) in[i] = (float)(rank + 1);
    long it = 200000000L / (count * 4);
    if (it > 2000) it = 2000;
    if (it < 20) it = 20;
    double *t = malloc(sizeof(double) * it);
    for (long w = 0; w < 3 + it / 10; w++) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
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
      fprintf(stderr, "mpi_allreduce: wrong result\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    qsort(t, it, sizeof(double), cmp);
    double med = t[it / 2], p99 = t[(it * 99) / 100], algbw = count * 4.0 / med / 1e9;
    if (rank == 0) printf("%ld %.2f %.3f %.3f %.2f\n", count * 4, med * 1e6, algbw, algbw * 2.0 * (n - 1) / n, p99 * 1e6);
    free(in);
    free(out);
    free(t);
  }
  MPI_Finalize();
  return 0;
}
