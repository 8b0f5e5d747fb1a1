/* One row per system call (sys/sysent.c): everything the kernel knows about
 * a call, read by the dispatcher, the layers, the fast path and trace. */
#ifndef ZV_SYS_SYSENT_H
#define ZV_SYS_SYSENT_H
#include <stdint.h>
#include "sys/sysdesc.h"

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
	ZV_RS_CLOCK,  /* ERESTART_RESTARTBLOCK, or with TIMER_ABSTIME (argument 1) ERESTARTNOHAND */
	ZV_RS_NOWAIT, /* never waits for anything a signal interrupts: one pending as it
		       * begins is delivered after it (a traced call's entry stop) */
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

/* In pid: the id argument counts only when argument 0 says "a process". */
#define ZV_PID_WHO_PRIO 0x80   /* argument 0 is 0, PRIO_PROCESS (get/setpriority) */
#define ZV_PID_WHO_IOPRIO 0x40 /* argument 0 is 1, IOPRIO_WHO_PROCESS (ioprio_get/set) */

/* How a call says not to follow a final symlink in the path the kernel
 * translates (sys/fs.c). */
enum zv_nofollow {
	ZV_NF_FLAGS,  /* O_NOFOLLOW in its oflags, AT_SYMLINK_NOFOLLOW in its atflags (none: it follows) */
	ZV_NF_ALWAYS, /* never follows (lstat) */
	ZV_NF_HOW,    /* openat2: O_NOFOLLOW or a RESOLVE_* limit in the open_how of argument 2 (size: 3) */
};

/* Whether trace may keep the call's line in its buffer (trace/outbuf.c): a
 * quiet call neither waits for another process nor lets one see anything. */
enum zv_quiet {
	ZV_QUIET_NO,      /* may wait or be seen */
	ZV_QUIET_YES,
	ZV_QUIET_PRIVATE, /* mmap: unless it maps memory another process may see written */
	ZV_QUIET_DIR,     /* when its oflags open a directory and do not create (no FIFO to wait on) */
	ZV_QUIET_FDCMD,   /* fcntl: F_GETFD, F_SETFD, F_GETFL, F_DUPFD, F_DUPFD_CLOEXEC */
};

/* What a call does to the address space; its arguments start (addr, len). */
enum zv_mem {
	ZV_MEM_NONE,
	ZV_MEM_MAP,     /* mmap: prot 2, flags 3, fd 4, offset 5 */
	ZV_MEM_PROTECT, /* mprotect, pkey_mprotect: prot 2 */
	ZV_MEM_UNMAP,   /* munmap */
	ZV_MEM_REMAP,   /* mremap: new length 2, flags 3, new address 4 */
	ZV_MEM_ADVISE,  /* madvise: advice 2 */
	ZV_MEM_SHMAT,   /* shmat(id, addr, flags): attaches System V shared memory */
};

/* What a call does to the fd table (argument 0 is the fd or the first). */
enum zv_fdop {
	ZV_FDOP_NONE,
	ZV_FDOP_CLOSE,       /* close(fd) */
	ZV_FDOP_CLOSE_RANGE, /* close_range(first, last, flags) */
	ZV_FDOP_DUP,         /* dup, dup2, dup3: returns a copy of argument 0 */
	ZV_FDOP_FCNTL,       /* fcntl: a copy for F_DUPFD and F_DUPFD_CLOEXEC (argument 1) */
};

/* How a call reads an fd's data: read(fd, buf, count) or readv(fd, iov,
 * count), with a file offset in argument 3 for the _AT forms. */
enum zv_reads {
	ZV_READS_NONE,
	ZV_READS_BUF,     /* read */
	ZV_READS_BUF_AT,  /* pread64 */
	ZV_READS_IOV,     /* readv */
	ZV_READS_IOV_AT,  /* preadv */
	ZV_READS_IOV_AT2, /* preadv2: offset -1 is the fd's position; RWF_* flags in argument 5 */
};

/* How a call names process groups and sessions or returns ids, beyond its
 * pid column (a restored tree's ids: cr/pids.c). */
enum zv_ids {
	ZV_IDS_NONE,
	ZV_IDS_KILL,    /* kill: argument 0 below -1 is a process group */
	ZV_IDS_WAIT4,   /* wait4: argument 0 a pid, or below -1 a group; returns a pid */
	ZV_IDS_WAITID,  /* waitid: argument 1 a pid (P_PID in 0) or group (P_PGID); the siginfo at 2 names a pid */
	ZV_IDS_SETPGID, /* setpgid: argument 1 a group */
	ZV_IDS_GROUP,   /* getpgid, getsid, getpgrp, setsid: returns a group or session */
	ZV_IDS_TTY,     /* ioctl: TIOCGPGRP, TIOCSPGRP, TIOCGSID, a group or session at argument 2 */
};

