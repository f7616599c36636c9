// SPDX-License-Identifier: GPL-2.0
/*
 * mapverify - keep files mapped while the host drops them, and check what
 * the mappings read afterwards (s390: mapped volatile page cache, which
 * comes back through the discard fault).
 *
 *   mapverify [-t] PASSES FILE...
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
 * With -t, the files are then truncated to half their size (in pages)
 * under the mappings, once their frames went volatile again: truncation
 * meets mapped folios the host dropped.  The first half must still read
 * right through the mappings and through read(), and a load from the
 * first page past the new end must raise SIGBUS.
 *
 * Prints "mapverify: N pages mapped", a line for each pass, and at the end
 * "mapverify: P passes, F mapped frames went volatile, 0 bytes differ"
 * (with -t, "mapverify: truncated: 0 bytes differ, SIGBUS past the end"
 * before it); fails on any byte that differs.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* Does a load from @p raise SIGBUS? */
static int load_faults(const volatile unsigned char *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	int faulted = 0;

	sigaction(SIGBUS, &sa, &old);
	if (sigsetjmp(bus_jmp, 1))
		faulted = 1;
	else
		(void)*p;
	sigaction(SIGBUS, &old, NULL);
	return faulted;
}

/*
 * Truncate @m's file to half its pages under the mapping, then check what
 * is left through the mapping and through read(), and that a load past
 * the end faults.  Returns the bytes that differ, or -1.
 */
static long truncate_and_check(struct mapped *m, unsigned char *buf)
{
	size_t half = m->size / PAGE / 2 * PAGE;
	struct stat st;
	long n;
	int fd;

	if (!half || truncate(m->name, half)) {
		fprintf(stderr, "mapverify: %s: cannot truncate to %zu bytes\n", m->name, half);
		return -1;
	}
	n = differ(m->map, m->ref, half);
	fd = open(m->name, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || st.st_size != (off_t)half || read_all(fd, buf, half)) {
		fprintf(stderr, "mapverify: %s: cannot read %zu bytes back\n", m->name, half);
		return -1;
	}
	close(fd);
	n += differ(buf, m->ref, half);
	if (!load_faults(m->map + half)) {
		fprintf(stderr, "mapverify: %s: a load past the new end did not fault\n", m->name);
		return -1;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned long pages = 0, total = 0;
	long since;
	struct mapped *m;
	unsigned char *buf;
	size_t largest = 0;
	int passes, nfiles, i, pass, trunc = 0;
	volatile unsigned char sink = 0;

	if (argc > 1 && !strcmp(argv[1], "-t")) {
		trunc = 1;
		argc--;
		argv++;
	}
	if (argc < 3 || (passes = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: mapverify [-t] PASSES FILE...\n");
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
	if (trunc) {
		long bad = 0, n;

		if (wait_volatile(since, pages / 2) < 0)
			return 1;
		for (i = 0; i < nfiles; i++) {
			n = truncate_and_check(&m[i], buf);
			if (n < 0)
				return 1;
			if (n)
				fprintf(stderr, "mapverify: %s: %ld bytes differ after the truncation\n",
					m[i].name, n);
			bad += n;
		}
		printf("mapverify: truncated: %ld bytes differ%s\n", bad,
		       bad ? "" : ", SIGBUS past the end");
		if (bad)
			return 1;
	}
	printf("mapverify: %d passes, %lu mapped frames went volatile, 0 bytes differ\n",
	       passes, total);
	return 0;
}
