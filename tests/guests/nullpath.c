/* A NULL path or attribute name: EFAULT natively (LTP utimes01's
 * utimes(NULL, tv)). Under zpoline page 0 is the sled, readable without
 * protection keys, so the host reads a path at NULL as 4096 bytes without
 * a NUL (ENAMETOOLONG) and an xattr name as one too long (ERANGE):
 * intercept/page0args.c gives EFAULT back. Also what takes NULL as "no
 * path" and must keep working: utimensat(fd, NULL) on the fd itself, and a
 * NULL path at an address other than 0 in page 0 (EFAULT from page 1).
 * write and pwrite64 of a buffer in page 0: EFAULT and nothing written
 * (LTP pwrite02), after the errors that come first natively (EBADF, EINVAL,
 * ESPIPE); a write of 0 bytes is no error. writev's vector, memfd_create's
 * name, msgsnd's message at NULL: EFAULT after the earlier errors (LTP
 * memfd_create02, msgsnd02). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static const char *name(long r)
{
	static char buf[32];
	if (r >= 0)
		return "ok";
	switch (errno) {
	case EFAULT: return "EFAULT";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ERANGE: return "ERANGE";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case EINVAL: return "EINVAL";
	case ESPIPE: return "ESPIPE";
	default: snprintf(buf, sizeof buf, "errno %d", errno); return buf;
	}
}

#define T(what, expr) do { errno = 0; long r_ = (expr); printf("%-22s %s\n", what, name(r_)); } while (0)

int main(void)
{
	struct timeval tv[2] = { { 1000, 0 }, { 2000, 0 } };
	struct stat st;
	char buf[64];
	const char *mid = (const char *)16; /* in page 0, not at 0 */
	char tmp[64];
	snprintf(tmp, sizeof tmp, "/tmp/nullpath.%d", (int)getpid());
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(tmp);
		return 1;
	}
	T("open", syscall(SYS_open, NULL, O_RDONLY));
	T("openat", syscall(SYS_openat, AT_FDCWD, NULL, O_RDONLY));
	T("stat", syscall(SYS_stat, NULL, &st));
	T("newfstatat", syscall(SYS_newfstatat, AT_FDCWD, NULL, &st, 0));
	T("access", syscall(SYS_access, NULL, 0));
	T("chmod", syscall(SYS_chmod, NULL, 0644));
	T("utimes", syscall(SYS_utimes, NULL, tv));
	T("utime", syscall(SYS_utime, NULL, NULL));
	T("truncate", syscall(SYS_truncate, NULL, 0));
	T("mkdir", syscall(SYS_mkdir, NULL, 0755));
	T("unlink", syscall(SYS_unlink, NULL));
	T("chdir", syscall(SYS_chdir, NULL));
	T("readlink", syscall(SYS_readlink, NULL, buf, sizeof buf));
	T("rename old", syscall(SYS_rename, NULL, "nullpath.x"));
	T("rename new", syscall(SYS_rename, "nullpath.none", NULL));
	T("symlink target", syscall(SYS_symlink, NULL, "nullpath.x"));
	T("statfs", syscall(SYS_statfs, NULL, buf));
	T("getxattr path", syscall(SYS_getxattr, NULL, "user.x", buf, sizeof buf));
	T("getxattr name", syscall(SYS_getxattr, tmp, NULL, buf, sizeof buf));
	T("setxattr name", syscall(SYS_setxattr, tmp, NULL, "v", 1, 0));
	T("fremovexattr name", syscall(SYS_fremovexattr, fd, NULL));
	T("utimensat fd NULL", syscall(SYS_utimensat, fd, NULL, NULL, 0));
	T("utimensat cwd NULL", syscall(SYS_utimensat, AT_FDCWD, NULL, NULL, 0));
	T("futimesat fd NULL", syscall(SYS_futimesat, fd, NULL, tv));
	int ro = open("/dev/null", O_RDONLY), p[2];
	if (ro < 0 || pipe(p))
		return 1;
	T("write NULL", syscall(SYS_write, fd, NULL, 4));
	T("write page 0 + 16", syscall(SYS_write, fd, mid, 4));
	T("write NULL, 0 bytes", syscall(SYS_write, fd, NULL, 0));
	T("write NULL, bad fd", syscall(SYS_write, 999, NULL, 4));
	T("write NULL, read-only", syscall(SYS_write, ro, NULL, 4));
	T("write NULL to a pipe", syscall(SYS_write, p[1], NULL, 4));
	T("pwrite64 NULL", syscall(SYS_pwrite64, fd, NULL, 4, 0L));
	T("pwrite64 NULL, at -1", syscall(SYS_pwrite64, fd, NULL, 4, (long)-1));
	T("pwrite64 NULL, pipe", syscall(SYS_pwrite64, p[1], NULL, 4, 0L));
	T("writev NULL", syscall(SYS_writev, fd, NULL, 1));
	T("writev NULL, 0 vectors", syscall(SYS_writev, fd, NULL, 0));
	T("writev NULL, bad fd", syscall(SYS_writev, 999, NULL, 1));
	T("memfd_create NULL", syscall(SYS_memfd_create, NULL, 0));
	T("memfd_create NULL, bad flags", syscall(SYS_memfd_create, NULL, 0x80000000u));
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
		return 1;
	T("setsockopt NULL", syscall(SYS_setsockopt, sv[0], SOL_SOCKET, SO_SNDBUF, NULL, 4));
	T("setsockopt NULL, bad fd", syscall(SYS_setsockopt, 999, SOL_SOCKET, SO_SNDBUF, NULL, 4));
	T("sendto NULL", syscall(SYS_sendto, sv[0], NULL, 4, 0, NULL, 0));
	T("sendmsg NULL", syscall(SYS_sendmsg, sv[0], NULL, 0));
	int q = msgget(IPC_PRIVATE, 0600);
	if (q >= 0) {
		T("msgsnd NULL", syscall(SYS_msgsnd, q, NULL, 8, IPC_NOWAIT));
		msgctl(q, IPC_RMID, NULL);
	}
	printf("file size %ld\n", (long)lseek(fd, 0, SEEK_END));
	T("stat page 0 + 16", syscall(SYS_stat, mid, &st));
	T("unlink page 0 + 16", syscall(SYS_unlink, mid));
	close(fd);
	unlink(tmp);
	return 0;
}
