/* /proc/self/{maps,smaps,numa_maps,smaps_rollup} as the guest would see
 * them natively (sys/procview.c serves them): the host's lines, byte for
 * byte, without the kernel's own regions (its image and memory window, the
 * stub regions, zpoline's pages), the emulated program break named [heap]
 * and a restored stack named [stack]. */
#include "zvisor.h"
#include "sys/procview.h"
#include "sys/filemem.h"
#include "intercept/stubs.h"
#include "intercept/sharedtext.h"
#include "sys/viewhook.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

static void collect(struct zv_pv_hidden *h)
{
	h->n = zv_stubs_regions(h->r, ZV_PV_MAX_REGIONS);
	h->r[h->n][0] = ZV_KWIN_START;
	h->r[h->n++][1] = ZV_KWIN_END;
	if (zv_proc.platform == ZV_PLAT_ZPOLINE) {
		h->r[h->n][0] = 0;
		h->r[h->n++][1] = 4096;
		h->r[h->n][0] = (uint64_t)ZV_ENTRY_PAGE;
		h->r[h->n++][1] = (uint64_t)ZV_ENTRY_PAGE + 4096;
	}
}

static int is_hidden(const struct zv_pv_hidden *h, uint64_t lo, uint64_t hi)
{
	for (int i = 0; i < h->n; i++)
		if (lo < h->r[i][1] && h->r[i][0] < hi)
			return 1;
	return 0;
}

/* A mapping's first line: "lo-hi perms ..." (numa_maps: "lo policy ...").
 * Returns 1 and its range, or 0 for a line of attributes. */
static int header(const char *line, int kind, uint64_t *lo, uint64_t *hi)
{
	const char *e;
	*lo = zv_parse_hex(line, &e);
	if (e == line)
		return 0;
	if (kind == ZV_PV_NUMA) {
		*hi = *lo + 1;
		return *e == ' ';
	}
	if (*e != '-')
		return 0;
	const char *f = e + 1;
	*hi = zv_parse_hex(f, &e);
	return e != f && *e == ' ';
}

/* Whether a maps header has no name: it ends after the inode's space. */
static int anonymous(const char *line, size_t n)
{
	int fields = 0;
	for (size_t i = 0; i < n; i++)
		if (line[i] == ' ' && (i == 0 || line[i - 1] != ' '))
			fields++;
	return fields == 5 && line[n - 1] == ' ';
}

/* Writes line (n bytes, no newline) with name appended where the host puts
 * names: column 73, or one space after a longer prefix. */
static int put_named(struct zv_pv_buf *out, const char *line, size_t n, const char *name)
{
	if (zv_pv_put(out, line, n) < 0)
		return -ENOMEM;
	for (size_t col = n; col < 73; col++)
		if (zv_pv_put(out, " ", 1) < 0)
			return -ENOMEM;
	if (n >= 73 && zv_pv_put(out, " ", 1) < 0)
		return -ENOMEM;
	return zv_pv_put(out, name, zv_strlen(name));
}

/* A header line's name, if the host's would not be the native one. */
static const char *new_name(int kind, const char *line, size_t n, uint64_t lo, uint64_t hi)
{
	if (kind == ZV_PV_NUMA || !anonymous(line, n))
		return NULL;
	uint64_t shi, slo = zv_pv_stack(&shi);
	if (slo && lo <= slo && hi >= shi)
		return "[stack]";
	uint64_t b0 = zv_proc.brk_start, b1 = zv_proc.brk_cur;
	if (b1 > b0 && lo <= b1 && hi >= b0 && hi <= ZV_KWIN_START)
		return "[heap]";
	return NULL;
}

/* A mapping of a shared copy of rewritten code (intercept/sharedtext.c) is
 * shown as the original file's: its device, inode and path (the offsets
 * are the same). Writes the header line so and returns 1, or 0 if it is
 * no such mapping; -ENOMEM. */
