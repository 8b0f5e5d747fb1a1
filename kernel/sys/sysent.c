/* The system call table: one row per call, with everything the kernel
 * knows about it (struct zv_sysent in sysent.h explains the columns):
 * its handler, whether it needs the host's signal frame or starts a task,
 * which arguments are fds, paths the kernel translates, flags, ids, signal
 * sets or timeouts, what it does to memory, the fd table and the caller's
 * ids, how it restarts after a signal handler, virtual time's hook, how its
 * paths are resolved under --root (the fsview column: kernel/fsview/), and
 * how zvisor trace prints it. Code that treats calls differently reads these
 * columns rather than naming numbers. Calls without a handler run on the
 * host unchanged, from kernel text, cancellable by a deferred signal.
 *
 * The trace column: its argument count, strace's classes, and how to print
 * the arguments (trace.h explains the signature letters; decode_*.c hold
 * the decoders for structures). Calls without an entry print their number
 * of arguments in hex, and calls without a count print none; numbers
 * without a call print as strace's syscall_0xN with six registers.
 *
 * How each call compares with strace 6.1's default output (checked by
 * tests/trace_parity.py over the guest corpus, tests/guests/tracecalls.c
 * (one of each decoded call, also on a pseudo-terminal), busybox,
 * coreutils, tar, python3, git, gcc and sqlite3):
 *
 * Fully (same text): every S, R, D, DR and SR entry below except those
 * listed as partial, among them read write pread64 pwrite64 readv writev
 * preadv pwritev preadv2 pwritev2 open openat openat2 creat close stat
 * fstat lstat newfstatat statx statfs fstatfs access faccessat faccessat2
 * readlink readlinkat getcwd getdents getdents64 lseek mmap mprotect munmap
 * mremap msync brk madvise mincore mlockall rt_sigaction rt_sigprocmask
 * rt_sigreturn rt_sigsuspend rt_sigtimedwait rt_sigpending rt_sigqueueinfo
 * sigaltstack signalfd signalfd4 kill tkill tgkill pidfd_send_signal
 * clone clone3 fork vfork execve execveat exit exit_group wait4 waitid
 * prlimit64 getrlimit setrlimit getrusage times arch_prctl set_tid_address
 * set_robust_list rseq getrandom uname sysinfo personality unshare
 * capget capset getresuid getresgid getgroups setgroups sched_getaffinity
 * sched_setaffinity sched_getparam sched_setparam sched_getscheduler
 * sched_setscheduler sched_rr_get_interval getpriority setpriority getcpu
 * futex time gettimeofday clock_gettime clock_getres clock_settime
 * clock_nanosleep nanosleep getitimer setitimer alarm timer_create
 * timer_settime timer_gettime timer_delete timerfd_create timerfd_settime
 * timerfd_gettime poll ppoll select pselect6 epoll_create epoll_create1
 * epoll_ctl epoll_wait epoll_pwait eventfd eventfd2 inotify_init1 pipe
 * pipe2 dup dup2 dup3 fcntl (F_GETFD/F_GETFL results, struct flock) flock
 * fallocate sendfile splice tee sync_file_range copy_file_range
 * close_range memfd_create socket socketpair bind connect listen accept
 * accept4 getsockname getpeername (with [in => out] lengths) sendto
 * recvfrom shutdown getxattr lgetxattr fgetxattr setxattr lsetxattr
 * fsetxattr listxattr llistxattr flistxattr removexattr renameat2 utimensat
 * umount2 fadvise64 sethostname setdomainname, and the calls whose
 * arguments are plain (ids, paths, modes, fds, sizes).
 *
 * Partially (some arguments in hex or abbreviated where strace decodes
 * more): ioctl (TCGETS and TCSETS* with the whole termios, TIOCGWINSZ,
 * TIOCSWINSZ, TCFLSH, FIONBIO, FIONREAD, FIOCLEX, FIONCLEX, FIOASYNC,
 * TIOC[GS]PGRP, TIOCGSID, TIOCOUTQ, FICLONE and the other names of
 * trace/names_net.c; other numbers as _IOC(dir, type, nr, size); an
 * argument not decoded in hex), prctl (PR_SET/GET_NAME, PDEATHSIG, DUMPABLE,
 * NO_NEW_PRIVS, CAPBSET_*, KEEPCAPS, TIMERSLACK, CHILD_SUBREAPER,
 * THP_DISABLE, SECUREBITS; others in hex), sendmsg/recvmsg (control data
 * as an address), setsockopt/getsockopt (int values; option names for
 * SOL_SOCKET only), socket addresses (AF_UNIX, AF_INET, AF_INET6,
 * AF_NETLINK; others show their family only).
 *
 * Raw (all arguments in hex): the N entries below, e.g. the System V IPC
 * calls, ptrace, mount, inotify_add_watch, utime, utimes, futimesat,
 * sendmmsg, recvmmsg, setns, seccomp, bpf, membarrier, mlock2,
 * epoll_pwait2, perf_event_open, io_setup..io_cancel, io_uring_*, the new
 * mount API, keyctl, mq_*, landlock_* and the other rare ones. */
#include "zvisor.h"
#include "sys/sysent.h"
#include "sys/exec_reset.h"
#include "sys/vtime.h"
#include "sys/txtbusy.h"
#include "sysnames.h"
#include <asm/unistd_64.h>

#define F ZV_TC_FILE
#define PR ZV_TC_PROCESS
#define NET ZV_TC_NETWORK
#define SIG ZV_TC_SIGNAL
#define IPC ZV_TC_IPC
#define DESC ZV_TC_DESC
#define MEM ZV_TC_MEMORY
#define CRED ZV_TC_CREDS
#define CLK ZV_TC_CLOCK
#define ST ZV_TC_STAT
#define PURE ZV_TC_PURE

#define A(i) (1u << (i))         /* argument i, in the argument masks */
#define ENTRY(n) ((n) + 1)       /* entry_args */

/* The trace column. S(classes, signature): the signature gives the argument
 * count. D(count, classes, decoder), R(classes, signature, ret),
 * N(count, classes): all arguments in hex. DR: a decoder and a result
 * printer (ret '=': it prints the value too); DA: a decoder and a printer
 * of what follows the result. SF: a signature, then one argument of flags
 * named by table t. SR: a signature and a result printer. */
