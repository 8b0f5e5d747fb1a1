/* The record's attribute is the kernel's, as an inode's owner is: the
 * program does not see it (getxattr says ENODATA, listxattr leaves it
 * out), so that tools that copy attributes (cp -a, tar --xattrs, rsync
 * -X) copy what the program set, and ownership as the program chowns it. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/kmem.h"

#define NAME_LEN (sizeof ZV_FID_XATTR) /* with its NUL */
#define LIST_MAX 65536                 /* XATTR_LIST_MAX */

static int is_ours(uint64_t name)
{
	char buf[NAME_LEN];
	return zv_guest_copy(buf, (const void *)name, NAME_LEN, name) == 0 && !memcmp(buf, ZV_FID_XATTR, NAME_LEN);
}

/* The list of names at buf (n bytes) without ours; its new length. */
static long strip(char *buf, long n)
{
	for (long at = 0; at < n;) {
		long l = (long)zv_strlen(buf + at) + 1;
		if (l == (long)NAME_LEN && !memcmp(buf + at, ZV_FID_XATTR, NAME_LEN)) {
			memmove(buf + at, buf + at + l, (size_t)(n - at - l));
			return n - l;
		}
		at += l;
	}
	return n;
}

static long list(struct zv_call *call)
{
	long *a = call->a;
	char *buf = zv_kmap(LIST_MAX, 4096, -1);
	if (zv_is_err((long)buf))
		return zv_next(call);
	long b[6] = { a[0], (long)buf, LIST_MAX, a[3], a[4], a[5] };
	long n = zv_next_with(call, b);
	if (n >= 0) {
		n = strip(buf, n);
		if (a[2] && n > a[2])
			n = -ERANGE;
		else if (a[2] && n && zv_guest_copy((void *)a[1], buf, (size_t)n, (uint64_t)a[1]) < 0)
			n = -EFAULT;
	} else if (n == -E2BIG && a[2] == 0) {
		n = zv_next(call);
	}
	zv_kunmap(buf, LIST_MAX);
	return n;
}

long zv_fid_xattr_call(struct zv_call *call)
{
	switch (call->nr) {
	case __NR_listxattr: case __NR_llistxattr: case __NR_flistxattr:
		return list(call);
	default: {
		long r = zv_next(call);
		return (r >= 0 || r == -ERANGE) && is_ours((uint64_t)call->a[1]) ? -ENODATA : r;
	}
	}
}
