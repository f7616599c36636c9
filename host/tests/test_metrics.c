// SPDX-License-Identifier: GPL-2.0
/*
 * pagehintd's Prometheus metrics: the text format with names that need
 * escaping, checked by Debian's promtool; the file replaced whole, never
 * rewritten in place, with nothing left behind when a write fails; and
 * the daemon itself, whose file must say what the test made the guest's
 * table say.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../metrics.h"
#include "../table.h"

#define MiB		(1ULL << 20)
/* the label of the guest named vm "one", escaped as the format wants */
#define VM		"guest=\"vm \\\"one\\\"\""

extern char **environ;

struct dir {
	char path[64], file[96], table[96], ram[96];
};

static int setup_dir(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	strcpy(d->path, "/tmp/pagehint-metrics-XXXXXX");
	assert_non_null(mkdtemp(d->path));
	snprintf(d->file, sizeof(d->file), "%s/guest.prom", d->path);
	snprintf(d->table, sizeof(d->table), "%s/table", d->path);
	snprintf(d->ram, sizeof(d->ram), "%s/ram", d->path);
	*state = d;
	return 0;
}

static int teardown_dir(void **state)
{
	struct dir *d = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->path);
	assert_int_equal(system(cmd), 0);
	free(d);
	return 0;
}

/* What promtool check metrics says of TEXT; fails the case on any complaint. */
static void promtool_accepts(const char *text)
{
	char out[4096] = "", path[] = "/tmp/pagehint-promtool-XXXXXX", cmd[160];
	int fd = mkstemp(path), status;
	FILE *p;
	size_t n;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	status = pclose(p);
	unlink(path);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		fail_msg("promtool is missing: scripts/deps.sh host installs it "
			 "(Debian's prometheus)");
	if (status || n)
		fail_msg("promtool check metrics: status %d: %s", status, out);
}

static char *format(const struct guest_metrics *g, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(metrics_format(f, g, n), 0);
	fclose(f);
	return text;
}

static void expect_line(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	if (!strstr(text, want))
		fail_msg("no line \"%s\" in:\n%s", line, text);
}

/* Two guests, one with every character the format must escape in its name. */
static const struct guest_metrics two[] = {
	{ .name = "vm1", .attached = true, .resident_bytes = 123 * MiB,
	  .frames = { .stable = 1, .unused = 2, .volatile_ = 3, .busy = 4, .unused_dropped = 5,
		      .volatile_dropped = 6 },
	  .dropped_unused = 7, .dropped_volatile = 8, .punch_calls = 9, .claims_lost = 10,
	  .target_bytes = -1, .guest_to_unused = 11, .guest_to_stable = 12,
	  .guest_busy_waits = 13, .guest_frames_unused = 14 },
	{ .name = "a\"b\\c\nd", .target_bytes = 256 * MiB,
	  .guest_to_unused = UINT64_MAX },
};

static void test_format(void **state)
{
	char *text = format(two, 2);

	(void)state;
	expect_line(text, "# TYPE pagehint_frames gauge");
	expect_line(text, "pagehint_guest_attached{guest=\"vm1\"} 1");
	expect_line(text, "pagehint_host_resident_bytes{guest=\"vm1\"} 128974848");
	expect_line(text, "pagehint_frames{guest=\"vm1\",state=\"stable\"} 1");
	expect_line(text, "pagehint_frames{guest=\"vm1\",state=\"unused\"} 2");
	expect_line(text, "pagehint_frames{guest=\"vm1\",state=\"unused_dropped\"} 5");
	expect_line(text, "pagehint_frames{guest=\"vm1\",state=\"volatile\"} 3");
	expect_line(text, "pagehint_frames{guest=\"vm1\",state=\"volatile_dropped\"} 6");
	expect_line(text, "pagehint_frames{guest=\"vm1\",state=\"busy\"} 4");
	expect_line(text, "# TYPE pagehint_dropped_frames_total counter");
	expect_line(text, "pagehint_dropped_frames_total{guest=\"vm1\",state=\"unused\"} 7");
	expect_line(text, "pagehint_dropped_frames_total{guest=\"vm1\",state=\"volatile\"} 8");
	expect_line(text, "pagehint_punch_calls_total{guest=\"vm1\"} 9");
	expect_line(text, "pagehint_claims_lost_total{guest=\"vm1\"} 10");
	expect_line(text, "pagehint_guest_transitions_total{guest=\"vm1\",to=\"unused\"} 11");
	expect_line(text, "pagehint_guest_transitions_total{guest=\"vm1\",to=\"stable\"} 12");
	expect_line(text, "pagehint_guest_busy_waits_total{guest=\"vm1\"} 13");
	expect_line(text, "pagehint_guest_unused_frames{guest=\"vm1\"} 14");
	/* no target: no sample, rather than a number that reads as one */
	assert_null(strstr(text, "pagehint_target_bytes{guest=\"vm1\"}"));
	expect_line(text, "pagehint_target_bytes{guest=\"a\\\"b\\\\c\\nd\"} 268435456");
	/* whatever the guest wrote, printed as the number it is */
	expect_line(text, "pagehint_guest_transitions_total{guest=\"a\\\"b\\\\c\\nd\",to=\"unused\"} "
		    "18446744073709551615");
	promtool_accepts(text);
	free(text);
}

