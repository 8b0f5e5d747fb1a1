/* Which of the guest's fds are close-on-exec, kept as the guest's calls
 * make and change them, so that an exec made in this process (inexec.c)
 * closes them without asking the host about each fd (an open of
 * /proc/self/fd, its listing, an F_GETFD per fd and a close).
 *
 * The invariant, while zv_proc.cloexec_exact holds: a guest fd below
 * ZV_CLOEXEC_FDS is open with FD_CLOEXEC exactly when its bit is set, and
 * none at or above it is close-on-exec. It starts true where every fd is
 * known to be kept: when the host's execve started this zvisor (it closed
 * the close-on-exec ones), and right after an exec made in the process
 * closed them. Calls keep it:
 *   - a new fd that may be close-on-exec sets its bit from the call's flag
 *     (open, socket, pipe2, dup3, F_DUPFD_CLOEXEC, eventfd2, ...); one made
 *     without the flag needs nothing (its number was free: its bit is
 *     clear); dup2 and dup3 over an open fd set the new state;
 *   - F_SETFD, FIOCLEX and FIONCLEX set it; close and close_range clear;
 *   - anything this file cannot follow exactly makes it false, and the
 *     exec asks the host as before: a call that may make close-on-exec
 *     fds it cannot see (MSG_CMSG_CLOEXEC's SCM_RIGHTS, bpf, io_uring,
 *     a seccomp listener, a fanotify group whose events bring close-on-exec
 *     fds, close_range's CLOSE_RANGE_CLOEXEC, an ioctl other than the
 *     terminal's, a call newer than this table),
 *     a close-on-exec fd above the bitmap, a second thread or another
 *     task on this memory (calls of two tasks may be noted out of order;
 *     sys/exec_note.c's clone note), a clone's pidfd,
 *     a fd table shared with another process, the guest's own seccomp
 *     filter (a listener may add fds). A vfork child's calls are not
 *     noted: its fd table is its own, this memory its parent's. */
#include "zvisor.h"
#include "sys/fdflags.h"
#include "sys/layer.h"
#include "sys/calls.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define O_CLOEXEC_ 02000000L /* = SOCK_CLOEXEC, EFD_, SFD_, TFD_, EPOLL_, IN_CLOEXEC and the open flags */
#define MSG_CMSG_CLOEXEC_ 0x40000000L
#define CLOSE_RANGE_CLOEXEC_ 4L
#define FIONCLEX_ 0x5450L
#define FIOCLEX_ 0x5451L
#define TIOCGPTPEER_NR 0x41 /* _IO('T', 0x41): the one terminal ioctl that makes an fd */
#define NR_KNOWN 448 /* calls past this table's own: not followed */

/* The calls noted (each may make, replace, close or mark an fd): a switch,
 * since the fold asks about every number at each start and fork. */
static int fdflags_sees(long nr)
{
	switch (nr) {
	case __NR_open: case __NR_close: case __NR_ioctl: case __NR_dup2: case __NR_socket:
	case __NR_socketpair: case __NR_accept4: case __NR_recvmsg: case __NR_recvmmsg: case __NR_fcntl:
	case __NR_mq_open: case __NR_openat: case __NR_timerfd_create: case __NR_signalfd4:
	case __NR_eventfd2: case __NR_epoll_create1: case __NR_dup3: case __NR_pipe2:
	case __NR_inotify_init1: case __NR_perf_event_open: case __NR_fanotify_init:
	case __NR_open_by_handle_at: case __NR_seccomp: case __NR_memfd_create: case __NR_bpf:
	case __NR_userfaultfd: case __NR_io_uring_setup: case __NR_io_uring_enter:
	case __NR_io_uring_register: case __NR_open_tree: case __NR_fsopen: case __NR_fsmount:
	case __NR_fspick: case __NR_pidfd_open: case __NR_close_range: case __NR_openat2:
	case __NR_pidfd_getfd: case __NR_landlock_create_ruleset: case __NR_memfd_secret:
		return 1;
	default:
		return nr < 0 || nr >= NR_KNOWN;
	}
}

