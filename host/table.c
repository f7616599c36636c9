// SPDX-License-Identifier: GPL-2.0
/*
 * The host's side of the page-state table.
 *
 * Locking: one pagehintd owns a table at a time (an exclusive flock on the
 * table file), so the only other writer of the state bytes is the guest,
 * and every byte the guest may change is changed with a compare-and-swap.
 * The host claims a frame by moving it from UNUSED (or VOLATILE) to
 * BUSY|state; while the byte says BUSY the guest waits, so punching the
 * frame out of the RAM file cannot race with the guest reusing it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "table.h"

#define FRAME_SHIFT	12
#define GiB		(1ULL << 30)

#define fail(...) ({ snprintf(err, errlen, __VA_ARGS__); -1; })

static uint8_t load_state(const uint8_t *s)
{
	return __atomic_load_n(s, __ATOMIC_ACQUIRE);
}

static bool cas_state(uint8_t *s, uint8_t old, uint8_t new)
{
	return __atomic_compare_exchange_n(s, &old, new, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

static void store_state(uint8_t *s, uint8_t v)
{
	__atomic_store_n(s, v, __ATOMIC_RELEASE);
}

/*
 * QEMU's q35 machine puts guest RAM below 4 GiB up to a limit and the
 * rest above 4 GiB; the memory-backend file holds the two parts back to
 * back (hw/i386/pc_q35.c).
 */
int q35_layout(struct table *t, uint64_t ram_size)
{
	uint64_t lowmem = ram_size >= 0xb0000000ULL ? 0x80000000ULL : 0xb0000000ULL;
	uint64_t below = ram_size < lowmem ? ram_size : lowmem;

	if (!ram_size || ram_size & ((1 << FRAME_SHIFT) - 1))
		return -1;
	t->nr_ranges = 1;
	t->ranges[0].first_pfn = 0;
	t->ranges[0].nr_frames = below >> FRAME_SHIFT;
	t->ranges[0].file_offset = 0;
	t->nr_frames = below >> FRAME_SHIFT;
	if (ram_size > below) {
		t->nr_ranges = 2;
		t->ranges[1].first_pfn = (4 * GiB) >> FRAME_SHIFT;
		t->ranges[1].nr_frames = (ram_size - below) >> FRAME_SHIFT;
		t->ranges[1].file_offset = below;
		t->nr_frames = t->ranges[1].first_pfn + t->ranges[1].nr_frames;
	}
	t->nr_chunks = (t->nr_frames + PAGEHINT_CHUNK_FRAMES - 1) >> PAGEHINT_CHUNK_SHIFT;
	/* a page of its own after the states: the host's writes stay apart */
	t->summary_offset = (PAGEHINT_HEADER_SIZE + t->nr_frames + 4095) & ~4095ULL;
	return 0;
}

size_t table_size_for(uint64_t ram_size)
{
	struct table t;
	size_t size = 1;

	if (q35_layout(&t, ram_size))
		return 0;
	/* ivshmem wants a power of two */
	while (size < t.summary_offset + PAGEHINT_SUMMARY_BYTES(t.nr_frames))
		size <<= 1;
	return size;
}

uint64_t table_new_epoch(void)
{
	uint64_t epoch = 0;

	if (getrandom(&epoch, sizeof(epoch), 0) != sizeof(epoch))
		epoch = (uint64_t)time(NULL) * 1000003 ^ (uint64_t)getpid();
	return epoch ? epoch : 1;
}

