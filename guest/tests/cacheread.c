// SPDX-License-Identifier: GPL-2.0
/*
 * cacheread - copy a file to stdout through one of the kernel's paths into
 * the page cache, so a checksum of the output tells whether that path ever
 * saw a frame the host had dropped (it would read zeroes).
 *
 *   cacheread mmap FILE     map the file and write the mapping
 *   cacheread splice FILE   splice the file into a pipe (sendfile's path)
 *   cacheread random FILE   pread the 4 KiB blocks in a shuffled order
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(1, buf, len);

		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}

static int by_mmap(int fd, size_t size)
{
	char *map;
	int ret;

	if (!size)
		return 0;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -1;
	ret = write_all(map, size);
	munmap(map, size);
	return ret;
}

static int by_splice(int fd, size_t size)
{
	char buf[65536];
	int pipefd[2];
	loff_t off = 0;

	if (pipe(pipefd))
		return -1;
	while ((size_t)off < size) {
		ssize_t n = splice(fd, &off, pipefd[1], NULL, sizeof(buf), 0), m;

		if (n <= 0)
			return -1;
		while (n) {
			m = read(pipefd[0], buf, n);
			if (m <= 0 || write_all(buf, m))
				return -1;
			n -= m;
		}
	}
	return 0;
}

static int by_random_blocks(int fd, size_t size)
{
	size_t nr = (size + 4095) / 4096, i, j, tmp;
	size_t *order = malloc(nr * sizeof(*order));
	char *buf = malloc(nr * 4096 + 1);
	int ret = 0;

	if (!order || !buf)
		return -1;
	for (i = 0; i < nr; i++)
		order[i] = i;
	srandom(getpid());
	for (i = nr; i > 1; i--) {
		j = random() % i;
		tmp = order[i - 1];
		order[i - 1] = order[j];
		order[j] = tmp;
	}
	for (i = 0; i < nr && !ret; i++) {
		size_t want = order[i] == nr - 1 ? size - order[i] * 4096 : 4096;

		if (pread(fd, buf + order[i] * 4096, want, order[i] * 4096) != (ssize_t)want)
			ret = -1;
	}
	if (!ret)
		ret = write_all(buf, size);
	free(order);
	free(buf);
	return ret;
}

int main(int argc, char **argv)
{
	struct stat st;
	int fd, ret;

	if (argc != 3) {
		fprintf(stderr, "usage: cacheread mmap|splice|random FILE\n");
		return 2;
	}
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		perror(argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "mmap")) {
		ret = by_mmap(fd, st.st_size);
	} else if (!strcmp(argv[1], "splice")) {
		ret = by_splice(fd, st.st_size);
	} else if (!strcmp(argv[1], "random")) {
		ret = by_random_blocks(fd, st.st_size);
	} else {
		fprintf(stderr, "cacheread: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	if (ret) {
		perror("cacheread");
		return 1;
	}
	return 0;
}
