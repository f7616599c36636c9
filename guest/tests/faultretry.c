// SPDX-License-Identifier: GPL-2.0
/*
 * faultretry - a fault that reads dropped swap cache again must not hold
 * the mapping's locks while it waits for the disk.
 *
 *   faultretry DEVICE
 *
 * A fault that finds its swap cache folio dropped by the host reads the
 * folio again from its swap slot.  Like any swap-in, it may not wait for
 * that read with the mmap lock or the VMA's lock held when the fault can
 * be retried: every thread that changes the mapping (mprotect, munmap,
 * mmap) would wait for the disk too, and a read that never ends would stop
 * the whole process.
 *
 * This puts a device-mapper linear table over DEVICE and swaps on it (with
 * zswap off, so that swap-ins read the device), writes a pattern to the
 * first page of a two-page mapping, pushes that page out to swap
 * (MADV_PAGEOUT, with the device suspended, so that the folio is still
 * under writeback when reclaim looks again and stays in the swap cache)
 * and waits until the host has dropped its frame while it was volatile
 * swap cache: the table says VOLATILE|DISCARDED.  It then
 * suspends the device-mapper device, which holds every new I/O until it
 * is resumed, and reads the page from a thread: the fault starts the read
 * again, which cannot complete.  Once page_states_swap_reread has counted
 * that read, another thread mprotects the mapping's second page, which
 * splits the VMA and so needs the locks the fault took.  The mprotect must
 * finish while the read is still held.  Then the device is resumed, and
 * the page must read back as it was written.
 *
 * A fault that waits for the read with its locks held makes the mprotect
 * wait: after MPROTECT_POLLS the test looks where the fault waits
 * (/proc/.../stack) and fails if it is in swap_read_dropped_folio_fault().
 * Anywhere else is some other lock the page happened to meet (reclaim or
 * compaction holding its folio lock makes the fault retry once more, and
 * the last try may wait), and so is a fault that never reaches the read
 * again because reclaim freed the folio first: such a round proves
 * nothing, and the test runs another, ROUNDS at most.  The bounds on the
 * polls only turn a broken kernel into a failure instead of a hang; none
 * of them decides a pass.  The polling thread uses no stdio and no malloc
 * while the read is held, so that it never needs a lock the fault holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/dm-ioctl.h>
#include <linux/fs.h>
#include "guest-tests.h"

#define PAGE		GUEST_PAGE
#define WORDS		(PAGE / sizeof(uint64_t))
#define POLL_US		10000
#define DROP_POLLS	12000	/* 2 minutes: the scanner and the host drop the page */
#define REREAD_POLLS	6000	/* 1 minute: the fault reaches the read */
#define MPROTECT_POLLS	3000	/* 30 s: the mprotect, milliseconds when it passes */
#define ROUNDS		3
#define PAGEOUT_TRIES	5
#define DM_NAME_STR	"pagehint-faultretry"
#define SWAP_NODE	"/tmp/faultretry-swap"
#define DROPPED		(PAGEHINT_VOLATILE | PAGEHINT_DISCARDED)
#define KPF_WRITEBACK	(1ULL << 8)	/* kpageflags: under writeback */

enum round { ROUND_PASSED, ROUND_FAILED, ROUND_INCONCLUSIVE };

struct fault_thread {
	pthread_t thread;
	pid_t tid;
	volatile int done;
	long wrong;		/* words that differ from the pattern */
};

struct mprotect_thread {
	pthread_t thread;
	pid_t tid;
	int go[2];		/* a pipe: the byte that lets it start */
	volatile int done;
	int err;
};

static uint64_t *mem;		/* two pages: the one swapped out, then another */
static int dm_control = -1;

static uint64_t pattern(size_t word)
{
	return (word + 1) * 0x9e3779b97f4a7c15ull;
}

static void dm_init(struct dm_ioctl *io, size_t size, uint32_t flags)
{
	memset(io, 0, size);
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = size;
	io->data_start = sizeof(*io);
	io->flags = flags;
	snprintf(io->name, sizeof(io->name), "%s", DM_NAME_STR);
}

/* One device-mapper command on the test's device; errno on failure. */
static int dm_call(unsigned long cmd, uint32_t flags)
{
	struct dm_ioctl io;

	dm_init(&io, sizeof(io), flags);
	return ioctl(dm_control, cmd, &io) ? errno : 0;
}