int table_check_header(const struct pagehint_header *hdr, size_t file_size,
		       uint64_t ram_size, char *err, size_t errlen)
{
	uint64_t nr_frames = le64toh(hdr->nr_frames);
	uint64_t summary = le64toh(hdr->summary_offset);
	uint32_t nr_ranges = le32toh(hdr->nr_ranges);
	uint64_t table_size = le64toh(hdr->table_size);
	uint32_t i;

	if (file_size < PAGEHINT_HEADER_SIZE)
		return fail("table is %zu bytes, smaller than its %d-byte header",
			    file_size, PAGEHINT_HEADER_SIZE);
	if (le64toh(hdr->magic) != PAGEHINT_MAGIC)
		return fail("no page-state table here (bad magic %#llx)",
			    (unsigned long long)le64toh(hdr->magic));
	if (le32toh(hdr->version) != PAGEHINT_VERSION)
		return fail("table version %u, this pagehintd speaks %d",
			    le32toh(hdr->version), PAGEHINT_VERSION);
	if (le32toh(hdr->header_size) != PAGEHINT_HEADER_SIZE ||
	    le32toh(hdr->page_size) != PAGEHINT_PAGE_SIZE)
		return fail("table has header size %u and page size %u, expected %d and %d",
			    le32toh(hdr->header_size), le32toh(hdr->page_size),
			    PAGEHINT_HEADER_SIZE, PAGEHINT_PAGE_SIZE);
	/*
	 * The file may be larger than the table: libvirt sizes a <shmem> in
	 * powers of two of at least 1 MiB, and the guest's driver takes a
	 * table smaller than its BAR.  What lies beyond the table is neither
	 * mapped nor read.
	 */
	if (table_size < PAGEHINT_HEADER_SIZE || table_size > file_size)
		return fail("table header says %llu bytes but the file has %zu",
			    (unsigned long long)table_size, file_size);
	if (nr_frames > table_size - PAGEHINT_HEADER_SIZE)
		return fail("table claims %llu frames but has room for %llu",
			    (unsigned long long)nr_frames,
			    (unsigned long long)(table_size - PAGEHINT_HEADER_SIZE));
	/* nr_frames < table_size: no sum wraps */
	if (summary % 8 || summary < PAGEHINT_HEADER_SIZE + nr_frames || summary > table_size ||
	    PAGEHINT_SUMMARY_BYTES(nr_frames) > table_size - summary)
		return fail("table's change summary (at %#llx) is not between its states and its end",
			    (unsigned long long)summary);
	if (!nr_ranges || nr_ranges > PAGEHINT_MAX_RANGES)
		return fail("table has %u RAM ranges (1 to %d allowed)", nr_ranges,
			    PAGEHINT_MAX_RANGES);
	for (i = 0; i < nr_ranges; i++) {
		uint64_t first = le64toh(hdr->ranges[i].first_pfn);
		uint64_t n = le64toh(hdr->ranges[i].nr_frames);
		uint64_t off = le64toh(hdr->ranges[i].file_offset);
		uint32_t j;

		if (first > nr_frames || n > nr_frames - first)
			return fail("RAM range %u (frames %llu+%llu) lies outside the table's %llu frames",
				    i, (unsigned long long)first, (unsigned long long)n,
				    (unsigned long long)nr_frames);
		/* no sum or shift here can wrap: n <= ram_size / 4096 first */
		if (n > ram_size >> FRAME_SHIFT || off > ram_size - (n << FRAME_SHIFT) ||
		    off & ((1 << FRAME_SHIFT) - 1))
			return fail("RAM range %u (%llu frames at %#llx) lies outside the %llu-byte RAM file",
				    i, (unsigned long long)n, (unsigned long long)off,
				    (unsigned long long)ram_size);
		for (j = 0; j < i; j++) {
			uint64_t first2 = le64toh(hdr->ranges[j].first_pfn);
			uint64_t n2 = le64toh(hdr->ranges[j].nr_frames);
			uint64_t off2 = le64toh(hdr->ranges[j].file_offset);

			/* both are inside the table and the file: no sum wraps */
			if ((first < first2 + n2 && first2 < first + n) ||
			    (off < off2 + (n2 << FRAME_SHIFT) && off2 < off + (n << FRAME_SHIFT)))
				return fail("RAM ranges %u and %u overlap", j, i);
		}
	}
	return 0;
}

/*
 * The header is guest memory: the guest may rewrite any field at any
 * moment, between two reads of the same field too.  Take one copy, then
 * check and use only the copy.  The barrier keeps the compiler from
 * reading the shared header again where the code says copy.
 */
static void header_snapshot(struct pagehint_header *copy,
			    const struct pagehint_header *shared)
{
	memcpy(copy, shared, sizeof(*copy));
	__asm__ __volatile__("" : : : "memory");
}

/*
 * Does the header describe the layout the host derived from the RAM file
 * on its own?  The host never takes the guest's word for where its RAM
 * is: a table that says otherwise belongs to another guest or was
 * rewritten.
 */
static bool header_matches_layout(const struct pagehint_header *hdr, const struct table *t)
{
	unsigned int i;

	if (le64toh(hdr->nr_frames) != t->nr_frames || le32toh(hdr->nr_ranges) != t->nr_ranges ||
	    le64toh(hdr->summary_offset) != t->summary_offset)
		return false;
	for (i = 0; i < t->nr_ranges; i++)
		if (le64toh(hdr->ranges[i].first_pfn) != t->ranges[i].first_pfn ||
		    le64toh(hdr->ranges[i].nr_frames) != t->ranges[i].nr_frames ||
		    le64toh(hdr->ranges[i].file_offset) != t->ranges[i].file_offset)
			return false;
	return true;
}

