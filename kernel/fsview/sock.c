/* AF_UNIX addresses: a path in bind, connect, sendto, sendmsg and sendmmsg
 * is resolved in the view; the host gets the socket's host path when it
 * fits sun_path's 108 bytes, "/proc/self/fd/D/NAME" when that fits, else
 * the name relative to the directory, made the working directory for the
 * call. Addresses coming back (getsockname, getpeername, accept, recvfrom,
 * recvmsg, recvmmsg) are named in the guest's terms. Abstract and unnamed
 * addresses are the host's. */
#include "fsview/fsview.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include <linux/fcntl.h>

#define SUN_PATH 108
#define AF_UNIX_ 1

struct sun {
	uint16_t family;
	char path[SUN_PATH];
};

/* The host's address for the guest's (addr, len) into *out (*olen), or 0
 * when the guest's stands; -errno. cwdfd: set to an fd of the working
 * directory to go back to, when the call must run from another one. */
static long host_addr(long nr, uint64_t addr, long len, struct sun *out, long *olen, int *tmpdir)
{
	struct sun g;
	*tmpdir = -1;
	if (!addr || len <= 2 || len > (long)sizeof g)
		return 0; /* unnamed, or the host's EINVAL */
	if (zv_guest_copy(&g, (const void *)addr, (size_t)len, addr) < 0)
		return 0; /* the host's EFAULT */
	if (g.family != AF_UNIX_ || !g.path[0])
		return 0; /* not a path (abstract) */
	char path[SUN_PATH + 1];
	size_t pn = 0;
	while (pn < (size_t)len - 2 && g.path[pn])
		pn++;
	memcpy(path, g.path, pn);
	path[pn] = 0;
	if (!zv_strchr(path, '/') && !fsv_bind_basename(path, pn) && zv_strcmp(path, "..") && zv_strcmp(path, "."))
		return 0; /* a name in the working directory, the host's too */
	struct fsv_res res;
	long r = fsv_resolve(AT_FDCWD, path, nr == __NR_bind ? FSV_CREATE : FSV_FOLLOW, 0, &res);
	if (r == 0 && nr != __NR_bind)
		r = fsv_settle_last(&res, FSV_FOLLOW, 0);
	if (r < 0) {
		fsv_res_done(&res);
		return r;
	}
	out->family = AF_UNIX_;
	char host[FSV_PATH_MAX];
	long hn = -1;
	if (res.dirfd == AT_FDCWD) {
		hn = zv_snprintf(host, sizeof host, "%s", res.name);
	} else {
		char link[40];
		zv_snprintf(link, sizeof link, "/proc/self/fd/%d", res.dirfd);
		long k = zv_sys4(__NR_readlinkat, AT_FDCWD, link, host, sizeof host - 1);
		if (k > 0) {
			host[k] = 0;
			hn = zv_snprintf(host + k, sizeof host - (size_t)k, "%s%s", k == 1 ? "" : "/", res.name) + k;
		}
	}
	if (hn < 0 || hn >= SUN_PATH)
		hn = zv_snprintf(host, sizeof host, "/proc/self/fd/%d/%s", res.dirfd, res.name);
	if (hn >= SUN_PATH) {
		/* the name alone, from its directory made the working one */
		long here = zv_openat(AT_FDCWD, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
		if (here < 0 || zv_sys1(__NR_fchdir, res.dirfd) < 0) {
			if (here >= 0)
				zv_close((int)here);
			fsv_res_done(&res);
			return -ENAMETOOLONG;
		}
		*tmpdir = (int)here;
		hn = zv_snprintf(host, sizeof host, "%s", res.name);
	}
	memcpy(out->path, host, (size_t)hn + 1);
	*olen = 2 + hn + 1;
	fsv_res_done(&res);
	return 1;
}

static void back(int tmpdir)
{
	if (tmpdir >= 0) {
		zv_sys1(__NR_fchdir, tmpdir);
		zv_close(tmpdir);
	}
}

/* bind, connect, sendto; sendmsg and sendmmsg through their headers. */
long fsv_sock_call(struct zv_call *c)
{
	long *a = c->a, nr = c->nr, r;
	struct sun h;
	long hl;
	int tmp;
	if (nr == __NR_bind || nr == __NR_connect) {
		if ((r = host_addr(nr, (uint64_t)a[1], a[2], &h, &hl, &tmp)) <= 0)
			return r < 0 ? r : zv_next(c);
		long b[6] = { a[0], (long)&h, hl };
		r = zv_next_as(c, nr, b);
		back(tmp);
		return r;
	}
	if (nr == __NR_sendto) {
		if ((r = host_addr(nr, (uint64_t)a[4], a[5], &h, &hl, &tmp)) <= 0)
			return r < 0 ? r : zv_next(c);
		long b[6] = { a[0], a[1], a[2], a[3], (long)&h, hl };
		r = zv_next_as(c, nr, b);
		back(tmp);
		return r;
	}
	if (nr == __NR_sendmsg) {
		uint64_t m[7]; /* struct msghdr */
		if (zv_guest_copy(m, (const void *)a[1], sizeof m, (uint64_t)a[1]) < 0)
			return zv_next(c);
		if ((r = host_addr(nr, m[0], (int)m[1], &h, &hl, &tmp)) <= 0)
			return r < 0 ? r : zv_next(c);
		m[0] = (uint64_t)&h;
		m[1] = (uint64_t)hl;
		long b[6] = { a[0], (long)m, a[2] };
		r = zv_next_as(c, nr, b);
		back(tmp);
		return r;
	}
	/* sendmmsg: each header's name, on a copy of the vector; the counts
	 * the host writes go back into the guest's */
	unsigned vlen = (unsigned)a[2];
	if (vlen > 1024)
		vlen = 1024; /* the host's UIO_MAXIOV */
	if (!vlen)
		return zv_next(c);
	size_t size = vlen * (64UL + sizeof(struct sun));
	uint64_t (*v)[8] = zv_kmap(size, 4096, -1);
	if (zv_is_err((long)v))
		return -ENOMEM;
	struct sun *names = (struct sun *)(v + vlen);
	int any = 0;
	if (zv_guest_copy(v, (const void *)a[1], vlen * 64UL, (uint64_t)a[1]) == 0)
		for (unsigned i = 0; i < vlen; i++) {
			long l;
			r = host_addr(nr, v[i][0], (int)v[i][1], &names[i], &l, &tmp);
			back(tmp); /* a name too long for either form stays the guest's */
			if (r > 0) {
				v[i][0] = (uint64_t)&names[i];
				v[i][1] = (uint64_t)l;
				any = 1;
			}
		}
	if (any) {
		long b[6] = { a[0], (long)v, a[2] < 1024 ? a[2] : 1024, a[3] };
		r = zv_next_as(c, nr, b);
		for (long i = 0; i < r; i++)
			zv_guest_copy((char *)a[1] + i * 64 + 56, &v[i][7], 4, (uint64_t)a[1] + i * 64 + 56);
	} else {
		r = zv_next(c);
	}
	zv_kunmap(v, size);
	return r;
}

/* What a returned address's buffer held before the call (the host's
 * longer name may overwrite bytes a guest name leaves alone). */
struct before {
	uint64_t addr;
	uint32_t cap;
	struct sun s;
};

static void keep(struct before *b, uint64_t addr, uint32_t cap)
{
	b->addr = addr;
	b->cap = cap > sizeof b->s ? sizeof b->s : cap;
	if (!addr || zv_guest_copy(&b->s, (const void *)addr, b->cap, addr) < 0)
		b->cap = 0;
}

/* A returned address (b->addr, its length at lenp): named in the guest's
 * terms, the rest of the buffer as it was. */
static void guest_addr(const struct before *b, uint64_t lenp)
{
	uint32_t len;
	struct sun s;
	uint64_t addr = b->addr;
	if (!addr || !b->cap || !lenp || zv_guest_copy(&len, (const void *)lenp, 4, lenp) < 0 || len <= 3)
		return;
	size_t got = len < b->cap ? len : b->cap;
	memset(&s, 0, sizeof s);
	if (zv_guest_copy(&s, (const void *)addr, got, addr) < 0 || s.family != AF_UNIX_ || s.path[0] != '/')
		return;
	if (len > got)
		return; /* cut short: the host's path is not whole */
	char host[SUN_PATH + 1], guest[FSV_PATH_MAX];
	memcpy(host, s.path, SUN_PATH);
	host[SUN_PATH] = 0;
	long n = fsv_guest_path(host, guest, sizeof guest);
	if (n < 0 || n >= SUN_PATH)
		return;
	struct sun out = b->s; /* the bytes past the name stay the guest's */
	out.family = AF_UNIX_; /* the host wrote it; b->s has what was there before */
	memcpy(out.path, guest, (size_t)n + 1);
	uint32_t glen = 2 + (uint32_t)n + 1;
	zv_guest_copy((void *)addr, &out, got > glen ? got : glen < b->cap ? glen : b->cap, addr);
	zv_guest_copy((void *)lenp, &glen, 4, lenp);
}

static uint32_t cap_at(uint64_t lenp)
{
	uint32_t cap = 0;
	if (lenp)
		zv_guest_copy(&cap, (const void *)lenp, 4, lenp);
	return cap;
}

long fsv_sockout_call(struct zv_call *c)
{
	long *a = c->a, nr = c->nr, r;
	struct before b;
	switch (nr) {
	case __NR_getsockname: case __NR_getpeername: case __NR_accept: case __NR_accept4:
		keep(&b, (uint64_t)a[1], cap_at((uint64_t)a[2]));
		if ((r = zv_next(c)) >= 0)
			guest_addr(&b, (uint64_t)a[2]);
		return r;
	case __NR_recvfrom:
		keep(&b, (uint64_t)a[4], cap_at((uint64_t)a[5]));
		if ((r = zv_next(c)) >= 0)
			guest_addr(&b, (uint64_t)a[5]);
		return r;
	case __NR_recvmsg: {
		uint64_t m[2];
		if (zv_guest_copy(m, (const void *)a[1], sizeof m, (uint64_t)a[1]) < 0)
			return zv_next(c);
		keep(&b, m[0], (uint32_t)m[1]);
		if ((r = zv_next(c)) >= 0)
			guest_addr(&b, (uint64_t)a[1] + 8);
		return r;
	}
	default: { /* recvmmsg: each header's name */
		unsigned vlen = (unsigned)a[2] > 64 ? 64 : (unsigned)a[2];
		struct before bs[64];
		for (unsigned i = 0; i < vlen; i++) {
			uint64_t m[2] = { 0, 0 }, at = (uint64_t)a[1] + i * 64;
			zv_guest_copy(m, (const void *)at, sizeof m, at);
			keep(&bs[i], m[0], (uint32_t)m[1]);
		}
		r = zv_next(c);
		for (long i = 0; i < r && i < (long)vlen; i++)
			guest_addr(&bs[i], (uint64_t)a[1] + i * 64 + 8);
		return r;
	}
	}
}