#define S(c, s) { .nargs = sizeof(s) - 1, .classes = (c), .sig = s }
#define R(c, s, r) { .nargs = sizeof(s) - 1, .classes = (c), .sig = s, .ret = r }
#define D(k, c, d) { .nargs = k, .classes = (c), .decode = ZV_DEC_##d }
#define N(k, c) { .nargs = k, .classes = (c) }
#define DR(k, c, d, r, a) { .nargs = k, .classes = (c), .decode = ZV_DEC_##d, .ret = r, .after = ZV_DEC_##a }
#define DA(k, c, d, a) { .nargs = k, .classes = (c), .decode = ZV_DEC_##d, .after = ZV_DEC_##a }
#define SF(c, s, t) { .nargs = sizeof(s), .classes = (c), .sig = s, .flags = ZV_NAMES_##t }
#define SR(c, s, r, a) { .nargs = sizeof(s) - 1, .classes = (c), .sig = s, .ret = r, .after = ZV_DEC_##a }

#define ROW(n, tr, ...) [__NR_##n] = { .name = #n, .trace = tr, __VA_ARGS__ }

/* The fsview column (struct zv_fsv_col in sysent.h). FP(arg, how): a path
 * in argument arg, looked up from the working directory; FPF(arg, how,
 * flags): the same with its flags word in argument flags; FPAT(dirfd, arg,
 * how, flags): looked up from the directory fd in argument dirfd (flags -1:
 * none). PATH1 and PATH2 make the column of a call with one or two paths;
 * FSV(kind) one whose paths are handled as a whole (sysent.h). */
#define FP(a, h) { .path = (a) + 1, .how = ZV_FH_##h }
#define FPF(a, h, f) { .path = (a) + 1, .how = ZV_FH_##h, .flags = (f) + 1 }
#define FPAT(d, a, h, f) { .path = (a) + 1, .dirfd = (d) + 1, .how = ZV_FH_##h, .flags = (f) + 1 }
#define PATH1(x) .fsv = { ZV_FSV_PATH, { x } }
#define PATH2(x, y) .fsv = { ZV_FSV_PATH, { x, y } }
#define FSV(k) .fsv = { ZV_FSV_##k }

