/* The trace column of a system call's row (struct zv_sysent.trace): how
 * zvisor trace prints the call. The row is data: an argument count,
 * strace's classes, a signature of argument kinds, and the decoders for
 * structures and the flag tables named by id. The trace feature implements
 * every id (trace/dectab.c), so the table names none of its functions. */
#ifndef ZV_SYS_SYSDESC_H
#define ZV_SYS_SYSDESC_H
#include <stdint.h>

/* Syscall classes, as strace's %file, %process, ... */
enum {
	ZV_TC_FILE = 1 << 0,    /* takes a file name */
	ZV_TC_PROCESS = 1 << 1, /* process management */
	ZV_TC_NETWORK = 1 << 2,
	ZV_TC_SIGNAL = 1 << 3,
	ZV_TC_IPC = 1 << 4,
	ZV_TC_DESC = 1 << 5,    /* file descriptors */
	ZV_TC_MEMORY = 1 << 6,
	ZV_TC_CREDS = 1 << 7,
	ZV_TC_CLOCK = 1 << 8,
	ZV_TC_STAT = 1 << 9,    /* %stat, %lstat, %fstat, %statfs... share one bit here */
	ZV_TC_PURE = 1 << 10,   /* no arguments, never fail */
};

/* The decoders of whole argument lists (trace/decode_*.c: zv_dec_NAME). */
#define ZV_DECODERS(X) \
	X(open) X(openat) X(stat) X(fstat) X(newfstatat) X(poll) X(lseek) X(rt_sigaction) \
	X(rt_sigreturn) X(rt_sigsuspend) X(ioctl) X(readv) X(writev) X(pipe) X(pipe2) X(madvise) \
	X(socket) X(connect) X(clone) X(execve) X(execveat) X(wait4) X(uname) X(fcntl) X(getcwd) \
	X(readlink) X(readlinkat) X(prctl) X(arch_prctl) X(futex) X(getdents64) X(prlimit64) \
	X(getrandom) X(rseq) X(fadvise64) \
	X(statfs) X(fstatfs) X(statx) X(getxattr) \
	X(copy_file_range) X(utimensat) X(time) X(gettimeofday) X(setitimer) X(getitimer) \
	X(clock_nanosleep) X(nanosleep) X(timerfd_settime) X(timerfd_gettime) \
	X(timer_create) X(timer_settime) X(timer_gettime) X(sysinfo) X(getrusage) X(clone3) \
	X(sched_getaffinity) X(sched_setaffinity) X(sigaltstack) X(rt_sigtimedwait) \
	X(epoll_ctl) X(epoll_wait) X(ppoll) X(socketpair) X(sendto) \
	X(sendmsg) X(setsockopt) X(getsockname) X(getresuid) X(getgroups) X(waitid) X(flock) X(fallocate) \
	X(sendfile) X(mremap) X(shutdown) X(getrlimit) X(times) \
	X(rt_sigpending) X(signalfd4) X(select) X(personality) X(sched_getparam) X(sched_setscheduler) \
	X(preadv) X(splice) X(getpriority) X(rt_sigqueueinfo) \
	X(capget) X(getcpu) X(openat2)
/* The printers of results (ret '=') or of what follows them (after). */
#define ZV_RESULT_DECODERS(X) \
	X(poll_ret) X(fcntl_ret) X(time_ret) X(prctl_ret) X(signal_ret) X(personality_ret) \
	X(policy_ret) X(select_ret)
/* The flag tables a row's SF signature names (trace/names_*.c: zv_n_NAME). */
#define ZV_FLAG_TABLES(X) \
	X(cloexec_nonblock) X(close_range_flags) X(epoll_create_flags) X(faccessat_flags) \
	X(inotify_flags) X(memfd_flags) X(mlockall_flags) X(msync_flags) X(pipe_flags) \
	X(rename_flags) X(splice_flags) X(sync_file_range_flags) X(tfd_create_flags) \
	X(umount_flags) X(unshare_flags) X(xattr_flags)

#define ZV_DEC_ID(n) ZV_DEC_##n,
enum zv_decoder_id { ZV_DEC_NONE, ZV_DECODERS(ZV_DEC_ID) ZV_RESULT_DECODERS(ZV_DEC_ID) ZV_DEC_COUNT };
#define ZV_NAMES_ID(n) ZV_NAMES_##n,
enum zv_names_id { ZV_NAMES_NONE, ZV_FLAG_TABLES(ZV_NAMES_ID) ZV_NAMES_COUNT };
_Static_assert(ZV_DEC_COUNT <= 256 && ZV_NAMES_COUNT <= 256, "ids are bytes");

/* Argument kinds for struct zv_sysdesc.sig, one character per argument:
 *   d int    D long    u unsigned int    U unsigned long (size)   x hex
 *   p pointer    f fd    a dirfd (AT_FDCWD)    s path    S string (-s)
 *   m mode    o open flags    b buffer the call filled (length = result)
 *   w buffer the call read (length = next argument)    c clock id
 *   P mmap prot    F mmap flags    A AT_ flags    k access mode
 *   h sigprocmask how    g sigset (size = argument 4)    t timespec
 *   e signal number    T timespec the call filled (when it succeeded)
 * ret: 0 decimal, 'x' hex (mmap, brk), 'o' octal (umask), '?' never returns,
 *   '=' the after decoder prints a successful result itself. */
struct zv_sysdesc {
	uint8_t nargs;
	uint16_t classes;
	const char *sig;     /* NULL: all arguments in hex */
	uint8_t decode;      /* enum zv_decoder_id: the whole argument list, instead of sig */
	char ret;
	uint8_t after;       /* enum zv_decoder_id: printed after a successful result: " ([...])" */
	uint8_t flags;       /* enum zv_names_id: with sig, one more argument, flags by these names */
};
#endif