static int shared_copy(int kind, const char *line, size_t n, struct zv_pv_buf *out)
{
	if (kind == ZV_PV_NUMA) {
		const char *f = line, *v, *e;
		while (f + 6 <= line + n && memcmp(f, " file=", 6))
			f++;
		if (f + 6 > line + n)
			return 0;
		v = f + 6;
		for (e = v; e < line + n && *e != ' '; e++)
			;
		const char *hpath = zv_sharedtext_named(v, (size_t)(e - v));
		if (!hpath)
			return 0;
		char path[ZV_PATH_MAX];
		zv_guest_path_of(hpath, path, sizeof path);
		const char *gone = zv_sharedtext_still_there(hpath, NULL) ? "" : "\\040(deleted)";
		return zv_pv_put(out, line, (size_t)(v - line)) < 0 || zv_pv_put(out, path, zv_strlen(path)) < 0 ||
				       zv_pv_put(out, gone, zv_strlen(gone)) < 0 ||
				       zv_pv_put(out, e, (size_t)(line + n - e)) < 0
			       ? -ENOMEM
			       : 1;
	}
	/* lo-hi perms offset major:minor inode name */
	const char *p = line, *e;
	for (int field = 0; field < 3; field++) {
		p = zv_strchr(p, ' ');
		if (!p || p >= line + n)
			return 0;
		p++;
	}
	uint64_t cma = zv_parse_hex(p, &e), cmi, cino;
	if (*e != ':')
		return 0;
	cmi = zv_parse_hex(e + 1, &e);
	if (*e != ' ')
		return 0;
	cino = (uint64_t)zv_parse_dec(e + 1, &e);
	uint64_t ma, mi, ino;
	const char *path = zv_sharedtext_original(cma, cmi, cino, &ma, &mi, &ino);
	if (!path)
		return 0;
	char head[160];
	size_t hl = (size_t)(p - line);
	if (hl + 48 > sizeof head)
		return 0;
	memcpy(head, line, hl);
	hl += (size_t)zv_snprintf(head + hl, sizeof head - hl, "%02lx:%02lx %lu ", (unsigned long)ma,
				  (unsigned long)mi, (unsigned long)ino);
	uint64_t id[3] = { ma, mi, ino };
	char name[ZV_PATH_MAX], guest[ZV_PATH_MAX];
	zv_guest_path_of(path, guest, sizeof guest);
	zv_snprintf(name, sizeof name, "%s%s", guest, zv_sharedtext_still_there(path, id) ? "" : " (deleted)");
	return put_named(out, head, hl, name) < 0 ? -ENOMEM : 1;
}

/* A root of the guest's own (sys/viewhook.h): a mapping's file named by its
 * guest path. Writes the line so and returns 1, 0 if its name is the
 * host's, -ENOMEM. */
static int viewed(int kind, const char *line, size_t n, struct zv_pv_buf *out)
{
	if (!zv_view_guest_path)
		return 0;
	const char *p = line, *end = line + n;
	if (kind == ZV_PV_NUMA) {
		while (p + 6 <= end && memcmp(p, " file=/", 7))
			p++;
		if (p + 6 > end)
			return 0;
		p += 6;
	} else {
		for (int field = 0; field < 5; field++) { /* lo-hi perms offset dev inode */
			while (p < end && *p != ' ')
				p++;
			while (p < end && *p == ' ')
				p++;
		}
		if (p >= end || *p != '/')
			return 0;
	}
	const char *e = kind == ZV_PV_NUMA ? p : end;
	while (kind == ZV_PV_NUMA && e < end && *e != ' ')
		e++;
	char host[ZV_PATH_MAX], guest[ZV_PATH_MAX];
	size_t hn = (size_t)(e - p), del = 0;
	if (hn >= sizeof host)
		return 0;
	memcpy(host, p, hn);
	host[hn] = 0;
	if (hn > 10 && !zv_strcmp(host + hn - 10, " (deleted)"))
		host[hn - 10] = 0, del = 10;
	if (zv_view_guest_path(host, guest, sizeof guest) < 0)
		return 0;
	if (del)
		zv_strlcpy(guest + zv_strlen(guest), " (deleted)", sizeof guest - zv_strlen(guest));
	if (kind != ZV_PV_NUMA) {
		/* the prefix without the host's padding, padded again */
		const char *q = p;
		while (q > line && q[-1] == ' ')
			q--;
		return put_named(out, line, (size_t)(q - line) + 1, guest) < 0 ? -ENOMEM : 1;
	}
	return zv_pv_put(out, line, (size_t)(p - line)) < 0 || zv_pv_put(out, guest, zv_strlen(guest)) < 0 ||
			       zv_pv_put(out, e, (size_t)(end - e)) < 0
		       ? -ENOMEM
		       : 1;
}

