// SPDX-License-Identifier: GPL-2.0
/*
 * dutycycle - the density benchmark's guest workload (tools/density.py):
 * a guest that works now and then, so that two host cores carry many.
 *
 *   dutycycle DIR ROUNDS READ_MIB BURST_MIB BURST_EVERY PAUSE_MS [HOT_PCT]
 *
 * Each round reads READ_MIB MiB in 64 KiB reads at random places of the
 * files DIR/file* (the page cache is the point: a guest whose cache the
 * host took reads it again from its disk, one whose memory the host
 * swapped out waits for the host).  With HOT_PCT, nine reads in ten go to
 * the first HOT_PCT percent of each file, the tenth anywhere: a hot part
 * and a cold rest, as a real cache has (without it, or 100, every place is
 * as likely and the whole cache is the working set).  Every BURST_EVERY-th
 * round also
 * allocates BURST_MIB MiB, writes every page, and frees it.  Then it
 * sleeps PAUSE_MS.  ROUNDS 0: until killed.
 *
 * After each round it says, on standard output,
 *   mark: round N MS DISCARDED MAJFLT
 * MS the round's time without the pause, DISCARDED and MAJFLT the
 * guest's page_states_discarded (frames the host had dropped, read
 * again) and pgmajfault so far, from /proc/vmstat.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK	65536
#define MAX_FILES	1024

struct file {
	int fd;
	off_t size;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A vmstat counter, 0 when the kernel has none (page_states=off has all of them). */
static unsigned long long vmstat(const char *name)
{
	unsigned long long v = 0, x;
	char key[64];
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", key, &x) == 2)
		if (!strcmp(key, name))
			v = x;
	fclose(f);
	return v;
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static int open_files(const char *dir, struct file *files)
{
	char path[4096];
	struct dirent *e;
	struct stat st;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((e = readdir(d)) && n < MAX_FILES) {
		if (strncmp(e->d_name, "file", 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		files[n].fd = open(path, O_RDONLY);
		if (files[n].fd < 0 || fstat(files[n].fd, &st) || st.st_size < CHUNK) {
			if (files[n].fd >= 0)
				close(files[n].fd);
			continue;
		}
		files[n++].size = st.st_size;
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	unsigned long rounds, read_mib, burst_mib, burst_every, pause_ms, hot_pct = 100, r;
	static struct file files[MAX_FILES];
	static char buf[CHUNK];
	uint64_t x = 88172645463325252ULL;
	int nr_files;

	if (argc != 7 && argc != 8) {
		fprintf(stderr,
			"usage: dutycycle DIR ROUNDS READ_MIB BURST_MIB BURST_EVERY PAUSE_MS [HOT_PCT]\n");
		return 2;
	}
	if (argc == 8)
		hot_pct = strtoul(argv[7], NULL, 0);
	if (!hot_pct || hot_pct > 100) {
		fprintf(stderr, "dutycycle: HOT_PCT %s: 1 to 100\n", argv[7]);
		return 2;
	}
	rounds = strtoul(argv[2], NULL, 0);
	read_mib = strtoul(argv[3], NULL, 0);
	burst_mib = strtoul(argv[4], NULL, 0);
	burst_every = strtoul(argv[5], NULL, 0);
	pause_ms = strtoul(argv[6], NULL, 0);
	nr_files = open_files(argv[1], files);
	if (nr_files <= 0) {
		fprintf(stderr, "dutycycle: no files %s/file*\n", argv[1]);
		return 1;
	}
	/* each guest its own sequence: the same places in every guest would be one workload */
	x ^= (uint64_t)getpid() << 32 ^ (uint64_t)now_ms();

	for (r = 1; !rounds || r <= rounds; r++) {
		double start = now_ms();
		unsigned long i;

		for (i = 0; i < read_mib * (1 << 20) / CHUNK; i++) {
			struct file *f = &files[next(&x) % nr_files];
			off_t chunks = f->size / CHUNK, hot = chunks * hot_pct / 100;
			off_t off = (next(&x) % 10 && hot ? next(&x) % hot : next(&x) % chunks) * CHUNK;

			if (pread(f->fd, buf, CHUNK, off) < 0) {
				perror("pread");
				return 1;
			}
		}
		if (burst_every && !(r % burst_every)) {
			size_t len = burst_mib << 20;
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
			for (i = 0; i < len; i += 4096)
				p[i] = (char)i;
			munmap(p, len);
		}
		printf("mark: round %lu %.1f %llu %llu\n", r, now_ms() - start,
		       vmstat("page_states_discarded"), vmstat("pgmajfault"));
		fflush(stdout);
		usleep(pause_ms * 1000);
	}
	return 0;
}
