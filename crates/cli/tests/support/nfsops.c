/*
 * nfsops: drives one NFS export through libnfs's synchronous API, so the
 * integration tests exercise every namespace and attribute operation with a
 * real client, not only with nfsx's own encoder.
 *
 *   nfsops 'nfs://127.0.0.1/export?version=3' 'mkdir /d' 'creat /d/f 644' ...
 *
 * Each argument after the URL is one command; a leading '!' means the
 * command must fail.  Every command prints one line ("ok", a value, or the
 * error); the exit status is 0 only if every command met its expectation.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <nfsc/libnfs.h>

static struct nfs_context *nfs;

static int run(char *line)
{
	char *argv[8] = {0};
	int argc = 0;
	for (char *tok = strtok(line, " "); tok && argc < 8; tok = strtok(NULL, " "))
		argv[argc++] = tok;
	if (argc == 0)
		return -1;
	const char *cmd = argv[0];
	struct nfsfh *fh;
	int rc = -1;

	if (!strcmp(cmd, "mkdir") && argc == 2) {
		rc = nfs_mkdir(nfs, argv[1]);
	} else if (!strcmp(cmd, "rmdir") && argc == 2) {
		rc = nfs_rmdir(nfs, argv[1]);
	} else if (!strcmp(cmd, "creat") && argc == 3) {
		rc = nfs_creat(nfs, argv[1], (int)strtol(argv[2], NULL, 8), &fh);
		if (rc == 0)
			nfs_close(nfs, fh);
	} else if (!strcmp(cmd, "write") && argc == 3) {
		rc = nfs_open(nfs, argv[1], O_WRONLY, &fh);
		if (rc == 0) {
			size_t n = strlen(argv[2]);
			rc = nfs_pwrite(nfs, fh, 0, n, argv[2]);
			rc = rc == (int)n ? nfs_fsync(nfs, fh) : -1;
			nfs_close(nfs, fh);
		}
	} else if (!strcmp(cmd, "cat") && argc == 2) {
		char buf[4096] = {0};
		rc = nfs_open(nfs, argv[1], O_RDONLY, &fh);
		if (rc == 0) {
			rc = nfs_pread(nfs, fh, 0, sizeof buf - 1, buf);
			nfs_close(nfs, fh);
			if (rc >= 0) {
				printf("%s\n", buf);
				return 0;
			}
		}
	} else if (!strcmp(cmd, "rename") && argc == 3) {
		rc = nfs_rename(nfs, argv[1], argv[2]);
	} else if (!strcmp(cmd, "link") && argc == 3) {
		rc = nfs_link(nfs, argv[1], argv[2]);
	} else if (!strcmp(cmd, "symlink") && argc == 3) {
		rc = nfs_symlink(nfs, argv[1], argv[2]);
	} else if (!strcmp(cmd, "readlink") && argc == 2) {
		char buf[1024] = {0};
		rc = nfs_readlink(nfs, argv[1], buf, sizeof buf - 1);
		if (rc == 0) {
			printf("%s\n", buf);
			return 0;
		}
	} else if (!strcmp(cmd, "chmod") && argc == 3) {
		rc = nfs_chmod(nfs, argv[1], (int)strtol(argv[2], NULL, 8));
	} else if (!strcmp(cmd, "chown") && argc == 4) {
		rc = nfs_chown(nfs, argv[1], atoi(argv[2]), atoi(argv[3]));
	} else if (!strcmp(cmd, "truncate") && argc == 3) {
		rc = nfs_truncate(nfs, argv[1], strtoull(argv[2], NULL, 10));
	} else if (!strcmp(cmd, "utimes") && argc == 3) {
		struct timeval tv[2] = {{atol(argv[2]), 0}, {atol(argv[2]), 0}};
		rc = nfs_utimes(nfs, argv[1], tv);
	} else if (!strcmp(cmd, "stat") && argc == 2) {
		struct nfs_stat_64 st;
		rc = nfs_stat64(nfs, argv[1], &st);
		if (rc == 0) {
			printf("mode=%" PRIo64 " size=%" PRIu64 " nlink=%" PRIu64 " uid=%" PRIu64
			       " gid=%" PRIu64 " mtime=%" PRIu64 " ino=%" PRIu64 "\n",
			       st.nfs_mode, st.nfs_size, st.nfs_nlink, st.nfs_uid, st.nfs_gid,
			       st.nfs_mtime, st.nfs_ino);
			return 0;
		}
	} else if (!strcmp(cmd, "unlink") && argc == 2) {
		rc = nfs_unlink(nfs, argv[1]);
	} else if (!strcmp(cmd, "mkfifo") && argc == 2) {
		rc = nfs_mknod(nfs, argv[1], 0010644, 0);
	} else if (!strcmp(cmd, "createmany") && argc == 3) {
		/* N empty files DIR/f-0 ... one CREATE each, timed */
		long n = atol(argv[2]);
		struct timeval t0, t1;
		char path[4096];
		gettimeofday(&t0, NULL);
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof path, "%s/f-%ld", argv[1], i);
			if (nfs_creat(nfs, path, 0644, &fh) != 0) {
				printf("err: %s\n", nfs_get_error(nfs));
				return -1;
			}
			nfs_close(nfs, fh);
		}
		gettimeofday(&t1, NULL);
		double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_usec - t0.tv_usec) / 1e6;
		printf("created=%ld seconds=%.6f per_second=%.1f\n", n, s, n / s);
		return 0;
	} else if (!strcmp(cmd, "ls") && argc == 2) {
		struct nfsdir *dir;
		rc = nfs_opendir(nfs, argv[1], &dir);
		if (rc == 0) {
			struct nfsdirent *e;
			int n = 0;
			while ((e = nfs_readdir(nfs, dir)) != NULL) {
				if (strcmp(e->name, ".") && strcmp(e->name, ".."))
					n++;
			}
			nfs_closedir(nfs, dir);
			printf("entries=%d\n", n);
			return 0;
		}
	} else {
		fprintf(stderr, "nfsops: unknown command or arguments: %s\n", cmd);
		return -2;
	}
	if (rc < 0) {
		printf("err: %s\n", nfs_get_error(nfs));
		return -1;
	}
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nfsops URL COMMAND...\n");
		return 2;
	}
	nfs = nfs_init_context();
	if (!nfs)
		return 2;
	struct nfs_url *url = nfs_parse_url_dir(nfs, argv[1]);
	if (!url) {
		fprintf(stderr, "nfsops: bad url: %s\n", nfs_get_error(nfs));
		return 2;
	}
	if (nfs_mount(nfs, url->server, url->path) != 0) {
		printf("mount failed: %s\n", nfs_get_error(nfs));
		return 3;
	}
	int failed = 0;
	for (int i = 2; i < argc; i++) {
		char *line = strdup(argv[i]);
		int expect_fail = line[0] == '!';
		printf("%s -> ", argv[i]);
		fflush(stdout);
		int rc = run(expect_fail ? line + 1 : line);
		if (rc == -2 || (rc == 0) == expect_fail) {
			printf("UNEXPECTED\n");
			failed = 1;
		}
		free(line);
	}
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	return failed;
}