/* zpoline rewrites sites in place, page by page, and the host keeps the
 * pieces of a code mapping apart afterwards (a written page has its own
 * anonymous copy): a maps line that continues the previous one (same
 * perms, file and name, the next offset) joins it, as natively it is one
 * mapping. The previous header is at out->p + *prev (none: -1). */
static int joins(const struct zv_pv_buf *out, long prev, const char *line, size_t n)
{
	if (prev < 0 || zv_proc.platform != ZV_PLAT_ZPOLINE)
		return 0;
	const char *a = out->p + prev, *e;
	uint64_t alo = zv_parse_hex(a, &e), ahi = zv_parse_hex(e + 1, &e);
	const char *arest = e; /* " perms offset dev inode name" */
	uint64_t blo = zv_parse_hex(line, &e);
	zv_parse_hex(e + 1, &e);
	const char *brest = e;
	if (ahi != blo || memcmp(arest, " r-xp ", 6) || memcmp(brest, " r-xp ", 6))
		return 0;
	uint64_t aoff = zv_parse_hex(arest + 6, &e);
	const char *atail = e, *btail;
	uint64_t boff = zv_parse_hex(brest + 6, &btail);
	size_t alen = (size_t)(out->p + out->len - atail), blen = (size_t)(line + n - btail);
	if (aoff + (ahi - alo) != boff || alen != blen + 1 || memcmp(atail, btail, blen))
		return 0;
	return memcmp(atail + 1, "00:00 ", 6) != 0; /* a file */
}

void zv_pv_filter_begin(struct zv_pv_filter *f, int kind)
{
	*f = (struct zv_pv_filter){ .kind = kind, .prev = -1 };
	collect(&f->h);
	f->slo = zv_pv_stack(&f->shi);
}

/* Replaces old bytes at off in b with s[0, n). */
static int replace(struct zv_pv_buf *b, size_t off, size_t old, const char *s, size_t n)
{
	size_t tail = b->len - off - old;
	if (n > old) {
		char pad[64] = { 0 };
		for (size_t more = n - old; more;) {
			size_t k = more < sizeof pad ? more : sizeof pad;
			if (zv_pv_put(b, pad, k) < 0)
				return -ENOMEM;
			more -= k;
		}
	}
	memmove(b->p + off + n, b->p + off + old, tail);
	memcpy(b->p + off, s, n);
	b->len = off + n + tail;
	b->p[b->len] = 0;
	return 0;
}

/* The previous record (at f->prev) ends where this header's mapping starts,
 * at a cut a conversion of image-mapped memory made, with the same
 * protections: it is the same mapping natively, so the previous header
 * takes this one's end (smaps: and its counts, f->merging). 1 if so. */
static int join_cut(struct zv_pv_filter *f, struct zv_pv_buf *out, const char *line, size_t n, uint64_t lo,
		    uint64_t hi)
{
	if (f->prev < 0 || (f->kind != ZV_PV_MAPS && f->kind != ZV_PV_SMAPS) || !zv_filemem_is_cut(lo))
		return 0;
	const char *a = out->p + f->prev, *e, *b;
	uint64_t alo = zv_parse_hex(a, &e), ahi = zv_parse_hex(e + 1, &e);
	zv_parse_hex(line, &b);
	zv_parse_hex(b + 1, &b);
	if (ahi != lo || (size_t)(b - line) + 6 > n || memcmp(e, b, 6) || !anonymous(line, n))
		return 0;
	char head[48];
	int w = zv_snprintf(head, sizeof head, "%08lx-%08lx", (unsigned long)alo, (unsigned long)hi);
	return replace(out, (size_t)f->prev, (size_t)(e - a), head, (size_t)w) < 0 ? -ENOMEM : 1;
}

