/* execve and execveat. Errors the host's execve would give are found
 * first and returned to the guest. Then the new program is loaded by this
 * zvisor in this process (kernel/inexec.c, through zv_exec_here) where it
 * can reset everything execve resets; otherwise the host executes zvisor
 * itself (/proc/thread-self/exe) with an internal command line that names the
 * guest's path, argv[0] and the kernel state to carry over (platform, guest
 * signal mask, hidden fds, the files the resolution opened). */
#include "zvisor.h"
#include "sys/layer.h"
#include "sys/execstate.h"
#include "sys/calls.h"
#include "arch/context.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "sys/viewhook.h"
#include <linux/fcntl.h>
#include <linux/mman.h>

/* The guest's argv has n pointers before its NULL, or -EFAULT if the array
 * cannot be read: zvisor reads it itself (the host's check no longer does:
 * see host_check), its strings only the host. */
long zv_exec_count_strings(char *const *v)
{
	long n = 0;
	uint64_t p = 1;
	while (v && p) {
		if (zv_guest_copy(&p, v + n, sizeof p, (uint64_t)(v + n)) != 0)
			return -EFAULT;
		n += p != 0;
	}
	return n;
}

/* A file named through an fd (/proc/self/fd/N[/rest]: execveat with a
 * dirfd or AT_EMPTY_PATH, fexecve): the next image opens it after the host's
 * execve, which closes N if it is close-on-exec. The host's own execveat
 * runs such an ELF file anyway, so the next image gets a copy of N that
 * survives (and closes it once the file is open: zv_proc.carry_fd). A #!
 * script is run by its interpreter through that name, which the host
 * refuses (ENOENT) when N is close-on-exec. Returns the path to pass, or
 * NULL with *err set. */
static const char *carry_fd(const char *path, const struct zv_resolved *r, char *buf, size_t n, int *carried,
			    long *err)
{
	*carried = -1;
	if (!zv_startswith(path, "/proc/self/fd/"))
		return path;
	const char *p = path + 14, *rest = p;
	int fd = 0;
	while (*rest >= '0' && *rest <= '9')
		fd = fd * 10 + (*rest++ - '0');
	if (rest == p || (*rest && *rest != '/'))
		return path;
	long fl = zv_sys2(__NR_fcntl, fd, F_GETFD);
	if (fl < 0 || !(fl & FD_CLOEXEC))
		return path; /* it survives as it is */
	if (r->nprefix) {
		*err = -ENOENT;
		return NULL;
	}
	long copy = zv_sys3(__NR_fcntl, fd, F_DUPFD, 3);
	if (copy < 0) {
		*err = copy;
		return NULL;
	}
	*carried = (int)copy;
	zv_snprintf(buf, n, "/proc/self/fd/%ld%s", copy, rest);
	return buf;
}

/* The host's verdict on executing the file without executing it
 * (AT_EXECVE_CHECK, Linux 6.14): the errnos of its lookup and open (ENOENT,
 * ELOOP under AT_SYMLINK_NOFOLLOW, EBADF, ENOTDIR, EACCES, ETXTBSY while the
 * file is open for writing) and of the arguments (EFAULT, E2BIG), which the
 * kernel's own checks cannot see. Its open is an exec open, which fanotify
 * reports (FAN_OPEN_EXEC) and may refuse (FAN_OPEN_EXEC_PERM). The path
 * is the guest's: /proc/self/exe there is zvisor, as runnable as the guest's
 * file and still reachable after a chroot. Returns 1 when the host found
 * the file executable, -errno, or 0 from a host without the flag (EINVAL):
 * the kernel's checks then stand alone. */
