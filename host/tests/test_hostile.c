// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile guest against the real pagehintd.  A thread plays the guest:
 * it rewrites every field of the header, writes junk and BUSY bytes into
 * half of the table, re-offers frames the host dropped and sets and clears
 * bits all over the change summary, past its last chunk too, all the time,
 * while pagehintd (--chaos: it drops what it may at once) starts, runs and
 * is started again, a hundred times.  The other half of the guest's memory is
 * stable and holds a pattern.
 *
 * What must hold: pagehintd never dies of a signal (it may refuse to start
 * on a header that is wrong at that moment, with status 1), each run that
 * started gives memory back (its own JSON status says so), the stable
 * half reads back intact, and the RAM file keeps its size.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <endian.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../table.h"

#define MiB		(1ULL << 20)
#define FRAMES		16384		/* 64 MiB */
#define STABLE_END	8192		/* frames below it: stable, a pattern */
#define RUNS		100		/* starts: the first on a sound header */

extern char **environ;

struct guest {
	uint8_t *table;			/* the whole table, mapped shared */
	int stop;
	int header_left_alone;		/* while a daemon starts that must start */
	int leaving_it_alone;		/* the thread has seen header_left_alone */
	unsigned long writes;
};

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * The guest: rewrites header fields and playground bytes, never the stable
 * half.  Most header writes flip the fields a daemon sizes things by
 * (nr_ranges between 1 and 40, nr_frames between right and 2^40), the
 * time-of-check-to-time-of-use race a daemon must not lose; now and then
 * the header is put right again, so that some starts pass their check.
 */
static void *hostile_guest(void *arg)
{
	struct guest *g = arg;
	struct pagehint_header *hdr = (struct pagehint_header *)g->table, good;
	uint8_t *states = g->table + PAGEHINT_HEADER_SIZE;
	uint64_t *summary = (uint64_t *)(g->table + le64toh(hdr->summary_offset));
	uint64_t x = 88172645463325252ULL;
	static const uint8_t bytes[] = { 0x00, 0x01, 0x02, 0x41, 0x42, 0x81, 0x82, 0xff, 0x7f };

	memcpy(&good, hdr, sizeof(good));
	while (!__atomic_load_n(&g->stop, __ATOMIC_RELAXED)) {
		uint64_t r = next_random(&x), v = next_random(&x);
		uint64_t pfn = STABLE_END + r % (FRAMES - STABLE_END);
		unsigned int what = r >> 60;

		if (__atomic_load_n(&g->header_left_alone, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&g->leaving_it_alone, 1, __ATOMIC_RELEASE);
			if (what <= 8 || what == 12)
				what = 15;
		}
		switch (what) {
		case 0:		/* any byte of the header before the counters */
			g->table[v % offsetof(struct pagehint_header, guest)] = (uint8_t)(v >> 8);
			break;
		case 1: case 2: case 3:
			__atomic_store_n(&hdr->nr_ranges, htole32(v & 1 ? 40 : 1), __ATOMIC_RELAXED);
			break;
		case 4: case 5:
			__atomic_store_n(&hdr->nr_frames, htole64(v & 1 ? 1ULL << 40 : FRAMES),
					 __ATOMIC_RELAXED);
			break;
		case 6:
			__atomic_store_n(&hdr->ranges[v % PAGEHINT_MAX_RANGES].file_offset,
					 v & 1 ? v : 0, __ATOMIC_RELAXED);
			break;
		case 7:		/* put right, and attached */
			memcpy(hdr, &good, offsetof(struct pagehint_header, guest));
			hdr->summary_offset = good.summary_offset;
			__atomic_store_n(&hdr->guest_epoch, __atomic_load_n(&hdr->host_epoch,
					 __ATOMIC_RELAXED), __ATOMIC_RELAXED);
			break;
		case 8:		/* forged host counters */
			__atomic_store_n(&hdr->host.dropped_unused, v, __ATOMIC_RELAXED);
			break;
		case 9: case 10:	/* re-offer what the host dropped */
			__atomic_store_n(&states[pfn], PAGEHINT_UNUSED, __ATOMIC_RELAXED);
			break;
		case 11:	/* any word of the summary: every bit, none, or noise */
			__atomic_store_n(&summary[v % (PAGEHINT_SUMMARY_BYTES(FRAMES) / 8)],
					 r & 1 ? ~0ULL : r & 2 ? 0 : v, __ATOMIC_RELAXED);
			break;
		case 12:	/* a summary elsewhere */
			__atomic_store_n(&hdr->summary_offset, v, __ATOMIC_RELAXED);
			break;
		default:	/* junk, BUSY included */
			__atomic_store_n(&states[pfn], bytes[v % sizeof(bytes)], __ATOMIC_RELAXED);
			break;
		}
		g->writes++;
	}
	return NULL;
}

static char dir[64], table_path[96], ram_path[96], out_path[128];