/* A linear table over @rdev of @sectors; its device number, or 0. */
static dev_t dm_create_linear(dev_t rdev, uint64_t sectors)
{
	struct {
		struct dm_ioctl io;
		struct dm_target_spec spec;
		char params[64];
	} load;
	struct dm_ioctl io;

	dm_init(&io, sizeof(io), 0);
	if (ioctl(dm_control, DM_DEV_CREATE, &io)) {
		perror("faultretry: device-mapper create");
		return 0;
	}
	dm_init(&load.io, sizeof(load), 0);
	load.io.data_start = offsetof(typeof(load), spec);
	load.io.target_count = 1;
	load.spec.sector_start = 0;
	load.spec.length = sectors;
	snprintf(load.spec.target_type, sizeof(load.spec.target_type), "linear");
	snprintf(load.params, sizeof(load.params), "%u:%u 0", major(rdev), minor(rdev));
	if (ioctl(dm_control, DM_TABLE_LOAD, &load) || dm_call(DM_DEV_SUSPEND, 0)) {
		perror("faultretry: device-mapper table");
		dm_call(DM_DEV_REMOVE, 0);
		return 0;
	}
	return (dev_t)io.dev;
}

/* A swap signature over @pages pages, as mkswap writes it. */
static int write_swap_header(int fd, uint64_t pages)
{
	static char header[PAGE];
	uint32_t info[3] = { 1, pages - 1, 0 };	/* version, last page, bad pages */

	memcpy(header + 1024, info, sizeof(info));
	memcpy(header + PAGE - 10, "SWAPSPACE2", 10);
	return pwrite(fd, header, PAGE, 0) == PAGE && !fsync(fd) ? 0 : -1;
}

static int in_swap(const void *addr)
{
	return !!(pagemap_entry(addr) & PM_SWAP);
}

/* /proc/kpageflags of frame @pfn, 0 if unknown */
static uint64_t kpageflags(uint64_t pfn)
{
	uint64_t flags = 0;
	int fd = open("/proc/kpageflags", O_RDONLY);

	if (fd < 0)
		return 0;
	if (pread(fd, &flags, sizeof(flags), pfn * sizeof(flags)) != sizeof(flags))
		flags = 0;
	close(fd);
	return flags;
}

/* Up to @size - 1 bytes of a /proc file, with newlines as " / "; no stdio. */
static void read_proc(const char *path, char *buf, size_t size)
{
	ssize_t n = -1;
	int fd = open(path, O_RDONLY);
	char *p;

	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
	for (p = buf; (p = strchr(p, '\n')); )
		*p = p[1] ? '/' : 0;
}

static void task_stack(pid_t tid, char *buf, size_t size)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stack", tid);
	read_proc(path, buf, size);
}

static void *fault_page(void *arg)
{
	struct fault_thread *t = arg;
	size_t i;

	t->tid = gettid();
	for (i = 0; i < WORDS; i++)
		t->wrong += ((volatile uint64_t *)mem)[i] != pattern(i);
	t->done = 1;
	return NULL;
}

static void *mprotect_other_page(void *arg)
{
	struct mprotect_thread *t = arg;
	char go;

	t->tid = gettid();
	if (read(t->go[0], &go, 1) != 1)
		t->err = EPIPE;
	else if (mprotect(mem + WORDS, PAGE, PROT_READ))
		t->err = errno;
	t->done = 1;
	return NULL;
}

/* Lets the held reads go; a device that stays suspended would hang swapoff. */
static void resume_or_exit(void)
{
	int tries, err = 0;

	for (tries = 0; tries < 10; tries++) {
		err = dm_call(DM_DEV_SUSPEND, 0);
		if (!err)
			return;
		usleep(POLL_US);
	}
	printf("faultretry: device-mapper resume: %s; the swap device stays suspended\n",
	       strerror(err));
	_exit(1);
}

