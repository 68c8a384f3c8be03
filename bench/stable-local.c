/*
 * The local file system's own rate of stable 8 KiB writes from N threads to
 * one file, no NFS: the ceiling of the "stable 8 KiB writes, 16 threads"
 * row for any server on this disk, since every server must make each write
 * durable before it answers it.
 *
 *   cc -O2 -pthread -o stable-local bench/stable-local.c
 *   ./stable-local FILE THREADS HOW [GAP_US]
 *
 * The threads append 8 KiB writes to FILE (emptied first), as the row's
 * `nfsx bench data --mode seq-write --sync` does, for 4 s after a 1 s
 * warm-up, each write made durable before the thread's next one:
 *   own    pwrite, then its own fdatasync (the peer's way: every write
 *          flushes, the kernel runs the flushes side by side)
 *   dsync  one pwritev2(RWF_DSYNC)
 *   group  pwrite, then a flush shared with the other threads (group
 *          commit as nfsx does it: one flush at a time, each caller
 *          answered by the first flush that started after its write)
 * GAP_US (default 0) is slept between a thread's writes, standing for the
 * round trip a client makes between them. Prints writes/s and flushes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define IO_SIZE 8192
#define MAX_THREADS 256

enum how { OWN, DSYNC, GROUP };

static int fd;
static enum how how;
static long gap_us;
static volatile int stop;
static long cursor;
static long writes[MAX_THREADS];
static long flushes;

/* Group commit: flushes numbered as they start; `done` is the last ended. */
static pthread_mutex_t group_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t group_cv = PTHREAD_COND_INITIALIZER;
static long started, done;
static int running;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void flush(void)
{
	if (fdatasync(fd) != 0) {
		perror("fdatasync");
		exit(1);
	}
	__sync_fetch_and_add(&flushes, 1);
}

static void group_sync(void)
{
	pthread_mutex_lock(&group_lock);
	/* A flush running now may have started before our write returned. */
	long mine = started + 1;
	while (done < mine) {
		if (running) {
			pthread_cond_wait(&group_cv, &group_lock);
			continue;
		}
		running = 1;
		long number = ++started;
		pthread_mutex_unlock(&group_lock);
		flush();
		pthread_mutex_lock(&group_lock);
		running = 0;
		done = number;
		pthread_cond_broadcast(&group_cv);
	}
	pthread_mutex_unlock(&group_lock);
}

static void *writer(void *arg)
{
	long me = (long)arg;
	char buf[IO_SIZE];
	memset(buf, (int)me, sizeof buf);
	while (!stop) {
		off_t off = __sync_fetch_and_add(&cursor, IO_SIZE);
		if (how == DSYNC) {
			struct iovec v = { buf, sizeof buf };
			if (pwritev2(fd, &v, 1, off, RWF_DSYNC) != IO_SIZE) {
				perror("pwritev2");
				exit(1);
			}
		} else {
			if (pwrite(fd, buf, sizeof buf, off) != IO_SIZE) {
				perror("pwrite");
				exit(1);
			}
			if (how == OWN)
				flush();
			else
				group_sync();
		}
		writes[me]++;
		if (gap_us)
			usleep(gap_us);
	}
	return NULL;
}

static long total(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += writes[i];
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s FILE THREADS own|dsync|group [GAP_US]\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[2]);
	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "THREADS: 1 to %d\n", MAX_THREADS);
		return 2;
	}
	if (!strcmp(argv[3], "own"))
		how = OWN;
	else if (!strcmp(argv[3], "dsync"))
		how = DSYNC;
	else if (!strcmp(argv[3], "group"))
		how = GROUP;
	else {
		fprintf(stderr, "HOW: own, dsync or group\n");
		return 2;
	}
	gap_us = argc > 4 ? atol(argv[4]) : 0;
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	fsync(fd);
	pthread_t t[MAX_THREADS];
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, writer, (void *)i);
	sleep(1);
	long w0 = total(n), f0 = flushes;
	double t0 = now();
	sleep(4);
	long w1 = total(n), f1 = flushes;
	double t1 = now();
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	double rate = (w1 - w0) / (t1 - t0);
	printf("threads=%d how=%s gap_us=%ld writes_per_s=%.0f flushes_per_write=%.3f\n", n, argv[3], gap_us,
	       rate, how == DSYNC ? 1.0 : (double)(f1 - f0) / (double)(w1 - w0));
	close(fd);
	unlink(argv[1]);
	return 0;
}
