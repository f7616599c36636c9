// SPDX-License-Identifier: GPL-2.0
/*
 * readloop - the cost of reading a cached file, for the benchmark: with
 * the volatile page cache, a read may first have to make the folios it
 * finds stable again.
 *
 *   readloop FILE ROUNDS [PAUSE_MS [MARK]]
 *
 * Reads FILE once to cache it, then ROUNDS more times in 64 KiB reads,
 * sleeping PAUSE_MS (1500 by default) between rounds: with a pause the
 * scanner can make the cache volatile again in between, without one the
 * file stays hot.  Prints the median nanoseconds per MiB read over the
 * rounds, timing only the reads, and reports it to the host as
 * "mark: MARK <ns>" (MARK: readloop-ns-per-mib by default).
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

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned long rounds, r, bytes, pause_ms = 1500;
	const char *mark = "readloop-ns-per-mib";
	double *ns, median;
	int fd;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: readloop FILE ROUNDS [PAUSE_MS [MARK]]\n");
		return 2;
	}
	rounds = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		pause_ms = strtoul(argv[3], NULL, 0);
	if (argc > 4)
		mark = argv[4];
	fd = open(argv[1], O_RDONLY);
	ns = calloc(rounds ? rounds : 1, sizeof(*ns));
	if (fd < 0 || !rounds || !ns) {
		perror(argv[1]);
		return 1;
	}
	read_once(fd, &bytes);
	for (r = 0; r < rounds; r++) {
		if (pause_ms)
			usleep(pause_ms * 1000);
		ns[r] = read_once(fd, &bytes);
		if (!bytes)
			return 1;
		ns[r] /= bytes / 1048576.0;
	}
	qsort(ns, rounds, sizeof(*ns), by_value);
	median = rounds % 2 ? ns[rounds / 2] : (ns[rounds / 2 - 1] + ns[rounds / 2]) / 2;
	printf("readloop: %.0f ns per MiB read from the cache (median of %lu)\n",
	       median, rounds);
	dprintf(3, "mark: %s %.0f\n", mark, median);
	return 0;
}
