/* Paths under a guest's working directory BASE (its argv[1], kept in
 * base), for guests that make and change files there. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char base[512];

/* BASE/rel, in one of four buffers that take turns. */
static const char *at(const char *rel)
{
	static char p[4][4096];
	static int k;
	char *s = p[k++ % 4];
	snprintf(s, sizeof p[0], "%s/%s", base, rel);
	return s;
}

/* A file BASE/rel holding text (a FAIL line if it cannot be written). */
static void put(const char *rel, const char *text)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		printf("FAIL write %s: %s\n", rel, strerror(errno));
	if (fd >= 0)
		close(fd);
}
