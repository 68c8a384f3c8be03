/*
 * What the size of a file's writes does to later writes into it, on the
 * local file system alone (no NFS): the page cache of Linux 6.x makes a
 * buffered write's folios as large as the write (up to its maximum), and
 * ext4 walks every block of a folio on each later write into it.
 *
 *   cc -O2 -o write-pieces bench/write-pieces.c
 *   ./write-pieces FILE PIECE     (FILE on the file system to measure)
 *
 * Fills a 64 MiB file in writes of PIECE bytes, then times 200,000 random
 * 4 KiB writes into it and four passes of 1 MiB reads over it; then times
 * 256 MiB of sequential writes made 1 MiB at a time, each 1 MiB as writes
 * of PIECE bytes (best of 5). Prints microseconds per operation.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void write_all(int fd, const char *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, off);
		if (n <= 0) {
			perror("pwrite");
			exit(1);
		}
		buf += n;
		len -= n;
		off += n;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s FILE PIECE\n", argv[0]);
		return 2;
	}
	const char *path = argv[1];
	size_t piece = strtoul(argv[2], 0, 0);
	const size_t mib = 1 << 20, size = 64 * mib, seq = 256 * mib;
	const int n = 200000;
	if (piece == 0 || piece > mib || mib % piece) {
		fprintf(stderr, "PIECE must divide 1 MiB\n");
		return 2;
	}
	char *buf = malloc(mib);
	memset(buf, 7, mib);

	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	for (size_t off = 0; off < size; off += piece)
		write_all(fd, buf, piece, off);
	srand(1);
	double t0 = now();
	for (int i = 0; i < n; i++)
		write_all(fd, buf, 4096, (off_t)(rand() % (size / 4096)) * 4096);
	double t1 = now();
	for (int p = 0; p < 4; p++)
		for (size_t off = 0; off < size; off += mib)
			if (pread(fd, buf, mib, off) < 0) {
				perror("pread");
				return 1;
			}
	double t2 = now();
	close(fd);

	double best = 1e9;
	for (int rep = 0; rep < 5; rep++) {
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		double s = now();
		for (size_t off = 0; off < seq; off += mib)
			for (size_t c = 0; c < mib; c += piece)
				write_all(fd, buf + c, piece, off + c);
		double e = now();
		if (e - s < best)
			best = e - s;
		close(fd);
	}
	unlink(path);
	printf("piece %zu: 4 KiB random write %.2f us, 1 MiB read %.1f us, 1 MiB of sequential writes %.1f us\n",
	       piece, (t1 - t0) * 1e6 / n, (t2 - t1) * 1e6 / (4.0 * size / mib), best * 1e6 / (seq / mib));
	return 0;
}
