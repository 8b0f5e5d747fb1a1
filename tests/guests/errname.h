/* The name of an errno, for guests that print what a call gave (the same
 * text natively and under zvisor, with glibc and musl alike). */
#include <errno.h>
#include <stdio.h>

static const char *errname(int e)
{
	static char buf[32];
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EINVAL: return "EINVAL";
	case E2BIG: return "E2BIG";
	case ENOTDIR: return "ENOTDIR";
	case ETXTBSY: return "ETXTBSY";
	case ELOOP: return "ELOOP";
	case EXDEV: return "EXDEV";
	case ENOSYS: return "ENOSYS";
	case EEXIST: return "EEXIST";
	case EISDIR: return "EISDIR";
	case ENOTEMPTY: return "ENOTEMPTY";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case EROFS: return "EROFS";
	case EBUSY: return "EBUSY";
	case ENOEXEC: return "ENOEXEC";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODATA: return "ENODATA";
	default:
		snprintf(buf, sizeof buf, "errno %d", e);
		return buf;
	}
}
