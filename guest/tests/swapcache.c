// SPDX-License-Identifier: GPL-2.0
/*
 * swapcache - check memory whose swap cache the host may have dropped.
 *
 *   swapcache anon|shmem MIB [swapoff DEVICE]
 *
 * Clean swap cache that nobody maps may be volatile: the host drops its
 * frames, and the guest must read them again from swap when it next uses
 * them.  This stamps MIB MiB of anonymous (or shmem, through a memfd)
 * memory with a pattern, and then makes every page pass through unmapped
 * clean swap cache, twice:
 *
 *  1. MADV_PAGEOUT writes the pages to swap; they stay in the swap cache,
 *     clean and unmapped, until reclaim needs the memory.
 *  2. Once the scanner has made a quarter of the pages' swap cache
 *     volatile and, where the guest can read the table, the host has
 *     dropped every volatile frame (settle(): events, not a pause that
 *     suits one machine's speed), every word is checked: the swap-in
 *     faults find the folios in the swap cache.
 *  3. Half of the pages are rewritten, and MADV_PAGEOUT writes those out
 *     again and unmaps and frees the other, clean, half; MADV_WILLNEED
 *     reads that half back by swap readahead, into swap cache that nobody
 *     maps.  Once three quarters have settled (the written half and half
 *     of the read one: readahead goes where the scanner must look for it
 *     too), every word is checked again.
 *
 * With "swapoff DEVICE", the second check runs after swapoff(2), which
 * brings everything in through the swapoff path instead of faults, and
 * swapoff must have read dropped folios again itself.  The rewritten
 * half is dirty until written, and a dirty page must never be volatile.
 * Any word that differs is reported and the test fails; a dropped folio
 * that is not read again shows up as zeroes or as SIGBUS.
 *
 * "-n" first: check without waiting for anything to go volatile, for swap
 * cache that must stay stable (THP swapped out whole).
 *
 * With "hold FILE", it stops once step 1 has settled, says "holding" on
 * stdout, and waits until FILE exists (the unplug plan removes the table's
 * device meanwhile); then every word is checked, and some dropped folio
 * must have been read again, after the guest detached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/swap.h>
#include <unistd.h>
#include "guest-tests.h"

#define HOLD_POLLS	3000	/* of 100 ms: a failing run gives up */
#define SETTLE_POLLS	3000	/* of 100 ms: only a failing run waits so long */

static uint64_t pattern(uint64_t round, uint64_t word)
{
	return (word + 1) * 0x9e3779b97f4a7c15ull ^ (round << 56 | round);
}

static int advise(void *mem, size_t len, int advice, const char *name)
{
	if (madvise(mem, len, advice)) {
		fprintf(stderr, "swapcache: madvise(%s): %s\n", name, strerror(errno));
		return -1;
	}
	return 0;
}

/* Words of page @page belong to round @round. */
static void stamp(uint64_t *words, size_t page, uint64_t round)
{
	size_t per_page = 4096 / sizeof(*words), i;

	for (i = page * per_page; i < (page + 1) * per_page; i++)
		words[i] = pattern(round, i);
}

static long check(const uint64_t *words, size_t pages, const uint64_t *rounds,
		  const char *when)
{
	size_t per_page = 4096 / sizeof(*words), i;
	long bad = 0;

	for (i = 0; i < pages * per_page; i++) {
		if (words[i] == pattern(rounds[i / per_page], i))
			continue;
		if (bad++ < 5)
			fprintf(stderr, "swapcache: %s: word %zu (page %zu) is %#llx, not %#llx\n",
				when, i, i / per_page, (unsigned long long)words[i],
				(unsigned long long)pattern(rounds[i / per_page], i));
	}
	printf("%s: %zu pages checked, %ld bad words\n", when, pages, bad);
	return bad;
}

/*
 * Frames of the table that are volatile and not yet dropped: the host's
 * work still to do; -1 if the header does not fit the mapping.
 */
static long drops_pending(const uint8_t *table, size_t table_size)
{
	const struct pagehint_header *hdr = (const void *)table;
	uint64_t start = le32toh(hdr->header_size), frames = le64toh(hdr->nr_frames), i;
	long pending = 0;
	uint8_t state;

	if (start > table_size || frames > table_size - start)
		return -1;
	for (i = 0; i < frames; i++) {
		state = *(volatile uint8_t *)&table[start + i];
		if ((state & PAGEHINT_STATE_MASK) == PAGEHINT_VOLATILE &&
		    !(state & PAGEHINT_DISCARDED))
			pending++;
	}
	return pending;
}

/*
 * Why a settle failed: how many of the pages are still in memory (the
 * swap cache, for pages swapped out: mincore() counts it), and where
 * MGLRU keeps the anon and file folios, if it is on.
 */
static void report_stall(void *mem, size_t pages)
{
	unsigned char *vec = malloc(pages);
	size_t p, resident = 0;
	char line[256];
	FILE *gens;

	if (vec && !mincore(mem, pages * 4096, vec)) {
		for (p = 0; p < pages; p++)
			resident += vec[p] & 1;
		fprintf(stderr, "swapcache: %zu of %zu pages in memory, nr_swapcached %ld\n",
			resident, pages, vmstat("nr_swapcached"));
	}
	free(vec);
	gens = fopen("/sys/kernel/debug/lru_gen", "r");
	while (gens && fgets(line, sizeof(line), gens))
		fprintf(stderr, "swapcache: lru_gen: %s", line);
	if (gens)
		fclose(gens);
}

