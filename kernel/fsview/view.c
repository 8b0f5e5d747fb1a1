/* The view's state: the binds by guest path, and host paths named back in
 * the guest's terms (a /proc link's target, a mapped file, a socket's
 * address, the working directory). */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "lib/string.h"
#include <asm-generic/errno.h>

struct fsv_state fsv ZV_COLD_BSS;

/* Set while an image sets itself up (on the host's stack, where no thread
 * block is found from rsp): from the view's start or exec state until the
 * program is loaded (zv_fsv_image_started). */
int fsv_in_setup;

int fsv_vm_child(void) { return !fsv_in_setup && !zv_current()->is_thread; }

int fsv_vfork_child(void) { return !fsv_in_setup && zv_current()->vfork_child; }

int fsv_pool_add(const char *s, size_t n, uint16_t *off)
{
	if (fsv.pool_len + n + 1 > sizeof fsv.pool)
		return -ENAMETOOLONG;
	memcpy(fsv.pool + fsv.pool_len, s, n);
	fsv.pool[fsv.pool_len + n] = 0;
	*off = (uint16_t)fsv.pool_len;
	fsv.pool_len += n + 1;
	return 0;
}

/* Whether s (n bytes) is prefix p followed by nothing or a '/'. */
static int under(const char *s, size_t n, const char *p, size_t pn)
{
	if (pn == 1 && p[0] == '/')
		return n >= 1 && s[0] == '/';
	return n >= pn && !memcmp(s, p, pn) && (n == pn || s[pn] == '/');
}

const struct fsv_bind *fsv_bind_at(const char *p, size_t n)
{
	/* the last bind of a path wins, as the last mount does */
	for (int i = fsv.nbinds - 1; i >= 0; i--) {
		const char *g = fsv_str(fsv.binds[i].guest);
		if (zv_strlen(g) == n && !memcmp(g, p, n))
			return &fsv.binds[i];
	}
	return NULL;
}

int fsv_bind_below(const char *p, size_t n)
{
	for (int i = 0; i < fsv.nbinds; i++) {
		const char *g = fsv_str(fsv.binds[i].guest);
		size_t gn = zv_strlen(g);
		if (gn > n && under(g, gn, p, n))
			return 1;
	}
	return 0;
}

/* A list of names, each followed by '/', and the first bytes of its names
 * (a bit each: most names are no bind's, and a bit says so at once). */
static int in_list(const char *list, const uint64_t *first, const char *name, size_t n)
{
	unsigned char f = n ? (unsigned char)name[0] : 0;
	if (!(first[f >> 6] >> (f & 63) & 1))
		return 0;
	for (const char *b = list; *b;) {
		const char *e = zv_strchr(b, '/');
		if ((size_t)(e - b) == n && !memcmp(b, name, n))
			return 1;
		b = e + 1;
	}
	return 0;
}

int fsv_bind_basename(const char *name, size_t n) { return in_list(fsv.basenames, fsv.basefirst, name, n); }
int fsv_glue_name(const char *name, size_t n) { return in_list(fsv.gluenames, fsv.gluefirst, name, n); }

static void list_add(char *list, uint64_t *first, size_t size, const char *name, size_t n)
{
	size_t l = zv_strlen(list);
	if (!in_list(list, first, name, n) && l + n + 2 < size) {
		memcpy(list + l, name, n);
		list[l + n] = '/';
		list[l + n + 1] = 0;
		unsigned char f = n ? (unsigned char)name[0] : 0;
		first[f >> 6] |= 1ULL << (f & 63);
	}
}

void fsv_names_add(const char *guest)
{
	const char *base = zv_strrchr(guest, '/') + 1;
	list_add(fsv.basenames, fsv.basefirst, sizeof fsv.basenames, base, zv_strlen(base));
	for (const char *p = guest + 1; p < base;) {
		const char *e = zv_strchr(p, '/');
		list_add(fsv.gluenames, fsv.gluefirst, sizeof fsv.gluenames, p, (size_t)(e - p));
		p = e + 1;
	}
}

/* out = prefix + rest (rest empty or starting with '/'); its length or -1. */
static long join(const char *prefix, size_t pn, const char *rest, char *out, size_t n)
{
	if (pn == 1 && prefix[0] == '/' && rest[0])
		pn = 0;
	size_t rn = zv_strlen(rest);
	if (pn + rn + 1 > n)
		return -1;
	memcpy(out, prefix, pn);
	memcpy(out + pn, rest, rn + 1);
	return (long)(pn + rn);
}

long fsv_host_of_view(const char *view, char *out, size_t n)
{
	size_t vn = zv_strlen(view), best_len = 0;
	const struct fsv_bind *best = NULL;
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		const char *g = fsv_str(b->guest);
		size_t gn = zv_strlen(g);
		/* the deepest mountpoint, the last of a path */
		if (b->kind == FSV_BIND_DIR && gn >= best_len && under(view, vn, g, gn)) {
			best = b;
			best_len = gn;
		}
	}
	if (!best)
		return join(fsv.root_host, fsv.root_host_len, vn == 1 ? "" : view, out, n);
	const char *h = fsv_str(best->host);
	return join(h, zv_strlen(h), view + best_len, out, n);
}

long fsv_view_of_host(const char *host, char *out, size_t n)
{
	size_t hn = zv_strlen(host);
	if (hn > 10 && !zv_strcmp(host + hn - 10, " (deleted)"))
		return -1;
	if (host[0] != '/')
		return -1;
	if (fsv.gluefd >= 0 && fsv.glue_host_len && under(host, hn, fsv_str(fsv.glue_host), fsv.glue_host_len))
		return join("/", 1, host + fsv.glue_host_len, out, n); /* a directory the view makes up */
	if (under(host, hn, fsv.root_host, fsv.root_host_len)) {
		const char *rest = fsv.root_host_len == 1 ? host : host + fsv.root_host_len;
		return join("/", 1, rest[0] ? rest : "", out, n) > 0 ? (long)zv_strlen(out) : join("/", 1, "", out, n);
	}
	int best = -1;
	size_t best_len = 0;
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		const char *h = fsv_str(b->host);
		size_t len = zv_strlen(h);
		if (under(host, hn, h, len) && (best < 0 || len > best_len)) {
			best = i;
			best_len = len;
		}
	}
	if (best < 0)
		return -1;
	const char *g = fsv_str(fsv.binds[best].guest);
	const char *rest = best_len == 1 ? host : host + best_len;
	return join(g, zv_strlen(g), rest, out, n);
}

long fsv_proc_path(const char *view, char *out, size_t n)
{
	size_t vn = zv_strlen(view);
	if (fsv.vroot_len == 1) {
		if (vn + 1 > n)
			return -1;
		memcpy(out, view, vn + 1);
		return (long)vn;
	}
	if (!under(view, vn, fsv.vroot, fsv.vroot_len))
		return -1;
	const char *rest = view + fsv.vroot_len;
	return join("/", 1, rest, out, n);
}

long fsv_guest_path(const char *host, char *out, size_t n)
{
	char view[FSV_PATH_MAX];
	if (!fsv.on || fsv_view_of_host(host, view, sizeof view) < 0)
		return -1;
	long r = fsv_proc_path(view, out, n);
	if (r >= 0)
		return r;
	/* outside the process's root (a chroot): as the host names a path
	 * outside the root, from the top */
	size_t vn = zv_strlen(view);
	if (vn + 1 > n)
		return -1;
	memcpy(out, view, vn + 1);
	return (long)vn;
}
