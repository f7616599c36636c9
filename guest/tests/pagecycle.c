// SPDX-License-Identifier: GPL-2.0
/*
 * pagecycle - the cost of taking a page from the allocator and giving it
 * back, for the benchmark: with hinting, each cycle adds two state
 * transitions (stable on allocation, unused on free).
 *
 *   pagecycle MIB ROUNDS
 *
 * Each round maps MIB MiB without huge pages, touches one byte per page
 * (one allocation each) and unmaps it (one free each).  Prints the mean
 * nanoseconds per page cycle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv)
{
	unsigned long mib, rounds, r, pages;
	struct timespec a, b;
	size_t len, i;
	double ns;
	char *mem;

	if (argc != 3) {
		fprintf(stderr, "usage: pagecycle MIB ROUNDS\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 0);
	rounds = strtoul(argv[2], NULL, 0);
	len = mib << 20;
	pages = len / 4096;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (r = 0; r < rounds; r++) {
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED) {
			perror("pagecycle: mmap");
			return 1;
		}
		madvise(mem, len, MADV_NOHUGEPAGE);
		for (i = 0; i < len; i += 4096)
			mem[i] = 1;
		munmap(mem, len);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (pages * rounds);
	printf("pagecycle: %.1f ns per page cycle\n", ns);
	dprintf(3, "mark: pagecycle-ns %.1f\n", ns);
	return 0;
}
