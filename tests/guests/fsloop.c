/* fsloop: a program that keeps using its root (--root) while it runs: it
 * reads a file by a relative path, prints its working directory as getcwd
 * and /proc/self/cwd name it, and stats an absolute path, COUNT times, a
 * tenth of a second apart (test_fsview.py checkpoints and restores it). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	if (chdir("/etc") < 0) {
		perror("fsloop: /etc");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char line[64] = { 0 }, cwd[256] = { 0 }, link[256] = { 0 };
		int fd = open("os-release", O_RDONLY);
		if (fd < 0 || read(fd, line, sizeof line - 1) < 0)
			strcpy(line, "FAIL no os-release");
		if (fd >= 0)
			close(fd);
		*strchrnul(line, '\n') = 0;
		if (!getcwd(cwd, sizeof cwd) || readlink("/proc/self/cwd", link, sizeof link - 1) < 0)
			strcpy(cwd, "FAIL");
		struct stat st;
		printf("%d %s %s %s %s\n", i, line, cwd, link, stat("/usr/bin", &st) == 0 ? "usr/bin" : "FAIL");
		fflush(stdout);
		struct timespec t = { 0, 100000000 };
		nanosleep(&t, NULL);
	}
	return 0;
}
