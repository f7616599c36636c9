// SPDX-License-Identifier: GPL-2.0
/*
 * Host mode's ground: which files are a domain's (the ones its QEMU maps,
 * found through libvirt's pid file, never a copy), and pagehintd host
 * against a real libvirtd from Debian, started here with a private
 * configuration and socket: it connects, finds no running domain, serves
 * on when libvirtd goes away, and reconnects when it is back.  No domain
 * is started.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "../host.h"

#define MiB	(1ULL << 20)

extern char **environ;

static char dir[64];
/* what a test started, stopped by teardown too when the test fails */
static pid_t qemu = -1, daemon_pid = -1;

static void path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static pid_t spawn(char *const argv[], const char *out)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	if (out) {
		posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0600);
		posix_spawn_file_actions_addopen(&fa, 2, out, O_WRONLY | O_CREAT | O_APPEND, 0600);
	}
	if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ))
		fail_msg("cannot run %s: %s", argv[0], strerror(errno));
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

static int run(char *const argv[])
{
	int status;
	pid_t pid = spawn(argv, NULL);

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* "QEMU": a child that maps both files, shared, until killed. */
static pid_t map_in_child(const char *table, const char *ram)
{
	int ready[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int t = open(table, O_RDWR), r = open(ram, O_RDWR);

		if (t < 0 || r < 0 ||
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, t, 0) == MAP_FAILED ||
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, r, 0) == MAP_FAILED)
			_exit(1);
		/* QEMU closes nothing it maps, but the mapping is what counts */
		close(t);
		close(r);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

static void stop_child(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The files QEMU made under libvirt carry no pairing record: take them off. */
static void as_qemu_made_them(const char *table, const char *ram)
{
	static const char *const names[] = { "user.pagehint.pair", "trusted.pagehint.pair" };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		removexattr(table, names[i]);
		removexattr(ram, names[i]);
	}
}

/*
 * A clone of a domain's files (cp -a), at the paths its XML names, is not
 * what its QEMU maps: refused, with what to do.  The originals are taken.
 */
static void test_only_the_files_qemu_maps(void **state)
{
	char table[128], ram[128], table_c[128], ram_c[128], err[512];
	char *cp_t[] = { "cp", "-a", table, table_c, NULL };
	char *cp_r[] = { "cp", "-a", ram, ram_c, NULL };
	struct table t, c;

	(void)state;
	path(table, sizeof(table), "table");
	path(ram, sizeof(ram), "pc.ram");
	path(table_c, sizeof(table_c), "table-copy");
	path(ram_c, sizeof(ram_c), "pc.ram-copy");
	assert_int_equal(table_create(table, ram, 64 * MiB, false, err, sizeof(err)), 0);
	as_qemu_made_them(table, ram);
	assert_int_equal(run(cp_t), 0);
	assert_int_equal(run(cp_r), 0);
	qemu = map_in_child(table, ram);

	/* no pairing record: run's open refuses, host mode's needs QEMU's word */
	assert_int_equal(table_open(&t, table, ram, err, sizeof(err)), -1);
	assert_int_equal(table_open_for_qemu(&t, table, ram, err, sizeof(err)), 0);
	if (host_qemu_maps(qemu, t.table_fd, t.ram_fd, table, ram, err, sizeof(err)))
		fail_msg("the files QEMU maps refused: %s", err);

	assert_int_equal(table_open_for_qemu(&c, table_c, ram_c, err, sizeof(err)), 0);
	assert_int_equal(host_qemu_maps(qemu, c.table_fd, c.ram_fd, table_c, ram_c, err,
					sizeof(err)), -1);
	if (!strstr(err, "table-copy is not the file the domain's QEMU") ||
	    !strstr(err, "restart the domain"))
		fail_msg("a copied table refused with \"%s\"", err);
	table_close(&c);
	table_close(&t);	/* one daemon per table: the copy's RAM with the original */
	assert_int_equal(table_open_for_qemu(&c, table, ram_c, err, sizeof(err)), 0);
	assert_int_equal(host_qemu_maps(qemu, c.table_fd, c.ram_fd, table, ram_c, err,
					sizeof(err)), -1);
	if (!strstr(err, "pc.ram-copy is not the file"))
		fail_msg("a copied RAM file refused with \"%s\"", err);
	table_close(&c);
	/* a process that maps neither (this one) is no domain's QEMU */
	assert_int_equal(table_open_for_qemu(&t, table, ram, err, sizeof(err)), 0);
	assert_int_equal(host_qemu_maps(getpid(), t.table_fd, t.ram_fd, table, ram, err,
					sizeof(err)), -1);
	table_close(&t);
	stop_child(qemu);
	qemu = -1;
	unlink(table);
	unlink(ram);
	unlink(table_c);
	unlink(ram_c);
}

/*
 * The table a domain's <shmem> will map, prepared before it boots: at
 * libvirt's size, every state stable and a new epoch each time, and never
 * a table a running daemon holds (two domains naming one <shmem>).
 */
/*
 * Another program maps @table, as a running QEMU does, and holds no lock
 * on it: preparing it is refused with that process's pid, and the table
 * is left as it was.
 */
static void refused_while_mapped(const char *table)
{
	char err[512], want[64], c;
	char *argv[] = { MAPFILE, (char *)table, NULL };
	struct stat before, after;
	posix_spawn_file_actions_t fa;
	int ready[2], ret;
	pid_t child;

	assert_int_equal(pipe(ready), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, ready[1], 1);
	assert_int_equal(posix_spawn(&child, MAPFILE, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(ready[1]);
	ret = read(ready[0], &c, 1);
	close(ready[0]);
	if (ret != 1) {
		waitpid(child, NULL, 0);
		fail_msg("%s did not map %s", MAPFILE, table);
	}
	assert_int_equal(stat(table, &before), 0);
	ret = table_prepare(table, 256 * MiB, MiB, -1, -1, err, sizeof(err));
	/* the child goes before any check can end the test */
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	snprintf(want, sizeof(want), "is mapped by process %d ", (int)child);
	if (ret != -1 || !strstr(err, want))
		fail_msg("a table another process maps: wanted \"%s\", got %d \"%s\"", want, ret,
			 ret ? err : "");
	assert_int_equal(stat(table, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
}

/*
 * What is at the table's path is replaced, never opened: a link (its
 * target untouched), a file another user made and keeps open to write
 * (QEMU's user owns the last boot's, and root may not open it with
 * O_CREAT under fs.protected_regular); the new file is given to whom
 * QEMU runs as, 0600.
 */
static void replaced_not_opened(const char *table, const char *link)
{
	struct stat target, before, st;
	char err[512];
	int fd;

	assert_int_equal(stat(table, &target), 0);
	assert_int_equal(symlink(table, link), 0);
	if (table_prepare(link, 256 * MiB, MiB, -1, -1, err, sizeof(err)))
		fail_msg("a link at the path: %s", err);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(stat(table, &before), 0);
	assert_int_equal(before.st_ino, target.st_ino);
	assert_int_equal(before.st_size, target.st_size);
	unlink(link);

	/* another user's file, held open by its maker */
	assert_int_equal(chown(table, 65534, 65534), 0);
	fd = open(table, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &before), 0);
	if (table_prepare(table, 256 * MiB, MiB, 64055, 64056, err, sizeof(err)))
		fail_msg("another user's file at the path: %s", err);
	assert_int_equal(stat(table, &st), 0);
	assert_true(st.st_ino != before.st_ino);
	assert_int_equal(st.st_uid, 64055);
	assert_int_equal(st.st_gid, 64056);
	assert_int_equal(st.st_mode & 0777, 0600);
	close(fd);
}

static void test_prepare_table(void **state)
{
	char table[128], ram[128], link[128], err[512];
	struct table t, old;
	uint64_t epoch;
	struct stat st;
	int fd;

	(void)state;
	path(table, sizeof(table), "pagehint-guest");
	path(ram, sizeof(ram), "pc.ram");
	path(link, sizeof(link), "pagehint-link");
	fd = open(ram, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 256 * MiB), 0);
	close(fd);
	if (table_prepare(table, 256 * MiB, MiB, -1, -1, err, sizeof(err)))
		fail_msg("prepare: %s", err);
	assert_int_equal(stat(table, &st), 0);
	assert_int_equal(st.st_size, MiB);
	assert_int_equal(st.st_mode & 0777, 0600);
	if (table_open_for_qemu(&t, table, ram, err, sizeof(err)))
		fail_msg("a prepared table refused: %s", err);
	assert_int_equal(t.table_size, 128 * 1024);
	assert_int_equal(t.nr_frames, 256 * MiB / 4096);
	/* a guest used it */
	t.states[7] = PAGEHINT_UNUSED;
	t.hdr->guest_epoch = t.hdr->host_epoch;
	epoch = t.hdr->host_epoch;
	table_close(&t);
	/* mapped by another program that holds no lock: a cloned domain's QEMU */
	refused_while_mapped(table);
	/*
	 * The next boot's, while pagehintd itself (here: this program) still
	 * maps the last boot's, as a daemon does that has not yet seen its
	 * domain stop: a new file, all stable, a new epoch, nobody attached;
	 * the old one, still mapped, as it was.
	 */
	assert_int_equal(table_open_for_qemu(&old, table, ram, err, sizeof(err)), 0);
	assert_int_equal(table_prepare(table, 256 * MiB, MiB, -1, -1, err, sizeof(err)), 0);
	assert_int_equal(old.states[7], PAGEHINT_UNUSED);
	table_close(&old);
	assert_int_equal(table_open_for_qemu(&t, table, ram, err, sizeof(err)), 0);
	assert_int_equal(t.states[7], PAGEHINT_STABLE);
	assert_true(t.hdr->host_epoch != epoch);
	assert_false(table_attached(&t));
	table_close(&t);
	/* a device of another size: a new file of its size */
	assert_int_equal(table_prepare(table, 256 * MiB, 2 * MiB, -1, -1, err, sizeof(err)), 0);
	assert_int_equal(stat(table, &st), 0);
	assert_int_equal(st.st_size, 2 * MiB);
	assert_int_equal(table_prepare(table, 8192 * MiB, MiB, -1, -1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot hold the 4194304-byte table"));
	replaced_not_opened(table, link);
	unlink(table);
	unlink(ram);
}

static void write_file(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_qemu_pid(void **state)
{
	char p[128], link[128], err[256];

	(void)state;
	path(p, sizeof(p), "guest.pid");
	write_file(p, "4242\n");
	assert_int_equal(host_qemu_pid(dir, "guest", err, sizeof(err)), 4242);
	write_file(p, "42x\n");
	assert_int_equal(host_qemu_pid(dir, "guest", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "holds no pid"));
	write_file(p, "1\n");
	assert_int_equal(host_qemu_pid(dir, "guest", err, sizeof(err)), -1);
	assert_int_equal(host_qemu_pid(dir, "nobody", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot read libvirt's pid file"));
	/* the pid file is libvirt's own: not through a symbolic link */
	write_file(p, "4242\n");
	path(link, sizeof(link), "linked.pid");
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(host_qemu_pid(dir, "linked", err, sizeof(err)), -1);
	unlink(link);
	unlink(p);
}

/* Wait for @text in file @p, at most @seconds; whether it came. */
static bool wait_for(const char *p, const char *text, int count, int seconds)
{
	struct timespec tick = { 0, 50000000 };
	int i, n;

	for (i = 0; i < seconds * 20; i++) {
		char *buf = NULL, *at;
		size_t len = 0;
		FILE *f = fopen(p, "r");

		n = 0;
		if (f) {
			if (getdelim(&buf, &len, 0, f) > 0)
				for (at = buf; (at = strstr(at, text)); at++)
					n++;
			fclose(f);
		}
		free(buf);
		if (n >= count)
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}

static void dump(const char *p)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "sed 's/^/    /' %s >&2", p);
	if (system(cmd))
		return;
}

static pid_t libvirtd = -1;
static char libvirtd_log[128];

/*
 * libvirtd in a mount namespace of its own, whose libvirt directories
 * are the test's: it neither sees nor touches the machine's domains,
 * networks or state (tools/libvirt_check.py does the same).
 */
static void start_libvirtd(const char *conf, const char *sock)
{
	static const char *const dirs[][2] = {
		{ "etc", "/etc/libvirt" }, { "run", "/run/libvirt" }, { "lib", "/var/lib/libvirt" },
		{ "cache", "/var/cache/libvirt" }, { "log", "/var/log/libvirt" },
	};
	char pidf[128], own[128], script[2048];
	char *argv[] = { "unshare", "-m", "--propagation", "private", "sh", "-c", script, NULL };
	size_t n = 0, i;

	path(pidf, sizeof(pidf), "libvirtd.pid");
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		path(own, sizeof(own), dirs[i][0]);
		n += snprintf(script + n, sizeof(script) - n,
			      "mkdir -p %s %s && mount --bind %s %s && ", own, dirs[i][1], own,
			      dirs[i][1]);
	}
	snprintf(script + n, sizeof(script) - n, "exec libvirtd --config %s --pid-file %s", conf,
		 pidf);
	libvirtd = spawn(argv, libvirtd_log);
	/* its socket is there once it takes connections */
	for (int i = 0; i < 600 && access(sock, F_OK); i++)
		usleep(50000);
	if (access(sock, F_OK)) {
		dump(libvirtd_log);
		fail_msg("libvirtd made no socket %s in 30 s", sock);
	}
}

static void stop_libvirtd(void)
{
	int status;

	if (libvirtd <= 0)
		return;
	kill(libvirtd, SIGTERM);
	waitpid(libvirtd, &status, 0);
	libvirtd = -1;
}

/*
 * pagehintd host against Debian's libvirtd: it connects and finds no
 * running domain; libvirtd goes away and the daemon serves on and says
 * so; libvirtd comes back and the daemon connects again by itself; it ends
 * on SIGTERM with status 0.
 */
static void test_follows_libvirtd(void **state)
{
	char conf[128], sock_dir[128], sock[160], uri[256], log[128], text[300];
	char *argv[] = { PAGEHINTD, "host", "--connect", uri, "--libvirt-run-dir", dir, NULL };
	int status;

	(void)state;
	path(conf, sizeof(conf), "libvirtd.conf");
	path(sock_dir, sizeof(sock_dir), "sock");
	path(log, sizeof(log), "pagehintd.log");
	path(libvirtd_log, sizeof(libvirtd_log), "libvirtd.log");
	snprintf(sock, sizeof(sock), "%s/libvirt-sock", sock_dir);
	snprintf(uri, sizeof(uri), "qemu:///system?socket=%s", sock);
	assert_int_equal(mkdir(sock_dir, 0700), 0);
	snprintf(text, sizeof(text),
		 "unix_sock_dir = \"%s\"\nunix_sock_rw_perms = \"0700\"\nauth_unix_rw = \"none\"\nauth_unix_ro = \"none\"\n",
		 sock_dir);
	write_file(conf, text);

	start_libvirtd(conf, sock);
	daemon_pid = spawn(argv, log);
	snprintf(text, sizeof(text), "connected to %s: 0 running domains", uri);
	if (!wait_for(log, text, 1, 30)) {
		dump(log);
		fail_msg("pagehintd host did not say \"%s\"", text);
	}
	stop_libvirtd();
	if (!wait_for(log, "lost libvirtd (it closed the connection); serving 0 domains on", 1,
		      30)) {
		dump(log);
		fail_msg("pagehintd host did not notice that libvirtd went away");
	}
	assert_int_equal(waitpid(daemon_pid, &status, WNOHANG), 0);	/* it serves on */
	start_libvirtd(conf, sock);
	if (!wait_for(log, text, 2, 30)) {
		dump(log);
		fail_msg("pagehintd host did not connect again to the libvirtd that came back");
	}
	kill(daemon_pid, SIGTERM);
	assert_int_equal(waitpid(daemon_pid, &status, 0), daemon_pid);
	daemon_pid = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		dump(log);
		fail_msg("pagehintd host ended with status %#x on SIGTERM", status);
	}
	stop_libvirtd();
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/pagehint-host-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	stop_child(qemu);
	stop_child(daemon_pid);
	stop_libvirtd();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_only_the_files_qemu_maps),
		cmocka_unit_test(test_qemu_pid),
		cmocka_unit_test(test_prepare_table),
		cmocka_unit_test(test_follows_libvirtd),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
