/* A NULL path or write buffer under the zpoline platform. Page 0 is
 * zpoline's sled (intercept/trampoline.c), executable and, on CPUs without protection
 * keys, readable: the host reads a path at NULL as the sled's bytes, which
 * hold no NUL in the page's 4096, and says ENAMETOOLONG where it says
 * EFAULT natively (LTP utimes01: utimes(NULL, tv)). A path at any other
 * address of page 0 reaches page 1 before a NUL and faults as natively.
 *
 * The layer sees the calls with path arguments (the fsview column's, the
 * trace signature's 's') while zpoline is the platform, and turns the
 * host's ENAMETOOLONG into EFAULT when one of those arguments is NULL and
 * every path argument before it is not (the host reads them in order, so
 * the NULL one is the one it read: an earlier path too long of its own is
 * not told apart). A NULL the call takes without reading (utimensat's,
 * statx's with AT_EMPTY_PATH) never gives ENAMETOOLONG: untouched.
 * The same for an extended attribute's name (argument 1 of the *xattr
 * calls but listxattr's), read before the path is looked up: ERANGE (a
 * name longer than 255) from the sled, EFAULT natively. And write and
 * pwrite64 from page 0 (write_from_page0). The fast path's direct host
 * calls run the same two functions inline (intercept/fastpath.c). */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/sysent.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "intercept/intercept.h"
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <asm/unistd_64.h>

/* The path arguments of call nr, a bit each. */
static unsigned path_args(long nr)
{
	if (nr < 0 || nr >= 512)
		return 0;
	const struct zv_sysent *row = zv_row(nr);
	unsigned m = row->path;
	if (row->fsv.kind == ZV_FSV_PATH)
		for (int k = 0; k < 2; k++)
			if (row->fsv.p[k].path)
				m |= 1u << (row->fsv.p[k].path - 1);
	const char *sig = row->trace.sig;
	for (int i = 0; sig && sig[i] && i < 6; i++)
		if (sig[i] == 's')
			m |= 1u << i;
	return m;
}

/* set/get/removexattr and their l and f forms: argument 1 is a name. */
static int xattr_name(long nr)
{
	if (nr < 0 || nr >= 512 || !zv_row(nr)->name)
		return 0;
	const char *n = zv_row(nr)->name;
	size_t k = zv_strlen(n);
	return k >= 5 && !zv_strcmp(n + k - 5, "xattr") && !(k >= 9 && !zv_strcmp(n + k - 9, "listxattr"));
}

/* write and pwrite64 of a buffer in page 0, which the host reads as the
 * sled's bytes and writes (LTP pwrite02: pwrite(fd, NULL, 1024, 0)
 * succeeded). Natively the copy faults, after the checks that do not read
 * the buffer: a bad or unwritable fd (EBADF) and, for pwrite64, a negative
 * offset (EINVAL) or an fd that cannot seek (ESPIPE), which the host is
 * left to say. Otherwise EFAULT, before the host reads a byte. */
static int write_from_page0(long nr, const long *a)
{
	if ((uint64_t)a[1] >= 4096 || a[2] == 0)
		return 0;
	long fl = zv_sys3(__NR_fcntl, a[0], F_GETFL, 0);
	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_RDONLY)
		return 0;
	if (nr == __NR_pwrite64 && (a[3] < 0 || zv_sys3(__NR_lseek, a[0], 0, 1 /* SEEK_CUR */) == -ESPIPE))
		return 0;
	return 1;
}

/* Input pointers no call takes NULL for as "none": one in page 0 is
 * passed on as a non-canonical address, which the host refuses (EFAULT)
 * where it would read it, after its own earlier checks, as natively
 * (LTP memfd_create02: memfd_create(NULL) said EINVAL, a name too long;
 * msgsnd02: msgsnd(id, NULL, ...) sent the sled; setsockopt01: an
 * option at NULL was set). len: the argument that
 * must be nonzero for the call to read it, or -1. */
static const struct { short nr; signed char arg, len; } subs[] = {
	{ __NR_memfd_create, 0, -1 }, { __NR_msgsnd, 1, -1 },
	{ __NR_sethostname, 0, 1 }, { __NR_setdomainname, 0, 1 },
	{ __NR_writev, 1, 2 }, { __NR_pwritev, 1, 2 }, { __NR_pwritev2, 1, 2 },
	{ __NR_setsockopt, 3, 4 }, { __NR_sendto, 1, 2 }, { __NR_sendmsg, 1, -1 },
	{ __NR_mq_timedsend, 1, 2 },
};
#define NONCANONICAL 0x8000000000000000UL

static int substituted(long nr)
{
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
		if (subs[i].nr == nr)
			return 1;
	return 0;
}

static int sees(long nr)
{
	return path_args(nr) != 0 || xattr_name(nr) || nr == __NR_write || nr == __NR_pwrite64 || substituted(nr);
}
static int active(void) { return zv_proc.platform == ZV_PLAT_ZPOLINE; }
static int inline_host(void) { return 1; }

/* Before the host's call: 1 if it is EFAULT without it; else the
 * arguments a to pass on (a pointer in page 0 made non-canonical). */
int zv_page0_before(long nr, long *a)
{
	if (nr == __NR_write || nr == __NR_pwrite64)
		return write_from_page0(nr, a);
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
		if (subs[i].nr == nr && (uint64_t)a[subs[i].arg] < 4096 && (subs[i].len < 0 || a[subs[i].len]))
			a[subs[i].arg] |= NONCANONICAL;
	return 0;
}

/* After it: its result r as native, for an error r only the sled gives. */
long zv_page0_result(long nr, const long *a, long r)
{
	if (r == -ERANGE && a[1] == 0 && xattr_name(nr))
		return -EFAULT;
	if (r != -ENAMETOOLONG)
		return r;
	unsigned m = path_args(nr);
	for (int i = 0; i < 6; i++)
		if ((m >> i & 1) && a[i] == 0)
			return -EFAULT;
	return r;
}

static long call(struct zv_call *c)
{
	long a[6] = { c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5] };
	if (zv_page0_before(c->nr, a))
		return -EFAULT;
	return zv_page0_result(c->nr, c->a, zv_next_with(c, a));
}

/* The fast path's direct host calls do the same (intercept/fastpath.c):
 * path calls and write stay direct on zpoline. */
ZV_LAYER(page0args, 420) = { .name = "page0args", .sees = sees, .active = active, .call = call, .inline_host = inline_host };
