/* The checkpoint image on disk (docs/CHECKPOINT.md): section files with a
 * hash each, the JSON index naming them, the atomic rename that makes DIR
 * whole or absent, and the checks `zvisor restore` makes before using any
 * of it. */
#include "zvisor.h"
#include "cr/image.h"
#include "cr/stream.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/dirents.h"
#include "cr/zstd.h"
#include "cr/resutil.h"
#include <asm/stat.h>
#include <linux/fcntl.h>
#include <stdarg.h>

/* --- the hash: four independent lanes, each taking 16 bytes (u, v) a step
 * as lane = rotl(lane ^ u, 29) * P1 + v: one multiply per 16 bytes, so that
 * it runs at memory speed. Each step is a bijection of the lane and of
 * either word, so damage confined to one word always changes the hash; not
 * cryptographic (it finds damage, not forgery). --- */
#define P1 0x9e3779b185ebca87UL
#define P2 0xc2b2ae3d27d4eb4fUL
#define BLOCK 64

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t lane(uint64_t h, uint64_t u, uint64_t v) { return rotl(h ^ u, 29) * P1 + v; }

void zv_cr_hash_init(struct zv_cr_hasher *h, uint64_t seed)
{
	h->v[0] = seed + P1 + P2;
	h->v[1] = seed + P2;
	h->v[2] = seed;
	h->v[3] = seed - P1;
	h->total = 0;
	h->ntail = 0;
}

static void blocks(struct zv_cr_hasher *h, const uint64_t *w, uint64_t nblocks)
{
	uint64_t a = h->v[0], b = h->v[1], c = h->v[2], d = h->v[3];
	for (uint64_t i = 0; i < nblocks; i++, w += BLOCK / 8) {
		a = lane(a, w[0], w[1]);
		b = lane(b, w[2], w[3]);
		c = lane(c, w[4], w[5]);
		d = lane(d, w[6], w[7]);
	}
	h->v[0] = a, h->v[1] = b, h->v[2] = c, h->v[3] = d;
}

void zv_cr_hash_update(struct zv_cr_hasher *h, const void *p, uint64_t len)
{
	const uint8_t *s = p;
	h->total += len;
	if (h->ntail) {
		uint64_t k = BLOCK - h->ntail < len ? BLOCK - h->ntail : len;
		memcpy(h->tail + h->ntail, s, k);
		h->ntail += k;
		s += k;
		len -= k;
		if (h->ntail < BLOCK)
			return;
		blocks(h, (const uint64_t *)h->tail, 1);
		h->ntail = 0;
	}
	if (len >= BLOCK && !((uintptr_t)s & 7)) {
		blocks(h, (const uint64_t *)s, len / BLOCK);
		s += len & ~(uint64_t)(BLOCK - 1);
		len &= BLOCK - 1;
	}
	while (len >= BLOCK) { /* unaligned: through the tail buffer */
		memcpy(h->tail, s, BLOCK);
		blocks(h, (const uint64_t *)h->tail, 1);
		s += BLOCK;
		len -= BLOCK;
	}
	memcpy(h->tail, s, len);
	h->ntail = len;
}

uint64_t zv_cr_hash_final(const struct zv_cr_hasher *h)
{
	uint64_t r = rotl(h->v[0], 1) + rotl(h->v[1], 7) + rotl(h->v[2], 12) + rotl(h->v[3], 18);
	r = (r ^ h->total) * P1;
	for (unsigned i = 0; i < h->ntail; i++)
		r = rotl(r ^ h->tail[i], 11) * P2;
	r ^= r >> 29;
	r *= P1;
	return r ^ (r >> 32);
}

uint64_t zv_cr_hash(const void *p, uint64_t len, uint64_t seed)
{
	struct zv_cr_hasher h;
	zv_cr_hash_init(&h, seed);
	zv_cr_hash_update(&h, p, len);
	return zv_cr_hash_final(&h);
}

/* --- writing --- */

long zv_cr_refuse(struct zv_cr_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	zv_vsnprintf(o->why, sizeof o->why, fmt, ap);
	va_end(ap);
	return -1;
}

static long any_entry(const char *name, void *arg)
{
	(void)arg;
	return !(name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])));
}

int zv_cr_dir_taken(const char *dir)
{
	if (zv_sys3(__NR_faccessat, AT_FDCWD, dir, 0) != 0)
		return 0;
	long fd = zv_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	long r = zv_dirents_each((int)fd, any_entry, NULL);
	zv_close((int)fd);
	return r != 0;
}

static int name_ok(const char *name)
{
	size_t n = zv_strlen(name);
	if (!n || n >= sizeof((struct zv_cr_section *)0)->name)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return 0;
	return 1;
}

