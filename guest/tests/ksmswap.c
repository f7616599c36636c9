// SPDX-License-Identifier: GPL-2.0
/*
 * ksmswap - KSM-merged memory through swap cache that the host may drop.
 *
 *   ksmswap MIB ROUNDS
 *
 * A swapped-out KSM folio is clean swap cache that nobody maps, yet the
 * next to use it need not be a swap-in path: ksmd's stable-tree search
 * takes it with folio_try_get() and compares its contents at once.  So
 * KSM folios must stay stable (mm/page_states_volatile.c).
 *
 * Region A (MIB MiB) holds every page content twice, and KSM merges the
 * pairs.  Then the second copy of each is rewritten, which leaves each
 * KSM folio mapped once, so that MADV_PAGEOUT pushes it out (a folio
 * mapped more often is skipped): it goes to swap and stays in the swap
 * cache, clean and unmapped.  Each round maps a region B with the same
 * contents for ksmd to search the stable tree with, lets ksmd scan it
 * fully a few times, and checks every word of A and B.  KSM must be
 * running (the plan sets /sys/kernel/mm/ksm/run).  Waits count ksmd's
 * full scans, never time alone.
 *
 * What this does not force: a KSM folio leaves the swap cache as soon as
 * its write completes, and in our runs B merged with none of them (the
 * last line prints the merged pages), so a search that meets a dropped
 * KSM folio is left to chance.  The rule itself is checked by the KUnit
 * case volatile_swap_cache_not_ksm; this shows that KSM-merged memory
 * comes back whole through swap under a host that drops at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WORDS		(4096 / sizeof(uint64_t))
#define MAX_SCANS	50	/* ksmd's full scans to wait for a merge */
#define PM_SWAP		(1ULL << 62)	/* pagemap: the page is in swap */

/* Content @n of the test's own: region A holds 0..pages/2-1 twice. */
static uint64_t word_of(uint64_t n, size_t word)
{
	return (n + 1) * 0x9e3779b97f4a7c15ull ^ word;
}

static long read_number(const char *path, const char *key)
{
	char line[128];
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!key) {
			v = atol(line);
			break;
		}
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ' ') {
			v = atol(line + strlen(key) + 1);
			break;
		}
	}
	fclose(f);
	return v;
}

static void fill(uint64_t *mem, size_t pages, uint64_t first)
{
	size_t p, w;

	for (p = 0; p < pages; p++)
		for (w = 0; w < WORDS; w++)
			mem[p * WORDS + w] = word_of(first + p, w);
}

static uint64_t *map_mergeable(size_t pages)
{
	uint64_t *mem = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		perror("ksmswap: mmap");
		exit(1);
	}
	if (madvise(mem, pages * 4096, MADV_MERGEABLE)) {
		perror("ksmswap: madvise(MADV_MERGEABLE)");
		exit(1);
	}
	return mem;
}

static long full_scans(void)
{
	return read_number("/sys/kernel/mm/ksm/full_scans", NULL);
}

/* Wait for @scans full scans of ksmd, or until @want pages are merged. */
static long wait_ksmd(long scans, long want)
{
	long end = full_scans() + scans, merged = 0;

	while (full_scans() < end) {
		merged = read_number("/proc/self/ksm_stat", "ksm_merging_pages");
		if (want && merged >= want)
			break;
		usleep(10000);
	}
	return merged;
}

/* How many pages of @mem are in swap, from /proc/self/pagemap. */
static long swapped(const uint64_t *mem, size_t pages)
{
	uint64_t entry;
	long n = 0;
	size_t p;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return -1;
	for (p = 0; p < pages; p++)
		if (pread(fd, &entry, sizeof(entry),
			  ((uintptr_t)mem / 4096 + p) * sizeof(entry)) == sizeof(entry) &&
		    (entry & PM_SWAP))
			n++;
	close(fd);
	return n;
}

static long check(const uint64_t *mem, size_t pages, uint64_t first, const char *what,
		  int round)
{
	size_t p, w;
	long bad = 0;

	for (p = 0; p < pages; p++)
		for (w = 0; w < WORDS; w++)
			if (mem[p * WORDS + w] != word_of(first + p, w) && bad++ < 5)
				fprintf(stderr, "ksmswap: round %d: %s page %zu word %zu is %#llx, not %#llx\n",
					round, what, p, w, (unsigned long long)mem[p * WORDS + w],
					(unsigned long long)word_of(first + p, w));
	return bad;
}

int main(int argc, char **argv)
{
	size_t pages, half;
	long merged, out, bad = 0;
	uint64_t *a, *b;
	int rounds, r;

	if (argc != 3 || atol(argv[1]) <= 0 || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: ksmswap MIB ROUNDS\n");
		return 2;
	}
	if (full_scans() < 0) {
		fprintf(stderr, "ksmswap: no /sys/kernel/mm/ksm (CONFIG_KSM?)\n");
		return 1;
	}
	pages = (size_t)atol(argv[1]) * 256;
	half = pages / 2;
	rounds = atoi(argv[2]);

	a = map_mergeable(pages);
	fill(a, half, 0);
	fill(a + half * WORDS, half, 0);
	merged = wait_ksmd(MAX_SCANS, pages);
	if (merged < (long)pages) {
		fprintf(stderr, "ksmswap: %ld of %zu pages merged after %d full scans\n", merged,
			pages, MAX_SCANS);
		return 1;
	}
	/* each KSM folio mapped once now: in the first half */
	fill(a + half * WORDS, half, pages);
	if (madvise(a, half * 4096, MADV_PAGEOUT)) {
		perror("ksmswap: madvise(MADV_PAGEOUT)");
		return 1;
	}
	out = swapped(a, half);
	printf("ksmswap: %ld of %zu merged pages pushed out to swap\n", out, half);
	if (out < (long)half / 2) {
		fprintf(stderr, "ksmswap: too few KSM pages went to swap\n");
		return 1;
	}
	for (r = 1; r <= rounds; r++) {
		b = map_mergeable(half);
		fill(b, half, 0);
		/* ksmd searches the stable tree with every page of b */
		merged = wait_ksmd(3, 0);
		bad += check(b, half, 0, "region B", r);
		bad += check(a, half, 0, "region A, first half", r);
		bad += check(a + half * WORDS, half, pages, "region A, second half", r);
		munmap(b, half * 4096);
		if (r < rounds && madvise(a, half * 4096, MADV_PAGEOUT)) {
			perror("ksmswap: madvise(MADV_PAGEOUT)");
			return 1;
		}
	}
	printf("ksmswap: %d rounds of %zu pages, %ld words wrong, %ld pages merged at the end\n",
	       rounds, pages, bad, merged);
	return bad ? 1 : 0;
}
