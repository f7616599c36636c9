// SPDX-License-Identifier: GPL-2.0
/*
 * largefolio - how many pages of a file's page cache are in large folios.
 *
 *   largefolio FILE [MIN]
 *
 * Maps FILE, touches every page and looks each one up in /proc/self/pagemap
 * and /proc/kpageflags (root only): a page whose flags say compound head
 * or tail belongs to a large folio.  Prints the count and fails when fewer
 * than MIN pages (default 1) are in large folios, so that a test of large
 * folios cannot pass on a kernel or file system that never makes any.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PM_PRESENT		(1ull << 63)
#define PM_PFN_MASK		((1ull << 55) - 1)
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16

static int read_u64(int fd, uint64_t index, uint64_t *value)
{
	return pread(fd, value, sizeof(*value), index * sizeof(*value)) ==
		sizeof(*value) ? 0 : -1;
}

int main(int argc, char **argv)
{
	long min = argc > 2 ? strtol(argv[2], NULL, 10) : 1;
	long pages, large = 0, absent = 0, i;
	int fd, pagemap, kpageflags;
	volatile const char *mem;
	uintptr_t base;
	struct stat st;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: largefolio FILE [MIN]\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	pagemap = open("/proc/self/pagemap", O_RDONLY);
	kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (fd < 0 || pagemap < 0 || kpageflags < 0 || fstat(fd, &st)) {
		perror("largefolio: open");
		return 1;
	}
	pages = (st.st_size + 4095) / 4096;
	mem = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		perror("largefolio: mmap");
		return 1;
	}
	base = (uintptr_t)mem / 4096;
	for (i = 0; i < pages; i++) {
		uint64_t entry, flags;

		(void)mem[i * 4096];
		if (read_u64(pagemap, base + i, &entry) || read_u64(kpageflags,
		    entry & PM_PFN_MASK, &flags)) {
			perror("largefolio: pagemap or kpageflags");
			return 1;
		}
		if (!(entry & PM_PRESENT) || !(entry & PM_PFN_MASK)) {
			absent++;
			continue;
		}
		if (flags & (1ull << KPF_COMPOUND_HEAD | 1ull << KPF_COMPOUND_TAIL))
			large++;
	}
	munmap((void *)mem, st.st_size);
	printf("%s: %ld of %ld pages in large folios (%ld not seen)\n",
	       argv[1], large, pages, absent);
	return large >= min && !absent ? 0 : 1;
}
