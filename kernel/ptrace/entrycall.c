/* The call a tracee makes after its syscall-entry stop, and a guest
 * signal that came while it stood there (docs/DESIGN.md, "A signal that
 * comes at a syscall-entry stop"): natively the call has begun, so one
 * that never waits completes with the signal delivered after it, and one
 * that waits returns at once, with what is ready or interrupted, where
 * zvisor's cancellable host call would stop it before it began. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "sys/layer.h"
#include "sys/calls.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/devnum.h"
#include <asm/stat.h>

/* The call as the tracer left it at its entry stop (rax as the guest had it). */
static long made(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	if (nr != c->nr || memcmp(a, c->a, 6 * sizeof *a))
		return zv_next_as(c, nr, a);
	c->uc->mc.rax = rax;
	return zv_pt_inner(c);
}

/* A call that never waits, with a signal that came at its entry stop:
 * natively it has begun, so it completes and the signal is delivered
 * after it, where a host call would be stopped before it began
 * (zv_host_call_args). One arriving meanwhile is kept. */
static long whole(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	struct zv_thread *t = c->t;
	t->fast.sig_pending = 0;
	long r = made(c, nr, a, rax);
	t->fast.sig_pending = 1;
	return r;
}

/* Whether fd is ready now for events (a zero-timeout ppoll). */
static int ready(long fd, short events)
{
	struct { int fd; short events, revents; } p = { (int)fd, events, 0 };
	struct { long s, ns; } now = { 0, 0 };
	return zv_sys5(__NR_ppoll, &p, 1, &now, NULL, 8) > 0 && (p.revents & events);
}

/* The bytes an iovec array (guest memory) asks for, or -1 past 16
 * entries or when it cannot be read. */
static long iov_total(uint64_t iov, unsigned long n)
{
	struct { uint64_t base, len; } v[16];
	if (n > 16 || zv_peek(v, iov, n * sizeof v[0]) < 0)
		return -1;
	long total = 0;
	for (unsigned long i = 0; i < n; i++)
		total += (long)v[i].len;
	return total;
}

/* Whether call nr (args a) would return at once: a read or receive of a
 * ready fd, a write or send of at most PIPE_BUF bytes to one (a pipe
 * with room takes them whole), a wait4 or waitid with WNOHANG (natively
 * 0 when no child has changed, whatever signal is pending). */
static int would_not_wait(long nr, const long *a)
{
	long n;
	switch (nr) {
	case __NR_read: case __NR_readv: case __NR_recvfrom: case __NR_recvmsg:
	case __NR_pread64: case __NR_preadv: case __NR_preadv2:
		return ready(a[0], 0x1 /* POLLIN */);
	case __NR_write: case __NR_sendto: case __NR_pwrite64:
		return (unsigned long)a[2] <= 4096 && ready(a[0], 0x4 /* POLLOUT */);
	case __NR_writev: case __NR_pwritev: case __NR_pwritev2:
		return (n = iov_total((uint64_t)a[1], (unsigned long)a[2])) >= 0 && n <= 4096 && ready(a[0], 0x4);
	case __NR_wait4:
		return a[2] & 1 /* WNOHANG */;
	case __NR_waitid:
		return a[3] & 1;
	default:
		return 0;
	}
}

/* select and pselect6 with a zero timeout on copies of the sets, which
 * go back only if some fd is ready: natively an interrupted select leaves
 * them as they were. 0 where the sets are larger than the copies. */
static long select_now(long nfds, const long *a)
{
	uint64_t sets[3][16]; /* 1024 fds each */
	void *p[3] = { NULL, NULL, NULL };
	size_t n = ((uint64_t)nfds + 63) / 64 * 8;
	if ((uint64_t)nfds > 1024)
		return 0;
	for (int i = 0; i < 3; i++)
		if (a[1 + i]) {
			if (zv_guest_copy(sets[i], (const void *)a[1 + i], n, (uint64_t)a[1 + i]) < 0)
				return -EFAULT;
			p[i] = sets[i];
		}
	struct { long s, ns; } now = { 0, 0 };
	long r = zv_sys6(__NR_pselect6, nfds, (long)p[0], (long)p[1], (long)p[2], (long)&now, 0);
	for (int i = 0; r > 0 && i < 3; i++)
		if (p[i] && zv_guest_copy((void *)a[1 + i], sets[i], n, (uint64_t)a[1 + i]) < 0)
			return -EFAULT;
	return r;
}

/* A FUTEX_WAIT whose word is not its value: natively it returns EAGAIN
 * before it sleeps, whatever signal is pending. */
static int futex_word_differs(const long *a)
{
	int cmd = (int)a[1] & 0x7f; /* FUTEX_CMD_MASK: without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME */
	uint32_t word;
	if (cmd != 0 /* FUTEX_WAIT */ && cmd != 9 /* FUTEX_WAIT_BITSET */)
		return 0;
	return zv_peek(&word, (uint64_t)a[0], sizeof word) == 0 && word != (uint32_t)a[2];
}

/* A poll, select or epoll wait with a signal that came at its entry stop:
 * natively it looks at its fds before it sleeps or sees the signal, so
 * what is ready (or an error) is its result; 0 where nothing is (then it
 * is interrupted). The guest's memory gets what the host writes into it. */
static long poll_now(long nr, const long *a)
{
	struct { long s, ns; } now = { 0, 0 };
	switch (nr) {
	case __NR_poll: case __NR_ppoll:
		return zv_sys5(__NR_ppoll, a[0], a[1], &now, NULL, 8);
	case __NR_select: case __NR_pselect6:
		return select_now(a[0], a);
	case __NR_epoll_wait: case __NR_epoll_pwait: case __NR_epoll_pwait2:
		return zv_sys4(__NR_epoll_wait, a[0], a[1], a[2], 0);
	default:
		return 0;
	}
}