static int open_ram(const char *ram_path, bool writable, char *err, size_t errlen)
{
	struct stat st;
	int fd = open(ram_path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return fail("cannot open guest RAM file %s: %s", ram_path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail("guest RAM file %s is not a regular file", ram_path);
	}
	return fd;
}

/*
 * Which RAM file a table belongs to is recorded outside the guest's
 * reach: init gives both files an extended attribute (user.*, or
 * trusted.* where tmpfs has no user attributes and we are root), and
 * every open compares them.  A daemon given one guest's table and another
 * guest's RAM file refuses to start.
 *
 * An attribute alone is not enough: cp -a copies it, and a daemon started
 * on the copy of guest B's table with guest A's RAM file (or any mix of
 * copies) would punch A's memory wherever B frees.  So each record also
 * names the two files it was written for by identity (device, inode and,
 * where the file system keeps one, birth time), which no copy can have.
 */
static const char *const pair_names[] = { "user.pagehint.pair", "trusted.pagehint.pair" };
/*
 * Version 2 of the record: version 1 was a random id, the same in both
 * files.  The identities that each record names make an id needless.
 */
#define PAIR_MAGIC	"PHP2"

/*
 * A record as stored, little-endian: the file it is on and its partner.
 * Small enough for ext4 to keep it in the inode (256-byte inodes have
 * about 90 bytes for attributes): a block of its own would count in the
 * RAM file's st_blocks, which is what the host holds of the guest.
 */
struct pair_file {
	uint64_t dev, ino;
	uint64_t btime_ns;		/* 0: the file system keeps none */
} __attribute__((packed));

struct pair_record {
	char magic[4];
	struct pair_file self, partner;
} __attribute__((packed));

int file_identity(int fd, struct file_identity *id)
{
	struct statx stx;

	memset(id, 0, sizeof(*id));
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &stx))
		return -1;
	id->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	id->ino = stx.stx_ino;
	/* a reused inode number gets a new birth time, where there is one */
	if (stx.stx_mask & STATX_BTIME)
		id->btime_ns = stx.stx_btime.tv_sec * 1000000000ULL + stx.stx_btime.tv_nsec;
	return 0;
}

bool file_identity_equal(const struct file_identity *a, const struct file_identity *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->btime_ns == b->btime_ns;
}

static void pack_identity(const struct file_identity *id, struct pair_file *f)
{
	f->dev = htole64(id->dev);
	f->ino = htole64(id->ino);
	f->btime_ns = htole64(id->btime_ns);
}

static int set_pair(int table_fd, int ram_fd, char *err, size_t errlen)
{
	struct file_identity table_id, ram_id;
	struct pair_record t = { .magic = PAIR_MAGIC }, r = t;
	unsigned int i;

	if (file_identity(table_fd, &table_id) || file_identity(ram_fd, &ram_id))
		return fail("cannot tell the table and the RAM file from copies: %s",
			    strerror(errno));
	pack_identity(&table_id, &t.self);
	pack_identity(&ram_id, &t.partner);
	pack_identity(&ram_id, &r.self);
	pack_identity(&table_id, &r.partner);
	for (i = 0; i < sizeof(pair_names) / sizeof(pair_names[0]); i++) {
		if (fsetxattr(table_fd, pair_names[i], &t, sizeof(t), 0))
			continue;
		if (!fsetxattr(ram_fd, pair_names[i], &r, sizeof(r), 0))
			return 0;
		fremovexattr(table_fd, pair_names[i]);
	}
	return fail("cannot record that the table and the RAM file belong together: their file system takes no extended attributes (%s)",
		    strerror(errno));
}

/* Is the file behind @fd the one @f names? */
static bool record_names(const struct pair_file *f, int fd)
{
	struct file_identity have;
	struct pair_file p;

	if (file_identity(fd, &have))
		return false;
	pack_identity(&have, &p);
	return !memcmp(&p, f, sizeof(p));
}

#define MAKE_PAIR_AGAIN	"with the guest stopped, run 'pagehintd init --force' on the files it is to use"

static int check_pair(int table_fd, int ram_fd, const char *table_path, const char *ram_path,
		      char *err, size_t errlen)
{
	struct pair_record a, b = { .magic = "" };
	unsigned int i;

	for (i = 0; i < sizeof(pair_names) / sizeof(pair_names[0]); i++) {
		if (fgetxattr(table_fd, pair_names[i], &a, sizeof(a)) != sizeof(a) ||
		    memcmp(a.magic, PAIR_MAGIC, sizeof(a.magic)))
			continue;
		if (!record_names(&a.self, table_fd))
			return fail("%s is a copy of a table that pagehintd init made (a copy keeps the pairing, not the file's identity) and is refused: %s",
				    table_path, MAKE_PAIR_AGAIN);
		if (fgetxattr(ram_fd, pair_names[i], &b, sizeof(b)) == sizeof(b) &&
		    !memcmp(b.magic, PAIR_MAGIC, sizeof(b.magic)) && !record_names(&b.self, ram_fd))
			return fail("%s is a copy of a RAM file that pagehintd init made (a copy keeps the pairing, not the file's identity) and is refused: %s",
				    ram_path, MAKE_PAIR_AGAIN);
		if (memcmp(b.magic, PAIR_MAGIC, sizeof(b.magic)) ||
		    !record_names(&a.partner, ram_fd) || !record_names(&b.partner, table_fd))
			return fail("%s and %s were not made together by pagehintd init: they belong to different guests",
				    table_path, ram_path);
		return 0;
	}
	return fail("%s carries no pairing record of this pagehintd: made by an older one, or not by init? %s",
		    table_path, MAKE_PAIR_AGAIN);
}

/*
 * Create a file for init: a new one, never through a symlink, 0600.  With
 * force an existing regular file of ours is taken over (and made 0600);
 * one another user owns is not: that user could still write to it.
 */
