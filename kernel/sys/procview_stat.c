/* The ids in /proc/PID/stat and /proc/PID/task/TID/children as a restored
 * tree's programs know them (sys/procview.c serves them only while
 * zv_guest_ids_on): the host's text but for its ids, which are the host's
 * new ones after a restore (cr/pids.c). stat: the pid or tid (field 1),
 * the parent (4), the process group, session and terminal's foreground
 * group (5, 6, 8); children: each child's pid. */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/procview.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/errno.h>

/* A decimal number (a leading '-' allowed) at s[0, n): its length, the
 * value in *v; 0 if there is none. */
static size_t number(const char *s, size_t n, long *v)
{
	size_t i = s[0] == '-' && n > 1, k = i;
	long x = 0;
	for (; k < n && s[k] >= '0' && s[k] <= '9' && k < 12; k++)
		x = x * 10 + (s[k] - '0');
	if (k == i)
		return 0;
	*v = i ? -x : x;
	return k;
}

/* The number at s (n bytes), mapped by f, onto out. */
static int put_id(struct zv_pv_buf *out, const char *s, size_t n, long (*f)(long))
{
	long v = 0;
	if (!n || number(s, n, &v) != n)
		return zv_pv_put(out, s, n);
	char buf[24];
	int k = zv_snprintf(buf, sizeof buf, "%ld", f(v));
	return zv_pv_put(out, buf, (size_t)k);
}

int zv_pv_filter_stat(const char *raw, size_t len, struct zv_pv_buf *out)
{
	const char *rp = NULL; /* the comm's end: its last ')' */
	for (size_t i = 0; i < len; i++)
		if (raw[i] == ')')
			rp = raw + i;
	const char *sp = zv_strchr(raw, ' ');
	if (!rp || !sp || sp > rp)
		return zv_pv_put(out, raw, len);
	if (put_id(out, raw, (size_t)(sp - raw), zv_guest_id) < 0)
		return -ENOMEM;
	const char *p = sp, *end = raw + len;
	/* fields 2 and 3 as they are, then 4 to 8 */
	const char *f = rp + 1;
	for (int field = 3; f < end && field <= 8; field++) {
		const char *e = f + 1;
		while (e < end && *e != ' ' && *e != '\n')
			e++;
		if (field == 4 || field == 5 || field == 6 || field == 8) {
			if (zv_pv_put(out, p, (size_t)(f + 1 - p)) < 0 ||
			    put_id(out, f + 1, (size_t)(e - f - 1), field == 4 ? zv_guest_id : zv_guest_group) < 0)
				return -ENOMEM;
			p = e;
		}
		f = e;
	}
	return zv_pv_put(out, p, (size_t)(end - p));
}

int zv_pv_filter_children(const char *raw, size_t len, struct zv_pv_buf *out)
{
	for (size_t i = 0; i < len;) {
		size_t k = i;
		while (k < len && raw[k] != ' ')
			k++;
		if (put_id(out, raw + i, k - i, zv_guest_id) < 0 || (k < len && zv_pv_put(out, " ", 1) < 0))
			return -ENOMEM;
		i = k + 1;
	}
	return 0;
}