/* waitid as wait4 above, its siginfo and rusage first in kernel memory:
 * WNOHANG finding no child writes zeros there, where an interrupted
 * waitid writes nothing. */
static long waitid_now(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	uint8_t si[128] = { 0 }, ru[144] = { 0 };
	long was[3] = { a[2], a[3], a[4] };
	a[2] = c->a[2] = (long)si; /* also without the guest's: si_pid tells whether one was reaped */
	a[3] = c->a[3] = was[1] | 1; /* WNOHANG */
	a[4] = c->a[4] = a[4] ? (long)ru : 0;
	long r = whole(c, nr, a, rax);
	for (int i = 0; i < 3; i++)
		a[2 + i] = c->a[2 + i] = was[i];
	int pid;
	memcpy(&pid, si + 16, sizeof pid); /* si_pid: 0 when none had ended */
	if (r < 0 || !pid)
		return r < 0 ? r : -EINTR;
	if ((was[0] && zv_guest_copy((void *)was[0], si, sizeof si, (uint64_t)was[0]) < 0) ||
	    (was[2] && zv_guest_copy((void *)was[2], ru, sizeof ru, (uint64_t)was[2]) < 0))
		return -EFAULT;
	return r;
}

/* A call that waits, with a signal that came at its entry stop: natively
 * it returns at once, with what is ready or interrupted (`at_once`). One
 * that would not wait is made whole, a poll's ready fds are its result;
 * wait4 looks for a child with WNOHANG (a shell's SIGCHLD comes at its
 * wait4); any other is interrupted. */
static long at_once(struct zv_call *c, long nr, long *a, uint64_t rax)
{
	if (would_not_wait(nr, a))
		return whole(c, nr, a, rax);
	long ready_now = poll_now(nr, a);
	if (ready_now)
		return ready_now;
	if (nr == __NR_futex && futex_word_differs(a))
		return -EAGAIN;
	if ((nr != __NR_wait4 && nr != __NR_waitid) || memcmp(a, c->a, 6 * sizeof *a))
		return -EINTR;
	if (nr == __NR_waitid)
		return waitid_now(c, nr, a, rax);
	long opts = a[2];
	a[2] = c->a[2] = opts | 1; /* WNOHANG */
	long r = whole(c, nr, a, rax);
	a[2] = c->a[2] = opts;
	return r == 0 ? -EINTR : r;
}

/* An open whose file is a regular one, a directory, a memory device
 * (/dev/null, /dev/urandom: major 1) or none (it fails or creates a
 * regular file): natively it never waits, so with a signal at its entry
 * stop it completes (strace -e inject=openat:signal=...). A FIFO, another
 * device or a socket may wait: such an open is cancelled as before. Asked
 * with a newfstatat through the layers after this one (its paths as the
 * open's), not under the guest's own seccomp. */
static int opens_at_once(struct zv_call *c, long nr, const long *a)
{
	long dirfd = -100 /* AT_FDCWD */, path = a[0], flags = a[1];
	switch (nr) {
	case __NR_open: break;
	case __NR_creat: flags = 0; break;
	case __NR_openat: dirfd = a[0]; path = a[1]; flags = a[2]; break;
	case __NR_openat2: {
		uint64_t how = 0;
		if (zv_peek(&how, (uint64_t)a[2], sizeof how) < 0)
			return 0;
		dirfd = a[0]; path = a[1]; flags = (long)how;
		break;
	}
	default: return 0;
	}
	if (flags & 0x200000 /* O_PATH */)
		return 1;
	if (zv_proc.seccomp.mode)
		return 0; /* (the guest's filter would judge the newfstatat: not asked) */
	struct stat st;
	long sa[6] = { dirfd, path, (long)&st, flags & 0x20000 /* O_NOFOLLOW */ ? 0x100 /* AT_SYMLINK_NOFOLLOW */ : 0 };
	struct zv_thread *t = c->t;
	t->fast.sig_pending = 0;
	long r = zv_next_as(c, __NR_newfstatat, sa);
	t->fast.sig_pending = 1;
	if (r == -ENOENT)
		return 1;
	uint32_t type = st.st_mode & 0170000;
	return r == 0 && (type == 0100000 || type == 0040000 ||
			  (type == 0020000 && zv_dev_major(st.st_rdev) == 1 /* null, zero, random... */));
}

/* Call nr (args a, as the tracer left them; rax the guest's) after its
 * entry stop; came: a guest signal was deferred during the stop. One
 * that comes after the stop but before the host call begins stops it
 * (zv_host_call_args): natively the call had begun, as for one that came
 * at the stop. */
long zv_pt_entry_made(struct zv_call *c, long nr, long *a, uint64_t rax, int came)
{
	if (came && zv_sys_waits(nr))
		return at_once(c, nr, a, rax);
	if (came && zv_sys_nowait(nr))
		return whole(c, nr, a, rax);
	/* (a pread or pwrite of a file that polls ready, an open of a
	 * regular file: calls of no restart class that natively complete) */
	if (came && (would_not_wait(nr, a) || opens_at_once(c, nr, a)))
		return whole(c, nr, a, rax);
	long r = made(c, nr, a, rax);
	struct zv_thread *t = c->t;
	if (!came && r == -EINTR && t->call_cancelled && t->fast.sig_pending && (zv_sys_waits(nr) || zv_sys_nowait(nr))) {
		t->call_cancelled = 0;
		return zv_pt_entry_made(c, nr, a, rax, 1);
	}
	return r;
}
