/* The sender's uid in the siginfos the host writes into the guest's
 * memory: waitid's (a child's), rt_sigtimedwait's and a signalfd's
 * records (ssi_uid) name the host's user where natively the sender's (the
 * child's) real uid is, as the guest knows it (zv_fid_sender_uid). A
 * handler's siginfo is sys/signal.c's, a tracer's ptrace/'s.
 *
 * A signalfd's records come by read and readv: once the process made a
 * signalfd those are seen (and the dups of one followed), an fd made by
 * signalfd or dup'ed from one is marked, and a read of a marked fd that
 * is still a signalfd (/proc's link says) gets its records translated. A
 * signalfd received over a socket, or kept across an exec, is not. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/kmem.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/fcntl.h>

#define SIGFD_MAX 1024 /* fds followed */
#define SSI_SIZE 128   /* struct signalfd_siginfo */
#define IOV_MAX_SEEN 32

int zv_fid_sigfds;
static uint64_t marked[SIGFD_MAX / 64];

static int is_marked(long fd) { return fd >= 0 && fd < SIGFD_MAX && (marked[fd / 64] >> (fd % 64)) & 1; }

static void mark(long fd, int on)
{
	if (fd < 0 || fd >= SIGFD_MAX)
		return;
	if (on)
		__atomic_fetch_or(&marked[fd / 64], 1ULL << (fd % 64), __ATOMIC_RELAXED);
	else if (is_marked(fd))
		__atomic_fetch_and(&marked[fd / 64], ~(1ULL << (fd % 64)), __ATOMIC_RELAXED);
}

static long put(uint64_t p, const void *src, size_t n)
{
	if (p >= ZV_KWIN_START && p + n <= ZV_KWIN_END) {
		memcpy((void *)p, src, n);
		return 0;
	}
	return zv_guest_copy((void *)p, src, n, p);
}

/* The fields of a siginfo at p the uid depends on: signo, code (+8), pid
 * (+16) and uid (+20) (a signalfd record's: +0, +8, +12, +16). */
static void translate(const struct zv_thread *t, uint64_t p, int pid_at, int uid_at)
{
	int32_t signo, code, pid;
	uint32_t uid;
	if (zv_fid_arg_copy(&signo, p, 4) || zv_fid_arg_copy(&code, p + 8, 4) || zv_fid_arg_copy(&pid, p + pid_at, 4) ||
	    zv_fid_arg_copy(&uid, p + uid_at, 4) || signo <= 0 || !zv_si_names_uid(signo, code))
		return;
	uint32_t v = zv_fid_sender_uid(t, pid, 0, uid);
	if (v != uid)
		put(p + uid_at, &v, 4);
}

static int is_signalfd(int fd)
{
	char path[48], link[32];
	zv_snprintf(path, sizeof path, "/proc/thread-self/fd/%d", fd);
	long n = zv_sys3(__NR_readlink, path, link, sizeof link);
	return n == 21 && !memcmp(link, "anon_inode:[signalfd]", 21);
}

/* One record at offset off of readv's buffers v[0..n): its first 20
 * bytes, translated, put back where they were. */
static void translate_iov(const struct zv_thread *t, const uint64_t (*v)[2], int n, uint64_t off)
{
	uint8_t rec[20];
	uint64_t at[20];
	int k = 0;
	for (int i = 0; i < n && k < 20; i++) {
		if (off >= v[i][1]) {
			off -= v[i][1];
			continue;
		}
		for (; off < v[i][1] && k < 20; off++)
			at[k++] = v[i][0] + off;
		off = 0;
	}
	if (k < 20)
		return;
	for (int i = 0; i < 20; i++)
		if (zv_fid_arg_copy(&rec[i], at[i], 1))
			return;
	int32_t signo, code, pid;
	uint32_t uid, u;
	memcpy(&signo, rec, 4);
	memcpy(&code, rec + 8, 4);
	memcpy(&pid, rec + 12, 4);
	memcpy(&uid, rec + 16, 4);
	if (signo <= 0 || !zv_si_names_uid(signo, code) || (u = zv_fid_sender_uid(t, pid, 0, uid)) == uid)
		return;
	for (int i = 0; i < 4; i++)
		put(at[16 + i], (const uint8_t *)&u + i, 1);
}

static void records(const struct zv_thread *t, const long *a, long nr, long r)
{
	if (nr == __NR_read) {
		for (long off = 0; off + SSI_SIZE <= r; off += SSI_SIZE)
			translate(t, (uint64_t)a[1] + off, 12, 16);
		return;
	}
	uint64_t v[IOV_MAX_SEEN][2];
	int n = (int)a[2];
	if (n <= 0 || n > IOV_MAX_SEEN || zv_fid_arg_copy(v, (uint64_t)a[1], (size_t)n * sizeof v[0]))
		return;
	for (long off = 0; off + SSI_SIZE <= r; off += SSI_SIZE)
		translate_iov(t, (const uint64_t(*)[2])v, n, (uint64_t)off);
}

long zv_fid_siginfo_call(struct zv_call *c)
{
	long *a = c->a, nr = c->nr;
	if ((nr == __NR_read || nr == __NR_readv) && !is_marked(a[0]))
		return zv_next(c);
	long r = zv_next(c);
	switch (nr) {
	case __NR_waitid:
		if (r == 0 && a[2])
			translate(c->t, (uint64_t)a[2], 16, 20);
		break;
	case __NR_rt_sigtimedwait:
		if (r > 0 && a[1])
			translate(c->t, (uint64_t)a[1], 16, 20);
		break;
	case __NR_signalfd:
	case __NR_signalfd4:
		if (r < 0)
			break;
		mark(r, 1);
		if (!zv_fid_sigfds) {
			zv_fid_sigfds = 1;
			zv_layers_fold(); /* its reads and dups are seen from now on */
		}
		break;
	case __NR_dup:
	case __NR_dup2:
	case __NR_dup3:
		if (r >= 0 && r != a[0])
			mark(r, is_marked(a[0]));
		break;
	case __NR_fcntl:
		if (r >= 0 && (a[1] == F_DUPFD || a[1] == F_DUPFD_CLOEXEC))
			mark(r, is_marked(a[0]));
		break;
	case __NR_read:
	case __NR_readv:
		if (r < SSI_SIZE)
			break;
		if (!is_signalfd((int)a[0]))
			mark(a[0], 0); /* closed since, the number reused */
		else
			records(c->t, a, nr, r);
		break;
	}
	return r;
}
