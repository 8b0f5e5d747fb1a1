/* The view hooks (sys/viewhook.h) and their defaults: the host's paths
 * are the guest's until a feature says otherwise. */
#include "sys/viewhook.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/fcntl.h>

long (*zv_view_lookup)(const char *path, int nofollow, struct zv_at *at);
void (*zv_view_release)(struct zv_at *at);
long (*zv_view_guest_path)(const char *host, char *out, size_t n);
int (*zv_view_mounts)(int info, const char *raw, size_t len, zv_view_put *put, void *ctx);

long zv_at_lookup(const char *path, int nofollow, struct zv_at *at)
{
	if (zv_view_lookup)
		return zv_view_lookup(path, nofollow, at);
	*at = (struct zv_at){ .dirfd = AT_FDCWD, .name = path, .at_flags = nofollow ? AT_SYMLINK_NOFOLLOW : 0 };
	return 0;
}

void zv_at_release(struct zv_at *at)
{
	if (at->owned && at->dirfd >= 0)
		zv_close(at->dirfd);
	if (at->held && zv_view_release)
		zv_view_release(at);
	at->owned = at->held = 0;
}

void zv_guest_path_of(const char *host, char *out, size_t n)
{
	if (!zv_view_guest_path || zv_view_guest_path(host, out, n) < 0)
		zv_strlcpy(out, host, n);
}
