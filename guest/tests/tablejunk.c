// SPDX-License-Identifier: GPL-2.0
/*
 * tablejunk - a hostile guest: what root in a guest can do to its table.
 *
 *   tablejunk SECONDS
 *
 * (SIGTERM ends the SECONDS early.)
 * Fills 16 MiB of its own, locked, with a pattern.  For SECONDS it then
 * sets every bit of the change summary, again and again (every pass of
 * the host must look at every chunk of the table: the read the host's
 * budget bounds), and writes junk into the state bytes of its own frames:
 * values that are no state a host may drop (neither UNUSED nor VOLATILE,
 * with the BUSY and DISCARDED bits and unknown states), which the host
 * must read and leave alone.  Then it puts its frames' bytes back to
 * STABLE, as its kernel left them, checks the pattern and says how many
 * words were wrong: 0, or the host dropped memory it had no right to.
 */
#include <endian.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "guest-tests.h"

#define BUF_MIB		16
#define BUF_PAGES	((BUF_MIB << 20) / GUEST_PAGE)

/* junk: never UNUSED or VOLATILE in the state bits, so never droppable */
static const uint8_t junk[] = { 0x03, 0x0f, 0x80, 0x40, 0xc0, 0x83, 0x4c, 0xfc };

static volatile sig_atomic_t stop;

static void on_sigterm(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static uint64_t pfns[BUF_PAGES];
	unsigned long passes = 0, bad = 0, i, words;
	uint64_t *buf, summary, frames;
	struct pagehint_header *hdr;
	volatile uint64_t *bits;
	size_t size;
	uint8_t *table;
	time_t end;

	if (argc != 2) {
		fprintf(stderr, "usage: tablejunk SECONDS\n");
		return 2;
	}
	table = map_table_prot(&size, PROT_READ | PROT_WRITE);
	if (!table || check_table((const void *)table, size, 0)) {
		fprintf(stderr, "tablejunk: no page-state table to write\n");
		return 1;
	}
	hdr = (void *)table;
	frames = le64toh(hdr->nr_frames);
	summary = le64toh(hdr->summary_offset);
	words = PAGEHINT_SUMMARY_BYTES(frames) / 8;
	if (summary % 8 || summary > size || words * 8 > size - summary) {
		fprintf(stderr, "tablejunk: the summary is not in the table\n");
		return 1;
	}
	bits = (volatile uint64_t *)(table + summary);

	buf = mmap(NULL, BUF_MIB << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED || mlock(buf, BUF_MIB << 20)) {
		perror("tablejunk: a locked buffer");
		return 1;
	}
	for (i = 0; i < (BUF_MIB << 20) / 8; i++)
		buf[i] = i * 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < BUF_PAGES; i++) {
		pfns[i] = frame_of((char *)buf + i * GUEST_PAGE);
		if (!pfns[i] || pfns[i] >= frames) {
			fprintf(stderr, "tablejunk: page %lu has no frame in the table\n", i);
			return 1;
		}
	}

	signal(SIGTERM, on_sigterm);
	dprintf(RESULTS_FD, "mark: hostile\n");
	end = time(NULL) + strtol(argv[1], NULL, 0);
	while (!stop && time(NULL) < end) {
		for (i = 0; i < words; i++)
			bits[i] = ~0ULL;
		for (i = 0; i < BUF_PAGES; i++)
			table[PAGEHINT_HEADER_SIZE + pfns[i]] = junk[(i + passes) % sizeof(junk)];
		passes++;
		usleep(1000);
	}
	for (i = 0; i < BUF_PAGES; i++)
		table[PAGEHINT_HEADER_SIZE + pfns[i]] = PAGEHINT_STABLE;

	for (i = 0; i < (BUF_MIB << 20) / 8; i++)
		bad += buf[i] != i * 0x9e3779b97f4a7c15ULL;
	printf("tablejunk: %lu passes over %lu summary words and %d frames; %lu words wrong\n",
	       passes, words, BUF_PAGES, bad);
	return bad ? 1 : 0;
}
