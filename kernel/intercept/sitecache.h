/* The stubs platform's windows of a file, cached across execs
 * (intercept/sitecache.c). */
#ifndef ZV_INTERCEPT_SITECACHE_H
#define ZV_INTERCEPT_SITECACHE_H
#include <stdint.h>
#include <stddef.h>

struct zv_stub_batch;
/* Finds the cache directory in the guest's environment (once per image;
 * a place refused is said on warn, unless it is -1). */
void zv_sitecache_init(char **envp, int warn);
/* The directory stays the first image's across exec (exec-state field C):
 * a guest with a root of its own names its own HOME. */
void zv_sitecache_keep_dir(void);
/* Fills b with the cached windows of fd's bytes [off, off + len), mapped at
 * addr with protection prot; 1 if there was a valid entry. Reads no byte
 * of the mapping: zv_sitecache_check does, once the pages it writes are
 * written (a read first would cost a second fault on each). */
int zv_sitecache_lookup(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, struct zv_stub_batch *b);
/* Whether the mapping still holds b's windows (a syscall at the end of
 * each) and pairs, and copies each window's moved bytes into b; if not,
 * the entry is dropped with one line and b emptied. */
int zv_sitecache_check(int fd, uint64_t off, uint64_t len, struct zv_stub_batch *b);
/* Keeps b's windows (found in that mapping) for the next time. */
void zv_sitecache_store(int fd, uint64_t addr, uint64_t len, uint64_t off, struct zv_stub_batch *b);
/* The same for code that is no file's (the host's vDSO), keyed by its size
 * and the hash of its bytes before any window is made (zv_sitecache_hash;
 * 0 when there is no cache): lookup_bytes also checks the bytes (a
 * mismatch drops the entry) and copies the moved ones into b. */
uint64_t zv_sitecache_hash(const uint8_t *base, uint64_t size);
int zv_sitecache_lookup_bytes(uint64_t hash, const uint8_t *base, uint64_t size, struct zv_stub_batch *b);
void zv_sitecache_store_bytes(uint64_t hash, const uint8_t *base, uint64_t size, const struct zv_stub_batch *b);

/* What intercept/sharedtext.c shares with the windows' entries: the cache
 * directory ("" when off), its bound in bytes (ZVISOR_CACHE_MAX, MiB), an
 * entry's key (fd's identity, fstat'ed, and the range) and path (by the
 * key's hash, with extension ext), the one line and unlink of a damaged
 * entry, and the creation of a temporary file (making the directory). */
#define ZV_CACHE_DEFAULT_CAP (256UL << 20)
struct zv_cache_key {
	uint64_t magic, dev, ino, size, mtime, mtime_ns, ctime, ctime_ns, off, len;
};
/* intercept/cachedir.c: the directory (chosen at its first use in each
 * image), made if it is not there (0 if it cannot be). */
const char *zv_sitecache_dir(void);
int zv_sitecache_make_dir(void);
long zv_sitecache_euid(void); /* the user the cache is kept for */
/* none: no cache (--no-cache); warn: the fd a refused place is said on, or
 * -1 (only zvisor run's own image says it: an exec'd image's stderr is the
 * guest's) */
void zv_cachedir_init(const char *xdg_cache_home, const char *home, const char *xdg_runtime_dir, int none, int warn);
uint64_t zv_sitecache_cap(void);
/* fd's identity from b's (one fstat per mapping, kept in b; b may be NULL) */
int zv_sitecache_key(int fd, struct zv_stub_batch *b, uint64_t magic, uint64_t off, uint64_t len,
		     struct zv_cache_key *k);
void zv_sitecache_path(const struct zv_cache_key *k, const char *ext, char *out, size_t n);
void zv_sitecache_drop(const char *path, const char *why); /* if it is still there */
/* A cache file's mark: an mtime derived from its key, device and inode,
 * set once it is written (mark), which no write since and no copy of it
 * keeps (marked: fstat's st). */
struct stat;
void zv_sitecache_mark(long fd, const struct zv_cache_key *k);
int zv_sitecache_marked(const struct stat *st, const struct zv_cache_key *k);
long zv_sitecache_create(const char *tmp);
/* intercept/treecache.c: what the process tree knows without a cache
 * directory, in memory: an entry (its first keylen bytes are its key), one
 * per key; save: a memfd of them all for an execve (-1: none), load: read
 * and close it in the new image. */
const void *zv_treecache_find(const void *key, size_t keylen, size_t *len);
void zv_treecache_add(const void *entry, size_t len, size_t keylen);
void zv_treecache_drop(const void *key, size_t keylen);
int zv_treecache_empty(void);
int zv_treecache_save(void);
void zv_treecache_load(int fd);

/* intercept/sitememo.c: windows' entries of code without windows, shared
 * by a process tree's forks (made before this process's first fork; on:
 * there is one); find copies the entry into out (room bytes) and returns
 * its length, 0 if none. */
int zv_sitememo_on(void);
void zv_sitememo_before_fork(void);
size_t zv_sitememo_find(const void *key, size_t keylen, void *out, size_t room);
void zv_sitememo_add(const void *entry, size_t len, size_t keylen);
void zv_sitememo_drop(const void *key, size_t keylen);
/* Fills b from the shared entry of a mapping without windows (no copy is
 * looked for then); 1 if there was one. */
int zv_sitecache_lookup_known(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, struct zv_stub_batch *b);

/* The last of those entries this image used, carried across execve
 * (sys/execstate.c's "w="): lookup_bytes tries it before the file; and,
 * without a cache directory, the memfd of what the tree knows
 * (zv_proc.tree_fd, "t<fd>" at the end). */
struct zv_exec_carry;
int zv_sitecache_encode_vdso(char *buf, size_t n, const struct zv_exec_carry *x);
const char *zv_sitecache_decode_vdso(const char *s, struct zv_exec_carry *x);
#endif
