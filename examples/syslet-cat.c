/* SPDX-License-Identifier: MIT */
/*
 * syslet-cat: print the regular files of a directory (in name order), or
 * the files named, one after the other, reading many of them at once.
 *
 *   syslet-cat [-d DEPTH] [-r RING] DIR|FILE...
 *
 * Up to DEPTH files (default 16) are being read at a time, each with one
 * pread64 through indirect() into a buffer of its size; a read the page
 * cache answers completes inline, one that would block goes to a worker
 * and its completion lands in a ring of RING slots (default 64, a power of
 * two, at least DEPTH). Output is in order: a file is written out once it
 * and every file before it are read. A short read (a file that shrank, or
 * one of more than 2 GiB) is continued from where it stopped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <syslet/syslet.h>

struct file {
	char *path;
	int fd;
	char *buf;
	size_t size, done;
	int state; /* 0 waiting, 1 reading, 2 read, 3 written */
};

static struct file *files;
static size_t nfiles;

static void die(const char *what, const char *path)
{
	fprintf(stderr, "syslet-cat: %s%s%s: %s\n", what, path ? " " : "",
		path ? path : "", strerror(errno));
	exit(1);
}

static void add(const char *path)
{
	files = realloc(files, (nfiles + 1) * sizeof(*files));
	if (!files)
		die("out of memory", NULL);
	memset(&files[nfiles], 0, sizeof(*files));
	files[nfiles].path = strdup(path);
	files[nfiles].fd = -1;
	nfiles++;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->path,
		      ((const struct file *)b)->path);
}

static void add_arg(const char *arg)
{
	struct dirent *d;
	struct stat st;
	char *path;
	DIR *dir;

	if (stat(arg, &st))
		die("cannot stat", arg);
	if (!S_ISDIR(st.st_mode)) {
		add(arg);
		return;
	}
	dir = opendir(arg);
	if (!dir)
		die("cannot open", arg);
	while ((d = readdir(dir))) {
		if (asprintf(&path, "%s/%s", arg, d->d_name) < 0)
			die("out of memory", NULL);
		if (!stat(path, &st) && S_ISREG(st.st_mode))
			add(path);
		free(path);
	}
	closedir(dir);
}

/* Issue (or continue) the read of file @i; 1 if it is now fully read. */
static int issue(struct syslet_ring *ring, size_t i)
{
	struct file *f = &files[i];
	union indirect_params p = { 0 };
	struct indirect_registers regs;
	long r;

	p.syslet.completion_ring_ptr = (uint64_t)(uintptr_t)ring;
	p.syslet.caller_data = i;
	for (;;) {
		if (f->done == f->size)
			return 1;
		FILL_IN(regs, SYS_pread64, f->fd, f->buf + f->done,
			f->size - f->done, f->done);
		r = indirect(&regs, &p, sizeof(p), 0);
		if (r < 0 && errno == ESYSLETPENDING)
			return 0;
		if (r < 0)
			die("cannot read", f->path);
		if (r == 0) /* the file shrank: print what there is */
			f->size = f->done;
		f->done += (size_t)r;
	}
}

static void start(struct syslet_ring *ring, size_t i)
{
	struct file *f = &files[i];
	struct stat st;

	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st))
		die("cannot open", f->path);
	f->size = (size_t)st.st_size;
	f->buf = malloc(f->size ? f->size : 1);
	if (!f->buf)
		die("out of memory", NULL);
	f->state = issue(ring, i) ? 2 : 1;
}

int main(int argc, char **argv)
{
	unsigned long depth = 16, elements = 64, inflight = 0;
	size_t next = 0, out = 0, i;
	struct syslet_ring *ring;
	struct syslet_completion *c;
	struct file *f;
	int opt;

	while ((opt = getopt(argc, argv, "d:r:")) != -1) {
		if (opt == 'd')
			depth = strtoul(optarg, NULL, 0);
		else if (opt == 'r')
			elements = strtoul(optarg, NULL, 0);
		else
			goto usage;
	}
	if (optind == argc || !depth || elements < depth ||
	    elements > (1ul << 20) || (elements & (elements - 1)))
		goto usage;
	for (; optind < argc; optind++)
		add_arg(argv[optind]);
	qsort(files, nfiles, sizeof(*files), by_name);
	ring = aligned_alloc(64, (syslet_ring_size((uint32_t)elements) + 63) &
					 ~(size_t)63);
	if (!ring || syslet_ring_init(ring, (uint32_t)elements))
		die("out of memory", NULL);

	while (out < nfiles) {
		/* Keep DEPTH files in flight (read, or being read). */
		while (next < nfiles && inflight < depth) {
			start(ring, next++);
			inflight++;
		}
		/* Write out, in order, what is read. */
		while (out < nfiles && files[out].state == 2) {
			f = &files[out++];
			if (fwrite(f->buf, 1, f->size, stdout) != f->size)
				die("cannot write", NULL);
			free(f->buf);
			close(f->fd);
			f->state = 3;
			inflight--;
		}
		if (out == nfiles || (next < nfiles && inflight < depth))
			continue;
		/* Wait for one completion, then take all there are. */
		if (syslet_ring_head(ring) == ring->user_tail &&
		    syslet_ring_wait(ring, ring->user_tail) && errno != EINTR)
			die("cannot wait", NULL);
		while (syslet_ring_head(ring) != ring->user_tail) {
			c = syslet_ring_slot(ring, ring->user_tail);
			i = (size_t)c->caller_data;
			if ((long)c->status < 0) {
				errno = (int)-(long)c->status;
				die("cannot read", files[i].path);
			}
			if (c->status == 0)
				files[i].size = files[i].done;
			files[i].done += (size_t)c->status;
			syslet_ring_advance(ring, 1);
			if (issue(ring, i))
				files[i].state = 2;
		}
	}
	free(ring);
	return fflush(stdout) ? 1 : 0;
usage:
	fprintf(stderr, "usage: syslet-cat [-d DEPTH] [-r RING] DIR|FILE...\n"
			"  RING: a power of two, at least DEPTH\n");
	return 2;
}