#define AT_EXECVE_CHECK_ 0x10000
static long host_check(long nr, const long *a, const char *path)
{
	/* With no arguments: copying the guest's argv and environment into the
	 * check's throwaway mm cost as much again as the check. Their EFAULT
	 * and E2BIG come from the host's execve of zvisor instead (which
	 * copies them before the image goes), or from count_strings, in the
	 * same order as natively: after the file's errnos. */
	static const char *const arg0[] = { "", NULL }, *const none[] = { NULL }; /* NULL argv: a kernel warning */
	long r;
	if (zv_view_lookup) {
		/* a root of the guest's own: the path as the view resolves it
		 * (execveat's dirfd form is /proc/self/fd/N/PATH by now) */
		struct zv_at at;
		int nofollow = nr == __NR_execveat && (a[4] & AT_SYMLINK_NOFOLLOW);
		r = zv_at_lookup(path, nofollow, &at);
		if (r == 0)
			r = zv_sys5(__NR_execveat, at.dirfd, at.name, (long)arg0, (long)none, at.at_flags | AT_EXECVE_CHECK_);
		zv_at_release(&at);
	} else {
		r = nr == __NR_execve ? zv_sys5(__NR_execveat, AT_FDCWD, a[0], (long)arg0, (long)none, AT_EXECVE_CHECK_)
				      : zv_sys5(__NR_execveat, a[0], a[1], (long)arg0, (long)none, a[4] | AT_EXECVE_CHECK_);
	}
	return r == -EINVAL ? 0 : r < 0 ? r : 1;
}

long (*zv_exec_here)(struct zv_exec_req *q);

int zv_exec_without_frame(struct zv_thread *t, long nr, struct zv_ucontext *uc)
{
	if ((nr != __NR_execve && nr != __NR_execveat) || zv_proc.exec_mode != ZV_EXEC_INPROCESS || !zv_exec_here ||
	    !t->is_thread || t->tid != zv_proc.pid || zv_proc.exec_needs_host || !zv_proc.stack_top ||
	    __atomic_load_n(&zv_proc.nthreads, __ATOMIC_RELAXED) != 1 || t->host_held)
		return 0;
	uc->uc_flags = 0x7; /* what the host's frame says: UC_FP_XSTATE, UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS */
	uc->mc.cs = 0x33;   /* __USER_CS */
	uc->mc.ss = 0x2b;   /* __USER_DS */
	uc->uc_sigmask = ZV_MASK_UNKNOWN;
	return 1;
}

/* The guest's mask into a frameless uc (zv_exec_without_frame): the host's
 * mask (host: as it was, or NULL to ask), less what it holds blocked for
 * deferred signals (given back to the host by now). */
void zv_exec_frameless_mask(struct zv_thread *t, struct zv_ucontext *uc, const uint64_t *host)
{
	uint64_t m = 0;
	if (uc->uc_sigmask != ZV_MASK_UNKNOWN)
		return;
	if (host)
		m = *host;
	else
		zv_sys4(__NR_rt_sigprocmask, 0 /* SIG_BLOCK */, NULL, &m, 8);
	uc->uc_sigmask = m & ~t->host_held;
	t->host_held = 0;
}

/* Whether this exec may be made in this process: the memory is this
 * process's alone (not a vfork child's parent's, no CLONE_VM child on it),
 * the exec'ing thread is the only one and leads the process (natively it
 * takes the leader's pid), and nothing the guest did needs the host's
 * execve to undo (sys/exec_note.c). A set-user-ID or set-group-ID file
 * goes to the host as well: its credentials are the host's to compute. */
static int here_possible(const struct zv_thread *t, const struct zv_resolved *r)
{
	if (zv_proc.exec_mode != ZV_EXEC_INPROCESS || !zv_exec_here || !t->is_thread || t->tid != zv_proc.pid ||
	    zv_proc.exec_needs_host || r->setid || !zv_proc.stack_top)
		return 0;
	int htid, not_threads = 0;
	if (zv_proc.nthreads > 1) /* the others die; a vfork child among them shares this memory */
		zv_thread_others(t, &htid, 0, &not_threads);
	return !not_threads;
}

/* Whether the resolution's files may be opened without close-on-exec and
 * handed to the next image across the host's execve (exec-state field F):
 * the exec goes there whatever the file (what here_possible refuses before
 * looking at it), and no other task could fork and exec from this fd
 * table meanwhile, nor keep it after: the one thread of a process whose
 * table no CLONE_FILES child shares, or a CLONE_VM child (vfork) made
 * without CLONE_FILES. */