/* pagehintd host: a libvirt domain's samples carry its UUID beside its name */
static void test_format_domain(void **state)
{
	static const struct guest_metrics domains[] = {
		{ .name = "web1", .uuid = "5e2a1b3c-7d4f-4e6a-9b8c-0d1e2f3a4b5c", .attached = true,
		  .target_bytes = 512 * MiB, .frames = { .unused = 2 } },
		{ .name = "web2", .uuid = "0f1e2d3c-4b5a-4978-8a9b-c0d1e2f3a4b5",
		  .target_bytes = -1 },
	};
	char *text = format(domains, 2);

	(void)state;
	expect_line(text, "pagehint_guest_attached{guest=\"web1\","
		    "uuid=\"5e2a1b3c-7d4f-4e6a-9b8c-0d1e2f3a4b5c\"} 1");
	expect_line(text, "pagehint_frames{guest=\"web1\","
		    "uuid=\"5e2a1b3c-7d4f-4e6a-9b8c-0d1e2f3a4b5c\",state=\"unused\"} 2");
	expect_line(text, "pagehint_target_bytes{guest=\"web1\","
		    "uuid=\"5e2a1b3c-7d4f-4e6a-9b8c-0d1e2f3a4b5c\"} 536870912");
	expect_line(text, "pagehint_guest_attached{guest=\"web2\","
		    "uuid=\"0f1e2d3c-4b5a-4978-8a9b-c0d1e2f3a4b5\"} 0");
	promtool_accepts(text);
	free(text);
}

static void read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = 0;
	close(fd);
}

/* The files in D's directory, by name, one line each. */
static void list_dir(struct dir *d, char *buf, size_t len)
{
	DIR *dir = opendir(d->path);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(dir);
	buf[0] = 0;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			n += snprintf(buf + n, len - n, "%s\n", e->d_name);
	closedir(dir);
}

/*
 * A reader that has the file open keeps reading the whole old one while
 * the next is written: the file is replaced (a new inode, renamed over
 * it), never truncated and rewritten.  It is 0644, and no temporary file
 * is left beside it.
 */
