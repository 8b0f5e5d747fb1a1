/* Pseudo-terminals whose master the saved processes hold (the shape of
 * script, expect, a terminal multiplexer's server, an ssh session): the
 * master's record carries the terminal's state (termios, window size, lock
 * and packet mode, its session and foreground group), each end of the
 * terminal (/dev/pts/N) its number. The restore makes one new pty per
 * master (its number is the host's choice), gives the master's records that
 * one description and each terminal's record a description of its own
 * (cr/objects.c); cr/treerestore.c makes the terminal its session's again.
 * The bytes queued either way cannot be read without taking them: a
 * queue that is not empty refuses the checkpoint. */
#include "cr/fdent.h"
#include "cr/fdrestore.h"
#include "cr/cr.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define TCGETS_ 0x5401
#define TCSETS_ 0x5402
#define TIOCGWINSZ_ 0x5413
#define TIOCSWINSZ_ 0x5414
#define FIONREAD_ 0x541b
#define TIOCPKT_ 0x5420
#define TIOCGPGRP_ 0x540f
#define TIOCGSID_ 0x5429
#define TIOCSPTLCK_ 0x40045431
#define TIOCGPKT_ 0x80045438
#define TIOCGPTLCK_ 0x80045439
#define TIOCGPTPEER_ 0x5441

/* --- at the checkpoint --- */

static long queued(struct zv_cr_out *o, const struct zv_cr_ent *e)
{
	int n = 0;
	if (zv_sys3(__NR_ioctl, e->fd, FIONREAD_, &n) == 0 && n > 0)
		return zv_cr_refuse(o, "fd %d (%s): %d bytes wait to be read from this pseudo-terminal "
				    "(zvisor checkpoint cannot save a pseudo-terminal's queue)", e->fd, e->link, n);
	return 0;
}

long zv_cr_describe_pty(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec)
{
	rec->u.pty.index = (uint32_t)e->pty;
	if (queued(o, e) < 0)
		return -1;
	if (e->kind == ZV_CRFD_PTS)
		return 0;
	/* on the master, these calls answer for its terminal */
	int v = 0;
	if (zv_sys3(__NR_ioctl, e->fd, TCGETS_, rec->u.pty.termios) < 0 ||
	    zv_sys3(__NR_ioctl, e->fd, TIOCGWINSZ_, rec->u.pty.winsize) < 0)
		return zv_cr_refuse(o, "fd %d (%s): cannot read the pseudo-terminal's settings", e->fd, e->link);
	rec->u.pty.locked = zv_sys3(__NR_ioctl, e->fd, TIOCGPTLCK_, &v) == 0 && v;
	rec->u.pty.packet = zv_sys3(__NR_ioctl, e->fd, TIOCGPKT_, &v) == 0 && v;
	if (zv_sys3(__NR_ioctl, e->fd, TIOCGSID_, &v) == 0 && v > 0) {
		rec->u.pty.sid = (int32_t)zv_cr_guest_group(v);
		if (zv_sys3(__NR_ioctl, e->fd, TIOCGPGRP_, &v) == 0 && v > 0)
			rec->u.pty.pgrp = (int32_t)zv_cr_guest_group(v);
	}
	return 0;
}

/* --- at the restore --- */

/* The pty for master record r: a new pair, unlocked, its terminal opened
 * (without becoming anyone's controlling terminal), with the saved
 * settings. */
long zv_cr_make_pty(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	if (zv_cr_obj_find(c, ZV_CRFD_PTM, r->u.pty.index))
		return 0;
	struct zv_cr_obj *o = zv_cr_obj_new(c, ZV_CRFD_PTM, r->u.pty.index, p, r);
	if (!o)
		return zv_cr_fd_fail(c, r, "out of memory", 0);
	int unlock = 0;
	long m = zv_openat(AT_FDCWD, "/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC, 0);
	if (m < 0)
		return zv_cr_fd_fail(c, r, "cannot open /dev/ptmx", m);
	long k = zv_sys3(__NR_ioctl, m, TIOCSPTLCK_, &unlock);
	long s = k < 0 ? k : zv_sys3(__NR_ioctl, m, TIOCGPTPEER_, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s >= 0) {
		o->fd = zv_cr_spare(c, (int)m);
		o->other = zv_cr_spare(c, (int)s);
		zv_close((int)s);
	}
	zv_close((int)m);
	if (s < 0)
		return zv_cr_fd_fail(c, r, "cannot open a new pseudo-terminal", s);
	if (o->fd < 0 || o->other < 0)
		return zv_cr_fd_fail(c, r, "no fd free for a pseudo-terminal", -EMFILE);
	int pkt = (int)r->u.pty.packet;
	if ((k = zv_sys3(__NR_ioctl, o->fd, TCSETS_, r->u.pty.termios)) < 0 ||
	    (k = zv_sys3(__NR_ioctl, o->fd, TIOCSWINSZ_, r->u.pty.winsize)) < 0 ||
	    (pkt && (k = zv_sys3(__NR_ioctl, o->fd, TIOCPKT_, &pkt)) < 0))
		return zv_cr_fd_fail(c, r, "cannot give the pseudo-terminal its settings", k);
	return 0;
}

/* A description for record r of process p: the master's one, or a
 * terminal's own (opened as the original was, without becoming a
 * controlling terminal). */
long zv_cr_pty_end(struct zv_cr_rctx *c, int p, const struct zv_cr_fd *r)
{
	struct zv_cr_obj *o = zv_cr_obj_find(c, ZV_CRFD_PTM, r->u.pty.index);
	if (!o)
		return zv_cr_fd_fail(c, r, "its pseudo-terminal's master is not in the image (damaged image)", 0);
	if (r->kind == ZV_CRFD_PTM) {
		zv_sys3(__NR_fcntl, o->fd, F_SETFL, r->flags & (O_APPEND | O_NONBLOCK));
		return zv_cr_add_made(c, p, r->fd, o->fd);
	}
	char path[48];
	zv_snprintf(path, sizeof path, "/proc/self/fd/%d", o->other);
	long fd = zv_openat(AT_FDCWD, path, (int)((r->flags & (3 | O_APPEND | O_NONBLOCK)) | O_NOCTTY | O_CLOEXEC), 0);
	if (fd < 0)
		return zv_cr_fd_fail(c, r, "cannot open its pseudo-terminal again", fd);
	int s = zv_cr_spare(c, (int)fd);
	zv_close((int)fd);
	return s < 0 ? zv_cr_fd_fail(c, r, "no fd free", s) : zv_cr_add_made(c, p, r->fd, s);
}

/* Once every end is open: locked again if it was (no one else may open
 * the terminal by its name). */
void zv_cr_pty_finish(struct zv_cr_rctx *c, const struct zv_cr_fd *r)
{
	struct zv_cr_obj *o = zv_cr_obj_find(c, ZV_CRFD_PTM, r->u.pty.index);
	int lock = 1;
	if (o && o->rec == r && r->u.pty.locked)
		zv_sys3(__NR_ioctl, o->fd, TIOCSPTLCK_, &lock);
}