/*
 * Wait until the scanner has made @want frames of swap cache volatile
 * since @made0 (page_states_volatile_swap: the page cache other steps
 * read goes volatile meanwhile too, and must not count) and, with a table
 * (x86; s390 keeps its states in QEMU), the host has dropped every frame
 * that is volatile then: ours among them, as nothing takes them back
 * while we wait.  On failure, say where the pages are.
 */
static int settle(long want, long made0, const uint8_t *table, size_t table_size,
		  void *mem, size_t pages)
{
	long made = 0, pending = 0;
	int i;

	for (i = 0; i < SETTLE_POLLS; i++) {
		made = vmstat("page_states_volatile_swap") - made0;
		if (made >= want) {
			pending = table ? drops_pending(table, table_size) : 0;
			if (pending < 0) {
				fprintf(stderr, "swapcache: the table's header does not fit its BAR\n");
				return -1;
			}
			if (!pending)
				return 0;
		}
		usleep(100000);
	}
	fprintf(stderr, "swapcache: after %d s, %ld frames of swap cache made volatile (%ld wanted), %ld volatile frames not dropped by the host\n",
		SETTLE_POLLS / 10, made, want, pending);
	report_stall(mem, pages);
	return -1;
}

/* Wait for @file (at most HOLD_POLLS polls), then check and count rereads. */
static int hold(const uint64_t *words, size_t pages, const uint64_t *rounds, const char *file)
{
	long rereads, bad;
	int i;

	printf("holding\n");
	fflush(stdout);
	for (i = 0; access(file, F_OK); i++) {
		if (i == HOLD_POLLS) {
			fprintf(stderr, "swapcache: %s never appeared\n", file);
			return 1;
		}
		usleep(100000);
	}
	rereads = vmstat("page_states_swap_reread");
	bad = check(words, pages, rounds, "held, then checked");
	rereads = vmstat("page_states_swap_reread") - rereads;
	printf("read %ld dropped folios again after the hold\n", rereads);
	return bad || rereads <= 0;
}

int main(int argc, char **argv)
{
	const char *swap_dev = NULL, *hold_file = NULL;
	const uint8_t *table = NULL;
	size_t len, pages, p, table_size = 0;
	uint64_t *words, *rounds;
	int shmem, fd = -1, wait = 1;
	long made, bad = 0;

	if (argc > 1 && !strcmp(argv[1], "-n")) {
		wait = 0;
		argv++;
		argc--;
	}

	if (argc != 3 && !(argc == 5 && (!strcmp(argv[3], "swapoff") ||
					 !strcmp(argv[3], "hold")))) {
		fprintf(stderr, "usage: swapcache [-n] anon|shmem MIB [swapoff DEVICE | hold FILE]\n");
		return 2;
	}
	shmem = !strcmp(argv[1], "shmem");
	if (!shmem && strcmp(argv[1], "anon")) {
		fprintf(stderr, "swapcache: %s: neither anon nor shmem\n", argv[1]);
		return 2;
	}
	if (argc == 5 && !strcmp(argv[3], "swapoff"))
		swap_dev = argv[4];
	else if (argc == 5)
		hold_file = argv[4];
	len = strtoul(argv[2], NULL, 10) << 20;
	pages = len / 4096;
	rounds = calloc(pages, sizeof(*rounds));
	if (!len || !rounds) {
		fprintf(stderr, "swapcache: bad size %s\n", argv[2]);
		return 2;
	}
	if (shmem) {
		fd = memfd_create("swapcache", 0);
		if (fd < 0 || ftruncate(fd, len)) {
			perror("swapcache: memfd");
			return 1;
		}
	}
	words = mmap(NULL, len, PROT_READ | PROT_WRITE,
		     shmem ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, fd, 0);
	if (words == MAP_FAILED) {
		perror("swapcache: mmap");
		return 1;
	}

	if (wait && !access(PCI_DEVICES, F_OK))
		table = map_table(&table_size);
	for (p = 0; p < pages; p++)
		stamp(words, p, rounds[p] = 1);
	made = vmstat("page_states_volatile_swap");
	if (advise(words, len, MADV_PAGEOUT, "MADV_PAGEOUT"))
		return 1;
	if (wait && settle((long)pages / 4, made, table, table_size, words, pages))
		return 1;
	if (hold_file) {
		if (table)
			munmap((void *)table, table_size);
		return hold(words, pages, rounds, hold_file);
	}
	bad += check(words, pages, rounds, "swapped out, swap cache dropped");

	/* Dirty half of them: these must be written out, never dropped. */
	for (p = 0; p < pages; p += 2)
		stamp(words, p, rounds[p] = 2);
	made = vmstat("page_states_volatile_swap");
	if (advise(words, len, MADV_PAGEOUT, "MADV_PAGEOUT") ||
	    advise(words, len, MADV_WILLNEED, "MADV_WILLNEED"))
		return 1;
	if (wait && settle((long)pages * 3 / 4, made, table, table_size, words, pages))
		return 1;
	if (swap_dev) {
		long rereads = vmstat("page_states_swap_reread");

		if (swapoff(swap_dev)) {
			fprintf(stderr, "swapcache: swapoff %s: %s\n", swap_dev, strerror(errno));
			return 1;
		}
		rereads = vmstat("page_states_swap_reread") - rereads;
		printf("swapoff read %ld dropped folios again\n", rereads);
		/* The readahead left nothing but dropped clean swap cache. */
		if (rereads <= 0)
			bad++;
		bad += check(words, pages, rounds, "after swapoff");
	} else {
		bad += check(words, pages, rounds, "read ahead, swap cache dropped");
	}
	return bad ? 1 : 0;
}
