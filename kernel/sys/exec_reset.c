/* The process state the host's execve resets and that an exec made in
 * this process (kernel/inexec.c) must reset itself, each as fs/exec.c,
 * kernel/futex/core.c and the mm's teardown do it: close-on-exec fds, POSIX
 * timers, aio contexts, memory locks, a shared fd table, the robust futex
 * list and clear_child_tid, dumpability, the TLS base. What the guest set
 * is noted as it sets it (sys/exec_note.c); what the host keeps across
 * execve (itimers, pdeath_signal, NO_NEW_PRIVS, the signal mask, pending
 * signals, rlimits, the seccomp filters, the cwd and umask) is left alone. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "sys/fdflags.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fdlist.h"
#include "sys/calls.h"
#include <linux/fcntl.h>
#include <linux/sched.h>

#define FUTEX_WAITERS 0x80000000U
#define FUTEX_OWNER_DIED 0x40000000U
#define FUTEX_TID_MASK 0x3fffffffU
#define ROBUST_LIST_LIMIT 2048

/* ---- the robust futex list (kernel/futex/core.c exit_robust_list) ------- */

struct robust_head { uint64_t next; long futex_offset; uint64_t pending; };

static int read_word(uint64_t addr, void *out, size_t n)
{
	struct zv_thread *t = zv_current();
	uint64_t outer = t->guard_sp;
	long r = zv_copy_guarded(out, (const void *)addr, n, &t->guard_sp);
	t->guard_sp = outer;
	return r == 0;
}

/* A futex the dying owner held: marked OWNER_DIED, one waiter woken (a
 * waiter in another process on shared memory takes EOWNERDEAD). */
