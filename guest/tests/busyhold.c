// SPDX-License-Identifier: GPL-2.0
/*
 * busyhold - read a file page while the host holds its frame busy.
 *
 *   busyhold FILE
 *
 * The host claims a frame (PAGEHINT_BUSY) for as long as it takes to punch
 * it; a guest CPU that wants the frame meanwhile spins.  This finds the
 * frame of FILE's first page (through /proc/self/pagemap), says so on the
 * results port ("mark: busy-hold pfn N", for the host to stop pagehintd
 * once it has claimed that frame), then watches the frame's byte in the
 * table (the ivshmem BAR, mapped read-only through sysfs) until the host
 * holds it busy, and reads the page.  The read spins in the kernel until
 * the host lets the frame go; it must then return what the page held
 * before, read again from the disk, and it must have waited at least as
 * long as the guest's "held a frame busy for over 10 s" report says (its
 * thread's CPU time: the wait spins).  The host holds the frame for 20 s
 * after it sees a vCPU in the wait (tools/check.py, busy_hold).
 *
 * The poll for the claim is bounded (MAX_POLLS): a host that never claims
 * the frame makes the test fail, not hang.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "guest-tests.h"

#define PAGE		GUEST_PAGE
#define POLL_US		10000
#define MAX_POLLS	30000	/* 5 minutes at 10 ms, within the boot's timeout */
#define WAIT_REPORT_S	10	/* the guest's report of a long wait (table.c) */

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static char before[PAGE], after[PAGE];
	long busy_waits, refetched;
	const volatile uint8_t *state;
	double waited;
	uint64_t pfn;
	char mark[64];
	void *map;
	int fd, n;

	if (argc != 2) {
		fprintf(stderr, "usage: busyhold FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || pread(fd, before, PAGE, 0) != PAGE) {
		perror(argv[1]);
		return 1;
	}
	map = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	(void)*(volatile char *)map;	/* mapped in: pagemap names its frame */
	pfn = frame_of(map);
	/* unmapped again: a mapped page is never volatile */
	munmap(map, PAGE);
	if (!pfn) {
		fprintf(stderr, "busyhold: no frame for the page in /proc/self/pagemap\n");
		return 1;
	}
	state = frame_state(pfn, "busyhold");
	if (!state)
		return 1;

	n = snprintf(mark, sizeof(mark), "mark: busy-hold pfn %llu\n", (unsigned long long)pfn);
	if (write(RESULTS_FD, mark, n) != n) {
		perror("busyhold: results port");
		return 1;
	}
	for (n = 0; *state != (PAGEHINT_BUSY | PAGEHINT_VOLATILE); n++) {
		if (n == MAX_POLLS) {
			printf("busyhold: the host never held frame %llu busy (last state 0x%02x)\n",
			       (unsigned long long)pfn, *state);
			return 1;
		}
		usleep(POLL_US);
	}
	busy_waits = vmstat("page_states_busy_wait");
	refetched = vmstat("page_states_discarded_folios");
	printf("busyhold: the host holds frame %llu busy; reading its page\n",
	       (unsigned long long)pfn);
	fflush(stdout);
	waited = thread_cpu_s();
	if (pread(fd, after, PAGE, 0) != PAGE) {
		perror("busyhold: read");
		return 1;
	}
	waited = thread_cpu_s() - waited;
	busy_waits = vmstat("page_states_busy_wait") - busy_waits;
	refetched = vmstat("page_states_discarded_folios") - refetched;
	printf("busyhold: the read took %.1f s of CPU; frame %llu is now 0x%02x\n", waited,
	       (unsigned long long)pfn, *state);
	if (memcmp(before, after, PAGE)) {
		printf("busyhold: the page differs after the host let frame %llu go\n",
		       (unsigned long long)pfn);
		return 1;
	}
	if (waited < WAIT_REPORT_S || busy_waits <= 0 || refetched <= 0) {
		printf("busyhold: the read waited %.1f s (%ld waits), %ld folios read again\n",
		       waited, busy_waits, refetched);
		return 1;
	}
	printf("busyhold: frame %llu held busy, dropped and read again: the page is intact\n",
	       (unsigned long long)pfn);
	return 0;
}
