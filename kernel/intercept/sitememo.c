/* What a process tree learnt of code without windows, shared by its forks
 * (DESIGN "The exec's host calls"): the windows' entries of mappings that
 * have no window (most programs: they call libc), which therefore never
 * have a shared copy. A fork child that execs such a program would
 * otherwise look for the copy (ENOENT), then open, fstat and read the
 * entry, for each exec of the same file.
 *
 * One shared anonymous mapping in the kernel's window, made by a process
 * before its first fork and inherited by its children, kept by an exec made
 * in the process (the window stays), not by the host's execve. Entries
 * are appended, never changed: a writer reserves its slot with one atomic
 * add, writes the slot's length, its bytes and last their sum (never 0);
 * a reader copies an entry out and uses it only if the sum holds, so a
 * slot being written, or a writer killed half way, is skipped (a slot
 * without its length ends the list). A dropped entry's sum is zeroed. An
 * entry is a windows' entry as the cache file holds it (its key, the
 * file's identity, first), trusted no more than one read from a file: the
 * same key, and the hit's check of every pair against the code. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include "intercept/sitecache.h"
#include <linux/mman.h>

#define SIZE (32UL << 10)
#define ROOM (SIZE - 64)

struct slot {
	uint64_t len; /* the entry's bytes (0: not written yet) */
	uint64_t sum; /* of them, written last; 0: not ready, or dropped */
	uint8_t bytes[];
};
struct memo {
	uint64_t used; /* bytes of data reserved, slots' headers included */
	uint8_t pad[56];
	uint8_t data[ROOM];
};
static struct memo *memo;

static uint64_t sum_of(const void *v, size_t n)
{
	const uint8_t *p = v;
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h | 1;
}

int zv_sitememo_on(void) { return __atomic_load_n(&memo, __ATOMIC_ACQUIRE) != NULL; }

void zv_sitememo_before_fork(void)
{
	if (zv_sitememo_on())
		return;
	void *p = zv_kmap(SIZE, 4096, -1);
	if (zv_is_err((long)p))
		return;
	if (zv_mmap(p, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) != p)
		return;
	struct memo *none = NULL;
	if (!__atomic_compare_exchange_n(&memo, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		zv_kunmap(p, SIZE); /* another thread's fork made one first */
}

/* The slot of the entry whose first keylen bytes are key, copied into out
 * (room bytes); its length, or 0. */
static struct slot *find(const void *key, size_t keylen, void *out, size_t room, size_t *n)
{
	struct memo *m = __atomic_load_n(&memo, __ATOMIC_ACQUIRE);
	if (!m)
		return NULL;
	uint64_t used = __atomic_load_n(&m->used, __ATOMIC_ACQUIRE);
	for (uint64_t at = 0; at + sizeof(struct slot) <= used && at + sizeof(struct slot) <= ROOM;) {
		struct slot *s = (struct slot *)(m->data + at);
		uint64_t len = __atomic_load_n(&s->len, __ATOMIC_ACQUIRE);
		if (!len || len > ROOM - at - sizeof *s)
			break;
		uint64_t sum = __atomic_load_n(&s->sum, __ATOMIC_ACQUIRE);
		if (sum && len >= keylen && len <= room && !memcmp(s->bytes, key, keylen)) {
			memcpy(out, s->bytes, len);
			if (sum_of(out, len) == sum) {
				*n = len;
				return s;
			}
		}
		at += sizeof *s + ((len + 7) & ~7UL);
	}
	return NULL;
}

size_t zv_sitememo_find(const void *key, size_t keylen, void *out, size_t room)
{
	size_t n = 0;
	return find(key, keylen, out, room, &n) ? n : 0;
}

void zv_sitememo_add(const void *entry, size_t len, size_t keylen)
{
	struct memo *m = __atomic_load_n(&memo, __ATOMIC_ACQUIRE);
	uint8_t have[512];
	if (!m || !len || len > sizeof have || zv_sitememo_find(entry, keylen, have, sizeof have))
		return;
	uint64_t need = sizeof(struct slot) + ((len + 7) & ~7UL);
	uint64_t at = __atomic_fetch_add(&m->used, need, __ATOMIC_ACQ_REL);
	if (at > ROOM || need > ROOM - at)
		return; /* full: the rest is read from files */
	struct slot *s = (struct slot *)(m->data + at);
	__atomic_store_n(&s->len, len, __ATOMIC_RELEASE);
	memcpy(s->bytes, entry, len);
	__atomic_store_n(&s->sum, sum_of(entry, len), __ATOMIC_RELEASE);
}

void zv_sitememo_drop(const void *key, size_t keylen)
{
	uint8_t have[512];
	size_t n;
	struct slot *s;
	while ((s = find(key, keylen, have, sizeof have, &n)))
		__atomic_store_n(&s->sum, 0, __ATOMIC_RELEASE);
}
