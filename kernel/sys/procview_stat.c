/* /proc/PID/stat and /proc/PID/task/TID/children as the guest would see
 * them natively: the host's text but for the signal fields of its own
 * process's stat (31 to 34: pending, blocked, ignored, caught; the host's
 * hold zvisor's handlers and masks, as status's do) and, while a restored
 * tree's ids are shown (zv_guest_ids_on), its ids, which are the host's
 * new ones after a restore (cr/pids.c). stat: the pid or tid (field 1),
 * the parent (4), the process group, session and terminal's foreground
 * group (5, 6, 8); children: each child's pid; a pidfd's fdinfo: its
 * process's pid. */
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

/* Field 31 to 34 (pending, blocked, ignored, caught), as the host shows
 * them: only the first 31 signals. */
#define SIG_FIELDS 0x7fffffffUL

int zv_pv_filter_stat(struct zv_thread *t, struct zv_call *c, int tid, int other, const char *raw, size_t len,
		      struct zv_pv_buf *out)
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
	uint64_t sig[4] = { 0, 0, 0, 0 };
	const char *p = sp, *end = raw + len;
	/* fields 2 and 3 as they are, then the ids (4 to 8) and the signals */
	const char *f = rp + 1;
	for (int field = 3; f < end && field <= 34; field++) {
		const char *e = f + 1;
		while (e < end && *e != ' ' && *e != '\n')
			e++;
		if (field >= 31 && !other) {
			long v = 0;
			number(f + 1, (size_t)(e - f - 1), &v);
			sig[field - 31] = (uint64_t)v;
			if (field == 31 && zv_pv_put(out, p, (size_t)(f - p)) < 0)
				return -ENOMEM;
			if (field == 34) {
				zv_pv_guest_sigs(t, c, tid, sig);
				char buf[64];
				int k = zv_snprintf(buf, sizeof buf, " %lu %lu %lu %lu", sig[0] & SIG_FIELDS,
						    sig[1] & SIG_FIELDS, sig[2] & SIG_FIELDS, sig[3] & SIG_FIELDS);
				if (zv_pv_put(out, buf, (size_t)k) < 0)
					return -ENOMEM;
				p = e;
			}
		} else if (field == 4 || field == 5 || field == 6 || field == 8) {
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

/* A pidfd's "Pid:\t123" and "NSpid:\t123" (-1 once waited for, 0 in
 * another pid namespace); every other line as it is. */
int zv_pv_filter_fdinfo(const char *raw, size_t len, struct zv_pv_buf *out)
{
	struct zv_pv_lines it = { raw, len, 0 };
	size_t n;
	int nl;
	for (const char *line; (line = zv_pv_next_line(&it, &n, &nl));) {
		size_t kl = n >= 5 && !memcmp(line, "Pid:\t", 5) ? 5 : n >= 7 && !memcmp(line, "NSpid:\t", 7) ? 7 : 0;
		int r = kl ? zv_pv_put(out, line, kl) : zv_pv_put(out, line, n);
		if (kl && r == 0) /* NSpid: one id per namespace level */
			for (size_t i = kl; r == 0 && i < n;) {
				size_t k = i;
				while (k < n && line[k] != '\t')
					k++;
				r = put_id(out, line + i, k - i, zv_guest_id);
				if (r == 0 && k < n)
					r = zv_pv_put(out, "\t", 1);
				i = k + 1;
			}
		if (r < 0 || (nl && zv_pv_put(out, "\n", 1) < 0))
			return -ENOMEM;
	}
	return 0;
}
