/* `zvisor check-elf FILE...`: what execve would say about each file, without
 * running anything. One line per file on stdout: "ok", or the errno's name
 * and the reason, e.g. "ENOEXEC 32-bit ELF is not supported". */
#include "loader/loader.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"

static const char *errname(int err)
{
	switch (err) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case E2BIG: return "E2BIG";
	case ENOEXEC: return "ENOEXEC";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case ENOTDIR: return "ENOTDIR";
	case EISDIR: return "EISDIR";
	case EINVAL: return "EINVAL";
	case ENFILE: return "ENFILE";
	case EMFILE: return "EMFILE";
	case ETXTBSY: return "ETXTBSY";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ELOOP: return "ELOOP";
	case ELIBBAD: return "ELIBBAD";
	case ENOSYS: return "ENOSYS";
	}
	return 0;
}

struct out {
	char buf[8192];
	size_t len;
};

static void flush(struct out *o)
{
	for (size_t done = 0; done < o->len;) {
		long r = zv_write(1, o->buf + done, o->len - done);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		done += r;
	}
	o->len = 0;
}

static void emit(struct out *o, const char *line)
{
	size_t n = zv_strlen(line);
	if (o->len + n + 1 > sizeof o->buf)
		flush(o);
	memcpy(o->buf + o->len, line, n);
	o->len += n;
	o->buf[o->len++] = '\n';
}

int zv_check_main(int argc, char **argv)
{
	struct zv_resolved r;
	struct out o;
	char line[200];
	o.len = 0;
	for (int i = 0; i < argc; i++) {
		int err = zv_exec_resolve(argv[i], 0, &r);
		if (!err) {
			emit(&o, "ok");
			continue;
		}
		const char *name = errname(-err);
		if (name)
			zv_snprintf(line, sizeof line, "%s %s", name, r.why[0] ? r.why : zv_strerror(-err));
		else
			zv_snprintf(line, sizeof line, "E%d %s", -err, r.why[0] ? r.why : zv_strerror(-err));
		emit(&o, line);
	}
	flush(&o);
	return 0;
}
