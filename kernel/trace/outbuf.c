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
#include "sys/sysent.h"
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

/* The row's quiet column (sys/sysent.h), judged on the arguments. */
static int quiet_call(const struct zv_sysent *row, const long *a)
{
	switch (row->quiet) {
	case ZV_QUIET_YES:
		return 1;
	case ZV_QUIET_PRIVATE:
		return !shares_writable(a);
	case ZV_QUIET_DIR: { /* a directory: no FIFO to wait on, nothing created */
		long fl = a[zv_arg_index(row->oflags)];
		return (fl & O_DIRECTORY) && !(fl & O_CREAT);
	}
	case ZV_QUIET_FDCMD:
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
	const struct zv_sysent *row = zv_row(nr);
	int quiet = quiet_call(row, a);
	if ((row->mem == ZV_MEM_MAP && !quiet) || row->mem == ZV_MEM_SHMAT)
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
