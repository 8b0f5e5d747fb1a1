/* fschange: one process changes the directories and symlinks of paths it
 * has just used, and uses the same paths again: each use must see the
 * change at once (under --root the view keeps what earlier walks found).
 * All under BASE (argv[1], an empty directory); prints what each read
 * found. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "basedir.h"

/* What rel holds, as open finds it, and as stat and access do. */
static void show(const char *what, const char *path)
{
	char buf[32] = { 0 };
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		snprintf(buf, sizeof buf, "%s", strerror(errno));
	else if (read(fd, buf, sizeof buf - 1) < 0)
		snprintf(buf, sizeof buf, "FAIL read");
	if (fd >= 0)
		close(fd);
	struct stat st;
	int s = stat(path, &st), a = access(path, R_OK);
	printf("%s: %s stat=%s access=%s\n", what, buf, s ? strerror(errno) : "ok", a ? "no" : "ok");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fschange BASE\n");
		return 2;
	}
	snprintf(base, sizeof base, "%s", argv[1]);
	mkdir(at("a"), 0755);
	put("a/f", "one");
	show("first", at("a/f"));
	/* the directory moves away; another takes its name */
	rename(at("a"), at("b"));
	show("after rename", at("a/f"));
	mkdir(at("a"), 0755);
	put("a/f", "two");
	show("new a", at("a/f"));
	show("moved b", at("b/f"));
	/* a symlink, then another in its place (unlink and symlink) */
	symlink("b", at("l"));
	show("l to b", at("l/f"));
	unlink(at("l"));
	symlink(at("a"), at("l"));
	show("l to a", at("l/f"));
	/* and by rename over it */
	symlink("b", at("l2"));
	rename(at("l2"), at("l"));
	show("l renamed to b", at("l/f"));
	/* a directory removed and made again */
	unlink(at("a/f"));
	rmdir(at("a"));
	show("a gone", at("a/f"));
	mkdir(at("a"), 0755);
	put("a/f", "three");
	show("a again", at("a/f"));
	/* relative to the working directory, which moves */
	if (chdir(base) < 0)
		printf("FAIL chdir: %s\n", strerror(errno));
	show("cwd a", "a/f");
	if (chdir("b") < 0)
		printf("FAIL chdir b: %s\n", strerror(errno));
	show("cwd b", "a/f");
	rename(at("b"), at("c"));
	show("cwd moved", "f");
	show("by old name", at("b/f"));
	/* a directory's search permission taken away, one level up from the
	 * file and two (not as root: root passes) */
	mkdir(at("a/s"), 0755);
	put("a/s/f", "four");
	show("a/s", at("a/s/f"));
	chmod(at("a"), 0);
	show("a mode 0", at("a/f"));
	show("a/s under mode 0", at("a/s/f"));
	chmod(at("a"), 0755);
	show("a mode 755", at("a/s/f"));
	if (chdir(at("a")) == 0 && chmod("s", 0) == 0)
		show("s mode 0 by a relative name", at("a/s/f"));
	chmod("s", 0755);
	return 0;
}