static pid_t start_daemon(int out)
{
	char *argv[] = { PAGEHINTD, "run", "--table", table_path, "--ram", ram_path, "--chaos",
			 "--status-ms", "50", "--json", NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	assert_int_equal(posix_spawn(&pid, PAGEHINTD, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* The daemon's own count of frames given back, from its last JSON line. */
static long long dropped(int out)
{
	static char buf[1 << 16];
	long long n = -1;
	ssize_t len = pread(out, buf, sizeof(buf) - 1, 0);
	char *line, *save = NULL;

	buf[len > 0 ? len : 0] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *o = json_tokener_parse(line), *d, *u;

		if (o && json_object_object_get_ex(o, "dropped", &d) &&
		    json_object_object_get_ex(d, "unused", &u))
			n = json_object_get_int64(u);
		json_object_put(o);
	}
	return n;
}

static void test_hostile_guest(void **state)
{
	struct pagehint_header good;
	struct guest g = { 0 };
	char err[256], page[4096];
	int fd, out, status, run, waited_ms;
	unsigned int refused = 0, gave = 0;
	pthread_t thread;
	struct stat st;
	uint64_t pfn;

	(void)state;
	strcpy(dir, "/tmp/pagehint-hostile-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(table_path, sizeof(table_path), "%s/table", dir);
	snprintf(ram_path, sizeof(ram_path), "%s/ram", dir);
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	assert_int_equal(table_create(table_path, ram_path, FRAMES * 4096ULL, false, err,
				      sizeof(err)), 0);
	fd = open(ram_path, O_RDWR);
	for (pfn = 0; pfn < FRAMES; pfn++) {
		memset(page, (int)(pfn * 13 + 5), sizeof(page));
		assert_int_equal(pwrite(fd, page, sizeof(page), pfn * 4096), sizeof(page));
	}
	close(fd);
	fd = open(table_path, O_RDWR);
	assert_int_equal(fstat(fd, &st), 0);
	g.table = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(g.table != MAP_FAILED);
	/* attached, the playground unused */
	((struct pagehint_header *)g.table)->guest_epoch =
		((struct pagehint_header *)g.table)->host_epoch;
	memset(g.table + PAGEHINT_HEADER_SIZE + STABLE_END, PAGEHINT_UNUSED, FRAMES - STABLE_END);
	memcpy(&good, g.table, sizeof(good));
	assert_int_equal(pthread_create(&thread, NULL, hostile_guest, &g), 0);

	for (run = 0; run < RUNS; run++) {
		pid_t pid;

		out = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		/*
		 * The first run starts on a header left alone (and attached),
		 * so that one run at least must give memory back; the guest
		 * rewrites it again as soon as that run has.  The other runs
		 * start into the rewriting.
		 */
		if (run == 0) {
			struct pagehint_header *hdr = (struct pagehint_header *)g.table;

			__atomic_store_n(&g.header_left_alone, 1, __ATOMIC_SEQ_CST);
			/* its header writes are over once it has seen the flag */
			while (!__atomic_load_n(&g.leaving_it_alone, __ATOMIC_ACQUIRE))
				usleep(100);
			memcpy(hdr, &good, offsetof(struct pagehint_header, guest));
			hdr->summary_offset = good.summary_offset;
			hdr->guest_epoch = hdr->host_epoch;
		}
		pid = start_daemon(out);
		/* until it gave something back, or refused to start; at most 60 s */
		for (waited_ms = 0; waited_ms < 60000; waited_ms += 10) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			if (dropped(out) > 0)
				break;
			usleep(10000);
		}
		if (waited_ms < 60000 && dropped(out) > 0) {
			gave++;
			__atomic_store_n(&g.header_left_alone, 0, __ATOMIC_SEQ_CST);
			/* the rewriting goes on under a running daemon for a while */
			usleep(run ? 20000 : 500000);
			kill(pid, SIGTERM);
		}
		if (waitpid(pid, &status, WNOHANG) == 0) {
			for (waited_ms = 0; waited_ms < 30000 && waitpid(pid, &status, WNOHANG) == 0;
			     waited_ms += 10)
				usleep(10000);
			if (waited_ms >= 30000) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				fail_msg("run %d: pagehintd neither gave back nor ended in 60 s", run);
			}
		}
		close(out);
		if (!WIFEXITED(status))
			fail_msg("run %d: pagehintd died of signal %d", run, WTERMSIG(status));
		assert_true(WEXITSTATUS(status) <= 1);
		refused += WEXITSTATUS(status) == 1;
	}
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	printf("hostile: %d runs: %u gave memory back, %u refused a header wrong at start; %lu guest writes\n",
	       RUNS, gave, refused, g.writes);
	/* the stable half, byte for byte, and the RAM file's size */
	fd = open(ram_path, O_RDONLY);
	for (pfn = 0; pfn < STABLE_END; pfn++) {
		char want[4096];

		memset(want, (int)(pfn * 13 + 5), sizeof(want));
		assert_int_equal(pread(fd, page, sizeof(page), pfn * 4096), sizeof(page));
		if (memcmp(page, want, sizeof(page)))
			fail_msg("stable frame %llu changed", (unsigned long long)pfn);
	}
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, FRAMES * 4096ULL);
	close(fd);
	/* the first run, at least, started and gave back under the rewriting */
	assert_true(gave > 0);
	munmap(g.table, table_size_for(FRAMES * 4096ULL));
	unlink(out_path);
	unlink(table_path);
	unlink(ram_path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_guest),
	};

	return cmocka_run_group_tests_name("hostile", tests, NULL, NULL);
}
