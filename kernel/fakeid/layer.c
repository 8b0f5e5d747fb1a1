/* The layer: on under --fake-root or --ids only, it sees the id calls,
 * the stat family, the calls that set owners and modes or make files,
 * unlink and rename, credentials over sockets, the xattr calls and the
 * calls that give a siginfo, and hands each to its file. It sits after the path layers, so the paths it
 * receives are the host's. */
#include "fakeid/fakeid.h"
#include "zvisor.h"
#include "sys/layer.h"
#include "lib/kmem.h"
#include "lib/string.h"
#include <linux/sched.h>

#define NR_fchmodat2 452
#define NR_getxattrat 464
#define NR_listxattrat 465
#define NR_setxattrat 463
#define NR_removexattrat 466

static zv_hook *handler_of(long nr)
{
	switch (nr) {
	case __NR_getresuid: case __NR_getresgid: case __NR_getgroups: case __NR_setgroups:
	case __NR_setuid: case __NR_setreuid: case __NR_setresuid: case __NR_setfsuid:
	case __NR_setgid: case __NR_setregid: case __NR_setresgid: case __NR_setfsgid:
	case __NR_capget: case __NR_capset: case __NR_prctl:
		return zv_fid_id_call;
	case __NR_stat: case __NR_lstat: case __NR_fstat: case __NR_newfstatat: case __NR_statx:
		return zv_fid_stat_call;
	case __NR_chown: case __NR_lchown: case __NR_fchown: case __NR_fchownat:
	case __NR_chmod: case __NR_fchmod: case __NR_fchmodat: case NR_fchmodat2:
	case __NR_mknod: case __NR_mknodat:
		return zv_fid_own_call;
	case __NR_open: case __NR_openat: case __NR_openat2: case __NR_creat:
	case __NR_mkdir: case __NR_mkdirat: case __NR_symlink: case __NR_symlinkat:
		return zv_fid_create_call;
	case __NR_unlink: case __NR_unlinkat: case __NR_rmdir:
	case __NR_rename: case __NR_renameat: case __NR_renameat2:
		return zv_fid_name_call;
	case __NR_sendmsg: case __NR_recvmsg: case __NR_recvmmsg: case __NR_getsockopt: case __NR_recvfrom:
		return zv_fid_sock_call;
	case __NR_getdents: case __NR_getdents64:
		return zv_fid_dents_call;
	case __NR_waitid: case __NR_rt_sigtimedwait: case __NR_signalfd: case __NR_signalfd4:
		return zv_fid_siginfo_call;
	case __NR_read: case __NR_readv: case __NR_dup: case __NR_dup2: case __NR_dup3: case __NR_fcntl:
		return zv_fid_sigfds ? zv_fid_siginfo_call : NULL; /* once a signalfd is made */
	case __NR_getxattr: case __NR_lgetxattr: case __NR_fgetxattr: case NR_getxattrat:
	case __NR_listxattr: case __NR_llistxattr: case __NR_flistxattr: case NR_listxattrat:
	case __NR_setxattr: case __NR_lsetxattr: case __NR_fsetxattr:
	case __NR_removexattr: case __NR_lremovexattr: case __NR_fremovexattr:
	case NR_setxattrat: case NR_removexattrat:
		return zv_fid_xattr_call;
	default:
		return NULL;
	}
}

long zv_fid_arg_copy(void *dst, uint64_t p, size_t n)
{
	if (p >= ZV_KWIN_START && p + n <= ZV_KWIN_END) {
		memcpy(dst, (const void *)p, n);
		return 0;
	}
	return zv_guest_copy(dst, (const void *)p, n, p);
}

static int fid_on(void) { return zv_fid.on; }
static int fid_sees(long nr) { return handler_of(nr) != NULL; }

static long fid_call(struct zv_call *c)
{
	zv_hook *h = handler_of(c->nr);
	return h ? h(c) : zv_next(c);
}

/* A fork child shares its parent's lock word in memory, not its hold. */
static void fid_fork_child(struct zv_thread *t)
{
	if (zv_fid.db_lock)
		zv_fid.db_lock = 0;
	zv_fid_procids_fork_child(t);
}

/* A thread's end frees its slots in the table (a process's, all of them;
 * a CLONE_VM child's are not its parent's). */
static void fid_exit(struct zv_thread *t, int code, int sig)
{
	if (t->is_thread)
		zv_fid_procids_exit(t, !t->exit_alone);
}

/* A fork child's credentials are known before it runs. */
static void fid_clone_after(struct zv_thread *t, struct zv_ucontext *uc, long child, uint64_t flags)
{
	(void)uc;
	if (child > 0 && !(flags & (CLONE_VM | CLONE_THREAD)))
		zv_fid_publish_child(t, (int)child);
}

void zv_fakeid_image(struct zv_thread *t, const char *path);

ZV_LAYER(fakeid, 550) = {
	.name = "fakeid", .sees = fid_sees, .active = fid_on, .call = fid_call, .fork_child = fid_fork_child,
	.clone_after = fid_clone_after,
	.image = zv_fakeid_image, .exit = fid_exit,
};