/* The bitmap no longer says it all: the next exec asks the host. */
static void lose(void)
{
	if (zv_proc.cloexec_exact)
		zv_proc.cloexec_exact = 0;
}

static void set_fd(long fd, int on)
{
	if (fd < 0)
		return;
	if (fd >= ZV_CLOEXEC_FDS) {
		if (on)
			lose();
		return;
	}
	uint64_t bit = 1UL << (fd & 63), *w = &zv_proc.cloexec_fds[fd >> 6];
	if (on)
		*w |= bit;
	else
		*w &= ~bit;
}

static void clear_range(uint64_t lo, uint64_t hi)
{
	for (uint64_t fd = lo; fd <= hi && fd < ZV_CLOEXEC_FDS; fd++)
		set_fd((long)fd, 0);
}

/* Two fds a call wrote at guest address a (pipe2, socketpair), flagged on. */
static void set_pair(long a, int on)
{
	int fds[2];
	if (zv_peek(fds, (uint64_t)a, sizeof fds) != 0) {
		lose();
		return;
	}
	set_fd(fds[0], on);
	set_fd(fds[1], on);
}

/* An ioctl that makes no fd and marks none: the terminal's ('T'), but for
 * TIOCGPTPEER. */
static int ioctl_harmless(unsigned long req)
{
	return ((req >> 8) & 0xff) == 'T' && (req & 0xff) != TIOCGPTPEER_NR;
}

/* Guest call nr with arguments a returned r: the bitmap follows it. The
 * host reads fds, fcntl's and ioctl's commands as 32-bit ints. */