long zv_cr_stream_open(struct zv_cr_out *o, struct zv_cr_stream *s, const char *name)
{
	if (!name_ok(name) || o->nsec >= ZV_CR_MAX_SECTIONS)
		return zv_cr_refuse(o, "bad section name %s", name);
	char file[64];
	zv_snprintf(file, sizeof file, "%s.bin", name);
	long fd = zv_openat(o->dirfd, file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return zv_cr_refuse(o, "cannot create %s: %s", file, zv_strerror((int)-fd));
	s->fd = (int)fd;
	s->o = o;
	s->off = 0;
	s->mode = 0;
	zv_strlcpy(s->name, name, sizeof s->name);
	zv_cr_hash_init(&s->h, 0);
	return 0;
}

long zv_cr_stream_write(struct zv_cr_stream *s, const void *p, uint64_t len)
{
	zv_cr_hash_update(&s->h, p, len);
	const char *c = p;
	while (len) {
		long n = zv_write(s->fd, c, len > (1UL << 30) ? 1UL << 30 : len);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			return zv_cr_refuse(s->o, "writing %s.bin: %s", s->name, zv_strerror(n ? (int)-n : ENOSPC));
		c += n;
		len -= (uint64_t)n;
		s->off += (uint64_t)n;
	}
	return 0;
}

long zv_cr_stream_skip(struct zv_cr_stream *s, uint64_t len)
{
	if (!len)
		return 0;
	long r = zv_sys3(__NR_lseek, s->fd, (long)len, 1 /* SEEK_CUR */);
	if (r < 0)
		return zv_cr_refuse(s->o, "writing %s.bin: %s", s->name, zv_strerror((int)-r));
	s->off += len;
	return 0;
}

long zv_cr_stream_close(struct zv_cr_stream *s)
{
	struct zv_cr_out *o = s->o;
	/* a hole at the end: the file still has the size */
	if (s->h.total != s->off && zv_sys2(__NR_ftruncate, s->fd, (long)s->off) < 0) {
		zv_close(s->fd);
		return zv_cr_refuse(o, "writing %s.bin: cannot set its size", s->name);
	}
	if (s->mode)
		zv_sys2(__NR_fchmod, s->fd, s->mode);
	zv_close(s->fd);
	struct zv_cr_section *sec = &o->sec[o->nsec++];
	zv_strlcpy(sec->name, s->name, sizeof sec->name);
	sec->size = s->off;
	sec->data = s->h.total;
	sec->hash = zv_cr_hash_final(&s->h);
	return 0;
}

long zv_cr_put(struct zv_cr_out *o, const char *name, const void *p, uint64_t len)
{
	struct zv_cr_stream s;
	if (zv_cr_stream_open(o, &s, name) < 0)
		return -1;
	if (zv_cr_stream_write(&s, p, len) < 0) {
		zv_close(s.fd);
		return -1;
	}
	return zv_cr_stream_close(&s);
}

/* The index: small, and written last, so that an image without one is
 * incomplete by construction. */
long zv_cr_write_index(struct zv_cr_out *o, const char *build)
{
	return zv_cr_write_index_as(o, build, "index.json");
}

long zv_cr_write_index_as(struct zv_cr_out *o, const char *build, const char *file)
{
	size_t cap = 256 + (size_t)o->nsec * 128;
	char *buf = zv_kmap(cap, 4096, -1);
	if (zv_is_err((long)buf))
		return zv_cr_refuse(o, "out of memory");
	size_t n = (size_t)zv_snprintf(buf, cap,
		"{\n  \"format\": \"zvisor-checkpoint\",\n  \"version\": %d,\n  \"zvisor\": \"%s\",\n"
		"  \"build\": \"%s\",\n  \"sections\": [\n", ZV_CR_VERSION, ZV_VERSION, build);
	for (unsigned i = 0; i < o->nsec; i++) {
		char data[48] = "";
		if (o->sec[i].data != o->sec[i].size)
			zv_snprintf(data, sizeof data, ", \"data\": %lu", (unsigned long)o->sec[i].data);
		n += (size_t)zv_snprintf(buf + n, cap - n, "    {\"name\": \"%s\", \"size\": %lu%s, \"hash\": \"%016lx\"%s}%s\n",
					 o->sec[i].name, (unsigned long)o->sec[i].size, data, (unsigned long)o->sec[i].hash,
					 o->sec[i].zstd ? ", \"stored\": \"zstd\"" : "", i + 1 < o->nsec ? "," : "");
	}
	n += (size_t)zv_snprintf(buf + n, cap - n, "  ]\n}\n");
	long fd = zv_openat(o->dirfd, file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	long r = fd < 0 ? fd : zv_write((int)fd, buf, n);
	if (fd >= 0)
		zv_close((int)fd);
	zv_kunmap(buf, cap);
	if (r != (long)n)
		return zv_cr_refuse(o, "writing index.json: %s", zv_strerror(r < 0 ? (int)-r : ENOSPC));
	return 0;
}

/* --- reading --- */


/* The value after "key": in json, as a string (copied to out) or a number. */
static const char *json_find(const char *json, const char *key)
{
	size_t k = zv_strlen(key);
	for (const char *p = json; (p = zv_strchr(p, '"')); p++)
		if (!zv_strncmp(p + 1, key, k) && p[k + 1] == '"') {
			p += k + 2;
			while (*p == ' ' || *p == ':')
				p++;
			return p;
		}
	return NULL;
}

static int json_string(const char *v, char *out, size_t n)
{
	if (!v || *v != '"')
		return -1;
	size_t i = 0;
	for (v++; *v && *v != '"'; v++)
		if (i + 1 < n)
			out[i++] = *v;
	out[i] = 0;
	return *v == '"' ? 0 : -1;
}

long zv_cr_read_index(struct zv_cr_in *in, const char *build)
{
	long fd = zv_openat(in->dirfd, "index.json", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return zv_cr_in_refuse(in, "index.json: %s", zv_strerror((int)-fd));
	size_t cap = 256 + (size_t)ZV_CR_MAX_SECTIONS * 128;
	char *buf = zv_cr_alloc(in, cap);
	long n = buf ? zv_read((int)fd, buf, cap - 1) : -ENOMEM;
	zv_close((int)fd);
	if (n < 0)
		return zv_cr_in_refuse(in, "index.json: %s", zv_strerror((int)-n));
	buf[n] = 0;
	char s[128];
	const char *v;
	if (json_string(json_find(buf, "format"), s, sizeof s) < 0 || zv_strcmp(s, "zvisor-checkpoint"))
		return zv_cr_in_refuse(in, "not a zvisor checkpoint (index.json has no format%s)", "");
	long version = (v = json_find(buf, "version")) ? zv_parse_dec(v, &v) : -1;
	if (version < ZV_CR_VERSION_MIN || version > ZV_CR_VERSION)
		return zv_cr_in_refuse(in, "unsupported image version %ld (this zvisor reads versions %d to %d)", version,
				       ZV_CR_VERSION_MIN, ZV_CR_VERSION);
	in->version = (int)version;
	if (json_string(json_find(buf, "build"), s, sizeof s) < 0)
		return zv_cr_in_refuse(in, "index.json: no build%s", "");
	if (zv_strcmp(s, build))
		return zv_cr_in_refuse(in, "the image was written by another zvisor build (%s)", s);
	const char *p = json_find(buf, "sections");
	in->nsec = 0;
	while (p && (p = zv_strchr(p, '{'))) {
		if (in->nsec >= ZV_CR_MAX_SECTIONS)
			return zv_cr_in_refuse(in, "index.json: too many sections%s", "");
		struct zv_cr_section *sec = &in->sec[in->nsec];
		const char *end = zv_strchr(p, '}');
		const char *nv = json_find(p, "name"), *sv = json_find(p, "size"), *hv = json_find(p, "hash");
		if (!end || !nv || !sv || !hv || nv > end || sv > end || hv > end ||
		    json_string(nv, sec->name, sizeof sec->name) < 0 || json_string(hv, s, sizeof s) < 0)
			return zv_cr_in_refuse(in, "index.json: a damaged section entry%s", "");
		const char *e, *zv = json_find(p, "stored"), *dv = json_find(p, "data");
		char how[16];
		sec->zstd = zv && zv < end && json_string(zv, how, sizeof how) == 0 && !zv_strcmp(how, "zstd");
		if (zv && zv < end && !sec->zstd)
			return zv_cr_in_refuse(in, "index.json: %s is stored in an unknown way", sec->name);
		sec->size = (uint64_t)zv_parse_dec(sv, &e);
		sec->data = dv && dv < end ? (uint64_t)zv_parse_dec(dv, &e) : sec->size;
		if (sec->data > sec->size)
			return zv_cr_in_refuse(in, "index.json: a damaged data size for %s", sec->name);
		sec->hash = zv_parse_hex(s, &e);
		if (*e)
			return zv_cr_in_refuse(in, "index.json: a damaged hash for %s", sec->name);
		in->nsec++;
		p = end + 1;
	}
	if (!in->nsec)
		return zv_cr_in_refuse(in, "index.json: no sections%s", "");
	return 0;
}

const struct zv_cr_section *zv_cr_section(struct zv_cr_in *in, const char *name)
{
	for (unsigned i = 0; i < in->nsec; i++)
		if (!zv_strcmp(in->sec[i].name, name))
			return &in->sec[i];
	return NULL;
}

void *zv_cr_alloc(struct zv_cr_in *in, uint64_t len)
{
	len = (len + 4095) & ~4095UL;
	if (in->arena) {
		if (in->arena_used + len > in->arena_len)
			return NULL;
		void *p = (char *)in->arena + in->arena_used;
		in->arena_used += len;
		return p;
	}
	void *p = zv_kmap(len ? len : 4096, 4096, -1);
	return zv_is_err((long)p) ? NULL : p;
}

long zv_cr_open_section(struct zv_cr_in *in, const char *name, const struct zv_cr_section **secp)
{
	const struct zv_cr_section *sec = zv_cr_section(in, name);
	*secp = sec;
	if (!sec)
		return -ENOENT;
	char file[64];
	zv_snprintf(file, sizeof file, sec->zstd ? "%s.bin.zst" : "%s.bin", name);
	if (sec->zstd) { /* decompressed into a pipe (cr/zstd.c); its end and the hash tell damage */
		char path[128];
		zv_snprintf(path, sizeof path, "/proc/%d/fd/%d/%s", (int)zv_getpid(), in->dirfd, file); /* zstd is another process */
		if (zv_sys3(__NR_faccessat, -100, path, 4 /* R_OK */) < 0)
			return zv_cr_in_refuse(in, "%s: missing", file), -EIO;
		long fd = zv_cr_zstd_reader(path, &in->zstd_pid);
		if (fd < 0)
			return zv_cr_in_refuse(in, "%s: cannot run zstd to read it", file), -EIO;
		return fd;
	}
	long fd = zv_openat(in->dirfd, file, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return zv_cr_in_refuse(in, "%s: missing", file), -EIO;
	struct stat st; /* the whole of it: fstat writes 144 bytes */
	if (zv_sys2(__NR_fstat, fd, &st) < 0 || (uint64_t)st.st_size != sec->size) {
		zv_close((int)fd);
		return zv_cr_in_refuse(in, "%s: wrong size (damaged image)", file), -EIO;
	}
	return fd;
}

/* Reads len bytes at the file's position into p, hashing them. */
long zv_cr_read_into(struct zv_cr_in *in, int fd, void *p, uint64_t len, struct zv_cr_hasher *h, const char *file)
{
	char *c = p;
	uint64_t left = len;
	while (left) {
		long n = zv_read(fd, c, left > (1UL << 30) ? 1UL << 30 : left);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			return zv_cr_in_refuse(in, "%s: short (damaged image)", file);
		c += n;
		left -= (uint64_t)n;
	}
	zv_cr_hash_update(h, p, len);
	return 0;
}

long zv_cr_check_hash(struct zv_cr_in *in, const struct zv_cr_section *sec, const struct zv_cr_hasher *h)
{
	if (sec->zstd && in->zstd_pid > 0) {
		long st = zv_cr_zstd_wait(in->zstd_pid);
		in->zstd_pid = 0;
		if (st != 0)
			return zv_cr_in_refuse(in, "%s.bin.zst: zstd could not read it (damaged image)", sec->name);
	}
	if (h->total != sec->data || zv_cr_hash_final(h) != sec->hash)
		return zv_cr_in_refuse(in, "%s.bin: hash mismatch (damaged image)", sec->name);
	return 0;
}

const void *zv_cr_get(struct zv_cr_in *in, const char *name, uint64_t *len)
{
	const struct zv_cr_section *sec;
	*len = 0;
	long fd = zv_cr_open_section(in, name, &sec);
	if (fd == -ENOENT)
		return NULL;
	if (fd < 0)
		return (void *)-1;
	void *p = zv_cr_alloc(in, sec->size + 1);
	struct zv_cr_hasher h;
	zv_cr_hash_init(&h, 0);
	char file[64];
	zv_snprintf(file, sizeof file, sec->zstd ? "%s.bin.zst" : "%s.bin", name);
	long r = p ? zv_cr_read_into(in, (int)fd, p, sec->size, &h, file) : zv_cr_in_refuse(in, "%s: out of memory", name);
	zv_close((int)fd);
	if (r < 0 || zv_cr_check_hash(in, sec, &h) < 0)
		return (void *)-1;
	*len = sec->size;
	return p;
}

void zv_cr_release(const void *p, uint64_t len)
{
	(void)p, (void)len; /* arena or kernel memory of a process that ends or resumes soon */
}
