// SPDX-License-Identifier: GPL-2.0
/*
 * kexecload KERNEL INITRD CMDLINE: load a kernel with kexec_file_load()
 * and boot it at once, as "kexec -s -l ... && kexec -e" would; the guest
 * has no kexec-tools.  Returns only when either step fails.
 */
#include <fcntl.h>
#include <linux/reboot.h>
#include <stdio.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int kernel, initrd;

	if (argc != 4) {
		fprintf(stderr, "usage: kexecload KERNEL INITRD CMDLINE\n");
		return 2;
	}
	kernel = open(argv[1], O_RDONLY);
	initrd = open(argv[2], O_RDONLY);
	if (kernel < 0 || initrd < 0) {
		perror("kexecload: open");
		return 1;
	}
	if (syscall(SYS_kexec_file_load, kernel, initrd, strlen(argv[3]) + 1, argv[3], 0UL)) {
		perror("kexecload: kexec_file_load");
		return 1;
	}
	printf("kexecload: %s loaded; booting it\n", argv[1]);
	fflush(stdout);
	sync();
	reboot(LINUX_REBOOT_CMD_KEXEC);
	perror("kexecload: reboot(LINUX_REBOOT_CMD_KEXEC)");
	return 1;
}
