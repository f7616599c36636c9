// SPDX-License-Identifier: GPL-2.0
/*
 * reservedpfns - which page frames MemTotal leaves out, for the benchmark.
 *
 *   reservedpfns
 *
 * MemTotal counts the pages the allocator manages; the memmap, the kernel
 * image and the other boot-time reservations are page frames too, and the
 * host holds them like any stable frame.  Rather than assume that they are
 * all resident, the benchmark asks the host which of them it holds, and
 * this program says which they are: every frame below the end of System RAM
 * that /proc/kpageflags (root only) calls reserved (KPF_RESERVED) or that
 * has no struct page at all (KPF_NOPAGE: a hole in the memory map).
 *
 * Prints "mark: reserved-pfns FIRST-END ..." (END exclusive) on one line.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define KPF_NOPAGE	20
#define KPF_RESERVED	32
#define BATCH		4096

int main(void)
{
	static uint64_t flags[BATCH];
	uint64_t pfn = 0, start = 0, reserved = 0;
	int in_range = 0, fd;
	ssize_t n;

	fd = open("/proc/kpageflags", O_RDONLY);
	if (fd < 0) {
		perror("reservedpfns: /proc/kpageflags");
		return 1;
	}
	printf("mark: reserved-pfns");
	while ((n = pread(fd, flags, sizeof(flags), pfn * sizeof(flags[0]))) > 0) {
		size_t i, nr = n / sizeof(flags[0]);

		for (i = 0; i < nr; i++, pfn++) {
			int out = !!(flags[i] & (1ull << KPF_RESERVED | 1ull << KPF_NOPAGE));

			if (out && !in_range)
				start = pfn;
			else if (!out && in_range)
				printf(" %llu-%llu", (unsigned long long)start,
				       (unsigned long long)pfn);
			reserved += out;
			in_range = out;
		}
	}
	if (n < 0) {
		perror("reservedpfns: read /proc/kpageflags");
		return 1;
	}
	if (in_range)
		printf(" %llu-%llu", (unsigned long long)start, (unsigned long long)pfn);
	printf("\n");
	fprintf(stderr, "reservedpfns: %llu of %llu frames\n",
		(unsigned long long)reserved, (unsigned long long)pfn);
	return pfn ? 0 : 1;
}
