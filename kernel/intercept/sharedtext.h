/* Rewritten code shared across processes through a cached copy
 * (intercept/sharedtext.c). */
#ifndef ZV_INTERCEPT_SHAREDTEXT_H
#define ZV_INTERCEPT_SHAREDTEXT_H
#include <stdint.h>
#include <stddef.h>

struct zv_stub_batch;
#define ZV_SHARED_WINDOWS 1 /* b holds the copy's windows, nothing mapped: write them privately */
#define ZV_SHARED_MAPPED 2  /* the copy is mapped over [addr, addr + len), its stubs made */
/* Maps the cached copy of fd's [off, off + len), rewritten, over the
 * guest's mapping at addr (protection prot, mmap flags flags) with its
 * stubs; fills b's pairs and verdict. 0: no copy (a miss, or not one that
 * may be shared); a damaged copy is removed with one line. */
int zv_sharedtext_map(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags,
		      struct zv_stub_batch *b);
/* Keeps the mapping at addr, whose windows b's commit just wrote, as the
 * copy for the next process (b is spent). */
void zv_sharedtext_store(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, int flags,
			 struct zv_stub_batch *b);
/* Removes the copy of that range (its windows did not match the file). */
void zv_sharedtext_forget(int fd, uint64_t off, uint64_t len);
void zv_sharedtext_exec(void); /* an exec made in this process: no copies mapped */
/* The original of a mapping of a copy this image mapped, by the copy's
 * device numbers and inode as /proc/self/maps shows them: its path, and
 * its own numbers in *major, *minor, *ino; NULL if it is no copy. */
const char *zv_sharedtext_original(uint64_t cmajor, uint64_t cminor, uint64_t cino, uint64_t *major, uint64_t *minor,
				   uint64_t *ino);
/* Whether path still names the original of a copy (its major, minor and
 * inode in id, or just a file when id is NULL): the host shows a removed or
 * replaced file's mapping with " (deleted)". */
int zv_sharedtext_still_there(const char *path, const uint64_t *id);
/* The same by the copy's path as numa_maps shows it (n bytes). */
const char *zv_sharedtext_named(const char *name, size_t n);
#endif
