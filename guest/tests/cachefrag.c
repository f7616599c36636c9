// SPDX-License-Identifier: GPL-2.0
/*
 * cachefrag - scatter files' page cache over all of free memory, so that
 * compaction has to migrate it.
 *
 *   cachefrag RESERVE_MIB FILE...
 *
 * In a guest that booted a moment ago the page cache sits together, and
 * compaction's migration scanner, which starts at the bottom of the zone,
 * meets the free scanner before it reaches it: compaction migrates none
 * of it (pgmigrate_success stayed 0).  So cachefrag fills free memory but
 * RESERVE_MIB and the files' size with anonymous memory, in small pages,
 * frees every Nth page of it, single free pages between used ones all
 * over memory, as many as the files have pages, and reads the files with
 * read(): the allocator takes the smallest free blocks first, so the
 * files' cache fills those holes, all of them (with more holes than that,
 * it would fill only the ones freed last, together again).  Then it frees
 * the anonymous memory, leaving the cache scattered over the zone for
 * compaction to move.  The caller drops the files' cache first.
 *
 * Prints "cachefrag: M MiB anonymous, every Nth page freed, F frames of
 * files read into the holes".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "guest-tests.h"

#define PAGE	4096UL

int main(int argc, char **argv)
{
	unsigned long files = 0, frames = 0;
	long free_kib, reserve_mib;
	size_t len, off, stride;
	char *mem, *buf;
	ssize_t n;
	int i;

	if (argc < 3 || (reserve_mib = atol(argv[1])) < 1) {
		fprintf(stderr, "usage: cachefrag RESERVE_MIB FILE...\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		files += st.st_size;
		frames += (st.st_size + PAGE - 1) / PAGE;
	}
	if (!frames) {
		fprintf(stderr, "cachefrag: the files are empty\n");
		return 1;
	}
	free_kib = meminfo_kib("MemFree:");
	if (free_kib < 0 || (unsigned long)free_kib / 1024 < reserve_mib + files / 1048576 + 64) {
		fprintf(stderr, "cachefrag: %ld KiB free, too little\n", free_kib);
		return 1;
	}
	len = ((unsigned long)free_kib * 1024 - reserve_mib * 1048576 - files) & ~(PAGE - 1);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	/* small pages: a hole in a THP would stay allocated until it is split */
	if (madvise(mem, len, MADV_NOHUGEPAGE)) {
		perror("madvise(MADV_NOHUGEPAGE)");
		return 1;
	}
	for (off = 0; off < len; off += PAGE)
		mem[off] = 1;
	/* as many holes as the files have pages, or a few more */
	stride = len / PAGE / frames;
	if (stride < 2)
		stride = 2;
	for (off = 0; off < len; off += stride * PAGE)
		if (madvise(mem + off, PAGE, MADV_DONTNEED)) {
			perror("madvise(MADV_DONTNEED)");
			return 1;
		}
	buf = malloc(1 << 16);
	if (!buf)
		return 1;
	for (i = 2; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);

		if (fd < 0) {
			perror(argv[i]);
			return 1;
		}
		while ((n = read(fd, buf, 1 << 16)) > 0)
			;
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		close(fd);
	}
	munmap(mem, len);
	printf("cachefrag: %zu MiB anonymous, every %zuth page freed, %lu frames of files read into the holes\n",
	       len >> 20, stride, frames);
	return 0;
}
