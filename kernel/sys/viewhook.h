/* Hooks that a feature giving the guest a root of its own (kernel/fsview/)
 * sets at start, so that the core, the loader and the other features speak
 * in the guest's paths without naming it. Unset (NULL), the host's paths
 * are the guest's. Defined in sys/fs.c. */
#ifndef ZV_SYS_VIEWHOOK_H
#define ZV_SYS_VIEWHOOK_H
#include <stddef.h>

/* A guest path resolved for the host: the host's *at calls act on (dirfd,
 * name) with the flags in at_flags (AT_SYMLINK_NOFOLLOW where name is a
 * last component the view has resolved: no symlink). */
struct zv_at {
	int dirfd;          /* AT_FDCWD: the host's working directory */
	const char *name;
	int at_flags;
	int owned;          /* dirfd is the view's: zv_at_release closes it */
	int held;           /* dirfd is kept open for the view until zv_at_release */
	char buf[256];      /* room for name */
};

/* Resolves the guest's path for an exec (the loader's opens of the program,
 * its #! interpreters and PT_INTERP, and execve's check): every symlink
 * followed, the last too unless nofollow. 0 or -errno as the host's lookup
 * would give it (ENOENT, ENOTDIR, ELOOP, EACCES, ENAMETOOLONG). */
extern long (*zv_view_lookup)(const char *path, int nofollow, struct zv_at *at);
/* Lets go of a lookup's held dirfd (zv_at_release calls it). */
extern void (*zv_view_release)(struct zv_at *at);
/* The guest's name for a host path (the target of a /proc link, a mapped
 * file, a socket's address): its length, written to out with a NUL, or -1
 * where the guest sees the host path itself. */
extern long (*zv_view_guest_path)(const char *host, char *out, size_t n);

/* /proc/self/mountinfo (info) or mounts as the guest sees them, from the
 * host's text raw (len bytes), given piece by piece to put(ctx, s, n)
 * (which returns 0 or -ENOMEM); 0 or -ENOMEM. Set, procview serves those
 * files through it. */
typedef int zv_view_put(void *ctx, const char *s, size_t n);
extern int (*zv_view_mounts)(int info, const char *raw, size_t len, zv_view_put *put, void *ctx);

/* The lookup with or without the view. */
long zv_at_lookup(const char *path, int nofollow, struct zv_at *at);
void zv_at_release(struct zv_at *at);
/* host as the guest names it, into out (n bytes): the view's name, or host. */
void zv_guest_path_of(const char *host, char *out, size_t n);
#endif