static void futex_death(uint64_t uaddr, uint32_t tid, int pi, int pending_op)
{
	if (uaddr & 3)
		return;
	for (int tries = 0; tries < 16; tries++) {
		uint32_t uval;
		if (!read_word(uaddr, &uval, 4))
			return;
		if (pending_op && !pi && !uval) {
			zv_sys3(__NR_futex, uaddr, 1 /* FUTEX_WAKE, shared */, 1);
			return;
		}
		if ((uval & FUTEX_TID_MASK) != tid)
			return;
		uint32_t mval = (uval & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
		struct zv_thread *t = zv_current();
		uint64_t outer = t->guard_sp;
		long done = zv_cmpxchg32_guarded((volatile uint32_t *)uaddr, uval, mval, &t->guard_sp);
		t->guard_sp = outer;
		if (done < 0)
			return;
		if (!done)
			continue; /* changed meanwhile: read it again */
		if (!pi && (uval & FUTEX_WAITERS))
			zv_sys3(__NR_futex, uaddr, 1 /* FUTEX_WAKE */, 1);
		return;
	}
}

static void release_robust_list(struct zv_thread *t)
{
	uint64_t head = t->robust_head;
	struct robust_head h;
	if (!head || !read_word(head, &h, sizeof h))
		goto out;
	uint64_t pending = h.pending & ~1UL, entry = h.next;
	int limit = ROBUST_LIST_LIMIT;
	while ((entry & ~1UL) != head && limit--) {
		uint64_t e = entry & ~1UL, next;
		if (!read_word(e, &next, sizeof next))
			break;
		if (e != pending)
			futex_death(e + h.futex_offset, (uint32_t)t->tid, (int)(entry & 1), 0);
		entry = next;
	}
	if (pending)
		futex_death(pending + h.futex_offset, (uint32_t)t->tid, (int)(h.pending & 1), 1);
out:
	t->robust_head = 0;
	zv_sys2(__NR_set_robust_list, 0, sizeof h);
}

/* ---- POSIX timers (/proc/self/timers: "ID: n" per timer) --------------- */

static void delete_posix_timers(void)
{
	char buf[4096];
	long fd = zv_openat(AT_FDCWD, "/proc/self/timers", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	long n;
	while ((n = zv_read((int)fd, buf, sizeof buf - 1)) > 0) {
		buf[n] = 0;
		for (const char *p = buf; *p; p++)
			if ((p == buf || p[-1] == '\n') && zv_startswith(p, "ID: "))
				zv_sys1(__NR_timer_delete, zv_parse_dec(p + 4, &p));
		/* each read starts at a timer's first line (seq_file's records) */
	}
	zv_close((int)fd);
	zv_proc.timers_made = 0;
}

/* ---- close-on-exec ----------------------------------------------------- */

int zv_exec_fd_dir(void)
{
	if (zv_fdflags_usable())
		return ZV_EXEC_FD_BITMAP; /* no listing: sys/fdflags.c knows them */
	return (int)zv_openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

/* The fds sys/fdflags.c knows to be close-on-exec, closed a run at a time
 * (zvisor's own and the exec's files are never among them: their numbers
 * were free when it noted the guest's). */
static void close_known(const struct zv_exec_files *keep)
{
	int lo = -1;
	for (int fd = 0; fd <= ZV_CLOEXEC_FDS; fd++) {
		int on = fd < ZV_CLOEXEC_FDS && (zv_proc.cloexec_fds[fd >> 6] >> (fd & 63) & 1) &&
			 !zv_is_kernel_fd(fd) && fd != keep->fd && fd != keep->ifd;
		if (on && lo < 0)
			lo = fd;
		if (!on && lo >= 0) {
			zv_fdlist_close(zv_load_fds, lo, fd - 1); /* with the load's files, when it brings a list */
			lo = -1;
		}
		if (fd < ZV_CLOEXEC_FDS && !(fd & 63) && !zv_proc.cloexec_fds[fd >> 6] && lo < 0)
			fd += 63; /* a word with none */
	}
}

struct dirent64 { uint64_t ino; int64_t off; uint16_t reclen; uint8_t type; char name[]; };

/* The guest's fds marked close-on-exec, closed; dfd (the listing of
 * /proc/self/fd) and zvisor's hidden fds stay. One getdents64 when the
 * listing ends short of a full buffer: procfs fills the buffer with every
 * fd that fits, so room for one more name means there is none. */
static void close_on_exec(int dfd, const struct zv_exec_files *keep)
{
	char buf[4096];
	for (;;) {
		long n = zv_sys3(__NR_getdents64, dfd, buf, sizeof buf);
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			const struct dirent64 *d = (const void *)(buf + off);
			off += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			int fd = 0;
			for (const char *p = d->name; *p; p++)
				fd = fd * 10 + (*p - '0');
			if (fd == dfd || zv_is_kernel_fd(fd) || fd == keep->fd || fd == keep->ifd)
				continue;
			long fl = zv_sys2(__NR_fcntl, fd, F_GETFD);
			if (fl >= 0 && (fl & FD_CLOEXEC))
				zv_close(fd); /* a procview mark of it goes stale (sys/procview.c) */
		}
		if ((size_t)n + 64 <= sizeof buf)
			break;
	}
	zv_close(dfd);
}

/* ---- the other threads (fs/exec.c de_thread) ----------------------------- */

#define SI_QUEUE_ (-1)
#define TAG_EXEC 0x7a766578UL /* in a queued SIGSYS's value: "exit, the process execs"; low half the pid */
#define MAX_OTHERS 1024

static volatile int exec_killing; /* the pid whose leader execs in it */

static void queue_exit(int htid)
{
	zv_siginfo si = { .si_signo = 31, .si_code = SI_QUEUE_ };
	si.kill.pid = zv_proc.hpid;
	uint64_t v = TAG_EXEC << 32 | (uint32_t)zv_proc.hpid;
	memcpy(si.bytes + 8, &v, 8);
	zv_sys4(__NR_rt_tgsigqueueinfo, zv_proc.hpid, htid, 31, &si);
}

__attribute__((noreturn)) void zv_exec_thread_exit(struct zv_thread *t)
{
	zv_host_set_mask(~0UL, NULL);
	__atomic_sub_fetch(&zv_proc.nthreads, 1, __ATOMIC_ACQ_REL);
	zv_thread_retire(t);
	for (;;)
		zv_sys1(__NR_exit, 0);
}

int zv_exec_kill_sigsys(struct zv_thread *t, const void *siv, struct zv_ucontext *uc)
{
	const zv_siginfo *si = siv;
	uint64_t v;
	memcpy(&v, si->bytes + 8, 8);
	if (v >> 32 != TAG_EXEC)
		return 0;
	if ((int)(uint32_t)v != zv_proc.hpid || exec_killing != zv_proc.hpid || t->exec_exit)
		return 1; /* stale, or already on its way */
	if (zv_interrupted_kernel(t, uc)) {
		/* Out on the way out (zv_signals_on_exit): no lock held there. */
		t->exec_exit = 1;
		zv_signals_leave_kernel(t, uc);
		return 1;
	}
	zv_exec_thread_exit(t);
}

/* Every thread but t exits, as the host's execve kills them: each is asked
 * by a queued SIGSYS (again every 2 ms: a standard signal already pending
 * swallows another) and leaves at once from guest code, or on its way out
 * of the kernel; the host's clear_child_tid and robust list of each are
 * the host's exit's. Returns when the host knows none of them. */
void zv_exec_kill_others(struct zv_thread *t)
{
	static int htids[MAX_OTHERS];
	int notthreads;
	exec_killing = zv_proc.hpid;
	for (int round = 0;; round++) {
		int n = zv_thread_others(t, htids, MAX_OTHERS, &notthreads), alive = 0;
		for (int i = 0; i < n; i++) {
			if (zv_sys3(__NR_tgkill, zv_proc.hpid, htids[i], 0) == -ESRCH)
				continue;
			alive++;
			if (round % 20 == 0)
				queue_exit(htids[i]);
		}
		if (!alive && __atomic_load_n(&zv_proc.nthreads, __ATOMIC_ACQUIRE) == 1)
			break;
		struct { long s, ns; } nap = { 0, 100000 };
		zv_sys2(__NR_nanosleep, &nap, NULL);
	}
	exec_killing = 0;
}

/* ---- all of it ---------------------------------------------------------- */

void zv_exec_reset(struct zv_thread *t, int fd_dir, const struct zv_exec_files *keep)
{
	if (t->robust_head)
		release_robust_list(t);
	if (t->clear_tid_set) {
		zv_sys1(__NR_set_tid_address, 0);
		t->clear_tid_set = 0;
	}
	if (zv_proc.timers_made)
		delete_posix_timers();
	for (int i = 0; i < zv_proc.naio; i++)
		zv_sys1(__NR_io_destroy, zv_proc.aio[i]);
	zv_proc.naio = 0;
	if (zv_proc.mlocked) {
		zv_sys0(__NR_munlockall);
		zv_proc.mlocked = 0;
	}
	if (zv_proc.files_shared) {
		zv_sys1(__NR_unshare, CLONE_FILES);
		zv_proc.files_shared = 0;
	}
	if (fd_dir == ZV_EXEC_FD_BITMAP)
		close_known(keep);
	else
		close_on_exec(fd_dir, keep);
	zv_proc.fd_gen++;
	zv_fdflags_exact(); /* every fd left is kept by the next exec too */
	if (zv_proc.dumpable_set) {
		zv_sys2(__NR_prctl, 4 /* PR_SET_DUMPABLE */, 1);
		zv_proc.dumpable_set = 0;
	}
	zv_signals_exec(t);
	t->guest_gs = 0;
	t->gsud.on = 0;
	t->handler_depth = 0;
	t->delivery_mask_set = 0;
}
