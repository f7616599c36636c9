// SPDX-License-Identifier: GPL-2.0
/*
 * mapkeep - keep files mapped, as a running program keeps its own text
 * and the files it reads through mmap, so that a benchmark can tell how
 * much mapped page cache the host may drop (tools/bench.py, s390 against
 * x86).
 *
 *   mapkeep FILE...   map each file, read every page once, print
 *                     "mapkeep: N KiB mapped", then wait to be killed
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long kib = 0;
	volatile unsigned char sink = 0;
	int i;

	for (i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		struct stat st;
		unsigned char *p;
		off_t off;

		if (fd < 0 || fstat(fd, &st)) {
			perror(argv[i]);
			return 1;
		}
		p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		for (off = 0; off < st.st_size; off += 4096)
			sink += p[off];
		kib += st.st_size / 1024;
		close(fd);
	}
	printf("mapkeep: %lu KiB mapped\n", kib);
	fflush(stdout);
	for (;;)
		pause();
}
