// SPDX-License-Identifier: GPL-2.0
/*
 * mapverify - keep files mapped while the host drops them, and check what
 * the mappings read afterwards (s390: mapped volatile page cache, which
 * comes back through the discard fault).
 *
 *   mapverify PASSES FILE...
 *
 * Reads each file with read() into anonymous memory, the reference, then
 * maps it privately and reads every page through the mapping once.  Each
 * pass waits until the guest has made mapped frames volatile, as many as
 * half the files' pages (page_states_volatile_mapped in /proc/vmstat; not
 * all of them: a folio with buffer heads stays stable), counted from the
 * start of the pass before, at most WAIT_S seconds, and compares the
 * mappings with the references:
 * odd passes with loads of its own (a dropped frame faults in user mode),
 * even passes by write()ing the mappings to a temporary file and reading
 * that back (the fault comes in the kernel's copy from user space).  Its
 * own text, when it runs from the disk under test, goes volatile and
 * comes back the same way.
 *
 * Prints "mapverify: N pages mapped", a line for each pass, and at the end
 * "mapverify: P passes, F mapped frames went volatile, 0 bytes differ";
 * fails on any byte that differs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S		120
#define PAGE		4096UL

struct mapped {
	const char *name;
	unsigned char *map;
	unsigned char *ref;
	size_t size;
};

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

static int read_all(int fd, unsigned char *buf, size_t size)
{
	size_t done = 0;
	ssize_t n;

	while (done < size) {
		n = read(fd, buf + done, size - done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static size_t differ(const unsigned char *a, const unsigned char *b, size_t size)
{
	size_t i, n = 0;

	for (i = 0; i < size; i++)
		n += a[i] != b[i];
	return n;
}

/* The mapping's bytes through the kernel: write() them out, read them back. */
static long differ_via_write(struct mapped *m, unsigned char *buf)
{
	char path[] = "/tmp/mapverify.XXXXXX";
	int fd = mkstemp(path);
	size_t done = 0;
	ssize_t n;

	if (fd < 0) {
		perror("mkstemp");
		return -1;
	}
	unlink(path);
	while (done < m->size) {
		n = write(fd, m->map + done, m->size - done);
		if (n <= 0) {
			perror("write");
			close(fd);
			return -1;
		}
		done += n;
	}
	if (lseek(fd, 0, SEEK_SET) || read_all(fd, buf, m->size)) {
		perror("read back");
		close(fd);
		return -1;
	}
	close(fd);
	return differ(buf, m->ref, m->size);
}

/*
 * Wait for the scanner to have made @frames mapped frames volatile since
 * @since (a pass that reads many dropped frames again takes long, and the
 * frames it read first may go volatile again before it ends).  Returns
 * how many it made volatile since.
 */
static long wait_volatile(long since, unsigned long frames)
{
	time_t end = time(NULL) + WAIT_S;
	struct timespec tick = { 0, 100 * 1000 * 1000 };
	long now = vmstat("page_states_volatile_mapped");

	while (now >= 0 && now - since < (long)frames && time(NULL) < end) {
		nanosleep(&tick, NULL);
		now = vmstat("page_states_volatile_mapped");
	}
	return now < 0 ? -1 : now - since;
}

int main(int argc, char **argv)
{
	unsigned long pages = 0, total = 0;
	long since;
	struct mapped *m;
	unsigned char *buf;
	size_t largest = 0;
	int passes, nfiles, i, pass;
	volatile unsigned char sink = 0;

	if (argc < 3 || (passes = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: mapverify PASSES FILE...\n");
		return 2;
	}
	nfiles = argc - 2;
	m = calloc(nfiles, sizeof(*m));
	if (!m)
		return 1;
	for (i = 0; i < nfiles; i++) {
		int fd = open(argv[i + 2], O_RDONLY);
		struct stat st;
		size_t off;

		if (fd < 0 || fstat(fd, &st) || !st.st_size) {
			fprintf(stderr, "mapverify: %s: cannot open, or empty\n", argv[i + 2]);
			return 1;
		}
		m[i].name = argv[i + 2];
		m[i].size = st.st_size;
		m[i].ref = malloc(m[i].size);
		if (!m[i].ref || read_all(fd, m[i].ref, m[i].size)) {
			fprintf(stderr, "mapverify: %s: cannot read\n", m[i].name);
			return 1;
		}
		m[i].map = mmap(NULL, m[i].size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m[i].map == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		close(fd);
		for (off = 0; off < m[i].size; off += PAGE)
			sink += m[i].map[off];
		pages += (m[i].size + PAGE - 1) / PAGE;
		if (m[i].size > largest)
			largest = m[i].size;
	}
	buf = malloc(largest);
	if (!buf)
		return 1;
	printf("mapverify: %lu pages mapped\n", pages);
	fflush(stdout);

	since = vmstat("page_states_volatile_mapped");
	if (since < 0) {
		fprintf(stderr, "mapverify: no page_states_volatile_mapped in /proc/vmstat\n");
		return 1;
	}
	for (pass = 1; pass <= passes; pass++) {
		long went = wait_volatile(since, pages / 2), bad = 0, n;

		if (went < 0)
			return 1;
		/* the next pass counts from the start of this one */
		since += went;

		for (i = 0; i < nfiles; i++) {
			if (pass % 2)
				n = differ(m[i].map, m[i].ref, m[i].size);
			else
				n = differ_via_write(&m[i], buf);
			if (n < 0)
				return 1;
			if (n)
				fprintf(stderr, "mapverify: %s: %ld bytes differ through the mapping (%s)\n",
					m[i].name, n, pass % 2 ? "loads" : "write");
			bad += n;
		}
		printf("mapverify: pass %d (%s): %ld mapped frames went volatile, %ld bytes differ\n",
		       pass, pass % 2 ? "loads" : "write", went, bad);
		fflush(stdout);
		if (bad)
			return 1;
		total += went;
	}
	printf("mapverify: %d passes, %lu mapped frames went volatile, 0 bytes differ\n",
	       passes, total);
	return 0;
}
