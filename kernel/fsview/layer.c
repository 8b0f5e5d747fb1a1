/* The fsview layer: the calls sysent's fsview column names, while a root
 * is set, and the hooks through which the core and the loader reach the
 * view (sys/viewhook.h). It sits after the layers that must see the
 * guest's own arguments (trace, inject, the guest's sandbox, the hidden fd
 * guard) and before those that act on host objects (fakeid, procview). */
#include "fsview/fsview.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>
#include <linux/sched.h>
#include <asm-generic/errno.h>

#define BPF_OBJ_PIN_ 6
#define BPF_OBJ_GET_ 7

static int fsv_active(void) { return fsv.on; }
static int fsv_sees(long nr) { return nr >= 0 && zv_row(nr)->fsv.kind != ZV_FSV_NONE; }

static long fsv_call(struct zv_call *c)
{
	switch (zv_row(c->nr)->fsv.kind) {
	case ZV_FSV_PATH:
		return fsv_path_call(c);
	case ZV_FSV_CWD:
		return fsv_cwd_call(c);
	case ZV_FSV_SOCK:
		return fsv_sock_call(c);
	case ZV_FSV_SOCKOUT:
		return fsv_sockout_call(c);
	case ZV_FSV_REFUSE:
		return -EPERM;
	case ZV_FSV_NOSYS:
		return -ENOSYS;
	case ZV_FSV_BPF:
		if (c->a[0] == BPF_OBJ_PIN_ || c->a[0] == BPF_OBJ_GET_)
			return -EPERM; /* a path in bpffs, not resolved in the view */
		return zv_next(c);
	default: /* ZV_FSV_EXEC: the loader opens through the view's hook */
		return zv_next(c);
	}
}

/* The loader's and execve's lookups (sys/viewhook.h). */
static long lookup(const char *path, int nofollow, struct zv_at *at)
{
	at->owned = at->held = 0;
	at->dirfd = -1;
	at->name = at->buf;
	struct fsv_res res;
	int mode = nofollow ? FSV_NOFOLLOW : FSV_FOLLOW;
	long r = fsv_resolve(AT_FDCWD, path, mode, 0, &res);
	if (r == 0 && !nofollow)
		r = fsv_settle_last(&res, mode, 0);
	if (r < 0) {
		fsv_res_done(&res);
		return r;
	}
	/* the loader uses the directory past the walk: the cache's fd while
	 * the walk stays begun (no fd of the cache closes till it ends), the
	 * root's and the host cwd as they are, else an fd of its own */
	int fd = res.dirfd;
	if (!res.owned && fd >= 0 && !res.begun && fd != fsv.rootfd &&
	    (fd = (int)zv_sys3(__NR_fcntl, fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		fsv_res_done(&res);
		return fd;
	}
	at->dirfd = fd;
	at->owned = res.owned || (fd >= 0 && fd != res.dirfd);
	at->held = res.begun;
	res.begun = 0; /* ended by release */
	zv_strlcpy(at->buf, res.name, sizeof at->buf);
	at->at_flags = res.last == FSV_LAST_MAGIC ? 0 : AT_SYMLINK_NOFOLLOW;
	res.owned = 0; /* now the loader's */
	fsv_res_done(&res);
	return 0;
}

static void release(struct zv_at *at)
{
	fsv_dc_end();
}

void fsv_hooks_on(void)
{
	fsv.on = 1;
	fsv_in_setup = 1; /* until the program is loaded (shared.c) */
	zv_view_lookup = lookup;
	zv_view_release = release;
	zv_view_guest_path = fsv_guest_path;
	zv_view_mounts = fsv_mounts_hook;
}

/* An exec that failed: the cache written for the new image goes. */
extern int fsv_dc_saved;
static void fsv_exec_failed(struct zv_thread *t, long nr)
{
	if (fsv_dc_saved >= 0)
		zv_close(fsv_dc_saved);
	fsv_dc_saved = -1;
}

static void fsv_fork_child(struct zv_thread *t)
{
	if (fsv.on) {
		fsv_dc_fork_child();
		fsv_memo_fork_child();
	}
}

/* A new process's /proc/PID/exe is its parent's program until it execs:
 * set before the parent goes on, which may read it at once. */
static void fsv_clone_after(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags)
{
	if (fsv.on && child > 0 && !(flags & CLONE_THREAD))
		fsv_exe_publish((int)child);
}

/* The new image is loaded: other processes' /proc/PID/exe (shared.c); the
 * old image's directory fds serve no walk (memo.c). */
static void fsv_image(struct zv_thread *t, const char *path)
{
	fsv_memo_guest_drop();
	zv_fsv_image_started();
}

/* A process's end (its last thread, or a CLONE_VM child's) frees its
 * slot of the shared page's programs, which many short-lived processes
 * would otherwise push out. */
static void fsv_exit(struct zv_thread *t, int code, int sig)
{
	if (fsv.on && (!t->is_thread || !t->exit_alone))
		fsv_exe_gone(t->is_thread ? zv_proc.hpid : t->htid);
}

ZV_LAYER(fsview, 450) = {
	.name = "fsview", .sees = fsv_sees, .active = fsv_active, .call = fsv_call, .fork_child = fsv_fork_child,
	.exec_failed = fsv_exec_failed, .image = fsv_image, .clone_after = fsv_clone_after, .exit = fsv_exit,
};