/* Which of the caller's ids a call returns. */
enum zv_cred { ZV_CRED_NONE, ZV_CRED_UID, ZV_CRED_EUID, ZV_CRED_GID, ZV_CRED_EGID };

/* Whether a call may move the caller into another user namespace (a new
 * task's: sys/id.c's zv_ids_after_clone). */
enum zv_userns {
	ZV_USERNS_NO,
	ZV_USERNS_MAY,   /* setns: into the namespace of the fd in argument 0 */
	ZV_USERNS_FLAG0, /* unshare: with CLONE_NEWUSER in argument 0 */
};

/* How a wait that a checkpoint interrupts goes on with the time it had
 * left (cr/waits.c). */
enum zv_resume {
	ZV_RESUME_NONE,
	ZV_RESUME_SLEEP,       /* nanosleep: request 0, remainder 1 */
	ZV_RESUME_CLOCK_SLEEP, /* clock_nanosleep: TIMER_ABSTIME in 1, request 2, remainder 3 */
	ZV_RESUME_MS,          /* an int of ms in its timeout argument */
	ZV_RESUME_TS,          /* a timespec in its timeout argument */
	ZV_RESUME_FUTEX,       /* FUTEX_WAIT's timespec in argument 3 */
};

struct zv_sysent {
	const char *name;       /* NULL: no row (gen/sysnames.h may still name it) */
	zv_handler *handler;    /* the kernel's implementation; NULL: the host runs it */
	zv_hook *time;          /* virtual time's conversion of its clocks (sys/vtime.c) */
	uint8_t frame : 1;      /* needs the host's signal frame: bounces off the fast path */
	uint8_t task : 1;       /* starts a task: returns 0 in the child */
	uint8_t time_read : 1;  /* reads a clock: hooked also while the kernel reads the host's vDSO */
	uint8_t ppid : 1;       /* returns the parent's pid (a restored process's is in its image: cr/pids.c) */
	uint8_t strict : 1;     /* allowed under seccomp's strict mode (sys/seccomp.c) */
	uint8_t readlink : 1;   /* reads the link at its path into the buffer and size after the path */
	uint8_t opens : 1;      /* returns a new fd for the file at its path */
	uint8_t registers : 1;  /* registers thread state the host keeps and no call reads back
				 * (rseq): a checkpoint notes it (cr/waits.c) */
	uint8_t fds;            /* bit i: argument i is a file descriptor (ZV_FDS_MMAP) */
	uint8_t path;           /* bit i: argument i is a path the kernel translates (sys/fs.c) */
	struct zv_fsv_col fsv;  /* how its paths are resolved under --root (zv_fsv_col) */
	uint8_t oflags;         /* bit i: argument i is open(2)'s flags (O_*) */
	uint8_t atflags;        /* bit i: argument i holds AT_* flags */
	uint8_t nofollow;       /* enum zv_nofollow (read for the rows with a path) */
	uint8_t pid;            /* bit i: argument i is a process or thread id (ZV_PID_WHO_*) */
	uint8_t ids;            /* enum zv_ids */
	uint8_t sigset;         /* bit i: argument i points to a signal set the call reads; without
				 * sigsize (pselect6), to a { set, size } pair */
	uint8_t sigsize;        /* bit i: argument i is that set's size */
	uint8_t timeout;        /* bit i: argument i is the relative timeout virtual time scales */
	uint8_t resume;         /* enum zv_resume */
	uint8_t mem;            /* enum zv_mem */
	uint8_t fdop;           /* enum zv_fdop */
	uint8_t reads;          /* enum zv_reads */
	uint8_t cred;           /* enum zv_cred */
	uint8_t userns;         /* enum zv_userns */
	uint8_t quiet;          /* trace: enum zv_quiet */
	uint8_t socklen;        /* trace: bit i: argument i points to a socklen_t the call rewrites */
	uint8_t fdsets;         /* trace: bit i: argument i points to an fd_set the call rewrites */
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
static inline int zv_sys_nowait(long nr) { return zv_row(nr)->restart == ZV_RS_NOWAIT; }
static inline int zv_sys_waits(long nr) { int rs = zv_row(nr)->restart; return rs != ZV_RS_PLAIN && rs != ZV_RS_NOWAIT; }
int zv_sys_i386_refused(uint32_t nr);
/* Whether the call returned r in a child it started (fork, vfork, clone). */
static inline int zv_sys_in_child(long nr, long r) { return r == 0 && zv_row(nr)->task; }
#endif
