/*
 * seqwrite: the write half of `nfs-cp`, with clocks.
 *
 *   seqwrite SRC 'nfs://HOST/EXPORT/FILE?version=3...'
 *
 * Does what Debian's nfs-cp (libnfs 4.0.0) does -- create the target,
 * nfs_pwrite() the source in 1 MiB pieces one after the other, close -- but
 * reads the clock after the last WRITE reply, after an explicit nfs_fsync()
 * (the COMMIT that nfs-cp's close would send) and after close, so the write
 * throughput can be reported before and after the server's flush to disk
 * (docs/BENCHMARKS.md).  Prints one line:
 *
 *   bytes=B create_s=S write_s=S commit_s=S close_s=S
 *
 * write_s is from the first WRITE to the last reply, commit_s is the COMMIT
 * alone.  Build: cc -O2 -o seqwrite bench/seqwrite.c -lnfs
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <nfsc/libnfs.h>

#define CHUNK (1024 * 1024) /* nfs-cp's BUFSIZE */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: seqwrite SRC NFS-URL\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(argv[1]);
		return 2;
	}
	static char buf[CHUNK];
	struct nfs_context *nfs = nfs_init_context();
	struct nfs_url *url = nfs ? nfs_parse_url_full(nfs, argv[2]) : NULL;
	if (!url) {
		fprintf(stderr, "seqwrite: bad url: %s\n", nfs ? nfs_get_error(nfs) : "no context");
		return 2;
	}
	if (nfs_mount(nfs, url->server, url->path) != 0) {
		fprintf(stderr, "seqwrite: mount failed: %s\n", nfs_get_error(nfs));
		return 3;
	}
	struct nfsfh *fh;
	double t0 = now();
	if (nfs_create(nfs, url->file, O_WRONLY | O_CREAT | O_TRUNC, 0644, &fh) != 0) {
		fprintf(stderr, "seqwrite: create %s: %s\n", url->file, nfs_get_error(nfs));
		return 4;
	}
	double t1 = now();
	off_t off = 0;
	while (off < st.st_size) {
		size_t n = st.st_size - off > CHUNK ? CHUNK : (size_t)(st.st_size - off);
		ssize_t r = pread(fd, buf, n, off);
		if (r <= 0) {
			perror("pread");
			return 5;
		}
		int w = nfs_pwrite(nfs, fh, off, r, buf);
		if (w != r) {
			fprintf(stderr, "seqwrite: write at %lld: %s\n", (long long)off,
				w < 0 ? nfs_get_error(nfs) : "short write");
			return 5;
		}
		off += r;
	}
	double t2 = now();
	if (nfs_fsync(nfs, fh) != 0) {
		fprintf(stderr, "seqwrite: commit: %s\n", nfs_get_error(nfs));
		return 6;
	}
	double t3 = now();
	if (nfs_close(nfs, fh) != 0) {
		fprintf(stderr, "seqwrite: close: %s\n", nfs_get_error(nfs));
		return 6;
	}
	double t4 = now();
	printf("bytes=%lld create_s=%.6f write_s=%.6f commit_s=%.6f close_s=%.6f\n",
	       (long long)off, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	close(fd);
	return 0;
}