/* An smaps line of a record joined to the previous one: its count is
 * added to the previous record's line of the same key. */
static int merge_line(struct zv_pv_filter *f, struct zv_pv_buf *out, const char *line, size_t n)
{
	const char *colon = zv_strchr(line, ':'), *e, *p;
	if (!colon || colon > line + n)
		return 0;
	for (p = colon + 1; *p == ' '; p++)
		;
	uint64_t v = (uint64_t)zv_parse_dec(p, &e);
	if (e == p || !zv_startswith(e, " kB"))
		return 0; /* THPeligible, VmFlags: the previous record's */
	size_t kl = (size_t)(colon + 1 - line);
	for (size_t at = (size_t)f->prev; at < out->len;) {
		const char *l = out->p + at, *end = zv_strchr(l, '\n');
		size_t ll = end ? (size_t)(end - l) : out->len - at;
		if (ll > kl && !memcmp(l, line, kl)) {
			const char *q = l + kl, *qe;
			while (*q == ' ')
				q++;
			uint64_t old = (uint64_t)zv_parse_dec(q, &qe);
			char buf[160];
			size_t k = zv_pv_kb_line(l, ll, old + v, buf, sizeof buf);
			return replace(out, at, ll, buf, k);
		}
		at += ll + 1;
	}
	return 0;
}

int zv_pv_filter_line(struct zv_pv_filter *f, const char *line, size_t n, int nl, size_t enough,
		      struct zv_pv_buf *out, uint64_t *start)
{
	int kind = f->kind;
	uint64_t lo, hi;
	const char *name = NULL;
	char anon_line[160];
	int head = header(line, kind, &lo, &hi);
	if (head) {
		if (f->resume && hi <= f->resume) {
			f->skip = 1; /* shown before the text moved */
			return 0;
		}
		f->resume = 0;
		int skip = is_hidden(&f->h, lo, hi);
		/* after a restore, the host's [stack] is zvisor's, not the guest's */
		if (!skip && f->slo && n >= 7 && !memcmp(line + n - 7, "[stack]", 7) && !(lo <= f->slo && hi >= f->shi))
			skip = 1;
		if (!skip && kind == ZV_PV_MAPS && joins(out, f->prev, line, n)) {
			/* rewrite the previous line with this one's end */
			char head[40];
			const char *e, *a = out->p + f->prev;
			uint64_t alo = zv_parse_hex(a, &e);
			const char *rest = zv_strchr(a, ' ');
			char tail[512];
			size_t tl = (size_t)(out->p + out->len - rest);
			if (tl >= sizeof tail)
				return -ENOMEM;
			memcpy(tail, rest, tl);
			int w = zv_snprintf(head, sizeof head, "%08lx-%08lx", (unsigned long)alo, (unsigned long)hi);
			out->len = (size_t)f->prev;
			if (zv_pv_put(out, head, (size_t)w) < 0 || zv_pv_put(out, tail, tl) < 0)
				return -ENOMEM;
			return 0;
		}
		/* memory a restore mapped from its image: anonymous memory */
		int anon = !skip && kind != ZV_PV_NUMA ? zv_pv_anon_header(line, n, anon_line, sizeof anon_line) : 0;
		if (anon) {
			n = (size_t)anon;
			line = anon_line;
		}
		int joined = skip ? 0 : join_cut(f, out, line, n, lo, hi);
		if (joined) {
			f->skip = 0;
			f->merging = 1;
			f->anon = anon > 0;
			f->counts = (struct zv_pv_anon){ 0 };
			return joined < 0 ? joined : 0;
		}
		if (out->len > enough) {
			*start = lo;
			return 1;
		}
		f->skip = skip;
		f->merging = 0;
		if (skip)
			return 0;
		f->anon = anon > 0;
		f->counts = (struct zv_pv_anon){ 0 };
		name = new_name(kind, line, n, lo, hi);
	} else if (f->skip) {
		return 0;
	} else if (f->anon) {
		n = zv_pv_anon_attr(&f->counts, line, n, anon_line, sizeof anon_line);
		line = anon_line;
	}
	if (!head && f->merging)
		return merge_line(f, out, line, n);
	if (head && kind != ZV_PV_NUMA)
		f->prev = (long)out->len;
	int r = 0;
	if (name) {
		r = put_named(out, line, n, name) < 0 ? -ENOMEM : 1;
	} else if (head && !f->anon) {
		r = kind == ZV_PV_NUMA ? zv_pv_anon_numa(line, n, out) : 0;
		if (r == 0)
			r = shared_copy(kind, line, n, out);
		if (r == 0)
			r = viewed(kind, line, n, out);
	}
	if (r == 0)
		r = zv_pv_put(out, line, n);
	if (r < 0 || (nl && zv_pv_put(out, "\n", 1) < 0))
		return -ENOMEM;
	return 0;
}

