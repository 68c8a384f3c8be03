/* wire: the loopback limit for the pattern of a one-at-a-time NFS READ
 * stream: a small request answered by a large reply, over one TCP
 * connection, nothing else. A child process plays the server.
 *
 *   wire [-c] [-d DEPTH] N [REPLY_BYTES] [FILE]
 *
 * Sends N requests of 128 bytes; each is answered with REPLY_BYTES
 * (default 1 MiB): from a buffer in memory, or, with FILE, by sendfile from
 * that file (page cache), the way nfsx sends READ data. With -c the client
 * copies each reply once more, into a second buffer, before it sends the
 * next request, as a client that receives into a buffer of its own and
 * hands the data to its caller does (libnfs's nfs-cat). With -d the
 * client keeps DEPTH requests outstanding (default 1): the stream of a
 * client with several READs in flight on one connection, answered in
 * order by one server thread. Prints
 *   wire requests=N reply_bytes=B seconds=S mb_per_s=R
 * Build: cc -O2 -o wire wire.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { REQUEST = 128 };

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
	perror(what);
	exit(1);
}

static void read_full(int fd, char *buf, size_t n) {
	while (n > 0) {
		ssize_t r = read(fd, buf, n);
		if (r <= 0) die("read");
		buf += r;
		n -= (size_t)r;
	}
}

static void write_full(int fd, const char *buf, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, buf, n);
		if (w <= 0) die("write");
		buf += w;
		n -= (size_t)w;
	}
}

static void serve(int lfd, long n, size_t reply, const char *file) {
	int c = accept(lfd, NULL, NULL);
	if (c < 0) die("accept");
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char req[REQUEST];
	char *buf = NULL;
	int ffd = -1;
	off_t fsize = 0;
	if (file) {
		ffd = open(file, O_RDONLY);
		if (ffd < 0) die("open");
		struct stat st;
		fstat(ffd, &st);
		fsize = st.st_size;
		if ((size_t)fsize < reply) { fprintf(stderr, "file shorter than one reply\n"); exit(1); }
	} else {
		buf = malloc(reply);
		memset(buf, 'x', reply);
	}
	off_t pos = 0;
	for (long i = 0; i < n; i++) {
		read_full(c, req, REQUEST);
		if (file) {
			if (pos + (off_t)reply > fsize) pos = 0;
			size_t left = reply;
			while (left > 0) {
				ssize_t s = sendfile(c, ffd, &pos, left);
				if (s <= 0) die("sendfile");
				left -= (size_t)s;
			}
		} else {
			write_full(c, buf, reply);
		}
	}
	close(c);
	exit(0);
}

int main(int argc, char **argv) {
	int copy = 0;
	long depth = 1;
	const char *prog = argv[0];
	for (;;) {
		if (argc > 1 && !strcmp(argv[1], "-c")) {
			copy = 1;
			argv++;
			argc--;
		} else if (argc > 2 && !strcmp(argv[1], "-d")) {
			depth = atol(argv[2]);
			argv += 2;
			argc -= 2;
		} else {
			break;
		}
	}
	if (argc < 2 || depth < 1) {
		fprintf(stderr, "usage: %s [-c] [-d DEPTH] N [REPLY_BYTES] [FILE]\n", prog);
		return 2;
	}
	long n = atol(argv[1]);
	size_t reply = argc > 2 ? (size_t)atol(argv[2]) : 1 << 20;
	const char *file = argc > 3 ? argv[3] : NULL;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1)) die("bind");
	getsockname(lfd, (struct sockaddr *)&a, &al);
	pid_t child = fork();
	if (child == 0) serve(lfd, n, reply, file);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(s, (struct sockaddr *)&a, sizeof a)) die("connect");
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char req[REQUEST];
	memset(req, 'r', sizeof req);
	char *buf = malloc(reply);
	char *out = malloc(reply);
	memset(buf, 0, reply);
	memset(out, 0, reply);
	double t0 = now();
	/* The first DEPTH requests at once, then one more per reply. */
	for (long i = 0; i < depth && i < n; i++) write_full(s, req, REQUEST);
	for (long i = 0; i < n; i++) {
		read_full(s, buf, reply);
		if (i + depth < n) write_full(s, req, REQUEST);
		if (copy) {
			memcpy(out, buf, reply);
			/* The copy is the point: keep the compiler from dropping it. */
			__asm__ volatile("" : : "r"(out) : "memory");
		}
	}
	double t = now() - t0;
	close(s);
	waitpid(child, NULL, 0);
	printf("wire requests=%ld reply_bytes=%zu depth=%ld seconds=%.6f mb_per_s=%.1f\n", n, reply, depth, t,
	       n * (double)reply / t / 1e6);
	return 0;
}
