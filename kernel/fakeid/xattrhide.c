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

#define NR_getxattrat 464
#define NR_listxattrat 465

static int is_ours(uint64_t name)
{
	char buf[NAME_LEN];
	return zv_fid_arg_copy(buf, name, NAME_LEN) == 0 && !memcmp(buf, ZV_FID_XATTR, NAME_LEN);
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

/* listxattr and its kin: the list (argument li) and its size (li + 1). */
static long list(struct zv_call *call, int li)
{
	long *a = call->a;
	char *buf = zv_kmap(LIST_MAX, 4096, -1);
	if (zv_is_err((long)buf))
		return zv_next(call);
	long b[6];
	memcpy(b, a, sizeof b);
	b[li] = (long)buf;
	b[li + 1] = LIST_MAX;
	long n = zv_next_with(call, b), size = a[li + 1];
	uint64_t out = (uint64_t)a[li];
	if (n >= 0) {
		n = strip(buf, n);
		if (size && n > size)
			n = -ERANGE;
		else if (size && n && zv_guest_copy((void *)out, buf, (size_t)n, out) < 0)
			n = -EFAULT;
	} else if (n == -E2BIG && size == 0) {
		n = zv_next(call);
	}
	zv_kunmap(buf, LIST_MAX);
	return n;
}

long zv_fid_xattr_call(struct zv_call *call)
{
	switch (call->nr) {
	case __NR_listxattr: case __NR_llistxattr: case __NR_flistxattr:
		return list(call, 1);
	case NR_listxattrat:
		return list(call, 3);
	default: {
		long r = zv_next(call);
		uint64_t name = (uint64_t)call->a[call->nr == NR_getxattrat ? 3 : 1];
		return (r >= 0 || r == -ERANGE) && is_ours(name) ? -ENODATA : r;
	}
	}
}