static int files_handed_over(const struct zv_thread *t)
{
	if (zv_proc.exec_mode == ZV_EXEC_INPROCESS && zv_exec_here && t->is_thread && t->tid == zv_proc.pid &&
	    !zv_proc.exec_needs_host && zv_proc.stack_top)
		return 0;
	if (zv_proc.files_shared)
		return 0;
	return t->is_thread ? __atomic_load_n(&zv_proc.nthreads, __ATOMIC_RELAXED) == 1 : !t->files_shared;
}

/* Deferred signals would die with this image: every signal blocked, they
 * go back to the host, which keeps them pending across execve. */
void zv_exec_give_back_signals(struct zv_thread *t, uint64_t *saved)
{
	zv_host_set_mask(~0UL, saved);
	for (int sig = 1; sig <= 64; sig++)
		if (t->pending_set & ZV_SIGBIT(sig))
			zv_sys3(__NR_tgkill, zv_getpid(), t->htid, sig);
	t->pending_set = 0;
	t->fast.sig_pending = 0;
}

static long exec_call(struct zv_thread *t, struct zv_ucontext *uc, const char *path, const char *execfn,
		      char *const *argv, char *const *envp, long nr, const long *a);

/* A failed exec returns: a frameless one's uc is the fast path's again,
 * whose mask no one reads (0, as it was). */
static long do_exec(struct zv_thread *t, struct zv_ucontext *uc, const char *path, const char *execfn,
		    char *const *argv, char *const *envp, long nr, const long *a)
{
	int frameless = uc->uc_sigmask == ZV_MASK_UNKNOWN;
	long r = exec_call(t, uc, path, execfn, argv, envp, nr, a);
	if (frameless)
		uc->uc_sigmask = 0;
	return r;
}

static long exec_call(struct zv_thread *t, struct zv_ucontext *uc, const char *path, const char *execfn,
		      char *const *argv, char *const *envp, long nr, const long *a)
{
	long checked = host_check(nr, a, path);
	if (checked < 0)
		return checked;
	struct zv_resolved resolved_on_stack, *r = &resolved_on_stack; /* 10 KiB of the 240: no mmap and munmap */
	const char *guest_path = path;
	path = zv_translate_path(path);
	/* the file the host checked, unless the path was zvisor's own */
	int inherit = files_handed_over(t);
	long err = zv_exec_resolve_keep(path, checked == 1 && path == guest_path, r, inherit);
	char carried_path[ZV_PATH_MAX];
	if (err == 0)
		path = carry_fd(path, r, carried_path, sizeof carried_path, &zv_proc.carry_fd, &err);
	int resolved = r->nprefix == 0 ? 1 + r->setid : 0; /* 2: a set-id file (sys/setid.c) */
	if (err < 0) {
		zv_exec_files_close(&r->files);
		return err;
	}

	long argc = zv_exec_count_strings(argv);
	if (argc >= 0 && here_possible(t, r)) {
		struct zv_exec_req q = { t, uc, path, execfn, argv, envp, argc, r, nr, a };
		long e = zv_exec_here(&q); /* returns only before its point of no return */
		zv_exec_files_close(&r->files);
		if (e != ZV_EXEC_TO_HOST) {
			if (zv_proc.carry_fd >= 0)
				zv_close(zv_proc.carry_fd);
			zv_proc.carry_fd = -1;
			return e;
		}
	}
	/* an ELF's files go to the next image, which loads them (a #!
	 * script is resolved again there, for its words) */
	struct zv_exec_files handed = ZV_EXEC_FILES_NONE;
	if (inherit && resolved && argc >= 0)
		handed = r->files;
	else
		zv_exec_files_close(&r->files);
	if (argc < 0)
		return argc;
	size_t vsize = (argc + 9) * sizeof(char *);
	char **nv = zv_kmap(vsize, 4096, -1);
	if (zv_is_err((long)nv)) {
		zv_exec_files_close(&handed);
		return -ENOMEM;
	}
	char state[12288]; /* trace options and the view's binds included */
	int frameless = uc->uc_sigmask == ZV_MASK_UNKNOWN;
	zv_exec_frameless_mask(t, uc, NULL);
	zv_proc.seccomp_fd = zv_seccomp_save();
	if (zv_proc.seccomp_fd < 0 && zv_proc.seccomp.mode) {
		/* The guest's filters could not be carried over: never let a
		 * program shed its sandbox by exec'ing without fds to spare. */
		zv_kunmap(nv, vsize);
		zv_exec_files_close(&handed);
		return -EMFILE;
	}
	struct zv_exec_carry x = { zv_guest_mask(t, uc), t->sigsys_blocked, 1, zv_signals_ignored(t->sighand),
				   resolved, t->pid, handed, t->is_thread ? zv_proc.hpid : t->htid };
	zv_exec_state_format(state, sizeof state, &x);
	long k = 0;
	nv[k++] = "zvisor";
	nv[k++] = "__exec";
	nv[k++] = state;
	nv[k++] = (char *)path;
	nv[k++] = (char *)execfn;
	if (argc == 0)
		nv[k++] = ""; /* the host supplies an empty argv[0] too */
	for (long i = 0; i < argc; i++)
		nv[k++] = argv[i];
	nv[k] = NULL;

	uint64_t saved;
	zv_exec_give_back_signals(t, &saved);
	zv_event_exec(t, nr, a); /* trace's line must be out before the image goes */
	/* (thread-self: /proc/self/exe of a process whose leader has exited
	 * is gone, and a thread may exec then) */
	long ret = zv_self_fd(t) >= 0 ? zv_sys5(__NR_execveat, zv_self_fd(t), "", nv, envp, AT_EMPTY_PATH)
					 : zv_sys3(__NR_execve, "/proc/thread-self/exe", nv, envp);
	zv_event_exec_failed(t, nr);
	zv_exec_files_close(&handed);
	if (zv_proc.seccomp_fd >= 0)
		zv_close(zv_proc.seccomp_fd);
	zv_proc.seccomp_fd = -1;
	if (zv_proc.tree_fd >= 0)
		zv_close(zv_proc.tree_fd);
	zv_proc.tree_fd = -1;
	/* frameless, no sigreturn restores the guest's: the mask it had */
	zv_host_set_mask(frameless ? uc->uc_sigmask : saved, NULL);
	zv_kunmap(nv, vsize);
	if (zv_proc.carry_fd >= 0)
		zv_close(zv_proc.carry_fd);
	zv_proc.carry_fd = -1;
	return ret;
}