static int create_file(const char *path, const char *what, bool force, bool *created,
		       char *err, size_t errlen)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;

	*created = fd >= 0;
	/* not blocking, no controlling tty: whatever it is, until fstat says */
	if (fd < 0 && errno == EEXIST && force)
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno == EEXIST)
			return fail("%s %s exists: init makes new files (--force to reuse it)",
				    what, path);
		if (errno == ELOOP)
			return fail("%s %s is a symbolic link: init does not follow one", what,
				    path);
		return fail("cannot create %s %s: %s", what, path, strerror(errno));
	}
	/*
	 * A file of another name (a hard link: st_nlink) or of another user
	 * is not ours to reuse; one a daemon holds is not free.  Lock first,
	 * change nothing before every check has passed.
	 */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		close(fd);
		return fail("%s %s is not a regular file of this user's with one name", what,
			    path);
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return fail("%s %s is in use by a running pagehintd", what, path);
	}
	if (fchmod(fd, 0600) || fcntl(fd, F_SETFL, 0)) {
		close(fd);
		return fail("cannot make %s %s private: %s", what, path, strerror(errno));
	}
	return fd;
}

/*
 * The header of a new table for a guest of @ram_size bytes, @size bytes
 * of table, in a file whose states are all STABLE (zero) already.
 */
