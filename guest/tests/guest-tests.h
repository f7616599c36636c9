/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What more than one guest test program needs: the guest's counters, the
 * frame behind an address, and the page-state table as the host sees it
 * (ivshmem's shared BAR, mapped through sysfs).
 */
#ifndef GUEST_TESTS_H
#define GUEST_TESTS_H

#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/pagehint.h>

#define GUEST_PAGE	4096
#define RESULTS_FD	3	/* init's results port (tap.log on the host) */
#define PCI_DEVICES	"/sys/bus/pci/devices"

/* A /proc/meminfo field in KiB, -1 if there is none. */
static inline long meminfo_kib(const char *field)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			kib = strtol(line + strlen(field), NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

/*
 * A /proc/vmstat counter, -1 if there is none.  No stdio and no malloc:
 * a test may call it while another thread's fault holds its mmap lock.
 */
static inline long vmstat(const char *name)
{
	static char buf[65536];
	size_t len = strlen(name), got = 0;
	ssize_t n;
	char *line;
	int fd = open("/proc/vmstat", O_RDONLY);

	if (fd < 0)
		return -1;
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	for (line = buf; line; ) {
		if (!strncmp(line, name, len) && line[len] == ' ')
			return strtol(line + len + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

#define PM_PRESENT	(1ULL << 63)	/* pagemap: the page is in memory */
#define PM_SWAP		(1ULL << 62)	/* pagemap: the page is in swap */
#define PM_PFN_MASK	((1ULL << 55) - 1)	/* 0 without CAP_SYS_ADMIN */

/* /proc/self/pagemap's entry for the page at @addr, 0 if unknown. */
static inline uint64_t pagemap_entry(const void *addr)
{
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &entry, sizeof(entry), (uintptr_t)addr / GUEST_PAGE * sizeof(entry)) !=
	    sizeof(entry))
		entry = 0;
	close(fd);
	return entry;
}

/* The frame that holds the page at @addr, 0 if it is not present. */
static inline uint64_t frame_of(const void *addr)
{
	uint64_t entry = pagemap_entry(addr);

	return entry & PM_PRESENT ? entry & PM_PFN_MASK : 0;
}

static inline int pci_read_hex(const char *dir, const char *name, unsigned int *value)
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

/* ivshmem's shared BAR, the page-state table, mapped with @prot; NULL: none. */
static inline uint8_t *map_table_prot(size_t *size, int prot)
{
	unsigned int vendor, device;
	uint8_t *table = NULL;
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
		if (pci_read_hex(e->d_name, "vendor", &vendor) ||
		    pci_read_hex(e->d_name, "device", &device) ||
		    vendor != 0x1af4 || device != 0x1110)
			continue;
		snprintf(path, sizeof(path), "%s/%s/resource2", PCI_DEVICES, e->d_name);
		fd = open(path, prot & PROT_WRITE ? O_RDWR : O_RDONLY);
		if (fd < 0) {
			perror(path);
			break;
		}
		map = MAP_FAILED;
		if (!fstat(fd, &st) && st.st_size >= PAGEHINT_HEADER_SIZE)
			map = mmap(NULL, st.st_size, prot, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED) {
			fprintf(stderr, "cannot map %s\n", path);
			break;
		}
		table = map;
		*size = st.st_size;
	}
	closedir(d);
	return table;
}

/* The table, mapped read-only; NULL: none. */
static inline const uint8_t *map_table(size_t *size)
{
	return map_table_prot(size, PROT_READ);
}

/* What is wrong with the table for frame @pfn, NULL if nothing. */
static inline const char *check_table(const struct pagehint_header *hdr, size_t size,
				      uint64_t pfn)
{
	if (le64toh(hdr->magic) != PAGEHINT_MAGIC)
		return "no page-state table in the BAR (bad magic)";
	if (le32toh(hdr->version) != PAGEHINT_VERSION ||
	    le32toh(hdr->header_size) != PAGEHINT_HEADER_SIZE ||
	    le32toh(hdr->page_size) != GUEST_PAGE)
		return "a table of another version, header or page size";
	if (le64toh(hdr->table_size) > size ||
	    le64toh(hdr->nr_frames) > size - PAGEHINT_HEADER_SIZE)
		return "a table larger than its BAR";
	if (pfn >= le64toh(hdr->nr_frames))
		return "the table does not cover the page's frame";
	return NULL;
}

/*
 * The byte of frame @pfn in the table, NULL (and why on stderr, after
 * @who) if there is no table that covers it.
 */
static inline const volatile uint8_t *frame_state(uint64_t pfn, const char *who)
{
	static const uint8_t *table;
	static size_t size;
	const char *wrong;

	if (!table)
		table = map_table(&size);
	if (!table) {
		fprintf(stderr, "%s: no ivshmem device with a page-state table\n", who);
		return NULL;
	}
	wrong = check_table((const void *)table, size, pfn);
	if (wrong) {
		fprintf(stderr, "%s: frame %llu: %s\n", who, (unsigned long long)pfn, wrong);
		return NULL;
	}
	return table + PAGEHINT_HEADER_SIZE + pfn;
}

#endif /* GUEST_TESTS_H */
