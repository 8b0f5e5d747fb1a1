/* One row per system call (sys/sysent.c): everything the kernel knows about
 * a call, read by the dispatcher, the layers, the fast path and trace. */
#ifndef ZV_SYS_SYSENT_H
#define ZV_SYS_SYSENT_H
#include <stdint.h>
#include "trace/trace.h"

struct zv_thread;
struct zv_ucontext;
struct zv_call;

/* The kernel's implementation of a call: it speaks of the guest's call
 * (sys/layer.h: its thread, number and arguments; its registers, which are
 * the host's signal frame only for rows marked `frame`). */
typedef long zv_handler(struct zv_call *c);
/* A layer's work on one call (sys/layer.h): it passes the call on with zv_next. */
typedef long zv_hook(struct zv_call *c);

/* What a call interrupted by a handled signal returns inside the host, and
 * so whether it is made again after the handler (signal(7)) and what strace
 * shows for it. */
enum zv_restart {
	ZV_RS_PLAIN,  /* restarted under SA_RESTART; strace shows EINTR */
	ZV_RS_SYS,    /* ERESTARTSYS: restarted under SA_RESTART */
	ZV_RS_NOHAND, /* ERESTARTNOHAND: never restarted after a handler */
	ZV_RS_BLOCK,  /* ERESTART_RESTARTBLOCK: never restarted after a handler */
	ZV_RS_EINTR,  /* returns EINTR itself: never restarted */
	ZV_RS_FUTEX,  /* ERESTARTSYS, or with a timeout (argument 3) ERESTART_RESTARTBLOCK */
};

#define ZV_FDS_MMAP 0x80 /* in fds: the fd argument counts only without MAP_ANONYMOUS (mmap) */

/* How a call's paths are treated under a root of the guest's own
 * (kernel/fsview/): the column every path-taking row fills. */
enum zv_fsv_kind {
	ZV_FSV_NONE,   /* takes no path */
	ZV_FSV_PATH,   /* its path arguments (below) are resolved in the view and
			* the call passed on in its *at form on the host's objects */
	ZV_FSV_EXEC,   /* execve, execveat: the loader opens through the view */
	ZV_FSV_CWD,    /* chdir, fchdir, getcwd, chroot: the working directory and root */
	ZV_FSV_SOCK,   /* an AF_UNIX address in (bind, connect, sendto, sendmsg) */
	ZV_FSV_SOCKOUT, /* an AF_UNIX address out (getsockname, accept, recvfrom, ...) */
	ZV_FSV_REFUSE, /* EPERM, as an unprivileged user gets it (mount and its kin) */
	ZV_FSV_NOSYS,  /* ENOSYS while a root is set (io_uring_setup, uselib, statmount) */
	ZV_FSV_BPF,    /* bpf: BPF_OBJ_PIN and BPF_OBJ_GET take a path (refused) */
};

/* How the last component of one path is treated. */
enum zv_fsv_how {
	ZV_FH_FOLLOW = 1, /* followed (stat, chmod, truncate, getxattr) */
	ZV_FH_NOFOLLOW,   /* never followed (lstat, readlink, lgetxattr) */
	ZV_FH_CREATE,     /* made or removed: only its parent is resolved (mkdir, unlink, rename) */
	ZV_FH_AT,         /* followed unless the flags argument has AT_SYMLINK_NOFOLLOW */
	ZV_FH_ATFOLLOW,   /* followed only with AT_SYMLINK_FOLLOW in the flags (linkat, name_to_handle_at) */
	ZV_FH_OPEN,       /* open's flags: O_NOFOLLOW, O_CREAT with O_EXCL */
	ZV_FH_HOW,        /* openat2's struct open_how (its flags and resolve) */
	ZV_FH_INOTIFY,    /* followed unless the mask has IN_DONT_FOLLOW */
	ZV_FH_FANOTIFY,   /* followed unless the flags have FAN_MARK_DONT_FOLLOW */
	ZV_FH_DIR,        /* followed and must be a directory (chdir, chroot) */
};

struct zv_fsv_arg {
	uint8_t path;  /* the path's argument + 1 (0: none) */
	uint8_t dirfd; /* its directory fd's argument + 1 (0: AT_FDCWD) */
	uint8_t how;   /* enum zv_fsv_how */
	uint8_t flags; /* the argument + 1 that how reads its flags from (0: none) */
};

struct zv_fsv_col {
	uint8_t kind;  /* enum zv_fsv_kind */
	struct zv_fsv_arg p[2];
};

struct zv_sysent {
	const char *name;       /* NULL: no row (gen/sysnames.h may still name it) */
	zv_handler *handler;    /* the kernel's implementation; NULL: the host runs it */
	zv_hook *time;          /* virtual time's conversion of its clocks (sys/vtime.c) */
	uint8_t frame : 1;      /* needs the host's signal frame: bounces off the fast path */
	uint8_t task : 1;       /* starts a task: returns 0 in the child */
	uint8_t time_read : 1;  /* reads a clock: hooked also while the kernel reads the host's vDSO */
	uint8_t fds;            /* bit i: argument i is a file descriptor (ZV_FDS_MMAP) */
	uint8_t path;           /* bit i: argument i is a path the kernel translates (sys/fs.c) */
	struct zv_fsv_col fsv;  /* how its paths are resolved under --root (zv_fsv_col) */
	uint8_t timeout;        /* bit i: argument i is the relative timeout virtual time scales */
	uint8_t socklen;        /* trace: bit i: argument i points to a socklen_t the call rewrites */
	uint8_t restart;        /* enum zv_restart */
	uint8_t entry_args;     /* trace: arguments shown for a call that never returned, + 1 (0: all) */
	struct zv_sysdesc trace; /* trace: how its arguments and result print */
};

extern const struct zv_sysent zv_sysent[512];

/* The row of nr, or an empty one for numbers out of the table. */
static inline const struct zv_sysent *zv_row(long nr)
{
	extern const struct zv_sysent zv_sysent_none;
	return (unsigned long)nr < 512 ? &zv_sysent[nr] : &zv_sysent_none;
}

/* The index of the lowest set bit of an argument mask, or -1. */
static inline int zv_arg_index(unsigned mask) { return mask ? __builtin_ctz(mask) : -1; }

const char *zv_sysname(long nr); /* its name, or NULL */
int zv_sys_restart_code(long nr, const long *a); /* ERESTART* code strace shows for EINTR, or 0 */
int zv_sys_never_restarted(long nr, const long *a);
int zv_sys_i386_refused(uint32_t nr);
/* Whether the call returned r in a child it started (fork, vfork, clone). */
static inline int zv_sys_in_child(long nr, long r) { return r == 0 && zv_row(nr)->task; }
#endif