long zv_sys_execve(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	long *a = c->a;
	const char *path = (const char *)a[0];
	if (!path || zv_bad_guest_ptr((uint64_t)path))
		return -EFAULT;
	/* AT_EXECFN: what the guest passed */
	return do_exec(t, uc, path, path, (char *const *)a[1], (char *const *)a[2], __NR_execve, a);
}

long zv_sys_execveat(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	struct zv_ucontext *uc = c->uc;
	long *a = c->a;
	int dfd = (int)a[0];
	const char *path = (const char *)a[1];
	int flags = (int)a[4];
	char buf[ZV_PATH_MAX], execfn[ZV_PATH_MAX];
	if (!path || zv_bad_guest_ptr((uint64_t)path))
		return -EFAULT;
	if (flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -EINVAL;
	if (path[0] == '/' || (dfd == AT_FDCWD && path[0])) {
		/* the path alone names the file */
	} else if (!path[0] && !(flags & AT_EMPTY_PATH)) {
		return -ENOENT;
	} else if (dfd == AT_FDCWD) {
		path = "."; /* the working directory: EACCES, as natively */
	} else if (zv_sys2(__NR_fcntl, dfd, F_GETFD) < 0) {
		return -EBADF; /* not a /proc/self/fd name the view finds no file for */
	} else if (!path[0]) {
		zv_snprintf(buf, sizeof buf, "/proc/self/fd/%d", dfd);
		zv_snprintf(execfn, sizeof execfn, "/dev/fd/%d", dfd); /* as the host names it */
		return do_exec(t, uc, buf, execfn, (char *const *)a[2], (char *const *)a[3], __NR_execveat, a);
	} else {
		zv_snprintf(buf, sizeof buf, "/proc/self/fd/%d/%s", dfd, path);
		zv_snprintf(execfn, sizeof execfn, "/dev/fd/%d/%s", dfd, path);
		return do_exec(t, uc, buf, execfn, (char *const *)a[2], (char *const *)a[3], __NR_execveat, a);
	}
	return do_exec(t, uc, path, path, (char *const *)a[2], (char *const *)a[3], __NR_execveat, a);
}