static int write_header(int fd, const char *path, uint64_t ram_size, size_t size, char *err,
			size_t errlen)
{
	struct pagehint_header *hdr;
	struct table t;
	unsigned int i;

	hdr = mmap(NULL, PAGEHINT_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return fail("cannot map table file %s: %s", path, strerror(errno));
	q35_layout(&t, ram_size);
	hdr->magic = htole64(PAGEHINT_MAGIC);
	hdr->version = htole32(PAGEHINT_VERSION);
	hdr->header_size = htole32(PAGEHINT_HEADER_SIZE);
	hdr->page_size = htole32(PAGEHINT_PAGE_SIZE);
	hdr->nr_ranges = htole32(t.nr_ranges);
	hdr->nr_frames = htole64(t.nr_frames);
	hdr->table_size = htole64(size);
	hdr->summary_offset = htole64(t.summary_offset);
	for (i = 0; i < t.nr_ranges; i++) {
		hdr->ranges[i].first_pfn = htole64(t.ranges[i].first_pfn);
		hdr->ranges[i].nr_frames = htole64(t.ranges[i].nr_frames);
		hdr->ranges[i].file_offset = htole64(t.ranges[i].file_offset);
	}
	hdr->host_epoch = htole64(table_new_epoch());
	munmap(hdr, PAGEHINT_HEADER_SIZE);
	return 0;
}

/*
 * The first process that maps the file @st is of (proc(5): "start-end
 * perms offset major:minor inode path" in /proc/PID/maps), 0 if none.
 * Processes that vanish meanwhile, or whose maps cannot be read, are
 * passed over, and so is pagehintd itself (this program: the hook and
 * the daemon are one).
 */
static pid_t mapped_by(const struct stat *st)
{
	struct stat self, exe;
	char path[32 + sizeof(((struct dirent *)0)->d_name)], *line = NULL;
	struct dirent *de;
	size_t len = 0;
	pid_t pid = 0;
	DIR *proc;

	if (stat("/proc/self/exe", &self))
		return 0;
	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (!pid && (de = readdir(proc))) {
		unsigned int major, minor;
		unsigned long long ino;
		FILE *maps;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		maps = fopen(path, "re");
		if (!maps)
			continue;
		while (!pid && getline(&line, &len, maps) > 0)
			if (sscanf(line, "%*s %*s %*s %x:%x %llu", &major, &minor, &ino) == 3 &&
			    makedev(major, minor) == st->st_dev && ino == st->st_ino)
				pid = atoi(de->d_name);
		fclose(maps);
		/* pagehintd's own mapping (a daemon serving the last boot) is no guest's */
		snprintf(path, sizeof(path), "/proc/%s/exe", de->d_name);
		if (pid && !stat(path, &exe) && exe.st_dev == self.st_dev &&
		    exe.st_ino == self.st_ino)
			pid = 0;
	}
	free(line);
	closedir(proc);
	return pid;
}

int table_prepare(const char *path, uint64_t ram_size, uint64_t file_size, uid_t uid, gid_t gid,
		  char *err, size_t errlen)
{
	size_t size = table_size_for(ram_size);
	char tmp[PATH_MAX];
	struct stat st;
	int fd, ret = -1;
	pid_t user;

	if (!size)
		return fail("guest RAM size %llu is not a positive multiple of 4 KiB",
			    (unsigned long long)ram_size);
	if (size > file_size)
		return fail("a %llu-byte table file cannot hold the %zu-byte table of a %llu-byte guest",
			    (unsigned long long)file_size, size, (unsigned long long)ram_size);
	/*
	 * A running guest's table, whether a daemon serves it or not: a
	 * domain cloned with its <shmem> name, started beside the original.
	 */
	if (lstat(path, &st)) {
		if (errno != ENOENT)
			return fail("cannot look at table file %s: %s", path, strerror(errno));
	} else if (S_ISDIR(st.st_mode)) {
		return fail("table file %s is a directory", path);
	} else if (S_ISREG(st.st_mode)) {
		user = mapped_by(&st);
		if (user) {
			char comm[64] = "", where[48];
			FILE *f;

			snprintf(where, sizeof(where), "/proc/%d/comm", (int)user);
			f = fopen(where, "re");
			if (f) {
				if (fgets(comm, sizeof(comm), f))
					comm[strcspn(comm, "\n")] = 0;
				fclose(f);
			}
			return fail("table file %s is mapped by process %d (%s): another domain's table? give each domain a <shmem> name of its own",
				    path, (int)user, comm);
		}
	}
	/*
	 * What is at @path is never opened, only replaced by a new file of
	 * our own: in /dev/shm, a sticky directory anyone may write, it may
	 * be another user's (QEMU's, after the last start: root may not open
	 * it with O_CREAT under fs.protected_regular), a link, or a file
	 * whose maker keeps it open to write it later.  Every state byte of
	 * the new file is STABLE, its summary clear.
	 */
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return fail("table file name %s is too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return fail("cannot create a table file beside %s: %s", path, strerror(errno));
	if (ftruncate(fd, file_size)) {
		fail("cannot size table file %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write_header(fd, path, ram_size, size, err, errlen))
		goto out;
	if (fchown(fd, uid, gid)) {
		fail("cannot give table file %s to %d:%d, whom QEMU runs as: %s", path, (int)uid,
		     (int)gid, strerror(errno));
		goto out;
	}
	if (rename(tmp, path)) {
		fail("cannot put the new table file at %s: %s", path, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (ret)
		unlink(tmp);
	close(fd);
	return ret;
}

int table_create(const char *table_path, const char *ram_path, uint64_t ram_size, bool force,
		 char *err, size_t errlen)
{
	size_t size = table_size_for(ram_size);
	bool ram_created, table_created;
	int fd, ram_fd;
	struct stat st;

	if (!size)
		return fail("guest RAM size %llu is not a positive multiple of 4 KiB",
			    (unsigned long long)ram_size);
	ram_fd = create_file(ram_path, "guest RAM file", force, &ram_created, err, errlen);
	if (ram_fd < 0)
		return -1;
	if (fstat(ram_fd, &st) || (st.st_size && (uint64_t)st.st_size != ram_size)) {
		fail("guest RAM file %s is %lld bytes, not %llu: another guest's?",
		     ram_path, (long long)st.st_size, (unsigned long long)ram_size);
		goto out_ram;
	}
	if (!st.st_size && ftruncate(ram_fd, ram_size)) {
		fail("cannot size guest RAM file %s: %s", ram_path, strerror(errno));
		goto out_ram;
	}

	fd = create_file(table_path, "table file", force, &table_created, err, errlen);
	if (fd < 0)
		goto out_ram;
	/* Truncating to zero first: every state byte starts STABLE. */
	if (ftruncate(fd, 0) || ftruncate(fd, size)) {
		fail("cannot size table file %s: %s", table_path, strerror(errno));
		goto out_table;
	}
	if (write_header(fd, table_path, ram_size, size, err, errlen) ||
	    set_pair(fd, ram_fd, err, errlen))
		goto out_table;
	close(fd);
	close(ram_fd);
	return 0;

out_table:
	close(fd);
	if (table_created)
		unlink(table_path);
out_ram:
	close(ram_fd);
	if (ram_created)
		unlink(ram_path);
	return -1;
}

int table_check(const struct pagehint_header *hdr, struct table *t, char *err, size_t errlen)
{
	if (table_check_header(hdr, t->table_size, t->ram_size, err, errlen))
		return -1;
	/*
	 * The layout is the host's own, from the RAM file's size; the header
	 * check above put the change summary inside the table's own size.
	 */
	if (q35_layout(t, t->ram_size) || !header_matches_layout(hdr, t))
		return fail("the table does not describe the %llu-byte RAM file: a table and a RAM file of different guests?",
			    (unsigned long long)t->ram_size);
	t->table_size = le64toh(hdr->table_size);
	return 0;
}

/*
 * The daemon opens the table writable and alone (an exclusive lock);
 * "status" opens it read-only and takes no lock, so that it can neither
 * be refused by a running daemon nor make a daemon's start fail.
 */
static int open_table(struct table *t, const char *table_path, const char *ram_path,
		      bool daemon, bool paired, char *err, size_t errlen)
{
	struct pagehint_header hdr;
	struct statfs fs;
	struct stat st;

	memset(t, 0, sizeof(*t));
	t->ram_fd = -1;
	/* not blocking: a FIFO at --table is refused, not waited on */
	t->table_fd = open(table_path, (daemon ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
	if (t->table_fd < 0)
		return fail("cannot open table file %s: %s", table_path, strerror(errno));
	if (fstat(t->table_fd, &st) || !S_ISREG(st.st_mode)) {
		fail("table file %s is not a regular file", table_path);
		goto out;
	}
	if (st.st_size < PAGEHINT_HEADER_SIZE) {
		fail("table file %s is %lld bytes, too short for a page-state table",
		     table_path, (long long)st.st_size);
		goto out;
	}
	t->table_size = st.st_size;
	if (daemon && flock(t->table_fd, LOCK_EX | LOCK_NB)) {
		fail("table file %s is in use by another pagehintd", table_path);
		goto out;
	}
	t->ram_fd = open_ram(ram_path, daemon, err, errlen);
	if (t->ram_fd < 0)
		goto out;
	if (fstat(t->ram_fd, &st)) {
		fail("cannot stat guest RAM file %s: %s", ram_path, strerror(errno));
		goto out;
	}
	t->ram_size = st.st_size;
	/* one daemon per RAM file too: another table must not lead to it */
	if (daemon && flock(t->ram_fd, LOCK_EX | LOCK_NB)) {
		fail("guest RAM file %s is in use by another pagehintd", ram_path);
		goto out;
	}
	if (paired && check_pair(t->table_fd, t->ram_fd, table_path, ram_path, err, errlen))
		goto out;
	/*
	 * Can this file system give memory back 4 KiB at a time?  ramfs
	 * cannot punch holes at all; hugetlbfs rounds a punch to whole huge
	 * pages and so, for 4 KiB, frees nothing and says nothing.  A hole
	 * beyond the end of the file (KEEP_SIZE) asks without touching a
	 * byte of the guest's.
	 */
	if (daemon && fstatfs(t->ram_fd, &fs) == 0 && fs.f_type == HUGETLBFS_MAGIC) {
		fail("%s is on hugetlbfs, which cannot give memory back 4 KiB at a time: use tmpfs, such as /dev/shm",
		     ram_path);
		goto out;
	}
	if (daemon && fallocate(t->ram_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				t->ram_size, 1 << FRAME_SHIFT)) {
		fail("the file system of %s cannot give memory back 4 KiB at a time (%s): use tmpfs, such as /dev/shm",
		     ram_path, strerror(errno));
		goto out;
	}
	/* the header alone first: the table's size is the header's to say */
	t->hdr = mmap(NULL, PAGEHINT_HEADER_SIZE, PROT_READ, MAP_SHARED, t->table_fd, 0);
	if (t->hdr == MAP_FAILED) {
		t->hdr = NULL;
		fail("cannot map table file %s: %s", table_path, strerror(errno));
		goto out;
	}
	header_snapshot(&hdr, t->hdr);
	munmap(t->hdr, PAGEHINT_HEADER_SIZE);
	t->hdr = NULL;
	if (table_check(&hdr, t, err, errlen))
		goto out;
	/* the checked copy's size, never the guest's field again */
	t->hdr = mmap(NULL, t->table_size, PROT_READ | (daemon ? PROT_WRITE : 0), MAP_SHARED,
		      t->table_fd, 0);
	if (t->hdr == MAP_FAILED) {
		t->hdr = NULL;
		fail("cannot map table file %s: %s", table_path, strerror(errno));
		goto out;
	}
	t->states = (uint8_t *)t->hdr + PAGEHINT_HEADER_SIZE;
	/* the host's own offset, checked against the copy above, never re-read */
	t->summary = (uint64_t *)((char *)t->hdr + t->summary_offset);
	return 0;

out:
	table_close(t);
	return -1;
}

int table_open(struct table *t, const char *table_path, const char *ram_path, char *err,
	       size_t errlen)
{
	return open_table(t, table_path, ram_path, true, true, err, errlen);
}

int table_open_for_qemu(struct table *t, const char *table_path, const char *ram_path,
			char *err, size_t errlen)
{
	return open_table(t, table_path, ram_path, true, false, err, errlen);
}

int table_open_readonly(struct table *t, const char *table_path, const char *ram_path,
			char *err, size_t errlen)
{
	return open_table(t, table_path, ram_path, false, true, err, errlen);
}

void table_close(struct table *t)
{
	if (t->hdr && t->hdr != MAP_FAILED)
		munmap(t->hdr, t->table_size);
	if (t->table_fd >= 0)
		close(t->table_fd);
	if (t->ram_fd >= 0)
		close(t->ram_fd);
	t->hdr = NULL;
	t->table_fd = t->ram_fd = -1;
}

bool table_attached(const struct table *t)
{
	/* sequentially consistent: drop_claimed() orders it after its claims */
	uint64_t host = __atomic_load_n(&t->hdr->host_epoch, __ATOMIC_SEQ_CST);
	uint64_t guest = __atomic_load_n(&t->hdr->guest_epoch, __ATOMIC_SEQ_CST);

	return host && host == guest;
}

/*
 * Start a new epoch: the guest is stopped (or about to boot afresh) and
 * everything it said about its frames is void.  Detach first, so that no
 * state read from here on counts until the guest attaches again.
 */
void table_reset(struct table *t)
{
	uint64_t old = le64toh(t->hdr->host_epoch), epoch;

	do
		epoch = table_new_epoch();
	while (epoch == old);
	__atomic_store_n(&t->hdr->host_epoch, htole64(epoch), __ATOMIC_SEQ_CST);
	memset(t->states, PAGEHINT_STABLE, t->nr_frames);
	memset(t->summary, 0, PAGEHINT_SUMMARY_BYTES(t->nr_frames));
	table_set_host_wants(t, 0);
	__atomic_store_n(&t->hdr->guest_epoch, 0, __ATOMIC_SEQ_CST);
}

/*
 * Only our two claims are busy; any other byte with the top bit set is one
 * the protocol never writes, stable for both sides, as the guest reads it.
 */
static bool state_is_busy(uint8_t s)
{
	return s == (PAGEHINT_BUSY | PAGEHINT_UNUSED) || s == (PAGEHINT_BUSY | PAGEHINT_VOLATILE);
}

/*
 * A pagehintd that died between claiming frames and releasing them left
 * them BUSY, with the guest waiting.  Whether the punch happened is
 * unknown, so release them as dropped: for an unused frame that costs
 * nothing, a volatile one is re-read by the guest.
 */
void table_recover_busy(struct table *t)
{
	uint64_t pfn;

	for (pfn = 0; pfn < t->nr_frames; pfn++) {
		uint8_t s = load_state(&t->states[pfn]);

		if (state_is_busy(s))
			cas_state(&t->states[pfn], s,
				  (s & PAGEHINT_STATE_MASK) | PAGEHINT_DISCARDED);
	}
}

void table_count(const struct table *t, struct table_counts *c)
{
	unsigned int r;
	uint64_t pfn;

	memset(c, 0, sizeof(*c));
	for (r = 0; r < t->nr_ranges; r++) {
		for (pfn = t->ranges[r].first_pfn;
		     pfn < t->ranges[r].first_pfn + t->ranges[r].nr_frames; pfn++) {
			uint8_t s = load_state(&t->states[pfn]);

			if (state_is_busy(s))
				c->busy++;
			else if (s == PAGEHINT_UNUSED)
				c->unused++;
			else if (s == (PAGEHINT_UNUSED | PAGEHINT_DISCARDED))
				c->unused_dropped++;
			else if (s == PAGEHINT_VOLATILE)
				c->volatile_++;
			else if (s == (PAGEHINT_VOLATILE | PAGEHINT_DISCARDED))
				c->volatile_dropped++;
			else
				c->stable++;
		}
	}
}

uint8_t table_state(const struct table *t, uint64_t pfn)
{
	return load_state(&t->states[pfn]);
}

uint64_t table_take_changed(struct table *t, uint64_t *chunks)
{
	uint64_t w, words = PAGEHINT_SUMMARY_BYTES(t->nr_frames) / 8, taken = 0;
	unsigned int tail = t->nr_chunks % 64;

	for (w = 0; w < words; w++) {
		uint64_t bits;

		/* a plain read first: an idle guest's words stay shared */
		if (!__atomic_load_n(&t->summary[w], __ATOMIC_RELAXED))
			continue;
		/*
		 * With the fence below, the caller's reads of the states
		 * come after the clear: pairs with the guest's
		 * compare-and-swap before its test of the bit.
		 */
		bits = le64toh(__atomic_exchange_n(&t->summary[w], 0, __ATOMIC_SEQ_CST));
		/* bits past the last chunk are the guest's nonsense */
		if (w == words - 1 && tail)
			bits &= (1ULL << tail) - 1;
		chunks[w] |= bits;
		taken += __builtin_popcountll(bits);
	}
	/*
	 * The exchanges are sequentially consistent, but the caller's reads
	 * of the states are only acquire loads, which C11 lets pass them on
	 * some machines (not on x86): keep them after every clear.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return taken;
}

uint64_t table_next_run(const struct table *t, uint8_t want, uint64_t *pfn,
			uint64_t max_frames)
{
	unsigned int r;

	for (r = 0; r < t->nr_ranges; r++) {
		uint64_t first = t->ranges[r].first_pfn;
		uint64_t end = first + t->ranges[r].nr_frames;
		uint64_t p = *pfn > first ? *pfn : first, len;

		for (; p < end; p++) {
			if (load_state(&t->states[p]) != want)
				continue;
			for (len = 1; p + len < end && len < max_frames &&
			     load_state(&t->states[p + len]) == want; len++)
				;
			*pfn = p;
			return len;
		}
	}
	*pfn = t->nr_frames;
	return 0;
}

static uint64_t file_offset(const struct table *t, uint64_t pfn)
{
	unsigned int r;

	for (r = 0; r < t->nr_ranges; r++)
		if (pfn >= t->ranges[r].first_pfn &&
		    pfn < t->ranges[r].first_pfn + t->ranges[r].nr_frames)
			return t->ranges[r].file_offset +
			       ((pfn - t->ranges[r].first_pfn) << FRAME_SHIFT);
	return UINT64_MAX;
}

bool table_has_frame(const struct table *t, uint64_t pfn)
{
	return pfn < t->nr_frames && file_offset(t, pfn) != UINT64_MAX;
}

/*
 * The host's counters are its own, in private memory; the header gets a
 * copy for the guest and for tests to read, and is never read back.
 */
static void publish_host_counters(struct table *t)
{
	struct pagehint_host_counters *h = &t->hdr->host;

	__atomic_store_n(&h->dropped_unused, htole64(t->host.dropped_unused), __ATOMIC_RELAXED);
	__atomic_store_n(&h->dropped_volatile, htole64(t->host.dropped_volatile),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&h->punch_calls, htole64(t->host.punch_calls), __ATOMIC_RELAXED);
	__atomic_store_n(&h->cas_lost, htole64(t->host.cas_lost), __ATOMIC_RELAXED);
}

static int punch(struct table *t, uint64_t pfn, uint64_t len)
{
	t->host.punch_calls++;
	return fallocate(t->ram_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			 file_offset(t, pfn), len << FRAME_SHIFT);
}

/*
 * Punch a stretch of claimed frames and release them, dropped or not;
 * *@dropped says which.
 *
 * A guest that detaches (kexec, shutdown, removal of the device) clears
 * guest_epoch, then waits out every claim it finds.  The claims were full
 * barriers, so the epoch read after them either sees the detach, and the
 * frames go back untouched, or the guest sees the claims and waits until
 * they are released: no frame is punched once the guest has detached
 * (docs/protocol.md, "Detach").
 */
static int drop_claimed(struct table *t, uint8_t want, uint64_t pfn, uint64_t len,
			bool *dropped)
{
	uint8_t release = want;
	uint64_t i;
	int ret = 0;

	if (t->claimed)
		t->claimed(t, want, pfn, len);
	*dropped = table_attached(t);
	if (*dropped) {
		ret = punch(t, pfn, len) ? -errno : 0;
		*dropped = !ret;
	}
	if (*dropped)
		release |= PAGEHINT_DISCARDED;
	/* The guest may use a frame again as soon as it sees this store. */
	for (i = 0; i < len; i++)
		store_state(&t->states[pfn + i], release);
	return ret;
}

int64_t table_drop_run(struct table *t, uint8_t want, uint64_t pfn, uint64_t len)
{
	uint64_t i, start = 0, dropped = 0, lost = 0;
	uint8_t busy = PAGEHINT_BUSY | want;
	bool in_run = false, punched;
	int ret = 0;

	/*
	 * Claim the frames the guest has not taken back meanwhile; punch each
	 * stretch of claimed frames with one call.
	 */
	for (i = 0; i <= len; i++) {
		if (i < len && !ret && cas_state(&t->states[pfn + i], want, busy)) {
			if (!in_run)
				start = i;
			in_run = true;
			continue;
		}
		if (i < len && !ret)
			lost++;
		if (!in_run)
			continue;
		in_run = false;
		ret = drop_claimed(t, want, pfn + start, i - start, &punched);
		if (punched)
			dropped += i - start;
	}
	t->host.cas_lost += lost;
	if (want == PAGEHINT_UNUSED)
		t->host.dropped_unused += dropped;
	else
		t->host.dropped_volatile += dropped;
	publish_host_counters(t);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return dropped;
}

void table_set_host_wants(struct table *t, uint64_t frames)
{
	__atomic_store_n(&t->hdr->host_wants, htole64(frames), __ATOMIC_RELAXED);
}

uint64_t ram_resident(const struct table *t)
{
	struct stat st;

	return fstat(t->ram_fd, &st) ? 0 : (uint64_t)st.st_blocks * 512;
}

/*
 * cachestat(2), Linux 6.5; older C libraries have neither it nor its
 * number, which is 451 everywhere but on alpha and mips.
 */
#if !defined(__NR_cachestat) && !defined(__alpha__) && !defined(__mips__)
#define __NR_cachestat	451
#endif

struct ram_cachestat_range {
	uint64_t off, len;		/* len 0: to the end of the file */
};

struct ram_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/*
 * tmpfs counts a page the host swapped out in st_blocks, as allocated, so
 * that ram_resident() is RAM and swap together.  cachestat() counts only
 * the pages in the page cache: a swapped one (or one in the swap cache on
 * its way out or in) as evicted.  Pages in zram or zswap are in RAM,
 * compressed, and count as swapped too.  (The RAM file is never on
 * hugetlbfs, whose pages are never swapped: table_open() refuses it.)
 */
int ram_in_memory(const struct table *t, uint64_t blocks, uint64_t *in_ram)
{
#ifdef __NR_cachestat
	struct ram_cachestat_range range = { 0, 0 };
	struct ram_cachestat cs;
	uint64_t bytes;

	if (syscall(__NR_cachestat, t->ram_fd, &range, &cs, 0))
		return -errno;
	bytes = cs.nr_cache * (uint64_t)sysconf(_SC_PAGESIZE);
	/* a page allocated since @blocks was read is not counted */
	*in_ram = bytes < blocks ? bytes : blocks;
	return 0;
#else
	return -ENOSYS;
#endif
}