void zv_fdflags_note(struct zv_thread *t, long nr, const long *a, long r)
{
	if (!zv_proc.cloexec_exact || t->vfork_child || t->call_cancelled)
		return;
	if (zv_proc.nthreads > 1 || zv_proc.files_shared || zv_proc.sandboxed) {
		lose();
		return;
	}
	switch (nr) {
	case __NR_close:
		set_fd((int)a[0], 0); /* released even when close fails with EINTR */
		return;
	case __NR_close_range:
		if (r == 0 && (a[2] & CLOSE_RANGE_CLOEXEC_))
			lose();
		else if (r == 0)
			clear_range((uint32_t)a[0], (uint32_t)a[1]);
		return;
	case __NR_dup2:
		if (r >= 0 && (int)a[0] != (int)a[1])
			set_fd(r, 0);
		return;
	case __NR_fcntl:
		if ((int)a[1] == F_SETFD && r == 0)
			set_fd((int)a[0], a[2] & FD_CLOEXEC);
		else if ((int)a[1] == F_DUPFD_CLOEXEC && r >= 0)
			set_fd(r, 1);
		return;
	case __NR_ioctl:
		if (((uint32_t)a[1] == FIOCLEX_ || (uint32_t)a[1] == FIONCLEX_) && r == 0)
			set_fd((int)a[0], (uint32_t)a[1] == FIOCLEX_);
		else if (!ioctl_harmless((uint32_t)a[1]))
			lose();
		return;
	case __NR_recvmsg:
	case __NR_recvmmsg: /* SCM_RIGHTS' fds are close-on-exec only with this flag */
		if ((nr == __NR_recvmsg ? a[2] : a[3]) & MSG_CMSG_CLOEXEC_)
			lose();
		return;
	case __NR_socketpair:
		if (r == 0)
			set_pair(a[3], (a[1] & O_CLOEXEC_) != 0);
		return;
	case __NR_pipe2:
		if (r == 0)
			set_pair(a[0], (a[1] & O_CLOEXEC_) != 0);
		return;
	case __NR_signalfd4:
		if ((int)a[0] != -1)
			return; /* an fd changed, not made */
		break;
	case __NR_seccomp: /* SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_NEW_LISTENER: a listener fd */
		if (r >= 0 && a[0] == 1 && (a[1] & 8))
			lose();
		return;
	}
	if (r < 0)
		return;
	long flags;
	switch (nr) {
	case __NR_open: flags = a[1] & O_CLOEXEC_; break;
	case __NR_openat: case __NR_open_by_handle_at: case __NR_dup3: flags = a[2] & O_CLOEXEC_; break;
	case __NR_socket: case __NR_eventfd2: case __NR_timerfd_create: flags = a[1] & O_CLOEXEC_; break;
	case __NR_accept4: flags = a[3] & O_CLOEXEC_; break;
	case __NR_signalfd4: flags = a[3] & O_CLOEXEC_; break;
	case __NR_epoll_create1: case __NR_inotify_init1: case __NR_userfaultfd: case __NR_memfd_secret:
		flags = a[0] & O_CLOEXEC_;
		break;
	case __NR_fanotify_init:
		if (a[1] & O_CLOEXEC_) { /* the fds its events bring are close-on-exec: made by read */
			lose();
			return;
		}
		flags = a[0] & 1 /* FAN_CLOEXEC */;
		break;
	case __NR_memfd_create: flags = a[1] & 1 /* MFD_CLOEXEC */; break;
	case __NR_perf_event_open: flags = a[4] & 8 /* PERF_FLAG_FD_CLOEXEC */; break;
	case __NR_fsopen: case __NR_fsmount: flags = a[1] & 1 /* FSOPEN_, FSMOUNT_CLOEXEC */; break;
	case __NR_fspick: flags = a[2] & 1 /* FSPICK_CLOEXEC */; break;
	case __NR_open_tree: flags = a[2] & O_CLOEXEC_ /* OPEN_TREE_CLOEXEC */; break;
	case __NR_pidfd_open: case __NR_pidfd_getfd: case __NR_mq_open: flags = 1; break; /* always */
	case __NR_openat2: { /* its flags are in guest memory another call may change: the host says */
		long fl = zv_sys2(__NR_fcntl, r, F_GETFD);
		if (fl < 0)
			lose();
		flags = fl > 0 && (fl & FD_CLOEXEC);
		break;
	}
	default: /* bpf, io_uring, landlock, calls newer than this table */
		lose();
		return;
	}
	set_fd(r, flags != 0);
}

/* Whether call nr may close an fd or put another file at its number: what
 * zv_proc.fd_gen counts (an fd number kept while it stands names the same
 * open file; exec and the fd table's sharing are the keeper's to judge). */
static int may_replace(long nr)
{
	switch (nr) {
	case __NR_close: case __NR_close_range: case __NR_dup2: case __NR_dup3:
	case __NR_io_uring_enter: case __NR_io_uring_register:
		return 1;
	}
	return nr < 0 || nr >= NR_KNOWN;
}

static long fdflags_call(struct zv_call *c)
{
	long r = zv_next(c);
	if (may_replace(c->nr))
		zv_proc.fd_gen++;
	zv_fdflags_note(c->t, c->nr, c->a, r);
	return r;
}

/* Not inline: the calls it sees leave the fast path's direct host calls
 * for the handler's path, which runs this layer. */
ZV_LAYER(fdflags, 060) = {
	.name = "fdflags", .sees = fdflags_sees, .call = fdflags_call,
};

void zv_fdflags_lose(void)
{
	lose();
}

int zv_fdflags_usable(void)
{
	return zv_proc.cloexec_exact && !zv_proc.files_shared && !zv_proc.sandboxed && !zv_proc.timers_made &&
	       zv_proc.nthreads == 1;
}

void zv_fdflags_exact(void)
{
	for (int i = 0; i < ZV_CLOEXEC_FDS / 64; i++)
		zv_proc.cloexec_fds[i] = 0;
	zv_proc.cloexec_exact = 1;
}
