/* Writing the image of a frozen process (every other thread parked): the
 * checks of what version 1 cannot save, then memory, the host's resources
 * and the index, into DIR.tmp.PID, renamed to DIR when whole. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/memory.h"
#include "cr/resources.h"
#include "cr/stream.h"
#include "cr/census.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/devnum.h"
#include <linux/fcntl.h>


/* Child processes: version 1 saves one process. */
static long refuse_children(struct zv_cr_out *o)
{
	for (int i = 0; i < zv_cr.nthreads; i++) {
		char path[64], buf[32];
		zv_snprintf(path, sizeof path, "/proc/self/task/%d/children", zv_cr.threads[i]->htid);
		long fd = zv_openat(-100, path, O_RDONLY | O_CLOEXEC, 0);
		if (fd < 0)
			continue;
		long n = zv_read((int)fd, buf, sizeof buf);
		zv_close((int)fd);
		if (n > 0)
			return zv_cr_refuse(o, "the program has child processes (zvisor checkpoint saves them with it)");
	}
	return 0;
}

/* The host's boot id (a UUID), or "" if unknown. */
void zv_cr_boot_id(char out[40])
{
	memset(out, 0, 40);
	long fd = zv_openat(-100, "/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	long n = zv_read((int)fd, out, 39);
	zv_close((int)fd);
	for (long i = 0; i < n; i++)
		if (out[i] == '\n')
			out[i] = 0;
}

/* A hex field (SigPnd:, ShdPnd:) of a status file. */
static uint64_t status_mask(const char *path, const char *key)
{
	char buf[4096];
	long fd = zv_openat(-100, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	long n = zv_read((int)fd, buf, sizeof buf - 1);
	zv_close((int)fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	size_t k = zv_strlen(key);
	for (const char *p = buf; p && *p; p = zv_strchr(p, '\n'), p = p ? p + 1 : p)
		if (!zv_strncmp(p, key, k)) {
			const char *e;
			p += k;
			while (*p == ' ' || *p == '\t')
				p++;
			return zv_parse_hex(p, &e);
		}
	return 0;
}

/* Signals the host holds pending (the guest blocks them): part of the
 * state, raised again at restore. SIGSYS and --checkpoint-on's are the
 * kernel's. */
static void note_pending(void)
{
	uint64_t ours = zv_kernel_signals();
	char path[64];
	zv_cr.shared_pending = status_mask("/proc/self/status", "ShdPnd:") & ~ours;
	for (int i = 0; i < zv_cr.nthreads; i++) {
		struct zv_thread *t = zv_cr.threads[i];
		zv_snprintf(path, sizeof path, "/proc/self/task/%d/status", t->htid);
		t->cr.pending = status_mask(path, "SigPnd:") & ~ours;
	}
}

/* Removes what a failed checkpoint wrote. */
static void discard(int dirfd, const char *tmp)
{
	char buf[4096];
	long n;
	/* Only section files and the index are there: a pass removes a
	 * buffer's worth; again from the start until a pass finds none. */
	for (int removed = 1; removed;) {
		removed = 0;
		zv_sys3(__NR_lseek, dirfd, 0, 0);
		while ((n = zv_sys3(__NR_getdents64, dirfd, buf, sizeof buf)) > 0) {
			for (long off = 0; off < n;) {
				struct { uint64_t ino; int64_t off; uint16_t reclen; uint8_t type; char name[]; } *d = (void *)(buf + off);
				off += d->reclen;
				if (d->name[0] != '.' && zv_sys3(__NR_unlinkat, dirfd, d->name, 0) == 0)
					removed = 1;
			}
		}
	}
	zv_close(dirfd);
	zv_sys3(__NR_unlinkat, -100, tmp, 0x200 /* AT_REMOVEDIR */);
}

/* The tree's census (in DIR's parent, cr/coord.c): 0, or -1 refused. */
static long read_census(struct zv_cr_out *o, struct zv_cr_census *census)
{
	char parent[4200];
	zv_strlcpy(parent, zv_cr.req.dir, sizeof parent);
	char *slash = zv_strrchr(parent, '/');
	if (slash)
		*slash = 0;
	long dfd = zv_openat(AT_FDCWD, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	long r = dfd < 0 ? dfd : zv_cr_census_read(census, (int)dfd, "census.bin");
	if (dfd >= 0)
		zv_close((int)dfd);
	return r < 0 ? zv_cr_refuse(o, "cannot read the tree's census: %s", zv_strerror((int)-r)) : 0;
}

/* The fds: what leads outside told by the tree's census or, a process
 * alone, by its own fds. */
static long save_fds(struct zv_cr_out *o, const struct zv_cr_census *census)
{
	struct zv_cr_fdopts opts = { .inherit = zv_cr.req.inherit, .ninherit = zv_cr.req.ninherit,
				     .tcp_close = zv_cr.req.tcp_close, .session = zv_cr.session };
	if (zv_cr.tree) {
		opts.census = census;
		opts.ninherit = 0;
	}
	return zv_cr_save_fds(o, &opts);
}

/* A session the program leads with a controlling terminal: the restore of
 * a tree makes it the session's again when it is a pseudo-terminal whose
 * master the tree holds (cr/fdpty.c); any other (the user's terminal) it
 * could not make, so the program would find itself without it. */
static long refuse_own_terminal(struct zv_cr_out *o, const struct zv_cr_census *census)
{
	char buf[512];
	long fd = zv_openat(-100, "/proc/self/stat", O_RDONLY | O_CLOEXEC, 0);
	long n = fd < 0 ? 0 : zv_read((int)fd, buf, sizeof buf - 1);
	if (fd >= 0)
		zv_close((int)fd);
	buf[n > 0 ? n : 0] = 0;
	const char *p = NULL;
	for (char *c = buf; *c; c++)
		if (*c == ')')
			p = c; /* after the name, which may hold anything */
	for (int field = 2; p && *p && field < 7; p++)
		field += *p == ' ';
	unsigned long tty = 0;
	while (p && *p >= '0' && *p <= '9')
		tty = tty * 10 + (unsigned long)(*p++ - '0');
	if (!tty || zv_sys1(__NR_getsid, 0) != zv_getpid())
		return 0;
	long pty = zv_cr_pts_index(tty); /* stat's tty_nr is encoded as st_rdev */
	if (zv_cr.tree && pty >= 0 && (zv_cr_census_pty_ends(census, (uint32_t)pty) & 1))
		return 0;
	return zv_cr_refuse(o, "the program leads its session, which has a controlling terminal (%u:%u): zvisor restore "
			    "makes it again only for a process tree that holds its pseudo-terminal's master",
			    zv_dev_major(tty), zv_dev_minor(tty));
}

long zv_cr_dump(struct zv_cr_out *o, struct zv_thread *self)
{
	(void)self;
	memset(o, 0, sizeof *o);
	memset(zv_cr.scratch, 0, sizeof zv_cr.scratch); /* an earlier checkpoint's is unmapped */
	zv_cr_scratch(o, sizeof *o);
	const char *dir = zv_cr.req.dir;
	char tmp[4200];
	zv_snprintf(tmp, sizeof tmp, "%s.tmp.%d", dir, (int)zv_getpid());
	if (zv_cr_dir_taken(dir))
		return zv_cr_refuse(o, "%s already exists and is not an empty directory", dir);
	struct zv_cr_census census = { 0 };
	long r = zv_cr.tree ? read_census(o, &census) : 0;
	if (r == 0)
		r = refuse_own_terminal(o, &census);
	if (r < 0) {
		zv_cr_census_free(&census);
		return -1;
	}
	r = zv_sys2(__NR_mkdir, tmp, 0700);
	if (r < 0) {
		zv_cr_census_free(&census);
		return zv_cr_refuse(o, "cannot create %s: %s", tmp, zv_strerror((int)-r));
	}
	r = zv_openat(-100, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (r < 0) {
		zv_cr_census_free(&census);
		return zv_cr_refuse(o, "cannot open %s: %s", tmp, zv_strerror((int)-r));
	}
	o->dirfd = (int)r;
	struct zv_cr_layout l;
	zv_cr_image_layout(&l);
	struct zv_cr_meta meta = { .pid = zv_proc.pid, .ppid = (int)zv_cr_guest_ppid(zv_sys0(__NR_getppid)),
				   .nthreads = zv_cr.nthreads, .platform = zv_proc.platform,
				   .pgid = (int)zv_cr_guest_group(zv_sys1(__NR_getpgid, 0)),
				   .sid = (int)zv_cr_guest_group(zv_sys1(__NR_getsid, 0)) };
	if (zv_cr.session >= 0) { /* the program stopped at the freeze, not at its dump */
		meta.mono = zv_cr.frozen_mono;
		meta.boot = zv_cr.frozen_boot;
	} else {
		zv_time_now(&meta.mono, &meta.boot);
	}
	zv_cr_boot_id(meta.boot_id);
	note_pending();
	r = zv_cr.tree ? 0 : refuse_children(o);
	if (r == 0)
		r = zv_cr_put(o, "meta", &meta, sizeof meta);
	if (r == 0)
		r = save_fds(o, &census);
	zv_cr_census_free(&census);
	if (r == 0)
		r = zv_cr_save_timers(o);
	if (r == 0)
		r = zv_cr_save_memory(o); /* last: the kernel's data as the others left it */
	if (r == 0)
		r = zv_cr_write_index(o, l.build);
	if (r == 0 && zv_sys4(__NR_renameat, -100, tmp, -100, dir) < 0)
		r = zv_cr_refuse(o, "cannot rename %s to %s", tmp, dir);
	if (r < 0) {
		discard(o->dirfd, tmp);
		return -1;
	}
	zv_close(o->dirfd);
	return 0;
}