int zv_pv_record_starts(int kind, const char *text, size_t at)
{
	uint64_t lo, hi;
	if (at == 0)
		return 1;
	if (kind == ZV_PV_CHILDREN) /* a record per child: "PID " */
		return text[at - 1] == ' ';
	if (kind == ZV_PV_STATUS || kind == ZV_PV_ROLLUP || kind == ZV_PV_STAT || kind == ZV_PV_FDINFO ||
	    text[at - 1] != '\n')
		return 0;
	return kind != ZV_PV_SMAPS || header(text + at, kind, &lo, &hi);
}

size_t zv_pv_record_end(int kind, const char *text, size_t len, size_t at)
{
	if (kind == ZV_PV_STATUS || kind == ZV_PV_ROLLUP || kind == ZV_PV_STAT || kind == ZV_PV_FDINFO)
		return len;
	char sep = kind == ZV_PV_CHILDREN ? ' ' : '\n';
	for (size_t i = at;;) {
		while (i < len && text[i] != sep)
			i++;
		if (i >= len)
			return len;
		if (zv_pv_record_starts(kind, text, ++i))
			return i;
	}
}

/* smaps_rollup: the host's totals minus the hidden mappings' (summed from
 * smaps), its range starting at the first mapping shown. */
#define NKEYS 24
struct sums {
	char key[NKEYS][20];
	int64_t kb[NKEYS];        /* taken off the host's total (negative: added) */
	int n;
	uint64_t first;
};

static void sub_kb(struct sums *s, const char *key, int64_t v)
{
	int i;
	for (i = 0; i < s->n && zv_strcmp(s->key[i], key); i++)
		;
	if (i == s->n) {
		if (s->n == NKEYS)
			return;
		zv_strlcpy(s->key[s->n++], key, sizeof s->key[0]);
	}
	s->kb[i] += v;
}

static void add_kb(struct sums *s, const char *line, size_t n, int anon)
{
	const char *colon = zv_strchr(line, ':');
	if (!colon || (size_t)(colon - line) >= sizeof s->key[0] - 5 || colon > line + n)
		return;
	const char *e, *p = colon + 1;
	while (*p == ' ')
		p++;
	long v = zv_parse_dec(p, &e);
	if (e == p || !zv_startswith(e, " kB"))
		return;
	char key[20];
	size_t kl = (size_t)(colon - line);
	memcpy(key, line, kl);
	key[kl] = 0;
	sub_kb(s, key, v);
	if (!zv_strcmp(key, "Pss"))
		sub_kb(s, anon ? "Pss_Anon" : "Pss_File", v);
}

/* A mapping of an image shown as anonymous memory (procview_anon.c): its
 * clean pages count as dirty, its file pages as anonymous. */
static void anon_moves(struct sums *s, const struct zv_pv_anon *a)
{
	uint64_t file_pss = a->rss ? a->pss * (a->rss - a->anon) / a->rss : 0;
	sub_kb(s, "Shared_Clean", (int64_t)a->shared_clean);
	sub_kb(s, "Shared_Dirty", -(int64_t)a->shared_clean);
	sub_kb(s, "Private_Clean", (int64_t)a->private_clean);
	sub_kb(s, "Private_Dirty", -(int64_t)a->private_clean);
	sub_kb(s, "Anonymous", -(int64_t)(a->rss - a->anon));
	sub_kb(s, "Pss_Dirty", -(int64_t)(a->pss - a->pss_dirty));
	sub_kb(s, "Pss_File", (int64_t)file_pss);
	sub_kb(s, "Pss_Anon", -(int64_t)file_pss);
}