/* The swapped-out page's frame, dropped by the host; 0 if not. */
static uint64_t page_out_and_drop(void)
{
	const volatile uint8_t *state;
	uint64_t pfn;
	size_t i;
	int n, fd;

	for (i = 0; i < 2 * WORDS; i++)
		mem[i] = pattern(i);
	pfn = frame_of(mem);
	if (!pfn) {
		printf("faultretry: no frame for the page in /proc/self/pagemap\n");
		return 0;
	}
	state = frame_state(pfn, "faultretry");
	if (!state)
		return 0;
	/*
	 * Reclaim frees a folio whose write to swap is done by the time it
	 * looks again; with the write held, the folio stays in the swap
	 * cache, unmapped, and is clean once the write completes.
	 */
	n = dm_call(DM_DEV_SUSPEND, DM_SUSPEND_FLAG | DM_SKIP_LOCKFS_FLAG);
	if (n) {
		printf("faultretry: device-mapper suspend: %s\n", strerror(n));
		return 0;
	}
	/* the process runs on one CPU: the page is on an LRU list that MADV_PAGEOUT drains */
	for (n = 0; n < PAGEOUT_TRIES && !in_swap(mem); n++)
		if (madvise(mem, PAGE, MADV_PAGEOUT))
			perror("faultretry: madvise(MADV_PAGEOUT)");
	resume_or_exit();
	if (!in_swap(mem)) {
		printf("faultretry: MADV_PAGEOUT did not push the page out to swap\n");
		return 0;
	}
	for (n = 0; kpageflags(pfn) & KPF_WRITEBACK; n++) {
		if (n == DROP_POLLS) {
			printf("faultretry: the page's write to swap never ended\n");
			return 0;
		}
		usleep(POLL_US);
	}
	/*
	 * The end of the write queued the folio for the inactive list's tail
	 * on the CPU that completed it (folio_rotate_reclaimable()); until
	 * that CPU's batch drains, the folio is off the LRU and the scanner
	 * passes it by.  drop_caches drains every CPU's batches first.
	 */
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "1", 1) != 1)
		perror("faultretry: drop_caches");
	if (fd >= 0)
		close(fd);
	for (n = 0; *state != DROPPED; n++) {
		if (n == DROP_POLLS) {
			printf("faultretry: frame %llu was never dropped as volatile swap cache (state 0x%02x, kpageflags 0x%llx)\n",
			       (unsigned long long)pfn, *state, (unsigned long long)kpageflags(pfn));
			return 0;
		}
		usleep(POLL_US);
	}
	return pfn;
}

static enum round held_fault(void)
{
	struct fault_thread fault = { 0 };
	struct mprotect_thread change = { 0 };
	enum round verdict = ROUND_FAILED;
	long rereads, swapins;
	char stack[2048];
	uint64_t pfn;
	int n;

	pfn = page_out_and_drop();
	if (!pfn)
		return ROUND_FAILED;
	rereads = vmstat("page_states_swap_reread");
	swapins = vmstat("pswpin");
	if (rereads < 0 || swapins < 0) {
		printf("faultretry: no page_states_swap_reread or pswpin in /proc/vmstat\n");
		return ROUND_FAILED;
	}
	/* before the suspend: a new thread's stack needs the mmap lock */
	if (pipe(change.go) || pthread_create(&change.thread, NULL, mprotect_other_page, &change)) {
		perror("faultretry: thread");
		return ROUND_FAILED;
	}
	printf("faultretry: the host dropped frame %llu, the page's swap cache; holding the swap device's I/O\n",
	       (unsigned long long)pfn);
	fflush(stdout);
	n = dm_call(DM_DEV_SUSPEND, DM_SUSPEND_FLAG | DM_SKIP_LOCKFS_FLAG);
	if (n) {
		printf("faultretry: device-mapper suspend: %s\n", strerror(n));
		close(change.go[1]);
		pthread_join(change.thread, NULL);
		return ROUND_FAILED;
	}
	if (pthread_create(&fault.thread, NULL, fault_page, &fault)) {
		perror("faultretry: thread");
		resume_or_exit();
		close(change.go[1]);
		pthread_join(change.thread, NULL);
		return ROUND_FAILED;
	}
	/* pswpin first: the read again counts itself before it counts there */
	for (n = 0; ; n++) {
		long now_swapins = vmstat("pswpin");

		if (vmstat("page_states_swap_reread") != rereads)
			break;
		if (now_swapins != swapins || fault.done) {
			verdict = ROUND_INCONCLUSIVE;
			printf("faultretry: the page was swapped in without a read again (reclaim freed it first)\n");
			goto resume;
		}
		if (n == REREAD_POLLS) {
			task_stack(fault.tid, stack, sizeof(stack));
			printf("faultretry: the fault never started the read again (it waits in: %s)\n",
			       stack);
			goto resume;
		}
		usleep(POLL_US);
	}
	if (write(change.go[1], "g", 1) != 1) {
		perror("faultretry: pipe");
		goto resume;
	}
	for (n = 0; !change.done && n < MPROTECT_POLLS; n++)
		usleep(POLL_US);
	if (fault.done) {
		printf("faultretry: the fault ended while its read was held\n");
	} else if (change.done) {
		printf("faultretry: mprotect of the faulting VMA finished (%s) while the fault's read again was held\n",
		       change.err ? strerror(change.err) : "ok");
		verdict = change.err ? ROUND_FAILED : ROUND_PASSED;
	} else {
		task_stack(fault.tid, stack, sizeof(stack));
		if (strstr(stack, "swap_read_dropped_folio_fault")) {
			printf("faultretry: mprotect waits for the held read: the fault waits for it in swap_read_dropped_folio_fault with its lock held: %s\n",
			       stack);
		} else {
			verdict = ROUND_INCONCLUSIVE;
			printf("faultretry: mprotect waits, and the fault waits elsewhere: %s\n", stack);
		}
	}
resume:
	fflush(stdout);
	resume_or_exit();
	pthread_join(fault.thread, NULL);
	close(change.go[1]);
	pthread_join(change.thread, NULL);
	close(change.go[0]);
	if (fault.wrong) {
		printf("faultretry: %ld words of the page differ after the read again\n", fault.wrong);
		verdict = ROUND_FAILED;
	}
	return verdict;
}

