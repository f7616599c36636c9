// SPDX-License-Identifier: GPL-2.0
/*
 * mapverify - keep files mapped while the host drops page cache, and check
 * what the mappings read afterwards.
 *
 *   mapverify [-t] [-s] SUMS PASSES FILE[=NAME]...
 *
 * Reads each file with read() into anonymous memory, the reference, and
 * checks the reference against the host's checksum of NAME (the file's
 * own name by default) in SUMS (sha256sum's format, /data.sha256): a
 * folio dropped during that first read and wrongly left uptodate would
 * otherwise poison the reference and the mapping alike.  Then it maps
 * each file privately and reads every page through the mapping once.
 *
 * Each pass waits for the guest and the host to have acted, counted from
 * the start of the pass before, at most WAIT_S seconds (only a safety
 * net: a timeout fails the run, it never passes with nothing done), and
 * compares the mappings with the references: odd passes with loads of
 * its own (a dropped frame faults in user mode), even passes by write()ing
 * the mappings to a temporary file and reading that back (the fault comes
 * in the kernel's copy from user space).
 *
 * Without -s (s390: a host with a discard fault), a pass waits until the
 * guest made mapped frames volatile, as many as half the files' pages
 * (page_states_volatile_mapped in /proc/vmstat; not all of them: a folio
 * with buffer heads stays stable).  Its own text, when it runs from the
 * disk under test, goes volatile and comes back the same way.
 *
 * With -s (x86: no discard fault, mapped frames must stay stable), a pass
 * waits until the scanner made other cache volatile, as many frames as
 * half the files' pages (page_states_volatile), and the guest found that
 * many a quarter of the files' pages dropped by the host and read them
 * again (page_states_discarded: someone else reads that other cache
 * meanwhile); page_states_volatile_mapped must not rise from the first
 * mapping to the end.
 *
 * With -t, the files are then truncated to half their size (in pages)
 * under the mappings, once their frames went volatile again: truncation
 * meets mapped folios the host dropped.  The first half must still read
 * right through the mappings and through read(), and a load from the
 * first page past the new end must raise SIGBUS.
 *
 * Prints "mapverify: N pages mapped, read() matches the host's checksums",
 * a line for each pass, and at the end "mapverify: P passes, F mapped
 * frames went volatile, 0 bytes differ" (with -s, "mapverify: P passes,
 * V other frames went volatile, D found dropped, 0 mapped frames went
 * volatile, 0 bytes differ"; with -t, "mapverify: truncated: 0 bytes
 * differ, SIGBUS past the end" before it); fails on any byte that
 * differs, a reference the host does not know, or a wait that timed out.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S		600
#define PAGE		4096UL

struct mapped {
	const char *name;
	unsigned char *map;
	unsigned char *ref;
	size_t size;
};

/* SHA-256 (FIPS 180-4), to check a reference against the host's checksum. */
static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n)	((x) >> (n) | (x) << (32 - (n)))

static void sha256_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | p[4 * i + 1] << 16 | p[4 * i + 2] << 8 |
		       p[4 * i + 3];
	for (i = 16; i < 64; i++)
		w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ w[i - 15] >> 3) +
		       w[i - 7] + (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ w[i - 2] >> 10);
	a = h[0]; b = h[1]; c = h[2]; d = h[3]; e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) +
		     sha_k[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

/* @buf's SHA-256, as 64 lower-case hex digits in @hex */
static void sha256_hex(const unsigned char *buf, size_t size, char hex[65])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	unsigned char tail[128] = { 0 };
	size_t full = size / 64 * 64, rest = size - full, i, tail_len;
	uint64_t bits = (uint64_t)size * 8;

	for (i = 0; i < full; i += 64)
		sha256_block(h, buf + i);
	memcpy(tail, buf + full, rest);
	tail[rest] = 0x80;
	tail_len = rest < 56 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = bits >> (8 * i);
	for (i = 0; i < tail_len; i += 64)
		sha256_block(h, tail + i);
	for (i = 0; i < 8; i++)
		sprintf(hex + 8 * i, "%08x", h[i]);
}

/* The host's checksum of @name in @sums (sha256sum's output), or NULL. */
static const char *host_sum(const char *sums, const char *name)
{
	static char sum[65];
	char line[512], file[400];
	const char *found = NULL;
	FILE *f = fopen(sums, "r");

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%64s %399s", sum, file) == 2 && strlen(sum) == 64 &&
		    !strcmp(file, name)) {
			found = sum;
			break;
		}
	fclose(f);
	return found;
}

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

/* A counter that must rise by @want from @since before a pass may run */
struct rise {
	const char *name;
	long since;
	long want;
	long now;
};

/*
 * Wait for every counter of @r to have risen by its want since its since
 * (a pass that reads many dropped frames again takes long, and the frames
 * it read first may go volatile again before it ends).  Returns 0, or -1
 * once WAIT_S seconds passed without it (it says which fell short): a
 * pass must not run with nothing volatile.
 */
