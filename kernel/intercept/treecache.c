/* What a process tree already knows of its files' code, without a cache
 * directory (--no-cache, or none the user may use: intercept/cachedir.c):
 * each entry as the cache's file holds it (intercept/sitecache.c), kept in
 * memory. A fork child has its parent's, and so has an image exec'd in
 * this process (the memory stays); one the host exec'd gets them in a
 * memfd named in the exec state (the 'w' field's t<fd>), which it reads
 * and closes before it maps anything; so only the first image of a tree
 * decodes libc. Entries
 * are trusted no more than a cache file: the same key (the file's
 * identity) and the same checks of every window against the code. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/sitecache.h"
#include <asm/stat.h>

#define MAX_TREE (4UL << 20) /* bytes of entries kept at most */
#define MAX_ENTRY (1UL << 20)

/* Entries, each its length (8 bytes) then its bytes, whose first keylen
 * bytes are its key; a dropped entry keeps its length and a zero key. */
static uint8_t *mem;
static uint64_t used;
static volatile int lock;

static int reserve(void)
{
	if (mem)
		return 1;
	uint8_t *m = zv_kmap(MAX_TREE, 4096, -1); /* touched as it fills */
	if (zv_is_err((long)m))
		return 0;
	mem = m;
	return 1;
}

const void *zv_treecache_find(const void *key, size_t keylen, size_t *len)
{
	const void *r = NULL;
	zv_lock(&lock);
	for (uint64_t at = 0; mem && at + 8 <= used && !r;) {
		uint64_t n;
		memcpy(&n, mem + at, 8);
		if (n >= keylen && !memcmp(mem + at + 8, key, keylen)) {
			r = mem + at + 8;
			*len = n;
		}
		at += 8 + ((n + 7) & ~7UL);
	}
	zv_unlock(&lock);
	return r;
}

static void drop_locked(const void *key, size_t keylen)
{
	for (uint64_t at = 0; at + 8 <= used;) {
		uint64_t n;
		memcpy(&n, mem + at, 8);
		if (n >= keylen && !memcmp(mem + at + 8, key, keylen))
			memset(mem + at + 8, 0, keylen);
		at += 8 + ((n + 7) & ~7UL);
	}
}

void zv_treecache_drop(const void *key, size_t keylen)
{
	zv_lock(&lock);
	if (mem)
		drop_locked(key, keylen);
	zv_unlock(&lock);
}

void zv_treecache_add(const void *entry, size_t len, size_t keylen)
{
	if (len < keylen || len > MAX_ENTRY || !reserve())
		return;
	zv_lock(&lock);
	drop_locked(entry, keylen); /* one entry per key: the older goes */
	uint64_t need = 8 + ((len + 7) & ~7UL);
	if (used + need <= MAX_TREE) {
		uint64_t n = len;
		memcpy(mem + used, &n, 8);
		memcpy(mem + used + 8, entry, len);
		used += need;
	}
	zv_unlock(&lock);
}

int zv_treecache_empty(void) { return !used; }

int zv_treecache_save(void)
{
	if (!used)
		return -1;
	long fd = zv_sys2(__NR_memfd_create, "zvisor-sites", 0);
	if (fd < 0)
		return -1;
	if (zv_sys4(__NR_pwrite64, fd, mem, used, 0) != (long)used) {
		zv_close((int)fd);
		return -1;
	}
	return (int)fd;
}

void zv_treecache_load(int fd)
{
	struct stat st;
	if (zv_sys2(__NR_fstat, fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= MAX_TREE && reserve() &&
	    zv_sys4(__NR_pread64, fd, mem, st.st_size, 0) == st.st_size) {
		/* the entries' lengths checked once: a bad one ends the list */
		uint64_t at = 0;
		while (at + 8 <= (uint64_t)st.st_size) {
			uint64_t n;
			memcpy(&n, mem + at, 8);
			if (n > MAX_ENTRY || at + 8 + ((n + 7) & ~7UL) > (uint64_t)st.st_size)
				break;
			at += 8 + ((n + 7) & ~7UL);
		}
		used = at;
	}
	zv_close(fd);
}
