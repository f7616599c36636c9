// SPDX-License-Identifier: GPL-2.0
/*
 * pagecycle - the cost of taking a page from the allocator and giving it
 * back, for the benchmark: with hinting, each cycle adds two state
 * transitions (stable on allocation, unused on free).
 *
 *   pagecycle MIB ROUNDS [THREADS]
 *
 * Each round maps MIB MiB without huge pages, touches one byte per page
 * (one allocation each) and unmaps it (one free each).  Prints the mean
 * nanoseconds per page cycle.  With THREADS, that many threads do so at
 * once, each in its own mapping, as will-it-scale's page_fault1 does
 * (128 MiB each there): the page cycle under contention for the zone,
 * the per-CPU lists and, with hinting, the host's table.  The time is
 * then each thread's own, averaged over the threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

struct cycler {
	pthread_t thread;
	size_t len;
	unsigned long rounds;
	double ns;		/* per page cycle, this thread */
	int failed;
};

static pthread_barrier_t start_line;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *cycle(void *arg)
{
	struct cycler *c = arg;
	unsigned long r;
	double start;
	size_t i;
	char *mem;

	pthread_barrier_wait(&start_line);
	start = now_ns();
	for (r = 0; r < c->rounds; r++) {
		mem = mmap(NULL, c->len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED) {
			perror("pagecycle: mmap");
			c->failed = 1;
			return NULL;
		}
		madvise(mem, c->len, MADV_NOHUGEPAGE);
		for (i = 0; i < c->len; i += 4096)
			mem[i] = 1;
		munmap(mem, c->len);
	}
	c->ns = (now_ns() - start) / (c->len / 4096 * c->rounds);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long mib, rounds, threads = 0, t;
	struct cycler *c;
	double ns = 0;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: pagecycle MIB ROUNDS [THREADS]\n");
		return 2;
	}
	mib = strtoul(argv[1], NULL, 0);
	rounds = strtoul(argv[2], NULL, 0);
	if (argc == 4)
		threads = strtoul(argv[3], NULL, 0);
	c = calloc(threads ? threads : 1, sizeof(*c));
	if (!mib || !rounds || !c || (argc == 4 && !threads)) {
		fprintf(stderr, "pagecycle: MIB, ROUNDS and THREADS must be above 0\n");
		return 2;
	}
	pthread_barrier_init(&start_line, NULL, threads ? threads : 1);
	for (t = 0; t < (threads ? threads : 1); t++) {
		c[t].len = mib << 20;
		c[t].rounds = rounds;
		if (!threads)
			cycle(&c[t]);
		else if (pthread_create(&c[t].thread, NULL, cycle, &c[t])) {
			fprintf(stderr, "pagecycle: cannot start thread %lu\n", t);
			return 1;
		}
	}
	for (t = 0; t < (threads ? threads : 1); t++) {
		if (threads)
			pthread_join(c[t].thread, NULL);
		if (c[t].failed)
			return 1;
		ns += c[t].ns;
	}
	ns /= threads ? threads : 1;
	if (threads) {
		printf("pagecycle: %.1f ns per page cycle, %lu threads\n", ns, threads);
		dprintf(3, "mark: pagefault1-ns %.1f\n", ns);
	} else {
		printf("pagecycle: %.1f ns per page cycle\n", ns);
		dprintf(3, "mark: pagecycle-ns %.1f\n", ns);
	}
	return 0;
}
