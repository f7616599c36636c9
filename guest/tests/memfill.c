// SPDX-License-Identifier: GPL-2.0
/*
 * memfill - write a pattern over anonymous memory and read it back.
 *
 *   memfill [--pageout] MIB [ROUNDS]
 *
 * Each round maps MIB MiB, stamps every 8-byte word with a value derived
 * from the round and the word's offset, then verifies all of it and
 * unmaps it.  With --pageout, the memory is pushed out to swap
 * (MADV_PAGEOUT, then enough other memory use to evict it from the swap
 * cache) between writing and checking, so the check reads it back from
 * swap; without it, that happens only when MIB exceeds free memory.
 * Any mismatch is reported with its offset and the test fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "guest-tests.h"

static uint64_t pattern(uint64_t round, uint64_t word)
{
	/*
	 * One multiply: cheap enough for TCG, and still unique per word and
	 * round, never zero-filled, never the same for two pages.
	 */
	return (word + 1) * 0x9e3779b97f4a7c15ull ^ (round << 56 | round);
}

/*
 * Polls of 10 ms for the swap writes to complete: a safety net for a write
 * that never ends (ten minutes), not a guess at how long writes take.
 */
#define WRITEBACK_POLLS	60000
#define SQUEEZES	16

/*
 * Wait until no page is under writeback: a folio being written to swap
 * cannot be dropped from the swap cache yet, and a squeeze would pass it
 * by however long the write takes.  A write that never ends is an error.
 */
static int wait_for_writeback(void)
{
	int polls;

	for (polls = 0; meminfo_kib("Writeback:") > 0; polls++) {
		if (polls == WRITEBACK_POLLS) {
			fprintf(stderr, "memfill: pages still under writeback after %d s\n",
				WRITEBACK_POLLS / 100);
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

/*
 * MADV_PAGEOUT writes the memory to swap, but the folios stay in the swap
 * cache, where a read would find them.  Once the writes are done,
 * touching about as much memory as is left makes reclaim drop those
 * clean folios, so that the check really reads the data back from the
 * swap device.  Reclaim takes page cache before swap cache, so squeeze
 * again while much of it is still there: until less than 1/64 of it is,
 * which depends on what reclaim finds, not on how fast the machine is
 * (SQUEEZES at most: what stays is read from the swap cache, which the
 * caller's counts of pages read from swap will show).
 */
static int push_to_swap(void *mem, size_t len)
{
	size_t squeeze, i;
	int round;
	char *other;

	if (madvise(mem, len, MADV_PAGEOUT)) {
		perror("memfill: madvise(MADV_PAGEOUT)");
		return -1;
	}
	for (round = 0;; round++) {
		long avail, cached;

		if (wait_for_writeback())
			return -1;
		avail = meminfo_kib("MemAvailable:");
		cached = meminfo_kib("SwapCached:");

		if (cached >= 0 && (size_t)cached * 1024 < len / 64)
			break;
		/* what no squeeze moves is counted by the caller's pswpin */
		if (round == SQUEEZES) {
			printf("memfill: %ld KiB still in the swap cache after %d squeezes\n",
			       cached, SQUEEZES);
			break;
		}
		squeeze = ((avail > 0 ? avail : 0) + (cached > 0 ? cached : 0)) * (size_t)1024;
		other = mmap(NULL, squeeze, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (other == MAP_FAILED) {
			perror("memfill: mmap");
			return -1;
		}
		for (i = 0; i < squeeze; i += 4096)
			other[i] = 1;
		munmap(other, squeeze);
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long mib, rounds, r, bad = 0;
	int pageout = 0;
	size_t words, i;
	uint64_t *mem;

	if (argc > 1 && !strcmp(argv[1], "--pageout")) {
		pageout = 1;
		argc--;
		argv++;
	}
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: memfill [--pageout] MIB [ROUNDS]\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 0);
	rounds = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	words = (mib << 20) / sizeof(*mem);

	for (r = 0; r < rounds; r++) {
		mem = mmap(NULL, words * sizeof(*mem), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED) {
			perror("memfill: mmap");
			return 1;
		}
		for (i = 0; i < words; i++)
			mem[i] = pattern(r, i);
		if (pageout && push_to_swap(mem, words * sizeof(*mem)))
			return 1;
		for (i = 0; i < words; i++) {
			if (mem[i] == pattern(r, i))
				continue;
			if (bad++ < 10)
				fprintf(stderr, "memfill: round %lu: word at offset %#zx is %#llx, wrote %#llx\n",
					r, i * sizeof(*mem),
					(unsigned long long)mem[i],
					(unsigned long long)pattern(r, i));
		}
		munmap(mem, words * sizeof(*mem));
	}
	printf("memfill: %lu MiB x %lu rounds, %lu bad words\n", mib, rounds, bad);
	return bad ? 1 : 0;
}
