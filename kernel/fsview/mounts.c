/* /proc/self/mountinfo and /proc/self/mounts as the guest sees them
 * (procview serves them through the zv_view_mounts hook): "/" first, from
 * the host mount that holds the root; then the host's mounts the view
 * reaches (inside the root, or under a bind's source, with their guest
 * mount points); then a line for each bind whose source is not itself a
 * mount point, as a bind mount would add. Mounts the view does not reach
 * are left out. */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <asm-generic/errno.h>

#define FIELDS 12

/* Where the text goes (procview's buffer). */
struct out {
	zv_view_put *put;
	void *ctx;
};

/* The lines of a text: each call gives the next (n bytes, no newline). */
struct lines {
	const char *text;
	size_t len, at;
};

static const char *next_line(struct lines *it, size_t *n)
{
	if (it->at >= it->len)
		return NULL;
	const char *line = it->text + it->at;
	size_t k = 0;
	while (it->at + k < it->len && line[k] != '\n')
		k++;
	*n = k;
	it->at += k + 1;
	return line;
}

/* The whitespace-separated fields of a line (n bytes): their starts and lengths. */
static int split(const char *line, size_t n, const char **f, size_t *fl)
{
	int k = 0;
	for (size_t i = 0; i < n && k < FIELDS;) {
		while (i < n && line[i] == ' ')
			i++;
		if (i >= n)
			break;
		f[k] = line + i;
		while (i < n && line[i] != ' ')
			i++;
		fl[k] = (size_t)(line + i - f[k]);
		k++;
	}
	return k;
}

/* The mount point field (octal escapes as the host writes them) as a path. */
static void unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		if (s[i] == '\\' && i + 3 < n + 0 && s[i + 1] >= '0' && s[i + 1] <= '3') {
			out[k++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			out[k++] = s[i];
		}
	}
	out[k] = 0;
}

static int put_escaped(struct out *out, const char *s)
{
	for (; *s; s++) {
		char e[5];
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\') {
			zv_snprintf(e, sizeof e, "\\%03o", (unsigned char)*s);
			if (out->put(out->ctx, e, 4) < 0)
				return -ENOMEM;
		} else if (out->put(out->ctx, s, 1) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* A line with its mount point (field mp) replaced by guest, and for
 * mountinfo its root (field 3) by root when not NULL. */
static int put_line(struct out *out, const char *line, size_t n, int mp, const char *guest, const char *root)
{
	const char *f[FIELDS];
	size_t fl[FIELDS];
	int k = split(line, n, f, fl);
	for (int i = 0; i < k; i++) {
		int r = i ? out->put(out->ctx, " ", 1) : 0;
		if (r == 0)
			r = i == mp ? put_escaped(out, guest)
				    : root && i == 3 ? put_escaped(out, root) : out->put(out->ctx, f[i], fl[i]);
		if (r < 0)
			return r;
	}
	return out->put(out->ctx, "\n", 1);
}

/* The next line of the host's text with a mount point (field mp), which
 * goes into m: the line, or NULL at the end. */
static const char *next_mount(struct lines *it, int mp, size_t *n, char *m, size_t cap)
{
	for (;;) {
		const char *line = next_line(it, n);
		const char *f[FIELDS];
		size_t fl[FIELDS];
		if (!line)
			return NULL;
		if (split(line, *n, f, fl) > mp) {
			unescape(f[mp], fl[mp], m, cap);
			return line;
		}
	}
}

/* The line of the host mount that holds host path p (the longest mount
 * point that is a prefix of it, the last of equal ones: the one on top),
 * its length and its mount point's length. */
static const char *holder(const char *raw, size_t len, int mp, const char *p, size_t *ln, size_t *mplen)
{
	const char *best = NULL, *line;
	size_t pn = zv_strlen(p), n;
	char m[FSV_PATH_MAX];
	*mplen = 0;
	for (struct lines it = { raw, len, 0 }; (line = next_mount(&it, mp, &n, m, sizeof m));) {
		size_t mn = zv_strlen(m);
		int under = (mn == 1 && m[0] == '/') || (pn >= mn && !memcmp(p, m, mn) && (p[mn] == '/' || !p[mn]));
		if (under && mn >= *mplen) {
			best = line;
			*ln = n;
			*mplen = mn;
		}
	}
	return best;
}

/* The root field of a mountinfo line for host path p inside the mount whose
 * line is l (its root field plus the rest of p below the mount point). */
static void sub_root(const char *l, size_t n, const char *p, size_t mplen, char *out, size_t cap)
{
	const char *f[FIELDS];
	size_t fl[FIELDS];
	split(l, n, f, fl);
	char r[FSV_PATH_MAX];
	unescape(f[3], fl[3], r, sizeof r);
	const char *rest = mplen == 1 ? p : p + mplen;
	zv_snprintf(out, cap, "%s%s", (r[0] == '/' && !r[1] && rest[0]) ? "" : r, rest);
	if (!out[0])
		zv_strlcpy(out, "/", cap);
}

static int mounts(int info, const char *raw, size_t len, zv_view_put *put, void *ctx)
{
	struct out o = { put, ctx }, *out = &o;
	int mp = info ? 4 : 1;
	char guest[FSV_PATH_MAX], rootf[FSV_PATH_MAX];
	size_t ln, mplen;
	/* "/": the root's mount */
	const char *l = holder(raw, len, mp, fsv.root_host, &ln, &mplen);
	if (l) {
		sub_root(l, ln, fsv.root_host, mplen, rootf, sizeof rootf);
		if (put_line(out, l, ln, mp, "/", info ? rootf : NULL) < 0)
			return -ENOMEM;
	}
	/* the host's mounts the view reaches */
	const char *line;
	size_t n;
	char m[FSV_PATH_MAX];
	for (struct lines it = { raw, len, 0 }; (line = next_mount(&it, mp, &n, m, sizeof m));) {
		if (!zv_strcmp(m, fsv.root_host) || fsv_guest_path(m, guest, sizeof guest) < 0)
			continue;
		if (put_line(out, line, n, mp, guest, NULL) < 0)
			return -ENOMEM;
	}
	/* binds that are not mount points on the host */
	for (int i = 0; i < fsv.nbinds; i++) {
		const char *host = fsv_str(fsv.binds[i].host);
		l = holder(raw, len, mp, host, &ln, &mplen);
		if (!l || mplen == zv_strlen(host) || fsv_proc_path(fsv_str(fsv.binds[i].guest), guest, sizeof guest) < 0)
			continue;
		sub_root(l, ln, host, mplen, rootf, sizeof rootf);
		if (put_line(out, l, ln, mp, guest, info ? rootf : NULL) < 0)
			return -ENOMEM;
	}
	return 0;
}

int (*const fsv_mounts_hook)(int, const char *, size_t, zv_view_put *, void *) = mounts;
