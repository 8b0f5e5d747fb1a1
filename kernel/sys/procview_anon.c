/* Anonymous memory that a restore mapped from its image (cr/lazy.h) is a
 * private mapping of the image's file on the host; the guest's maps,
 * smaps, numa_maps and smaps_rollup show it as the anonymous memory it
 * was (sys/procview_maps.c calls these): no offset, device, inode or name
 * (unless [heap] or [stack]), and the pages it has not written yet, which
 * are the file's clean pages, counted as its own dirty anonymous ones, as
 * after a restore that reads every page. */
#include "zvisor.h"
#include "sys/procview.h"
#include "sys/filemem.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/syscall.h"

/* Whether numa_maps's path (unescaped) names the image's file. */
static int anon_path_is(const char *path)
{
	size_t n = zv_strlen(zv_filemem.path);
	return !memcmp(path, zv_filemem.path, n) && (!path[n] || !zv_strcmp(path + n, " (deleted)"));
}

/* The field after n spaces-separated fields of line (n bytes), or NULL. */
static const char *field(const char *line, size_t n, int k)
{
	const char *p = line, *end = line + n;
	for (int i = 0; i < k; i++) {
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
	}
	return p < end ? p : NULL;
}

int zv_pv_anon_header(const char *line, size_t n, char *buf, size_t cap)
{
	if (!zv_filemem.ino)
		return 0;
	const char *dev = field(line, n, 3), *e;
	if (!dev)
		return 0;
	uint64_t ma = zv_parse_hex(dev, &e), mi, ino;
	if (*e != ':')
		return 0;
	mi = zv_parse_hex(e + 1, &e);
	if (*e != ' ')
		return 0;
	ino = (uint64_t)zv_parse_dec(e + 1, &e);
	if (!zv_filemem_is(ma, mi, ino))
		return 0;
	/* "lo-hi perms " then an anonymous mapping's "00000000 00:00 0 " */
	size_t head = (size_t)(field(line, n, 2) - line);
	if (head + 18 > cap)
		return 0;
	memcpy(buf, line, head);
	memcpy(buf + head, "00000000 00:00 0 ", 17);
	return (int)(head + 17);
}

/* A "Key:   N kB" line with another number, right-aligned in the same
 * width (wider if it must be), into buf: its length. */
size_t zv_pv_kb_line(const char *line, size_t n, uint64_t v, char *buf, size_t cap)
{
	const char *colon = zv_strchr(line, ':'), *p, *e;
	if (!colon || colon > line + n || n + 24 > cap) {
		size_t k = n < cap ? n : cap;
		memcpy(buf, line, k);
		return k;
	}
	for (p = colon + 1; *p == ' '; p++)
		;
	zv_parse_dec(p, &e);
	char num[24];
	size_t w = (size_t)zv_snprintf(num, sizeof num, "%lu", (unsigned long)v), width = (size_t)(e - colon - 1), k;
	k = (size_t)(colon + 1 - line);
	memcpy(buf, line, k);
	for (size_t i = w; i < width; i++)
		buf[k++] = ' ';
	memcpy(buf + k, num, w);
	k += w;
	memcpy(buf + k, e, (size_t)(line + n - e));
	return k + (size_t)(line + n - e);
}

static uint64_t kb(const char *line)
{
	const char *p = zv_strchr(line, ':'), *e;
	if (!p)
		return 0;
	for (p++; *p == ' '; p++)
		;
	return (uint64_t)zv_parse_dec(p, &e);
}

void zv_pv_anon_note(struct zv_pv_anon *a, const char *line)
{
	static const struct { const char *key; size_t off; } keys[] = {
		{ "Rss:", __builtin_offsetof(struct zv_pv_anon, rss) },
		{ "Pss:", __builtin_offsetof(struct zv_pv_anon, pss) },
		{ "Pss_Dirty:", __builtin_offsetof(struct zv_pv_anon, pss_dirty) },
		{ "Shared_Clean:", __builtin_offsetof(struct zv_pv_anon, shared_clean) },
		{ "Private_Clean:", __builtin_offsetof(struct zv_pv_anon, private_clean) },
		{ "Anonymous:", __builtin_offsetof(struct zv_pv_anon, anon) },
	};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (zv_startswith(line, keys[i].key))
			*(uint64_t *)((char *)a + keys[i].off) = kb(line);
}

size_t zv_pv_anon_attr(struct zv_pv_anon *a, const char *line, size_t n, char *buf, size_t cap)
{
	zv_pv_anon_note(a, line);
	if (zv_startswith(line, "Pss_Dirty:"))
		return zv_pv_kb_line(line, n, a->pss, buf, cap);
	if (zv_startswith(line, "Shared_Clean:") || zv_startswith(line, "Private_Clean:"))
		return zv_pv_kb_line(line, n, 0, buf, cap);
	if (zv_startswith(line, "Shared_Dirty:"))
		return zv_pv_kb_line(line, n, a->shared_clean + kb(line), buf, cap);
	if (zv_startswith(line, "Private_Dirty:"))
		return zv_pv_kb_line(line, n, a->private_clean + kb(line), buf, cap);
	if (zv_startswith(line, "Anonymous:"))
		return zv_pv_kb_line(line, n, a->rss, buf, cap);
	size_t k = n < cap ? n : cap;
	memcpy(buf, line, k);
	return k;
}

int zv_pv_anon_numa(const char *line, size_t n, struct zv_pv_buf *out)
{
	if (!zv_filemem.ino)
		return 0;
	const char *f = line, *end = line + n;
	while (f + 6 <= end && memcmp(f, " file=", 6))
		f++;
	if (f + 6 > end)
		return 0;
	/* the file's path as numa_maps writes it: "\040" for a space */
	const char *v = f + 6, *e = v;
	while (e < end && *e != ' ')
		e++;
	char path[ZV_PATH_MAX];
	size_t k = 0;
	for (const char *p = v; p < e && k + 1 < sizeof path; p++) {
		if (p[0] == '\\' && p + 3 < e && p[1] >= '0' && p[1] <= '3') {
			path[k++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else {
			path[k++] = *p;
		}
	}
	path[k] = 0;
	if (!anon_path_is(path))
		return 0;
	/* the counts: every page its own, anonymous and dirty */
	uint64_t pages = 0;
	for (const char *t = e; t < end; t++)
		if (t[0] == ' ' && t[1] == 'N' && t[2] >= '0' && t[2] <= '9') {
			const char *q = t + 2;
			while (q < end && *q != '=')
				q++;
			const char *qe;
			pages += (uint64_t)zv_parse_dec(q + 1, &qe);
		}
	if (zv_pv_put(out, line, (size_t)(f - line)) < 0)
		return -ENOMEM;
	if (pages) {
		char buf[64];
		int w = zv_snprintf(buf, sizeof buf, " anon=%lu dirty=%lu", (unsigned long)pages, (unsigned long)pages);
		if (zv_pv_put(out, buf, (size_t)w) < 0)
			return -ENOMEM;
	}
	for (const char *t = e; t < end;) {
		const char *te = t + 1;
		while (te < end && *te != ' ')
			te++;
		if (!zv_startswith(t, " anon=") && !zv_startswith(t, " dirty=") && !zv_startswith(t, " mapped=") &&
		    zv_pv_put(out, t, (size_t)(te - t)) < 0)
			return -ENOMEM;
		t = te;
	}
	return 1;
}