static int hidden_sums(struct sums *s)
{
	struct zv_pv_hidden h;
	collect(&h);
	long fd = zv_openat(AT_FDCWD, "/proc/self/smaps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	struct zv_pv_buf b = { 0 };
	int r = zv_pv_read_all((int)fd, &b);
	zv_close((int)fd);
	if (r < 0) {
		if (b.p)
			zv_kunmap(b.p, b.cap);
		return r;
	}
	int skip = 0, anon = 0, image = 0;
	struct zv_pv_anon a = { 0 };
	char buf[128];
	struct zv_pv_lines it = { b.p, b.p ? b.len : 0, 0 };
	size_t k;
	int nl;
	for (const char *line; (line = zv_pv_next_line(&it, &k, &nl));) {
		uint64_t lo, hi;
		if (header(line, ZV_PV_SMAPS, &lo, &hi)) {
			if (image)
				anon_moves(s, &a);
			skip = is_hidden(&h, lo, hi);
			anon = anonymous(line, k) || line[k - 1] == ']';
			image = !skip && zv_pv_anon_header(line, k, buf, sizeof buf) > 0;
			a = (struct zv_pv_anon){ 0 };
			if (!skip && !s->first)
				s->first = lo;
		} else if (skip) {
			add_kb(s, line, k, anon);
		} else if (image) {
			zv_pv_anon_note(&a, line);
		}
	}
	if (image)
		anon_moves(s, &a);
	if (b.p)
		zv_kunmap(b.p, b.cap);
	return 0;
}

int zv_pv_filter_rollup(const char *raw, size_t len, struct zv_pv_buf *out)
{
	static struct sums s;
	memset(&s, 0, sizeof s);
	if (hidden_sums(&s) < 0)
		return zv_pv_put(out, raw, len);
	struct zv_pv_lines it = { raw, len, 0 };
	size_t n;
	int nl;
	for (const char *line; (line = zv_pv_next_line(&it, &n, &nl));) {
		char buf[128];
		const char *dash = zv_strchr(line, '-');
		const char *colon = zv_strchr(line, ':');
		if (line == raw && dash && s.first && dash < line + n) {
			/* the header: lo-hi ... */
			int w = zv_snprintf(buf, sizeof buf, "%08lx", (unsigned long)s.first);
			if (zv_pv_put(out, buf, (size_t)w) < 0 || zv_pv_put(out, dash, n - (size_t)(dash - line)) < 0)
				return -ENOMEM;
		} else if (colon && colon < line + n && n < sizeof buf) {
			size_t kl = (size_t)(colon - line);
			int64_t sub = 0;
			for (int i = 0; i < s.n; i++)
				if (zv_strlen(s.key[i]) == kl && !memcmp(s.key[i], line, kl))
					sub = s.kb[i];
			const char *e, *p = colon + 1;
			while (*p == ' ')
				p++;
			long v = zv_parse_dec(p, &e);
			if (sub && e != p && zv_startswith(e, " kB")) {
				uint64_t nv = v > sub ? (uint64_t)(v - sub) : 0;
				/* the same width: the spaces and digits after ':' */
				size_t width = (size_t)(e - colon - 1);
				int w = zv_snprintf(buf, sizeof buf, "%lu", (unsigned long)nv);
				if (zv_pv_put(out, line, kl + 1) < 0)
					return -ENOMEM;
				for (size_t i = (size_t)w; i < width; i++)
					if (zv_pv_put(out, " ", 1) < 0)
						return -ENOMEM;
				if (zv_pv_put(out, buf, (size_t)w) < 0 || zv_pv_put(out, e, (size_t)(line + n - e)) < 0)
					return -ENOMEM;
			} else if (zv_pv_put(out, line, n) < 0) {
				return -ENOMEM;
			}
		} else if (zv_pv_put(out, line, n) < 0) {
			return -ENOMEM;
		}
		if (nl && zv_pv_put(out, "\n", 1) < 0)
			return -ENOMEM;
	}
	return 0;
}
