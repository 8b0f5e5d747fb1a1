/* zvisor trace's output buffer: lines of "quiet" calls are kept in one
 * buffer per process and written together, instead of one write(2) per
 * line (git status makes 5,000 newfstatat; their writes were a quarter of
 * its traced time).
 *
 * A quiet call neither waits for another process nor lets one see
 * anything (stat, getdents, a private mmap...). Any other call first
 * writes the buffer (so nothing waits in it while the call blocks), and
 * its own line is written at once with what is kept: a line that another
 * process's line may follow causally is in the file before that one, as
 * with one write per line. All threads of a process append to the same
 * buffer under a lock, so their lines keep their order. The lock is never
 * held across a write: the writer (one at a time, under a second lock that
 * orders the writes) writes the bytes kept when it began while others keep
 * appending after them, then moves what came meanwhile to the front (git
 * status's threads slept on the lock while one wrote 32 KiB). A process that
 * shares memory (MAP_SHARED) can signal without calls: it stops keeping
 * lines. What is kept is lost only if the process dies by SIGKILL. */
#include "zvisor.h"
#include "trace/trace.h"
#include "trace/output.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/mutex.h"
#include <linux/fcntl.h>
#include <linux/mman.h>

#define KEEP 32768

static struct {
	volatile int lock;  /* the buffer: held to append or take a length, never across a write */
	volatile int wlock; /* the output: held by the one thread writing, so writes keep the order */
	int fd;             /* where the kept lines go */
	int unbuffered;     /* this process shares memory: every line at once */
	size_t len;
	char buf[KEEP];
} out;

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		long w = zv_write(fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* An mmap through which this process may write what another one reads: a
 * shared mapping writable now or, after an mprotect, later (a read-only
 * one of a read-only file, as git's index, cannot be). */
static int shares_writable(const long *a)
{
	if ((a[3] & MAP_TYPE) == MAP_PRIVATE)
		return 0;
	if ((a[2] & PROT_WRITE) || (a[3] & MAP_ANONYMOUS))
		return 1;
	long fl = zv_sys3(__NR_fcntl, a[4], F_GETFL, 0);
	return fl < 0 || (fl & O_ACCMODE) != O_RDONLY;
}

static int quiet_call(long nr, const long *a)
{
	switch (nr) {
	case __NR_stat: case __NR_fstat: case __NR_lstat: case __NR_newfstatat: case __NR_statx:
	case __NR_access: case __NR_faccessat: case __NR_faccessat2:
	case __NR_getdents: case __NR_getdents64: case __NR_lseek: case __NR_pread64:
	case __NR_readlink: case __NR_readlinkat: case __NR_getcwd:
	case __NR_brk: case __NR_mprotect: case __NR_munmap:
	case __NR_rt_sigprocmask: case __NR_rt_sigaction: case __NR_sigaltstack:
	case __NR_getpid: case __NR_gettid: case __NR_getppid: case __NR_getuid: case __NR_geteuid:
	case __NR_getgid: case __NR_getegid: case __NR_uname: case __NR_arch_prctl:
	case __NR_set_tid_address: case __NR_set_robust_list: case __NR_rseq: case __NR_sysinfo:
		return 1;
	case __NR_mmap:
		return !shares_writable(a);
	case __NR_openat: /* a directory: no FIFO to wait on, nothing created */
		return (a[2] & O_DIRECTORY) && !(a[2] & O_CREAT);
	case __NR_fcntl:
		return a[1] == F_GETFD || a[1] == F_SETFD || a[1] == F_GETFL || a[1] == F_DUPFD ||
		       a[1] == F_DUPFD_CLOEXEC;
	default:
		return 0;
	}
}

/* Holding wlock: writes what is kept, while other threads may append after
 * it; what they appended meanwhile stays kept. */
static void write_kept(void)
{
	zv_mutex_lock(&out.lock);
	size_t n = out.len;
	int fd = out.fd;
	zv_mutex_unlock(&out.lock);
	if (!n)
		return;
	write_all(fd, out.buf, n);
	zv_mutex_lock(&out.lock);
	memmove(out.buf, out.buf + n, out.len - n);
	out.len -= n;
	zv_mutex_unlock(&out.lock);
}

/* Keeps a line when it fits with what is kept (for the same fd): 1, or 0. */
static int try_keep(int fd, const char *line, size_t n)
{
	zv_mutex_lock(&out.lock);
	int fits = (!out.len || out.fd == fd) && out.len + n <= KEEP;
	if (fits) {
		out.fd = fd;
		memcpy(out.buf + out.len, line, n);
		out.len += n;
	}
	zv_mutex_unlock(&out.lock);
	return fits;
}

void zv_trace_flush(void)
{
	if (!__atomic_load_n(&out.len, __ATOMIC_ACQUIRE))
		return; /* (bytes being written count until they are) */
	zv_mutex_lock(&out.wlock);
	write_kept();
	zv_mutex_unlock(&out.wlock);
}

void zv_trace_out(int fd, const char *line, size_t n, int keep)
{
	int kept = keep && !out.unbuffered && n <= KEEP;
	if (kept && try_keep(fd, line, n))
		return;
	zv_mutex_lock(&out.wlock);
	if (!kept && __atomic_load_n(&out.len, __ATOMIC_ACQUIRE) && try_keep(fd, line, n)) {
		write_kept(); /* one write for both */
	} else {
		write_kept();
		if (!kept || !try_keep(fd, line, n))
			write_all(fd, line, n); /* (lines kept meanwhile came after it: they follow) */
	}
	zv_mutex_unlock(&out.wlock);
}

/* Before a call: a call that is not quiet may wait or be seen. Judged
 * once, before the call (mmap's judgement asks the host for the fd's mode). */
int zv_trace_before(long nr, const long *a)
{
	int quiet = quiet_call(nr, a);
	if ((nr == __NR_mmap && !quiet) || nr == __NR_shmat)
		out.unbuffered = 1; /* kept by a fork child, which shares it too */
	if (!quiet)
		zv_trace_flush();
	return quiet;
}

/* A fork child: the parent's kept lines are the parent's to write. */
void zv_trace_out_forget(void)
{
	/* written only when set: an untraced child would copy the page */
	if (out.lock || out.wlock || out.len) {
		out.lock = 0;
		out.wlock = 0;
		out.len = 0;
	}
}
