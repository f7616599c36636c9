// SPDX-License-Identifier: GPL-2.0
/*
 * mapfile FILE: map FILE shared, as a running QEMU maps a guest's table,
 * say "m" on stdout, and wait for a signal.  test_host runs it as a
 * program other than the one that prepares tables (which passes over
 * its own kind's mappings).
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *map;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: mapfile FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	map = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror(argv[1]);
		return 1;
	}
	close(fd);
	if (write(STDOUT_FILENO, "m", 1) != 1)
		return 1;
	pause();
	return 0;
}