static int wait_rises(struct rise *r, int n, const char *what)
{
	time_t end = time(NULL) + WAIT_S;
	struct timespec tick = { 0, 100 * 1000 * 1000 };
	int i, short_of;

	for (;;) {
		short_of = 0;
		for (i = 0; i < n; i++) {
			r[i].now = vmstat(r[i].name);
			if (r[i].now < 0) {
				fprintf(stderr, "mapverify: no %s in /proc/vmstat\n", r[i].name);
				return -1;
			}
			short_of += r[i].now - r[i].since < r[i].want;
		}
		if (!short_of)
			return 0;
		if (time(NULL) >= end)
			break;
		nanosleep(&tick, NULL);
	}
	for (i = 0; i < n; i++)
		if (r[i].now - r[i].since < r[i].want)
			fprintf(stderr, "mapverify: %s: %s rose by %ld in %d s, %ld wanted\n",
				what, r[i].name, r[i].now - r[i].since, WAIT_S, r[i].want);
	return -1;
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

/* How far the mapped frames the guest made volatile rose since @since */
static int mapped_stayed_stable(long since)
{
	long now = vmstat("page_states_volatile_mapped");

	if (now == since)
		return 1;
	fprintf(stderr, "mapverify: %ld mapped frames went volatile on a host without a discard fault\n",
		now - since);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long pages = 0;
	long mapped_since = 0, total[2] = { 0, 0 }, since[2];
	struct rise r[2];
	struct mapped *m;
	unsigned char *buf;
	size_t largest = 0;
	int passes, nfiles, nr, i, pass, trunc = 0, stable = 0;
	const char *sums;
	volatile unsigned char sink = 0;
	char what[32];

	for (; argc > 1 && argv[1][0] == '-'; argc--, argv++) {
		if (!strcmp(argv[1], "-t"))
			trunc = 1;
		else if (!strcmp(argv[1], "-s"))
			stable = 1;
		else
			break;
	}
	if (argc < 4 || (passes = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: mapverify [-t] [-s] SUMS PASSES FILE[=NAME]...\n");
		return 2;
	}
	sums = argv[1];
	nfiles = argc - 3;
	m = calloc(nfiles, sizeof(*m));
	if (!m)
		return 1;
	if (stable) {
		mapped_since = vmstat("page_states_volatile_mapped");
		if (mapped_since < 0) {
			fprintf(stderr, "mapverify: no page_states_volatile_mapped in /proc/vmstat\n");
			return 1;
		}
	}
	/*
	 * Transitions count from before the files are read and mapped: the
	 * checksums take long under TCG, and the frames mapped first may go
	 * volatile meanwhile, which is what pass 1 waits for.
	 */
	since[0] = vmstat(stable ? "page_states_volatile" : "page_states_volatile_mapped");
	since[1] = vmstat("page_states_discarded");
	for (i = 0; i < nfiles; i++) {
		char *path = argv[i + 3], *name = strchr(path, '=');
		const char *want;
		char got[65];
		struct stat st;
		size_t off;
		int fd;

		if (name)
			*name++ = 0;
		else
			name = basename(path);
		want = host_sum(sums, name);
		if (!want) {
			fprintf(stderr, "mapverify: %s: no checksum of %s in %s\n", path, name, sums);
			return 1;
		}
		fd = open(path, O_RDONLY);
		if (fd < 0 || fstat(fd, &st) || !st.st_size) {
			fprintf(stderr, "mapverify: %s: cannot open, or empty\n", path);
			return 1;
		}
		m[i].name = path;
		m[i].size = st.st_size;
		m[i].ref = malloc(m[i].size);
		if (!m[i].ref || read_all(fd, m[i].ref, m[i].size)) {
			fprintf(stderr, "mapverify: %s: cannot read\n", m[i].name);
			return 1;
		}
		/* the reference is what the host knows, not only what the cache says */
		sha256_hex(m[i].ref, m[i].size, got);
		if (strcmp(got, want)) {
			fprintf(stderr, "mapverify: %s: read() gave bytes the host does not know "
				"(sha256 %s, the host's %s is %s)\n", path, got, name, want);
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
	printf("mapverify: %lu pages mapped, read() matches the host's checksums\n", pages);
	fflush(stdout);

	if (stable) {
		/* other cache goes volatile and is dropped, not the mapped frames */
		r[0] = (struct rise){ "page_states_volatile", 0, pages / 2, 0 };
		r[1] = (struct rise){ "page_states_discarded", 0, pages / 4, 0 };
		nr = 2;
	} else {
		r[0] = (struct rise){ "page_states_volatile_mapped", 0, pages / 2, 0 };
		nr = 1;
	}
	for (i = 0; i < nr; i++) {
		r[i].since = since[i];
		if (r[i].since < 0) {
			fprintf(stderr, "mapverify: no %s in /proc/vmstat\n", r[i].name);
			return 1;
		}
	}
	for (pass = 1; pass <= passes; pass++) {
		long bad = 0, n, went[2] = { 0, 0 };

		snprintf(what, sizeof(what), "pass %d", pass);
		if (wait_rises(r, nr, what))
			return 1;
		/* the next pass counts from the start of this one */
		for (i = 0; i < nr; i++) {
			went[i] = r[i].now - r[i].since;
			total[i] += went[i];
			r[i].since = r[i].now;
		}

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
		if (stable)
			printf("mapverify: pass %d (%s): %ld other frames went volatile, %ld found dropped, %ld bytes differ\n",
			       pass, pass % 2 ? "loads" : "write", went[0], went[1], bad);
		else
			printf("mapverify: pass %d (%s): %ld mapped frames went volatile, %ld bytes differ\n",
			       pass, pass % 2 ? "loads" : "write", went[0], bad);
		fflush(stdout);
		if (bad || (stable && !mapped_stayed_stable(mapped_since)))
			return 1;
	}
	if (trunc) {
		long bad = 0, n;

		if (wait_rises(r, nr, "before the truncation"))
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
		if (bad || (stable && !mapped_stayed_stable(mapped_since)))
			return 1;
	}
	if (stable)
		printf("mapverify: %d passes, %ld other frames went volatile, %ld found dropped, "
		       "0 mapped frames went volatile, 0 bytes differ\n", passes, total[0], total[1]);
	else
		printf("mapverify: %d passes, %ld mapped frames went volatile, 0 bytes differ\n",
		       passes, total[0]);
	return 0;
}
