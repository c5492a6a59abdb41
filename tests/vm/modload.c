/*
 * vm-modload LISTFILE: load kernel modules in the order given, in ONE process.
 *
 * Part of the test VM image (tests/vm/mkimage builds it statically). Each line of LISTFILE is
 * "/path/to/module.ko [param=value ...]". Under qemu TCG every exec costs 50-100 ms, so loading the
 * ~25 boot modules with one insmod each costs seconds; finit_module() from a single static process
 * does not. A module that is already loaded (EEXIST) is fine; any other failure is reported on
 * stderr and counted, and the exit status is the number of failures (capped at 125).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char line[4096];
	int failed = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LISTFILE\n", argv[0]);
		return 125;
	}
	f = fopen(argv[1], "r");
	if (!f) {
		fprintf(stderr, "vm-modload: %s: %s\n", argv[1], strerror(errno));
		return 125;
	}
	while (fgets(line, sizeof(line), f)) {
		char *path = line, *params;
		int fd;

		line[strcspn(line, "\n")] = '\0';
		path += strspn(path, " \t");
		if (*path == '\0' || *path == '#')
			continue;
		params = path + strcspn(path, " \t");
		if (*params != '\0')
			*params++ = '\0';
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, params, 0) != 0 && errno != EEXIST)) {
			fprintf(stderr, "vm-modload: %s: %s\n", path, strerror(errno));
			failed++;
		}
		if (fd >= 0)
			close(fd);
	}
	fclose(f);
	return failed > 125 ? 125 : failed;
}
