#include "cr/procfile.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <fcntl.h>

long zv_cr_read_file(const char *path, char *buf, size_t size)
{
	long fd = zv_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	size_t n = 0;
	while (n + 1 < size) {
		long r = zv_read((int)fd, buf + n, size - 1 - n);
		if (r == -EINTR)
			continue;
		if (r <= 0) {
			if (r < 0) {
				zv_close((int)fd);
				return r;
			}
			break;
		}
		n += r;
	}
	zv_close((int)fd);
	buf[n] = 0;
	return (long)n;
}

const char *zv_cr_next_line(const char *p)
{
	const char *nl = zv_strchr(p, '\n');
	return nl && nl[1] ? nl + 1 : NULL;
}

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

const char *zv_cr_field(const char *text, const char *key)
{
	for (const char *l = text; l && *l; l = zv_cr_next_line(l))
		if (zv_startswith(l, key))
			return skip_blanks(l + zv_strlen(key));
	return NULL;
}

uint64_t zv_cr_oct(const char *s, const char **end)
{
	uint64_t v = 0;
	for (s = skip_blanks(s); *s >= '0' && *s <= '7'; s++)
		v = v * 8 + (uint64_t)(*s - '0');
	if (end)
		*end = s;
	return v;
}

uint64_t zv_cr_hex(const char *s, const char **end)
{
	const char *e;
	uint64_t v = zv_parse_hex(skip_blanks(s), &e);
	if (end)
		*end = e;
	return v;
}

int64_t zv_cr_dec(const char *s, const char **end)
{
	const char *e;
	int64_t v = zv_parse_dec(skip_blanks(s), &e);
	if (end)
		*end = e;
	return v;
}
