/* splice-recv: what receiving 1 MiB WRITE payloads straight into a file
 * would save. A child process streams 1 MiB chunks over one loopback TCP
 * connection; the receiver puts each into a file either the way nfsx does
 * (read(2) into a buffer, then pwrite(2): two copies of every byte) or with
 * splice(2) socket -> pipe -> file (the socket's pages are moved into the
 * pipe, one copy into the page cache).
 *
 *   splice-recv MODE N        MODE 0: read + pwrite, 1: splice; N chunks
 *
 * Prints the rate and the receiver's CPU per MiB (getrusage). The file is
 * /var/tmp/splice-recv.dat, rewritten in a 256 MiB cycle.
 * Build: cc -O2 -o splice-recv splice-recv.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)
#define CYCLE (256LL * CHUNK)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: splice-recv MODE(0|1) CHUNKS\n");
    return 2;
  }
  int mode = atoi(argv[1]), n = atoi(argv[2]), one = 1;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(ls, (void *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (void *)&a, &al)) die("listen");
  pid_t child = fork();
  if (child == 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (void *)&a, sizeof a)) die("connect");
    char *b = malloc(CHUNK);
    memset(b, 7, CHUNK);
    for (int i = 0; i < n; i++)
      for (size_t o = 0; o < CHUNK;) {
        ssize_t w = write(s, b + o, CHUNK - o);
        if (w <= 0) die("write");
        o += w;
      }
    close(s);
    _exit(0);
  }
  int c = accept(ls, 0, 0);
  int fd = open("/var/tmp/splice-recv.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (c < 0 || fd < 0) die("accept/open");
  char *buf = malloc(CHUNK);
  int p[2];
  if (pipe(p)) die("pipe");
  fcntl(p[1], F_SETPIPE_SZ, CHUNK);
  double t0 = now(), c0 = cpu();
  long long off = 0;
  for (int i = 0; i < n; i++, off += CHUNK) {
    loff_t at = off % CYCLE;
    if (mode == 0) {
      for (size_t o = 0; o < CHUNK;) {
        ssize_t r = read(c, buf + o, CHUNK - o);
        if (r <= 0) die("read");
        o += r;
      }
      if (pwrite(fd, buf, CHUNK, at) != CHUNK) die("pwrite");
    } else {
      for (size_t o = 0; o < CHUNK;) {
        ssize_t r = splice(c, 0, p[1], 0, CHUNK - o, SPLICE_F_MOVE);
        if (r <= 0) die("splice in");
        o += r;
      }
      for (size_t w = 0; w < CHUNK;) {
        ssize_t r = splice(p[0], 0, fd, &at, CHUNK - w, SPLICE_F_MOVE);
        if (r <= 0) die("splice out");
        w += r;
      }
    }
  }
  double t1 = now(), c1 = cpu();
  waitpid(child, 0, 0);
  printf("splice-recv mode=%s chunks=%d mb_per_s=%.0f receiver_cpu_us_per_mib=%.1f\n", mode ? "splice" : "read+pwrite", n,
         n * (CHUNK / 1e6) / (t1 - t0), (c1 - c0) / n * 1e6);
  return 0;
}
