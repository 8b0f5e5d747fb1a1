/* /proc/self/maps parser (see maps.h). Lines longer than the buffer (paths
 * near PATH_MAX) are cut: their name is then truncated, the range intact. */
#include "lib/maps.h"
#include "lib/syscall.h"
#include "lib/string.h"

static int one_line(char *line, int (*fn)(const struct zv_map *, void *), void *arg)
{
	struct zv_map m;
	const char *e;
	m.lo = zv_parse_hex(line, &e);
	m.hi = zv_parse_hex(e + 1, &e);
	memcpy(m.perms, e + 1, 4);
	m.perms[4] = 0;
	/* perms offset dev inode, then spaces up to the name */
	const char *p = e + 5;
	for (int field = 0; field < 3 && *p; field++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	while (*p == ' ')
		p++;
	m.name = p;
	return fn(&m, arg);
}

int zv_maps_read(int fd, int (*fn)(const struct zv_map *m, void *arg), void *arg)
{
	char buf[4096];
	long have = 0, n, off = 0;
	int r = 0, skip = 0; /* skip: the rest of an overlong line */
	while (!r && ((n = zv_sys4(__NR_pread64, fd, buf + have, sizeof buf - 1 - have, off)) > 0 || n == -EINTR)) {
		if (n < 0)
			continue;
		off += n;
		have += n;
		buf[have] = 0;
		char *line = buf, *nl;
		while (!r && (nl = zv_strchr(line, '\n'))) {
			*nl = 0;
			if (!skip)
				r = one_line(line, fn, arg);
			skip = 0;
			line = nl + 1;
		}
		if (line == buf && have == sizeof buf - 1) {
			if (!skip)
				r = one_line(buf, fn, arg); /* an overlong line: its start */
			skip = 1;
			have = 0;
			continue;
		}
		have = buf + have - line; /* keep the partial line */
		memmove(buf, line, have);
	}
	return n < 0 && !r ? (int)n : r;
}
