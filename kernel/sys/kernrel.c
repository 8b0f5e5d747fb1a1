/* --kernel-release=STRING (zvisor proot's -k, as PRoot's): uname(2) gives
 * STRING as the release, for programs that refuse a kernel they think too
 * old or too new. Nothing else changes (PRoot's -k changes uname alone
 * too): /proc/sys/kernel/osrelease and /proc/version stay the host's, and
 * the calls are the host kernel's. Carried across execve as exec state
 * field 'L'. */
#include "zvisor.h"
#include "sys/calls.h"
#include "sys/entry.h"
#include "sys/execstate.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/utsname.h>
#include <stddef.h>
#include <asm-generic/errno.h>

char zv_kernel_release[__NEW_UTS_LEN + 1]; /* empty: the host's */

int zv_kernel_release_set(const char *s)
{
	size_t n = zv_strlen(s);
	if (!n || n > __NEW_UTS_LEN || zv_strchr(s, ','))
		return -1;
	memcpy(zv_kernel_release, s, n + 1);
	return 0;
}

long zv_sys_uname(struct zv_call *c)
{
	long r = zv_host_call(c->t, c->nr, c->a[0], 0, 0, 0, 0, 0);
	if (r < 0 || !zv_kernel_release[0])
		return r;
	char release[sizeof zv_kernel_release] = { 0 };
	memcpy(release, zv_kernel_release, zv_strlen(zv_kernel_release));
	uint64_t to = (uint64_t)c->a[0] + offsetof(struct new_utsname, release);
	if (zv_guest_copy((void *)to, release, sizeof release, to) < 0)
		return -EFAULT;
	return r;
}

static int encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	return zv_kernel_release[0] ? zv_snprintf(buf, n, "%s", zv_kernel_release) : -1;
}

static const char *decode(const char *s, struct zv_exec_carry *x)
{
	size_t n = 0;
	while (s[n] && s[n] != ',' && n < __NEW_UTS_LEN)
		n++;
	memcpy(zv_kernel_release, s, n);
	zv_kernel_release[n] = 0;
	return s + n;
}

ZV_EXEC_FIELD(kernrel, 335, 'L', encode, decode);
