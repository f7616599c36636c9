// SPDX-License-Identifier: GPL-2.0
/*
 * readloop - the cost of reading a cached file, for the benchmark: with
 * the volatile page cache, a read may first have to make the folios it
 * finds stable again.
 *
 *   readloop FILE ROUNDS
 *
 * Reads FILE once to cache it, then ROUNDS more times in 64 KiB reads,
 * sleeping 1.5 s between rounds so that the scanner can make the cache
 * volatile again in between.  Prints the mean nanoseconds per MiB read,
 * timing only the reads.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double read_once(int fd, unsigned long *bytes)
{
	static char buf[65536];
	struct timespec a, b;
	off_t off = 0;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &a);
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0)
		off += n;
	clock_gettime(CLOCK_MONOTONIC, &b);
	*bytes = off;
	return (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv)
{
	unsigned long rounds, r, bytes, total = 0;
	double ns = 0;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: readloop FILE ROUNDS\n");
		return 2;
	}
	rounds = strtoul(argv[2], NULL, 0);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || !rounds) {
		perror(argv[1]);
		return 1;
	}
	read_once(fd, &bytes);
	for (r = 0; r < rounds; r++) {
		usleep(1500000);
		ns += read_once(fd, &bytes);
		total += bytes;
	}
	if (!total)
		return 1;
	ns /= total / 1048576.0;
	printf("readloop: %.0f ns per MiB read from the cache\n", ns);
	dprintf(3, "mark: readloop-ns-per-mib %.0f\n", ns);
	return 0;
}
