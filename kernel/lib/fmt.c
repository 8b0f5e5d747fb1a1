#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct out *o, unsigned long v, int base, int neg, int width, char pad, int left)
{
	char tmp[24];
	int n = 0;
	do { /* constant divisors: a multiply, not a div per digit */
		unsigned d = base == 16 ? (unsigned)(v & 15) : base == 8 ? (unsigned)(v & 7) : (unsigned)(v % 10);
		tmp[n++] = "0123456789abcdef"[d];
		v = base == 16 ? v >> 4 : base == 8 ? v >> 3 : v / 10;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	int len = n;
	if (!left)
		for (int i = len; i < width; i++)
			put(o, pad);
	while (n)
		put(o, tmp[--n]);
	if (left)
		for (int i = len; i < width; i++)
			put(o, ' ');
}

int zv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		int left = 0, width = 0, lng = 0;
		char pad = ' ';
		if (*fmt == '-')
			left = 1, fmt++;
		if (*fmt == '0')
			pad = '0', fmt++;
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z')
			lng = 1, fmt++;
		switch (*fmt) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			int n = (int)zv_strlen(s);
			if (!left)
				for (int i = n; i < width; i++)
					put(&o, ' ');
			while (*s)
				put(&o, *s++);
			if (left)
				for (int i = n; i < width; i++)
					put(&o, ' ');
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 'd':
		case 'i': {
			long v = lng ? va_arg(ap, long) : va_arg(ap, int);
			put_num(&o, v < 0 ? -(unsigned long)v : (unsigned long)v, 10, v < 0, width, pad, left);
			break;
		}
		case 'u':
			put_num(&o, lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 10, 0, width, pad, left);
			break;
		case 'x':
			put_num(&o, lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 16, 0, width, pad, left);
			break;
		case 'o':
			put_num(&o, lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned), 8, 0, width, pad, left);
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (unsigned long)va_arg(ap, void *), 16, 0, width, pad, left);
			break;
		case '%':
			put(&o, '%');
			break;
		default:
			put(&o, '%');
			if (*fmt)
				put(&o, *fmt);
			else
				fmt--;
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = 0;
	return (int)o.len;
}

int zv_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = zv_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

int zv_dprintf(int fd, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = zv_vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 1)
		n = sizeof buf - 1;
	zv_write(fd, buf, n);
	return n;
}

/* Messages for the errnos zvisor reports itself (as glibc words them). */
const char *zv_strerror(int err)
{
	switch (err) {
	case ENOENT: return "No such file or directory";
	case EACCES: return "Permission denied";
	case ENOEXEC: return "Exec format error";
	case ENOTDIR: return "Not a directory";
	case EISDIR: return "Is a directory";
	case ENOMEM: return "Cannot allocate memory";
	case E2BIG: return "Argument list too long";
	case ELOOP: return "Too many levels of symbolic links";
	case ENAMETOOLONG: return "File name too long";
	case EINVAL: return "Invalid argument";
	case EPERM: return "Operation not permitted";
	case EIO: return "Input/output error";
	case ETXTBSY: return "Text file busy";
	case EFAULT: return "Bad address";
	case ENOSYS: return "Function not implemented";
	case EMFILE: return "Too many open files";
	case EAGAIN: return "Resource temporarily unavailable";
	case EBADF: return "Bad file descriptor";
	case EBUSY: return "Device or resource busy";
	case EEXIST: return "File exists";
	case ENXIO: return "No such device or address";
	case EADDRINUSE: return "Address already in use";
	case ESRCH: return "No such process";
	case ENOSPC: return "No space left on device";
	case ETIMEDOUT: return "Connection timed out";
	case ECONNRESET: return "Connection reset by peer";
	case ECONNREFUSED: return "Connection refused";
	default: return "Unknown error";
	}
}