const struct zv_sysent zv_sysent[512] = {
	ROW(read, S(DESC, "fbU"), .fds = A(0), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), .reads = ZV_READS_BUF, .strict = 1),
	ROW(write, S(DESC, "fwU"), .fds = A(0), .restart = ZV_RS_SYS, .strict = 1),
	ROW(open, D(3, F | DESC, open), .handler = zv_sys_path_call, .path = A(0), .oflags = A(1), .opens = 1, PATH1(FPF(0, OPEN, 1))),
	ROW(close, S(DESC, "f"), .handler = zv_sys_close, .fdop = ZV_FDOP_CLOSE, .restart = ZV_RS_NOWAIT),
	ROW(stat, D(2, F | ST, stat), .handler = zv_sys_path_call, .path = A(0), .quiet = ZV_QUIET_YES, PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fstat, D(2, DESC | ST, fstat), .fds = A(0), .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(lstat, D(2, F | ST, stat), .handler = zv_sys_path_call, .path = A(0), .quiet = ZV_QUIET_YES, .nofollow = ZV_NF_ALWAYS, PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(poll, DA(3, DESC, poll, poll_ret), .restart = ZV_RS_BLOCK, .time = zv_vt_ms, .timeout = A(2), .resume = ZV_RESUME_MS),
	ROW(lseek, D(3, DESC, lseek), .fds = A(0), .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(mmap, R(MEM, "pUPFfX", 'x'), .handler = zv_sys_mm_call, .fds = A(4) | ZV_FDS_MMAP, .quiet = ZV_QUIET_PRIVATE, .mem = ZV_MEM_MAP, .restart = ZV_RS_NOWAIT),
	ROW(mprotect, S(MEM, "pUP"), .handler = zv_sys_mm_call, .quiet = ZV_QUIET_YES, .mem = ZV_MEM_PROTECT, .restart = ZV_RS_NOWAIT),
	ROW(munmap, S(MEM, "pU"), .handler = zv_sys_mm_call, .quiet = ZV_QUIET_YES, .mem = ZV_MEM_UNMAP, .restart = ZV_RS_NOWAIT),
	ROW(brk, R(MEM, "p", 'x'), .handler = zv_sys_brk, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(rt_sigaction, D(4, SIG, rt_sigaction), .handler = zv_sys_rt_sigaction, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(rt_sigprocmask, S(SIG, "hggU"), .handler = zv_sys_rt_sigprocmask, .frame = 1, .quiet = ZV_QUIET_YES, .sigset = A(1), .sigsize = A(3), .restart = ZV_RS_NOWAIT),
	ROW(rt_sigreturn, D(1, SIG, rt_sigreturn), .handler = zv_sys_rt_sigreturn, .frame = 1, .strict = 1),
	ROW(ioctl, D(3, DESC, ioctl), .fds = A(0), .ids = ZV_IDS_TTY),
	ROW(pread64, S(DESC, "fbUD"), .fds = A(0), .entry_args = ENTRY(1), .quiet = ZV_QUIET_YES, .reads = ZV_READS_BUF_AT),
	ROW(pwrite64, S(DESC, "fwUD"), .fds = A(0)),
	ROW(readv, D(3, DESC, readv), .fds = A(0), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), .reads = ZV_READS_IOV),
	ROW(writev, D(3, DESC, writev), .fds = A(0), .restart = ZV_RS_SYS),
	ROW(access, S(F, "sk"), .handler = zv_sys_path_call, .path = A(0), .quiet = ZV_QUIET_YES, PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(pipe, D(1, DESC, pipe), .restart = ZV_RS_NOWAIT),
	ROW(select, DR(5, DESC, select, '=', select_ret), .restart = ZV_RS_NOHAND, .time = zv_vt_timeval_left, .timeout = A(4), .fdsets = A(1) | A(2) | A(3)),
	ROW(sched_yield, S(PURE, ""), .restart = ZV_RS_NOWAIT),
	ROW(mremap, DR(5, MEM, mremap, 'x', NONE), .handler = zv_sys_mm_call, .mem = ZV_MEM_REMAP, .restart = ZV_RS_NOWAIT),
	ROW(msync, SF(MEM, "pU", msync_flags)),
	ROW(mincore, S(MEM, "pUp"), .restart = ZV_RS_NOWAIT),
	ROW(madvise, D(3, MEM, madvise), .handler = zv_sys_mm_call, .mem = ZV_MEM_ADVISE, .restart = ZV_RS_NOWAIT),
	ROW(dup, S(DESC, "f"), .fds = A(0), .fdop = ZV_FDOP_DUP, .restart = ZV_RS_NOWAIT),
	ROW(dup2, S(DESC, "ff"), .handler = zv_sys_dup2, .fdop = ZV_FDOP_DUP, .restart = ZV_RS_NOWAIT),
	ROW(pause, S(SIG, ""), .restart = ZV_RS_NOHAND),
	ROW(nanosleep, D(2, 0, nanosleep), .restart = ZV_RS_BLOCK, .time = zv_vt_nanosleep, .entry_args = ENTRY(1), .resume = ZV_RESUME_SLEEP),
	ROW(getitimer, D(2, 0, getitimer), .time = zv_vt_getitimer, .restart = ZV_RS_NOWAIT),
	ROW(alarm, S(0, "u"), .time = zv_vt_alarm, .restart = ZV_RS_NOWAIT),
	ROW(setitimer, D(3, 0, setitimer), .time = zv_vt_setitimer, .restart = ZV_RS_NOWAIT),
	ROW(getpid, S(PURE, ""), .handler = zv_sys_getpid, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(sendfile, D(4, DESC | NET, sendfile), .fds = A(0) | A(1)),
	ROW(socket, D(3, NET, socket), .restart = ZV_RS_NOWAIT),
	ROW(connect, D(3, NET | DESC, connect), .fds = A(0), .restart = ZV_RS_SYS, FSV(SOCK)),
	ROW(accept, D(3, NET | DESC, getsockname), .fds = A(0), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), .socklen = A(2), FSV(SOCKOUT)),
	ROW(sendto, D(6, NET | DESC, sendto), .fds = A(0), .restart = ZV_RS_SYS, FSV(SOCK)),
	ROW(recvfrom, D(6, NET | DESC, sendto), .fds = A(0), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), .socklen = A(5), FSV(SOCKOUT)),
	ROW(sendmsg, D(3, NET | DESC, sendmsg), .fds = A(0), .restart = ZV_RS_SYS, FSV(SOCK)),
	ROW(recvmsg, D(3, NET | DESC, sendmsg), .fds = A(0), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), FSV(SOCKOUT)),
	ROW(shutdown, D(2, NET | DESC, shutdown), .fds = A(0)),
	ROW(bind, D(3, NET | DESC, connect), .fds = A(0), FSV(SOCK), .restart = ZV_RS_NOWAIT),
	ROW(listen, S(NET | DESC, "fd"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(getsockname, D(3, NET | DESC, getsockname), .fds = A(0), .socklen = A(2), FSV(SOCKOUT), .restart = ZV_RS_NOWAIT),
	ROW(getpeername, D(3, NET | DESC, getsockname), .fds = A(0), .socklen = A(2), FSV(SOCKOUT), .restart = ZV_RS_NOWAIT),
	ROW(socketpair, D(4, NET | DESC, socketpair), .restart = ZV_RS_NOWAIT),
	ROW(setsockopt, D(5, NET | DESC, setsockopt), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(getsockopt, D(5, NET | DESC, setsockopt), .fds = A(0), .socklen = A(4), .restart = ZV_RS_NOWAIT),
	ROW(clone, D(5, PR, clone), .handler = zv_sys_clone, .frame = 1, .task = 1),
	ROW(fork, S(PR, ""), .handler = zv_sys_fork, .frame = 1, .task = 1),
	ROW(vfork, S(PR, ""), .handler = zv_sys_vfork, .frame = 1, .task = 1),
	ROW(execve, D(3, F | PR, execve), .handler = zv_sys_execve, .frame = 1, FSV(EXEC)),
	ROW(exit, R(PR, "d", '?'), .handler = zv_sys_exit, .strict = 1),
	ROW(wait4, D(4, PR, wait4), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), .ids = ZV_IDS_WAIT4),
	ROW(kill, S(SIG | PR, "de"), .pid = A(0), .ids = ZV_IDS_KILL, .restart = ZV_RS_NOWAIT),
	ROW(uname, D(1, 0, uname), .handler = zv_sys_uname, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(semget, N(3, IPC)),
	ROW(semop, N(3, IPC), .restart = ZV_RS_EINTR),
	ROW(semctl, N(4, IPC)),
	ROW(shmat, N(3, IPC | MEM), .handler = zv_sys_shmat, .mem = ZV_MEM_SHMAT),
	ROW(shmdt, N(1, IPC | MEM)),
	ROW(msgget, N(2, IPC)),
	ROW(msgsnd, N(4, IPC), .restart = ZV_RS_NOHAND),
	ROW(msgrcv, N(5, IPC), .restart = ZV_RS_NOHAND),
	ROW(msgctl, N(3, IPC)),
	ROW(fcntl, DR(3, DESC, fcntl, '=', fcntl_ret), .handler = zv_sys_fcntl, .fds = A(0), .quiet = ZV_QUIET_FDCMD, .fdop = ZV_FDOP_FCNTL),
	ROW(flock, D(2, DESC, flock), .fds = A(0), .restart = ZV_RS_SYS),
	ROW(fsync, S(DESC, "f"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(fdatasync, S(DESC, "f"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(truncate, S(F, "sD"), .handler = zv_sys_truncate, PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(ftruncate, S(DESC, "fD"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(getdents, D(3, DESC, getdents64), .fds = A(0), .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT), /* the same d_reclen offset */
	ROW(getcwd, D(2, F, getcwd), .quiet = ZV_QUIET_YES, FSV(CWD), .restart = ZV_RS_NOWAIT),
	ROW(chdir, S(F, "s"), FSV(CWD), .restart = ZV_RS_NOWAIT),
	ROW(fchdir, S(DESC, "f"), .fds = A(0), FSV(CWD), .restart = ZV_RS_NOWAIT),
	ROW(rename, S(F, "ss"), PATH2(FP(0, CREATE), FP(1, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(mkdir, S(F, "sm"), PATH1(FP(0, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(rmdir, S(F, "s"), PATH1(FP(0, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(creat, S(F | DESC, "sm"), .handler = zv_sys_path_call, .path = A(0), .opens = 1, PATH1(FP(0, OPEN))),
	ROW(link, S(F, "ss"), PATH2(FP(0, NOFOLLOW), FP(1, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(unlink, S(F, "s"), PATH1(FP(0, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(symlink, S(F, "ss"), PATH1(FP(1, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(readlink, D(3, F, readlink), .handler = zv_sys_path_call, .path = A(0), .quiet = ZV_QUIET_YES, .readlink = 1, PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(chmod, S(F, "sm"), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fchmod, S(DESC, "fm"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(chown, S(F, "sdd"), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fchown, S(DESC, "fdd"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(lchown, S(F, "sdd"), PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(umask, R(0, "m", 'o'), .restart = ZV_RS_NOWAIT),
	ROW(gettimeofday, D(2, CLK, gettimeofday), .time = zv_vt_gettimeofday, .time_read = 1, .restart = ZV_RS_NOWAIT),
	ROW(getrlimit, D(2, 0, getrlimit), .restart = ZV_RS_NOWAIT),
	ROW(getrusage, D(2, 0, getrusage), .restart = ZV_RS_NOWAIT),
	ROW(sysinfo, D(1, 0, sysinfo), .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(times, D(1, 0, times), .restart = ZV_RS_NOWAIT),
	ROW(ptrace, N(4, 0)), /* ptrace/request.c's layer */
	ROW(getuid, S(CRED | PURE, ""), .handler = zv_sys_id_get, .quiet = ZV_QUIET_YES, .cred = ZV_CRED_UID, .restart = ZV_RS_NOWAIT),
	ROW(syslog, N(3, 0)),
	ROW(getgid, S(CRED | PURE, ""), .handler = zv_sys_id_get, .quiet = ZV_QUIET_YES, .cred = ZV_CRED_GID, .restart = ZV_RS_NOWAIT),
	ROW(setuid, S(CRED, "d"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(setgid, S(CRED, "d"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(geteuid, S(CRED | PURE, ""), .handler = zv_sys_id_get, .quiet = ZV_QUIET_YES, .cred = ZV_CRED_EUID, .restart = ZV_RS_NOWAIT),
	ROW(getegid, S(CRED | PURE, ""), .handler = zv_sys_id_get, .quiet = ZV_QUIET_YES, .cred = ZV_CRED_EGID, .restart = ZV_RS_NOWAIT),
	ROW(setpgid, S(PR, "dd"), .handler = zv_sys_setpgid, .pid = A(0), .ids = ZV_IDS_SETPGID, .restart = ZV_RS_NOWAIT),
	ROW(getppid, S(PURE, ""), .quiet = ZV_QUIET_YES, .ppid = 1, .restart = ZV_RS_NOWAIT),
	ROW(getpgrp, S(PURE, ""), .ids = ZV_IDS_GROUP, .restart = ZV_RS_NOWAIT),
	ROW(setsid, S(PR, ""), .ids = ZV_IDS_GROUP, .restart = ZV_RS_NOWAIT),
	ROW(setreuid, S(CRED, "dd"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(setregid, S(CRED, "dd"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(getgroups, D(2, CRED, getgroups), .restart = ZV_RS_NOWAIT),
	ROW(setgroups, D(2, CRED, getgroups)),
	ROW(setresuid, S(CRED, "ddd"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(getresuid, D(3, CRED, getresuid), .restart = ZV_RS_NOWAIT),
	ROW(setresgid, S(CRED, "ddd"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(getresgid, D(3, CRED, getresuid), .restart = ZV_RS_NOWAIT),
	ROW(getpgid, S(PR, "d"), .pid = A(0), .ids = ZV_IDS_GROUP, .restart = ZV_RS_NOWAIT),
	ROW(setfsuid, S(CRED, "d"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(setfsgid, S(CRED, "d"), .handler = zv_sys_id_set, .restart = ZV_RS_NOWAIT),
	ROW(getsid, S(PR, "d"), .pid = A(0), .ids = ZV_IDS_GROUP, .restart = ZV_RS_NOWAIT),
	ROW(capget, D(2, CRED, capget), .restart = ZV_RS_NOWAIT),
	ROW(capset, D(2, CRED, capget), .handler = zv_sys_exec_note),
	ROW(rt_sigpending, D(2, SIG, rt_sigpending), .handler = zv_sys_rt_sigpending, .restart = ZV_RS_NOWAIT),
	ROW(rt_sigtimedwait, DR(4, SIG, rt_sigtimedwait, '=', signal_ret), .handler = zv_sys_sigmask_arg, .restart = ZV_RS_EINTR, .time = zv_vt_timespec, .timeout = A(2), .entry_args = ENTRY(1), .sigset = A(0), .sigsize = A(3)),
	ROW(rt_sigqueueinfo, D(3, SIG | PR, rt_sigqueueinfo), .pid = A(0), .restart = ZV_RS_NOWAIT),
	ROW(rt_sigsuspend, D(2, SIG, rt_sigsuspend), .handler = zv_sys_rt_sigsuspend, .restart = ZV_RS_NOHAND, .sigset = A(0), .sigsize = A(1)),
	ROW(sigaltstack, D(2, SIG, sigaltstack), .handler = zv_sys_sigaltstack, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(utime, N(2, F), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(mknod, S(F, "smx"), PATH1(FP(0, CREATE)), .restart = ZV_RS_NOWAIT),
	ROW(uselib, N(1, F), FSV(NOSYS)),
	ROW(personality, DR(1, 0, personality, '=', personality_ret), .handler = zv_sys_exec_note, .restart = ZV_RS_NOWAIT),
	ROW(statfs, D(2, F | ST, statfs), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fstatfs, D(2, DESC | ST, fstatfs), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(getpriority, D(2, 0, getpriority), .pid = ZV_PID_WHO_PRIO | A(1), .restart = ZV_RS_NOWAIT),
	ROW(setpriority, D(3, 0, getpriority), .pid = ZV_PID_WHO_PRIO | A(1)),
	ROW(sched_setparam, D(2, 0, sched_getparam), .pid = A(0)),
	ROW(sched_getparam, D(2, 0, sched_getparam), .pid = A(0)),
	ROW(sched_setscheduler, D(3, 0, sched_setscheduler), .pid = A(0)),
	ROW(sched_getscheduler, SR(0, "d", '=', policy_ret), .pid = A(0)),
	ROW(sched_get_priority_max, S(0, "d")),
	ROW(sched_get_priority_min, S(0, "d")),
	ROW(sched_rr_get_interval, S(0, "dT"), .pid = A(0)),
	ROW(mlock, S(MEM, "pU"), .restart = ZV_RS_NOWAIT),
	ROW(munlock, S(MEM, "pU"), .restart = ZV_RS_NOWAIT),
	ROW(modify_ldt, N(3, 0), .handler = zv_sys_exec_note),
	ROW(mlockall, SF(MEM, "", mlockall_flags), .handler = zv_sys_exec_note),
	ROW(munlockall, S(MEM, ""), .handler = zv_sys_exec_note),
	ROW(vhangup, S(0, "")),
	ROW(pivot_root, N(2, F), FSV(REFUSE)),
	ROW(prctl, DR(5, 0, prctl, '=', prctl_ret), .handler = zv_sys_prctl, .frame = 1),
	ROW(arch_prctl, D(2, 0, arch_prctl), .handler = zv_sys_arch_prctl, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(adjtimex, N(1, CLK)),
	ROW(setrlimit, D(2, 0, getrlimit), .handler = zv_sys_exec_note),
	ROW(chroot, S(F, "s"), .handler = zv_sys_chroot, FSV(CWD)),
	ROW(sync, S(0, ""), .restart = ZV_RS_NOWAIT),
	ROW(acct, N(1, F), FSV(REFUSE)),
	ROW(settimeofday, N(2, CLK)),
	ROW(mount, N(5, F), FSV(REFUSE)),
	ROW(umount2, SF(F, "s", umount_flags), FSV(REFUSE)),
	ROW(swapon, N(2, F), FSV(REFUSE)),
	ROW(swapoff, N(1, F), FSV(REFUSE)),
	ROW(reboot, N(4, 0)),
	ROW(sethostname, S(0, "wU")),
	ROW(setdomainname, S(0, "wU")),
	ROW(ioperm, N(3, 0)),
	ROW(init_module, N(3, 0)),
	ROW(delete_module, N(2, 0)),
	ROW(quotactl, N(4, F), PATH1(FP(1, FOLLOW))),
	ROW(gettid, S(PURE, ""), .handler = zv_sys_gettid, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(readahead, S(DESC, "fDU"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(setxattr, SF(F, "sSwU", xattr_flags), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(lsetxattr, SF(F, "sSwU", xattr_flags), PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fsetxattr, SF(DESC, "fSwU", xattr_flags), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(getxattr, D(4, F, getxattr), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(lgetxattr, D(4, F, getxattr), PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fgetxattr, D(4, DESC, getxattr), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(listxattr, S(F, "sbU"), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(llistxattr, S(F, "sbU"), PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(flistxattr, S(DESC, "fbU"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(removexattr, S(F, "sS"), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(lremovexattr, S(F, "sS"), PATH1(FP(0, NOFOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(fremovexattr, S(DESC, "fS"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(tkill, S(SIG, "de"), .pid = A(0), .restart = ZV_RS_NOWAIT),
	ROW(time, DR(1, CLK, time, '=', time_ret), .time = zv_vt_time, .time_read = 1, .restart = ZV_RS_NOWAIT),
	ROW(futex, D(6, 0, futex), .restart = ZV_RS_FUTEX, .time = zv_vt_futex, .resume = ZV_RESUME_FUTEX),
	ROW(sched_setaffinity, D(3, 0, sched_setaffinity), .pid = A(0), .restart = ZV_RS_NOWAIT),
	ROW(sched_getaffinity, D(3, 0, sched_getaffinity), .pid = A(0), .restart = ZV_RS_NOWAIT),
	ROW(io_setup, N(2, 0), .handler = zv_sys_exec_note),
	ROW(io_destroy, N(1, 0), .handler = zv_sys_exec_note),
	ROW(io_getevents, N(5, 0), .restart = ZV_RS_EINTR),
	ROW(io_submit, N(3, 0)),
	ROW(io_cancel, N(3, 0)),
	ROW(lookup_dcookie, N(3, 0)),
	ROW(epoll_create, S(DESC, "d"), .restart = ZV_RS_NOWAIT),
	ROW(remap_file_pages, N(5, MEM)),
	ROW(getdents64, D(3, DESC, getdents64), .handler = zv_sys_getdents64, .fds = A(0), .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(set_tid_address, S(0, "p"), .quiet = ZV_QUIET_YES, .handler = zv_sys_exec_note, .restart = ZV_RS_NOWAIT),
	ROW(restart_syscall, S(0, "")),
	ROW(semtimedop, N(4, IPC), .restart = ZV_RS_EINTR),
	ROW(fadvise64, D(4, DESC, fadvise64), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(timer_create, D(3, 0, timer_create), .time = zv_vt_timer_create, .handler = zv_sys_exec_note, .restart = ZV_RS_NOWAIT),
	ROW(timer_settime, D(4, 0, timer_settime), .time = zv_vt_settime, .restart = ZV_RS_NOWAIT),
	ROW(timer_gettime, D(2, 0, timer_gettime), .time = zv_vt_gettime, .restart = ZV_RS_NOWAIT),
	ROW(timer_getoverrun, S(0, "d"), .restart = ZV_RS_NOWAIT),
	ROW(timer_delete, S(0, "d"), .restart = ZV_RS_NOWAIT),
	ROW(clock_settime, S(CLK, "ct")),
	ROW(clock_gettime, S(CLK, "cT"), .time = zv_vt_clock_gettime, .time_read = 1, .restart = ZV_RS_NOWAIT),
	ROW(clock_getres, S(CLK, "cT"), .restart = ZV_RS_NOWAIT),
	ROW(clock_nanosleep, D(4, 0, clock_nanosleep), .restart = ZV_RS_CLOCK, .time = zv_vt_clock_nanosleep, .entry_args = ENTRY(3), .resume = ZV_RESUME_CLOCK_SLEEP),
	ROW(exit_group, R(PR, "d", '?'), .handler = zv_sys_exit_group),
	ROW(epoll_wait, D(4, DESC, epoll_wait), .fds = A(0), .restart = ZV_RS_NOHAND, .time = zv_vt_ms, .timeout = A(3), .entry_args = ENTRY(1), .resume = ZV_RESUME_MS),
	ROW(epoll_ctl, D(4, DESC, epoll_ctl), .fds = A(0) | A(2), .restart = ZV_RS_NOWAIT),
	ROW(tgkill, S(SIG, "dde"), .pid = A(0) | A(1), .restart = ZV_RS_NOWAIT),
	ROW(utimes, N(2, F), PATH1(FP(0, FOLLOW)), .restart = ZV_RS_NOWAIT),
	ROW(mbind, N(6, MEM)),
	ROW(set_mempolicy, N(3, MEM)),
	ROW(get_mempolicy, N(5, MEM)),
	ROW(mq_open, N(4, DESC)),
	ROW(mq_unlink, N(1, 0)),
	ROW(mq_timedsend, N(5, DESC)),
	ROW(mq_timedreceive, N(5, DESC)),
	ROW(mq_notify, N(2, DESC)),
	ROW(mq_getsetattr, N(3, DESC)),
	ROW(kexec_load, N(4, 0)),
	ROW(waitid, D(5, PR, waitid), .restart = ZV_RS_SYS, .entry_args = ENTRY(2), .ids = ZV_IDS_WAITID),
	ROW(add_key, N(5, 0)),
	ROW(request_key, N(4, 0)),
	ROW(keyctl, N(5, 0)),
	ROW(ioprio_set, S(0, "ddd"), .pid = ZV_PID_WHO_IOPRIO | A(1)),
	ROW(ioprio_get, S(0, "dd"), .pid = ZV_PID_WHO_IOPRIO | A(1)),
	ROW(inotify_init, S(DESC, ""), .restart = ZV_RS_NOWAIT),
	ROW(inotify_add_watch, N(3, DESC | F), .fds = A(0), PATH1(FPF(1, INOTIFY, 2))),
	ROW(inotify_rm_watch, S(DESC, "fd"), .fds = A(0)),
	ROW(migrate_pages, N(4, MEM), .pid = A(0)),
	ROW(openat, D(4, F | DESC, openat), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .quiet = ZV_QUIET_DIR, .oflags = A(2), .opens = 1, PATH1(FPAT(0, 1, OPEN, 2))),
	ROW(mkdirat, S(F | DESC, "asm"), .fds = A(0), PATH1(FPAT(0, 1, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(mknodat, S(F | DESC, "asmx"), .fds = A(0), PATH1(FPAT(0, 1, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(fchownat, S(F | DESC, "asddA"), .fds = A(0), .atflags = A(4), PATH1(FPAT(0, 1, AT, 4)), .restart = ZV_RS_NOWAIT),
	ROW(futimesat, N(3, F | DESC), .fds = A(0), PATH1(FPAT(0, 1, FOLLOW, -1)), .restart = ZV_RS_NOWAIT),
	ROW(newfstatat, D(4, F | DESC | ST, newfstatat), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .quiet = ZV_QUIET_YES, .atflags = A(3), PATH1(FPAT(0, 1, AT, 3)), .restart = ZV_RS_NOWAIT),
	ROW(unlinkat, S(F | DESC, "asA"), .fds = A(0), .atflags = A(2), PATH1(FPAT(0, 1, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(renameat, S(F | DESC, "asas"), .fds = A(0) | A(2), PATH2(FPAT(0, 1, CREATE, -1), FPAT(2, 3, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(linkat, S(F | DESC, "asasA"), .fds = A(0) | A(2), .atflags = A(4), PATH2(FPAT(0, 1, ATFOLLOW, 4), FPAT(2, 3, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(symlinkat, S(F | DESC, "sas"), .fds = A(1), PATH1(FPAT(1, 2, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(readlinkat, D(4, F | DESC, readlinkat), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .quiet = ZV_QUIET_YES, .readlink = 1, PATH1(FPAT(0, 1, NOFOLLOW, -1)), .restart = ZV_RS_NOWAIT),
	ROW(fchmodat, S(F | DESC, "asm"), .fds = A(0), PATH1(FPAT(0, 1, FOLLOW, -1)), .restart = ZV_RS_NOWAIT),
	ROW(faccessat, S(F | DESC, "ask"), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .quiet = ZV_QUIET_YES, PATH1(FPAT(0, 1, FOLLOW, -1)), .restart = ZV_RS_NOWAIT),
	ROW(pselect6, DR(6, DESC, select, '=', select_ret), .handler = zv_sys_masked_wait, .restart = ZV_RS_NOHAND, .time = zv_vt_timespec_left, .timeout = A(4), .sigset = A(5), .fdsets = A(1) | A(2) | A(3)),
	ROW(ppoll, DA(5, DESC, ppoll, poll_ret), .handler = zv_sys_masked_wait, .restart = ZV_RS_NOHAND, .time = zv_vt_timespec_left, .timeout = A(2), .sigset = A(3), .sigsize = A(4)),
	ROW(unshare, SF(PR, "", unshare_flags), .handler = zv_sys_id_set, .userns = ZV_USERNS_FLAG0),
	ROW(set_robust_list, S(0, "pU"), .quiet = ZV_QUIET_YES, .handler = zv_sys_exec_note, .restart = ZV_RS_NOWAIT),
	ROW(get_robust_list, N(3, 0), .pid = A(0), .restart = ZV_RS_NOWAIT),
	ROW(splice, D(6, DESC, splice), .fds = A(0) | A(2)),
	ROW(tee, SF(DESC, "ffU", splice_flags), .fds = A(0) | A(1)),
	ROW(sync_file_range, SF(DESC, "fDD", sync_file_range_flags), .fds = A(0)),
	ROW(vmsplice, N(4, DESC), .fds = A(0)),
	ROW(move_pages, N(6, MEM), .pid = A(0)),
	ROW(utimensat, D(4, F | DESC, utimensat), .fds = A(0), .atflags = A(3), PATH1(FPAT(0, 1, AT, 3)), .restart = ZV_RS_NOWAIT),
	ROW(epoll_pwait, D(6, DESC, epoll_wait), .handler = zv_sys_masked_wait, .fds = A(0), .restart = ZV_RS_NOHAND, .time = zv_vt_ms, .timeout = A(3), .entry_args = ENTRY(1), .resume = ZV_RESUME_MS, .sigset = A(4), .sigsize = A(5)),
	ROW(signalfd, D(3, DESC | SIG, signalfd4), .handler = zv_sys_sigmask_arg, .sigset = A(1), .sigsize = A(2), .restart = ZV_RS_NOWAIT),
	ROW(timerfd_create, SF(DESC, "c", tfd_create_flags), .restart = ZV_RS_NOWAIT),
	ROW(eventfd, S(DESC, "u"), .restart = ZV_RS_NOWAIT),
	ROW(fallocate, D(4, DESC, fallocate), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(timerfd_settime, D(4, DESC, timerfd_settime), .fds = A(0), .time = zv_vt_settime, .restart = ZV_RS_NOWAIT),
	ROW(timerfd_gettime, D(2, DESC, timerfd_gettime), .fds = A(0), .time = zv_vt_gettime, .restart = ZV_RS_NOWAIT),
	ROW(accept4, D(4, NET | DESC, getsockname), .fds = A(0), .restart = ZV_RS_SYS, .entry_args = ENTRY(1), .socklen = A(2), FSV(SOCKOUT)),
	ROW(signalfd4, D(4, DESC | SIG, signalfd4), .handler = zv_sys_sigmask_arg, .sigset = A(1), .sigsize = A(2), .restart = ZV_RS_NOWAIT),
	ROW(eventfd2, SF(DESC, "u", cloexec_nonblock), .restart = ZV_RS_NOWAIT),
	ROW(epoll_create1, SF(DESC, "", epoll_create_flags), .restart = ZV_RS_NOWAIT),
	ROW(dup3, SF(DESC, "ff", pipe_flags), .handler = zv_sys_dup2, .fdop = ZV_FDOP_DUP, .restart = ZV_RS_NOWAIT),
	ROW(pipe2, D(2, DESC, pipe2), .restart = ZV_RS_NOWAIT),
	ROW(inotify_init1, SF(DESC, "", inotify_flags), .restart = ZV_RS_NOWAIT),
	ROW(preadv, D(5, DESC, preadv), .fds = A(0), .entry_args = ENTRY(1), .reads = ZV_READS_IOV_AT),
	ROW(pwritev, D(5, DESC, preadv), .fds = A(0)),
	ROW(rt_tgsigqueueinfo, N(4, SIG | PR), .pid = A(0) | A(1), .restart = ZV_RS_NOWAIT),
	ROW(perf_event_open, N(5, DESC)),
	ROW(recvmmsg, N(5, NET | DESC), .fds = A(0), FSV(SOCKOUT)),
	ROW(fanotify_init, N(2, DESC)),
	ROW(fanotify_mark, N(5, DESC | F), .fds = A(0), PATH1(FPAT(3, 4, FANOTIFY, 1))),
	ROW(prlimit64, D(4, 0, prlimit64), .pid = A(0), .handler = zv_sys_exec_note, .restart = ZV_RS_NOWAIT),
	ROW(name_to_handle_at, N(5, F | DESC), .fds = A(0), .atflags = A(4), PATH1(FPAT(0, 1, ATFOLLOW, 4))),
	ROW(open_by_handle_at, N(3, DESC), .fds = A(0), .oflags = A(2), FSV(REFUSE)),
	ROW(clock_adjtime, N(2, CLK)),
	ROW(syncfs, S(DESC, "f"), .fds = A(0), .restart = ZV_RS_NOWAIT),
	ROW(sendmmsg, N(4, NET | DESC), .fds = A(0), FSV(SOCK)),
	ROW(setns, N(2, DESC), .handler = zv_sys_id_set, .fds = A(0), .userns = ZV_USERNS_MAY),
	ROW(getcpu, D(3, 0, getcpu), .restart = ZV_RS_NOWAIT),
	ROW(process_vm_readv, N(6, 0), .pid = A(0)),
	ROW(process_vm_writev, N(6, 0), .pid = A(0)),
	ROW(kcmp, N(5, 0), .pid = A(0) | A(1)),
	ROW(finit_module, N(3, DESC), .fds = A(0)),
	ROW(sched_setattr, N(3, 0), .pid = A(0)),
	ROW(sched_getattr, N(4, 0), .pid = A(0)),
	ROW(renameat2, SF(F | DESC, "asas", rename_flags), .fds = A(0) | A(2), PATH2(FPAT(0, 1, CREATE, -1), FPAT(2, 3, CREATE, -1)), .restart = ZV_RS_NOWAIT),
	ROW(seccomp, N(3, 0), .handler = zv_sys_seccomp, .frame = 1),
	ROW(getrandom, D(3, 0, getrandom), .entry_args = ENTRY(0)),
	ROW(memfd_create, SF(DESC, "S", memfd_flags), .restart = ZV_RS_NOWAIT),
	ROW(kexec_file_load, N(5, DESC)),
	ROW(bpf, N(3, DESC), FSV(BPF)),
	ROW(execveat, D(5, F | DESC | PR, execveat), .handler = zv_sys_execveat, .frame = 1, .fds = A(0), .atflags = A(4), FSV(EXEC)),
	ROW(userfaultfd, N(1, DESC)),
	ROW(membarrier, N(3, 0), .handler = zv_sys_exec_note),
	ROW(mlock2, N(3, MEM)),
	ROW(copy_file_range, D(6, DESC, copy_file_range), .fds = A(0) | A(2)),
	ROW(preadv2, D(6, DESC, preadv), .fds = A(0), .reads = ZV_READS_IOV_AT2),
	ROW(pwritev2, D(6, DESC, preadv), .fds = A(0)),
	ROW(pkey_mprotect, N(4, MEM), .handler = zv_sys_mm_call, .mem = ZV_MEM_PROTECT),
	ROW(pkey_alloc, N(2, 0)),
	ROW(pkey_free, N(1, 0)),
	ROW(statx, D(5, F | DESC | ST, statx), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .quiet = ZV_QUIET_YES, .atflags = A(2), PATH1(FPAT(0, 1, AT, 2)), .restart = ZV_RS_NOWAIT),
	ROW(io_pgetevents, N(6, 0), .restart = ZV_RS_EINTR),
	ROW(rseq, D(4, 0, rseq), .registers = 1, .quiet = ZV_QUIET_YES, .restart = ZV_RS_NOWAIT),
	ROW(pidfd_send_signal, S(DESC | SIG | PR, "fepu"), .fds = A(0)),
	ROW(io_uring_setup, N(2, DESC), .handler = zv_sys_exec_note, FSV(NOSYS)),
	ROW(io_uring_enter, N(6, DESC), .fds = A(0)),
	ROW(io_uring_register, N(4, DESC), .fds = A(0)),
	ROW(open_tree, N(3, F | DESC), .fds = A(0), .atflags = A(2), PATH1(FPAT(0, 1, AT, 2))),
	ROW(move_mount, N(5, F | DESC), .fds = A(0) | A(2), FSV(REFUSE)),
	ROW(fsopen, N(2, DESC), FSV(REFUSE)),
	ROW(fsconfig, N(5, DESC), .fds = A(0)),
	ROW(fsmount, N(3, DESC), FSV(REFUSE)),
	ROW(fspick, N(3, F | DESC), .fds = A(0), FSV(REFUSE)),
	ROW(pidfd_open, S(DESC, "du"), .pid = A(0)),
	ROW(clone3, D(2, PR, clone3), .handler = zv_sys_clone3, .frame = 1, .task = 1),
	ROW(close_range, SF(DESC, "uu", close_range_flags), .handler = zv_sys_close_range, .fdop = ZV_FDOP_CLOSE_RANGE),
	ROW(openat2, D(4, F | DESC, openat2), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .nofollow = ZV_NF_HOW, .opens = 1, PATH1(FPAT(0, 1, HOW, 2))),
	ROW(pidfd_getfd, N(3, DESC), .fds = A(0)),
	ROW(faccessat2, SF(F | DESC, "ask", faccessat_flags), .handler = zv_sys_path_call, .fds = A(0), .path = A(1), .quiet = ZV_QUIET_YES, .atflags = A(3), PATH1(FPAT(0, 1, AT, 3)), .restart = ZV_RS_NOWAIT),
	ROW(process_madvise, N(5, DESC), .fds = A(0), .pid = A(0)),
	ROW(epoll_pwait2, N(6, DESC), .handler = zv_sys_masked_wait, .fds = A(0), .restart = ZV_RS_NOHAND, .time = zv_vt_timespec, .timeout = A(3), .resume = ZV_RESUME_TS, .sigset = A(4), .sigsize = A(5)),
	ROW(mount_setattr, N(5, F | DESC), .fds = A(0), .atflags = A(2), FSV(REFUSE)),
	ROW(landlock_create_ruleset, N(3, DESC)),
	ROW(landlock_add_rule, N(4, DESC), .fds = A(0)),
	ROW(landlock_restrict_self, N(2, DESC), .fds = A(0)),
	ROW(memfd_secret, N(1, DESC)),
	ROW(process_mrelease, N(2, DESC)),
	ROW(futex_waitv, N(5, 0)),
	ROW(set_mempolicy_home_node, N(4, MEM)),
	[451] = { .fds = A(0) }, /* cachestat */
	[452] = { .fds = A(0), .atflags = A(3), PATH1(FPAT(0, 1, AT, 3)) }, /* fchmodat2 */
	[457] = { FSV(NOSYS) }, /* statmount: names the host's mounts */
	[458] = { FSV(NOSYS) }, /* listmount */
	[463] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 2)) }, /* setxattrat */
	[464] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 2)) }, /* getxattrat */
	[465] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 2)) }, /* listxattrat */
	[466] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 2)) }, /* removexattrat */
	[467] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 2)) }, /* open_tree_attr */
	[468] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 4)) }, /* file_getattr */
	[469] = { .fds = A(0), PATH1(FPAT(0, 1, AT, 4)) }, /* file_setattr */
};

const struct zv_sysent zv_sysent_none;

const char *zv_sysname(long nr)
{
	if ((unsigned long)nr >= 512)
		return NULL;
	if (zv_sysent[nr].name)
		return zv_sysent[nr].name;
	return (size_t)nr < sizeof zv_sysnames / sizeof zv_sysnames[0] ? zv_sysnames[nr] : NULL;
}

int zv_sys_restart_code(long nr, const long *a)
{
	switch (zv_row(nr)->restart) {
	case ZV_RS_SYS: return 512;   /* ERESTARTSYS */
	case ZV_RS_NOHAND: return 514; /* ERESTARTNOHAND */
	case ZV_RS_BLOCK: return 516;  /* ERESTART_RESTARTBLOCK */
	case ZV_RS_FUTEX: return a[3] ? 516 : 512;
	case ZV_RS_CLOCK: return a[1] & 1 /* TIMER_ABSTIME */ ? 514 : 516;
	default: return 0;
	}
}

int zv_sys_never_restarted(long nr, const long *a)
{
	int rs = zv_row(nr)->restart;
	return rs == ZV_RS_NOHAND || rs == ZV_RS_BLOCK || rs == ZV_RS_EINTR || (rs == ZV_RS_FUTEX && a[3]) ||
	       rs == ZV_RS_CLOCK;
}

/* i386 calls (int $0x80) that would take the process out of the kernel's
 * hands (a new image, a new task, signal state): refused rather than run
 * on the host. */
int zv_sys_i386_refused(uint32_t nr)
{
	switch (nr) {
	case 2: case 11: case 48: case 67: case 72: case 119: case 120: case 126: case 172:
	case 173: case 174: case 175: case 179: case 186: case 190: case 354: case 358: case 435:
		return 1; /* fork execve signal sigaction sigsuspend sigreturn clone
			   * sigprocmask prctl rt_sig{return,action,procmask,suspend}
			   * sigaltstack vfork seccomp execveat clone3 */
	default:
		return 0;
	}
}