static void test_write_replaces_whole(void **state)
{
	struct dir *d = *state;
	static char first[16384], again[16384], now[16384];
	char *text1 = format(two, 1), *text2 = format(two + 1, 1);
	struct stat st;
	int reader;

	assert_int_equal(metrics_write(d->file, two, 1), 0);
	reader = open(d->file, O_RDONLY);
	assert_true(reader >= 0);
	assert_int_equal(metrics_write(d->file, two + 1, 1), 0);
	assert_true(pread(reader, first, sizeof(first) - 1, 0) > 0);
	assert_string_equal(first, text1);
	close(reader);
	read_file(d->file, now, sizeof(now));
	assert_string_equal(now, text2);
	assert_int_equal(stat(d->file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	list_dir(d, again, sizeof(again));
	assert_string_equal(again, "guest.prom\n");
	free(text1);
	free(text2);
}

/* A write that fails at the rename says so and leaves nothing behind. */
static void test_failed_write_leaves_nothing(void **state)
{
	struct dir *d = *state;
	char names[256];

	/* rename() cannot put a file over a directory */
	assert_int_equal(mkdir(d->file, 0700), 0);
	assert_int_equal(metrics_write(d->file, two, 1), -1);
	assert_int_equal(errno, EISDIR);
	list_dir(d, names, sizeof(names));
	assert_string_equal(names, "guest.prom\n");
	rmdir(d->file);
	snprintf(names, sizeof(names), "%s/nonexistent/guest.prom", d->path);
	assert_int_equal(metrics_write(names, two, 1), -1);
	assert_int_equal(errno, ENOENT);
}

/* Wait for PATH to exist; only a daemon that never writes it waits 30 s, and fails. */
static void wait_for_file(const char *path, pid_t pid, int errfd)
{
	char err[4096];
	int waited_ms, status;
	ssize_t n;

	for (waited_ms = 0; access(path, F_OK); waited_ms += 10) {
		if (waited_ms >= 30000 || waitpid(pid, &status, WNOHANG) == pid) {
			kill(pid, SIGKILL);
			n = pread(errfd, err, sizeof(err) - 1, 0);
			err[n > 0 ? n : 0] = 0;
			fail_msg("pagehintd wrote no metrics to %s: %s", path, err);
		}
		usleep(10000);
	}
}

/*
 * pagehintd run --metrics-file: the guest (this test) attached with 100
 * unused frames in a row, 50 volatile, 10 volatile the host had dropped,
 * counters in the header and 10 frames of data in its RAM; the first pass
 * gives back the unused run (one punch), keeps the volatile frames (the
 * host holds less than the target), and the file says so, under the
 * name given, and passes promtool.  SIGTERM removes it.
 */
static void test_daemon_writes_what_the_table_says(void **state)
{
	struct dir *d = *state;
	char *argv[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram, "--policy",
			 "periodic", "--interval-ms", "3600000", "--target-mib", "1000",
			 "--name", "vm \"one\"", "--metrics-file", d->file, NULL };
	static char text[65536], line[256], data[40960];
	struct pagehint_header *hdr;
	posix_spawn_file_actions_t fa;
	char err[256], errpath[128];
	uint8_t *table, *states;
	int fd, errfd, status;
	struct stat st;
	size_t size;
	pid_t pid;

	assert_int_equal(table_create(d->table, d->ram, 64 * MiB, false, err, sizeof(err)), 0);
	fd = open(d->table, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	size = st.st_size;
	table = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(table != MAP_FAILED);
	close(fd);
	hdr = (struct pagehint_header *)table;
	states = table + PAGEHINT_HEADER_SIZE;
	/* in one 2 MiB chunk (frames 1024-1535): one punch */
	memset(states + 1100, PAGEHINT_UNUSED, 100);
	memset(states + 2000, PAGEHINT_VOLATILE, 50);
	memset(states + 3000, PAGEHINT_VOLATILE | PAGEHINT_DISCARDED, 10);
	hdr->guest.to_unused = htole64(12345);
	hdr->guest.to_stable = htole64(678);
	hdr->guest.busy_waits = htole64(9);
	hdr->guest.frames_unused = htole64(100);
	hdr->guest_epoch = hdr->host_epoch;
	munmap(table, size);
	fd = open(d->ram, O_RDWR);
	assert_true(fd >= 0);
	memset(data, 0x5a, sizeof(data));
	assert_int_equal(pwrite(fd, data, sizeof(data), 0), sizeof(data));
	close(fd);

	snprintf(errpath, sizeof(errpath), "%s/stderr", d->path);
	errfd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	assert_int_equal(posix_spawn(&pid, PAGEHINTD, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	wait_for_file(d->file, pid, errfd);
	read_file(d->file, text, sizeof(text));
	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(errfd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	expect_line(text, "pagehint_guest_attached{" VM "} 1");
	expect_line(text, "pagehint_frames{" VM ",state=\"stable\"} 16224");
	expect_line(text, "pagehint_frames{" VM ",state=\"unused\"} 0");
	expect_line(text, "pagehint_frames{" VM ",state=\"unused_dropped\"} 100");
	expect_line(text, "pagehint_frames{" VM ",state=\"volatile\"} 50");
	expect_line(text, "pagehint_frames{" VM ",state=\"volatile_dropped\"} 10");
	expect_line(text, "pagehint_frames{" VM ",state=\"busy\"} 0");
	expect_line(text, "pagehint_dropped_frames_total{" VM ",state=\"unused\"} 100");
	expect_line(text, "pagehint_dropped_frames_total{" VM ",state=\"volatile\"} 0");
	expect_line(text, "pagehint_punch_calls_total{" VM "} 1");
	expect_line(text, "pagehint_target_bytes{" VM "} 1048576000");
	expect_line(text, "pagehint_guest_transitions_total{" VM ",to=\"unused\"} 12345");
	expect_line(text, "pagehint_guest_transitions_total{" VM ",to=\"stable\"} 678");
	expect_line(text, "pagehint_guest_busy_waits_total{" VM "} 9");
	expect_line(text, "pagehint_guest_unused_frames{" VM "} 100");
	assert_int_equal(stat(d->ram, &st), 0);
	snprintf(line, sizeof(line), "pagehint_host_resident_bytes{" VM "} %llu",
		 (unsigned long long)st.st_blocks * 512);
	expect_line(text, line);
	assert_true(st.st_blocks * 512 >= (off_t)sizeof(data));
	promtool_accepts(text);
	/* a guest nobody serves has no metrics */
	assert_int_not_equal(access(d->file, F_OK), 0);
}

/* How many times WHAT occurs in TEXT. */
static int occurrences(const char *text, const char *what)
{
	int n = 0;

	for (; (text = strstr(text, what)); text++)
		n++;
	return n;
}

/* Wait for FD's file to hold WHAT; only a daemon that never says it waits 30 s. */
static void wait_said(int fd, const char *what, char *buf, size_t len)
{
	int waited_ms;
	ssize_t n;

	for (waited_ms = 0;; waited_ms += 10) {
		n = pread(fd, buf, len - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		if (strstr(buf, what))
			return;
		if (waited_ms >= 30000)
			fail_msg("pagehintd never said \"%s\": %s", what, buf);
		usleep(10000);
	}
}

/*
 * A metrics file that cannot be written (its directory is not there yet)
 * costs one warning, however many writes fail, and the daemon serves on:
 * once the directory is there the file appears, and it says so once.
 * Correct code passes however fast the machine; the half second only
 * gives a daemon that warned at every write the chance to show it.
 */
static void test_daemon_says_a_failing_file_once(void **state)
{
	struct dir *d = *state;
	char file[160], sub[128], errpath[128], err[256];
	static char said[16384];
	char *argv[] = { PAGEHINTD, "run", "--table", d->table, "--ram", d->ram,
			 "--metrics-file", file, "--metrics-ms", "100", NULL };
	posix_spawn_file_actions_t fa;
	int errfd, status;
	pid_t pid;

	snprintf(sub, sizeof(sub), "%s/textfiles", d->path);
	snprintf(file, sizeof(file), "%s/guest.prom", sub);
	assert_int_equal(table_create(d->table, d->ram, 64 * MiB, false, err, sizeof(err)), 0);
	snprintf(errpath, sizeof(errpath), "%s/stderr", d->path);
	errfd = open(errpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(errfd >= 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, errfd, 2);
	assert_int_equal(posix_spawn(&pid, PAGEHINTD, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	wait_said(errfd, "cannot write metrics to", said, sizeof(said));
	usleep(500000);
	assert_int_equal(mkdir(sub, 0700), 0);
	wait_for_file(file, pid, errfd);
	wait_said(errfd, "metrics written to", said, sizeof(said));
	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(errfd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	if (occurrences(said, "cannot write metrics to") != 1 ||
	    occurrences(said, "metrics written to") != 1)
		fail_msg("not once each: %s", said);
	assert_non_null(strstr(said, ": No such file or directory\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_domain),
		cmocka_unit_test_setup_teardown(test_write_replaces_whole, setup_dir, teardown_dir),
		cmocka_unit_test_setup_teardown(test_failed_write_leaves_nothing, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_daemon_writes_what_the_table_says, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_daemon_says_a_failing_file_once, setup_dir,
						teardown_dir),
	};

	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
