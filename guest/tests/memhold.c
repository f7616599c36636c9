// SPDX-License-Identifier: GPL-2.0
/*
 * memhold - allocate memory, hold it, free it, and tell the host when.
 *
 *   memhold MIB HOLD_SECONDS AFTER_SECONDS
 *
 * Maps and fills MIB MiB, writes "mark: allocated" to fd 3 (the guest's
 * result channel, which the host reads as it goes), holds the memory for
 * HOLD_SECONDS, checks it, frees it, writes "mark: freed" and waits
 * AFTER_SECONDS, so the host can time how fast the memory comes back.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void mark(const char *what)
{
	dprintf(3, "mark: %s\n", what);
	printf("memhold: %s\n", what);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned long mib, bad = 0;
	size_t len, i;
	uint64_t *mem;

	if (argc != 4) {
		fprintf(stderr, "usage: memhold MIB HOLD_SECONDS AFTER_SECONDS\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 0);
	len = mib << 20;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("memhold: mmap");
		return 1;
	}
	for (i = 0; i < len / 8; i++)
		mem[i] = i * 0x9e3779b97f4a7c15ull;
	mark("allocated");
	sleep(atoi(argv[2]));
	for (i = 0; i < len / 8; i++)
		bad += mem[i] != i * 0x9e3779b97f4a7c15ull;
	munmap(mem, len);
	mark("freed");
	sleep(atoi(argv[3]));
	printf("memhold: %lu MiB, %lu bad words\n", mib, bad);
	return bad ? 1 : 0;
}