/* Swap on a device-mapper device over @device; 0 on success. */
static int swap_on_dm(const char *device)
{
	struct stat st;
	uint64_t bytes;
	dev_t dm_dev;
	int fd;

	fd = open(device, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || !S_ISBLK(st.st_mode) ||
	    ioctl(fd, BLKGETSIZE64, &bytes) || bytes < 16 * PAGE) {
		printf("faultretry: %s: not a block device of 16 pages or more\n", device);
		return -1;
	}
	close(fd);
	dm_control = open("/dev/mapper/control", O_RDWR);
	if (dm_control < 0) {
		perror("faultretry: /dev/mapper/control (CONFIG_BLK_DEV_DM?)");
		return -1;
	}
	dm_dev = dm_create_linear(st.st_rdev, bytes / 512);
	if (!dm_dev)
		return -1;
	unlink(SWAP_NODE);
	if (mknod(SWAP_NODE, S_IFBLK | 0600, dm_dev)) {
		perror("faultretry: mknod");
		return -1;
	}
	fd = open(SWAP_NODE, O_RDWR);
	if (fd < 0 || write_swap_header(fd, bytes / PAGE) || swapon(SWAP_NODE, 0)) {
		perror("faultretry: swap on the device-mapper device");
		return -1;
	}
	close(fd);
	return 0;
}

static int swap_off_dm(void)
{
	int failed = 0, err;

	if (swapoff(SWAP_NODE) && errno != EINVAL) {
		perror("faultretry: swapoff");
		failed = 1;
	}
	unlink(SWAP_NODE);
	err = dm_control < 0 ? 0 : dm_call(DM_DEV_REMOVE, 0);
	if (err && err != ENXIO) {
		printf("faultretry: device-mapper remove: %s\n", strerror(err));
		failed = 1;
	}
	return failed;
}

int main(int argc, char **argv)
{
	enum round verdict = ROUND_INCONCLUSIVE;
	cpu_set_t one_cpu;
	int round, fd;

	if (argc != 2) {
		fprintf(stderr, "usage: faultretry DEVICE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* a page written on one CPU and paged out on another may miss the LRU */
	CPU_ZERO(&one_cpu);
	CPU_SET(sched_getcpu(), &one_cpu);
	if (sched_setaffinity(0, sizeof(one_cpu), &one_cpu))
		perror("faultretry: sched_setaffinity");
	/* zswap would answer the read again at once, from memory */
	fd = open("/sys/module/zswap/parameters/enabled", O_WRONLY);
	if (fd >= 0 && write(fd, "0", 1) != 1)
		perror("faultretry: zswap off");
	if (fd >= 0)
		close(fd);
	if (swap_on_dm(argv[1])) {
		swap_off_dm();
		return 1;
	}
	for (round = 1; round <= ROUNDS && verdict == ROUND_INCONCLUSIVE; round++) {
		mem = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		if (mem == MAP_FAILED) {
			perror("faultretry: mmap");
			verdict = ROUND_FAILED;
			break;
		}
		verdict = held_fault();
		munmap(mem, 2 * PAGE);
	}
	if (swap_off_dm())
		verdict = ROUND_FAILED;
	if (verdict != ROUND_PASSED) {
		printf("faultretry: failed%s\n",
		       verdict == ROUND_INCONCLUSIVE ? ": no round was conclusive" : "");
		return 1;
	}
	printf("faultretry: the page read back intact after its held read again\n");
	return 0;
}
