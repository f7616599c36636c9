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
#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/pagehint.h>

#define PAGE		4096
#define POLL_US		10000
#define MAX_POLLS	30000	/* 5 minutes at 10 ms, within the boot's timeout */
#define WAIT_REPORT_S	10	/* the guest's report of a long wait (table.c) */
#define RESULTS_FD	3	/* init's results port (tap.log on the host) */
#define PCI_DEVICES	"/sys/bus/pci/devices"

/* A /proc/vmstat counter, -1 if there is none. */
static long vmstat(const char *name)
{
	char key[64];
	long value;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &value) == 2) {
		if (!strcmp(key, name)) {
			fclose(f);
			return value;
		}
	}
	fclose(f);
	return -1;
}

/* The frame that holds the page at @addr, 0 if it is not present. */
static uint64_t frame_of(const void *addr)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &entry, sizeof(entry), (uintptr_t)addr / PAGE * sizeof(entry)) !=
	    sizeof(entry))
		entry = 0;
	close(fd);
	/* bit 63: present; bits 0-54: the frame (0 without CAP_SYS_ADMIN) */
	return entry >> 63 ? entry & ((1ULL << 55) - 1) : 0;
}

static int read_hex(const char *dir, const char *name, unsigned int *value)
{
	char path[512];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s/%s", PCI_DEVICES, dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%x", value) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

/* ivshmem's shared BAR, the page-state table, mapped read-only; NULL: none. */
static const uint8_t *map_table(size_t *size)
{
	unsigned int vendor, device;
	const uint8_t *table = NULL;
	struct dirent *e;
	char path[512];
	struct stat st;
	DIR *d = opendir(PCI_DEVICES);
	void *map;
	int fd;

	if (!d) {
		perror(PCI_DEVICES);
		return NULL;
	}
	while (!table && (e = readdir(d))) {
		if (read_hex(e->d_name, "vendor", &vendor) ||
		    read_hex(e->d_name, "device", &device) ||
		    vendor != 0x1af4 || device != 0x1110)
			continue;
		snprintf(path, sizeof(path), "%s/%s/resource2", PCI_DEVICES, e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0) {
			perror(path);
			break;
		}
		map = MAP_FAILED;
		if (!fstat(fd, &st) && st.st_size >= PAGEHINT_HEADER_SIZE)
			map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED) {
			fprintf(stderr, "busyhold: cannot map %s\n", path);
			break;
		}
		table = map;
		*size = st.st_size;
	}
	closedir(d);
	return table;
}

/* What is wrong with the table for frame @pfn, NULL if nothing. */
static const char *check_table(const struct pagehint_header *hdr, size_t size, uint64_t pfn)
{
	if (le64toh(hdr->magic) != PAGEHINT_MAGIC)
		return "no page-state table in the BAR (bad magic)";
	if (le32toh(hdr->version) != PAGEHINT_VERSION ||
	    le32toh(hdr->header_size) != PAGEHINT_HEADER_SIZE ||
	    le32toh(hdr->page_size) != PAGE)
		return "a table of another version, header or page size";
	if (le64toh(hdr->table_size) > size ||
	    le64toh(hdr->nr_frames) > size - PAGEHINT_HEADER_SIZE)
		return "a table larger than its BAR";
	if (pfn >= le64toh(hdr->nr_frames))
		return "the table does not cover the page's frame";
	return NULL;
}

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
	const uint8_t *table;
	size_t table_size = 0;
	const char *wrong;
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
	table = map_table(&table_size);
	if (!table) {
		fprintf(stderr, "busyhold: no ivshmem device with a page-state table\n");
		return 1;
	}
	wrong = check_table((const void *)table, table_size, pfn);
	if (wrong) {
		fprintf(stderr, "busyhold: frame %llu: %s\n", (unsigned long long)pfn, wrong);
		return 1;
	}
	state = table + PAGEHINT_HEADER_SIZE + pfn;

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
