/* /proc/locks as the guest would see it natively: without the marks of
 * running programs (sys/txtbusy.c), the other locks numbered on as if the
 * marks had never been there. */
#include "zvisor.h"
#include "sys/procview.h"
#include "sys/txtbusy.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>
#include <linux/errno.h>

/* The n bytes at s: a field, then its end (past the spaces after it). */
static const char *field(const char *s, const char *end, const char **next)
{
	const char *e = s;
	while (e < end && *e != ' ')
		e++;
	*next = e;
	while (*next < end && **next == ' ')
		(*next)++;
	return s;
}

/* Whether the line's lock (after "N: ") is a mark: "OFDLCK ADVISORY READ
 * PID DEV:INO 9223372036854775807 EOF". */
static int is_mark(const char *s, const char *end)
{
	const char *f[6], *n = s;
	for (int i = 0; i < 6; i++)
		f[i] = field(n, end, &n);
	if (!zv_startswith(f[0], "OFDLCK ") || !zv_startswith(f[2], "READ "))
		return 0;
	const char *e;
	long start = zv_parse_dec(f[5], &e);
	return e > f[5] && *e == ' ' && zv_txt_is_mark(F_RDLCK, start);
}

int zv_pv_filter_locks(const char *raw, size_t len, struct zv_pv_buf *out)
{
	struct zv_pv_lines it = { raw, len, 0 };
	const char *line;
	size_t n;
	int nl;
	long gone = 0, skip = -1; /* marks left out so far; the number of the last */
	while ((line = zv_pv_next_line(&it, &n, &nl))) {
		const char *end = line + n, *p = line, *e;
		while (p < end && *p == ' ')
			p++;
		long k = zv_parse_dec(p, &e);
		if (e == p || e >= end || *e != ':') { /* not a lock's line: as it is */
			if (zv_pv_put(out, line, n + (size_t)nl) < 0)
				return -ENOMEM;
			continue;
		}
		const char *rest = e + 1;
		while (rest < end && *rest == ' ')
			rest++;
		if (k == skip)
			continue; /* a request waiting on a mark */
		if (!zv_startswith(rest, "->") && is_mark(rest, end)) {
			gone++;
			skip = k;
			continue;
		}
		char num[24];
		int w = zv_snprintf(num, sizeof num, "%ld", k - gone);
		if (zv_pv_put(out, line, (size_t)(p - line)) < 0 || zv_pv_put(out, num, (size_t)w) < 0 ||
		    zv_pv_put(out, e, (size_t)(end - e) + (size_t)nl) < 0)
			return -ENOMEM;
	}
	return 0;
}
