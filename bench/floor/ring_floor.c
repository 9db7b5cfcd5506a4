// ring_floor: the least a 2-rank allreduce over loopback TCP can cost on
// this machine, as a yardstick for boltmesh and OpenMPI (make floor).
//
// Two processes joined by one TCP connection run the ring allreduce of
// BYTES of float32 (Sum) that boltmesh and OpenMPI run for 2 ranks: each
// sends the half the other owns and receives its own half's contribution
// (then reduces it), and each sends its reduced half and receives the
// other. No framing, no matching, no library: non-blocking sockets polled
// in a busy loop, with sends of CHUNK bytes (0: the whole half at once).
//
//   ring_floor [BYTES [ITERS [CHUNK [SOCKBUF]]]]   (default 1048576 1000 0 2097152)
//
// Prints the p10, p50 and p90 of rank 0's call times, in microseconds, and
// checks the result.
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

// exchange sends n bytes of out and receives n bytes into in at once.
static void exchange(int fd, const char *out, char *in, long n, long chunk) {
  long sent = 0, got = 0;
  while (sent < n || got < n) {
    if (sent < n) {
      long k = chunk > 0 && n - sent > chunk ? chunk : n - sent;
      ssize_t w = send(fd, out + sent, k, MSG_DONTWAIT);
      if (w > 0) sent += w;
      else if (errno != EAGAIN) die("send");
    }
    if (got < n) {
      ssize_t r = recv(fd, in + got, n - got, MSG_DONTWAIT);
      if (r > 0) got += r;
      else if (r == 0) { fprintf(stderr, "peer closed\n"); exit(1); }
      else if (errno != EAGAIN) die("recv");
    }
  }
}

static void setbufs(int fd, int size) {
  if (size > 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) ||
                   setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size)))
    die("setsockopt");
}

// connectPair returns this process's end of a loopback connection and
// whether it is rank 1 (the forked child).
static int connectPair(int bufsize, int *rank) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  setbufs(ls, bufsize); // before listen: accepted sockets inherit them
  if (ls < 0 || bind(ls, (void *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (void *)&a, &len)) die("listen");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  *rank = pid == 0;
  int fd;
  if (*rank) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    setbufs(fd, bufsize);
    if (fd < 0 || connect(fd, (void *)&a, sizeof a)) die("connect");
  } else if ((fd = accept(ls, NULL, NULL)) < 0) {
    die("accept");
  }
  close(ls);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5); // as boltmesh on loopback
  return fd;
}

int main(int argc, char **argv) {
  long bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
  int iters = argc > 2 ? atoi(argv[2]) : 1000;
  long chunk = argc > 3 ? atol(argv[3]) : 0;
  int bufsize = argc > 4 ? atoi(argv[4]) : 2 << 20;
  long count = bytes / 4, half = count / 2;
  if (half < 1 || iters < 1) { fprintf(stderr, "need BYTES >= 8 and ITERS >= 1\n"); return 2; }
  int rank, fd = connectPair(bufsize, &rank);
  float *data = malloc(count * 4), *tmp = malloc(half * 4);
  double *t = malloc(iters * sizeof *t);
  if (!data || !tmp || !t) die("malloc");
  float *mine = data + (rank ? half : 0), *other = data + (rank ? 0 : half);
  for (int it = -50; it < iters; it++) {
    for (long i = 0; i < count; i++) data[i] = (float)(rank + 1);
    double t0 = now_us();
    exchange(fd, (char *)other, (char *)tmp, half * 4, chunk);
    for (long i = 0; i < half; i++) mine[i] += tmp[i];
    exchange(fd, (char *)mine, (char *)other, half * 4, chunk);
    if (it >= 0) t[it] = now_us() - t0;
    if (data[0] != 3 || data[2 * half - 1] != 3) { fprintf(stderr, "wrong result\n"); return 1; }
  }
  if (rank) return 0;
  int status;
  wait(&status);
  qsort(t, iters, sizeof *t, cmp);
  printf("ring_floor bytes=%ld chunk=%ld sockbuf=%d iters=%d p10_us=%.1f p50_us=%.1f p90_us=%.1f\n",
         half * 8, chunk, bufsize, iters, t[iters / 10], t[iters / 2], t[iters * 9 / 10]);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
