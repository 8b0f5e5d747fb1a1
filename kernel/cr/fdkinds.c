/* Each kind of fd described into its checkpoint record (cr/fdimage.h):
 * files by path, pipes with their bytes, eventfd, timerfd, signalfd,
 * epoll sets and listening sockets with what fdinfo and the host's calls
 * tell of them. */
#include "cr/fdent.h"
#include "cr/procfile.h"
#include "cr/cr.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define SPLICE_F_NONBLOCK_ 2
#define POLLIN_ 1

static long refuse_fd(struct zv_cr_out *o, const struct zv_cr_ent *e, const char *why)
{
	return zv_cr_refuse(o, "fd %d (%s): %s", e->fd, e->link, why);
}

static long describe_path(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec,
			  struct zv_cr_extra *x)
{
	const char *path = e->link;
	if (e->kind == ZV_CRFD_CHR) {
		path = zv_cr_dev_names[zv_cr_dev_index(e->st.st_rdev)];
	} else {
		struct stat st;
		int nofollow = (e->st.st_mode & ZV_S_IFMT) == ZV_S_IFLNK ? AT_SYMLINK_NOFOLLOW : 0;
		if (zv_sys4(__NR_newfstatat, AT_FDCWD, path, &st, nofollow) < 0 ||
		    st.st_dev != e->st.st_dev || st.st_ino != e->st.st_ino)
			return refuse_fd(o, e, "the file was renamed or replaced since it was opened");
	}
	rec->u.file.size = e->st.st_size;
	rec->u.file.ino = e->st.st_ino;
	rec->u.file.dev = e->st.st_dev;
	rec->u.file.mtime_sec = (int64_t)e->st.st_mtime;
	rec->u.file.mtime_nsec = (int64_t)e->st.st_mtime_nsec;
	x->p = (void *)path;
	rec->len = (uint32_t)zv_strlen(path) + 1;
	return 0;
}

/* The bytes in the pipe read through fd, copied with tee(2) into a pipe of
 * our own and read from there: the guest's pipe keeps them. */
static long pipe_bytes(struct zv_cr_out *o, struct zv_cr_ent *e, uint32_t size, struct zv_cr_extra *x)
{
	int p[2];
	long r = zv_sys2(__NR_pipe2, p, O_CLOEXEC | O_NONBLOCK);
	if (r < 0)
		return refuse_fd(o, e, "no pipe to copy its bytes through");
	if (zv_sys3(__NR_fcntl, p[1], F_SETPIPE_SZ, size) < (long)size) {
		r = refuse_fd(o, e, "cannot make a pipe as large to copy its bytes");
		goto out;
	}
	long n = zv_sys4(__NR_tee, e->fd, p[1], size, SPLICE_F_NONBLOCK_);
	if (n == -EAGAIN)
		n = 0;
	if (n < 0) {
		r = refuse_fd(o, e, "cannot copy the pipe's bytes (tee)");
		goto out;
	}
	r = 0;
	if (n == 0)
		goto out;
	x->size = (size_t)n;
	x->p = zv_cr_kalloc(x->size);
	if (!x->p) {
		x->size = 0;
		r = refuse_fd(o, e, "out of memory for the pipe's bytes");
		goto out;
	}
	for (long got = 0; got < n;) {
		long k = zv_read(p[0], (char *)x->p + got, n - got);
		if (k <= 0) {
			r = refuse_fd(o, e, "cannot read the pipe's bytes back");
			goto out;
		}
		got += k;
	}
out:
	zv_close(p[0]);
	zv_close(p[1]);
	return r;
}

/* A pipe's end, or a FIFO's (its path first): the bytes go with the
 * first reading end of each. */
static long describe_pipe(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			  struct zv_cr_fd *rec, struct zv_cr_extra *x)
{
	long size = zv_sys3(__NR_fcntl, e->fd, F_GETPIPE_SZ, 0);
	if (size < 0)
		return refuse_fd(o, e, "F_GETPIPE_SZ failed");
	rec->u.pipe.id = e->st.st_ino;
	rec->u.pipe.size = (uint32_t)size;
	int first = (e->flags & 3) != O_WRONLY;
	for (struct zv_cr_ent *f = s->e; f < e && first; f++)
		if (f->kind == e->kind && f->dup_of < 0 && f->st.st_ino == e->st.st_ino &&
		    f->st.st_dev == e->st.st_dev && (f->flags & 3) != O_WRONLY)
			first = 0;
	struct zv_cr_extra bytes = { 0 };
	long r = first ? pipe_bytes(o, e, (uint32_t)size, &bytes) : 0;
	if (r < 0 || e->kind == ZV_CRFD_PIPE) {
		*x = bytes;
		rec->len = (uint32_t)x->size;
		return r;
	}
	uint32_t plen = (uint32_t)zv_strlen(e->link) + 1, at = zv_cr_pad8(plen);
	x->size = at + bytes.size;
	x->p = zv_cr_kalloc(x->size);
	if (!x->p) {
		x->size = 0;
		zv_cr_extra_free(&bytes);
		return refuse_fd(o, e, "out of memory");
	}
	memcpy(x->p, e->link, plen);
	if (bytes.size)
		memcpy((char *)x->p + at, bytes.p, bytes.size);
	zv_cr_extra_free(&bytes);
	rec->u.pipe.pathlen = plen;
	rec->len = (uint32_t)x->size;
	return 0;
}

#define MEMFD_MAX (1UL << 30)

/* The record's extra bytes: a name of namelen bytes (its last the NUL),
 * then the fd's size bytes of contents, read with pread (the fd's offset
 * stays); what names them in a refusal. */
static long name_and_contents(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec,
			      struct zv_cr_extra *x, const char *name, uint32_t namelen, uint64_t size,
			      const char *what)
{
	char msg[80];
	x->size = namelen + size;
	x->p = zv_cr_kalloc(x->size);
	if (!x->p) {
		x->size = 0;
		zv_snprintf(msg, sizeof msg, "out of memory for %s", what);
		return refuse_fd(o, e, msg);
	}
	memcpy(x->p, name, namelen - 1);
	((char *)x->p)[namelen - 1] = 0;
	char *data = (char *)x->p + namelen;
	for (uint64_t got = 0; got < size;) {
		long k = zv_sys4(__NR_pread64, e->fd, data + got, size - got, got);
		if (k <= 0) {
			zv_snprintf(msg, sizeof msg, "cannot read %s", what);
			return refuse_fd(o, e, msg);
		}
		got += (uint64_t)k;
	}
	rec->len = (uint32_t)x->size;
	return 0;
}

/* A memfd's name and contents (read with pread: the fd's offset stays). */
static long describe_memfd(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec,
			   struct zv_cr_extra *x)
{
	const char *name = e->link + 7; /* "/memfd:NAME (deleted)" */
	uint32_t namelen = (uint32_t)(zv_strlen(name) - 10 + 1);
	uint64_t size = e->st.st_size;
	if (size > MEMFD_MAX)
		return refuse_fd(o, e, "a memfd larger than 1 GiB");
	if ((e->flags & 3) == O_WRONLY)
		return refuse_fd(o, e, "a write-only memfd");
	long seals = zv_sys3(__NR_fcntl, e->fd, F_GET_SEALS, 0);
	rec->u.memfd.size = size;
	rec->u.memfd.ino = e->st.st_ino;
	rec->u.memfd.seals = seals < 0 ? 0 : (uint32_t)seals;
	rec->u.memfd.namelen = namelen;
	return name_and_contents(o, e, rec, x, name, namelen, size, "the memfd's contents");
}

/* Whether the process maps inode ino of a deleted file (or cannot tell). */
static int deleted_mapped(uint64_t ino)
{
	for (size_t size = 1UL << 20; size <= 1UL << 28; size *= 4) {
		char *buf = zv_cr_kalloc(size);
		if (!buf)
			return 1;
		long n = zv_cr_read_file("/proc/self/maps", buf, size);
		int hit = n < 0;
		for (const char *l = n >= 0 ? buf : NULL; l && !hit; l = zv_cr_next_line(l)) {
			const char *p = l, *e = zv_strchr(l, '\n');
			for (int f = 0; f < 4 && p; f++) /* to the inode, the fifth field */
				if ((p = zv_strchr(p, ' ')))
					while (*p == ' ')
						p++;
			e = e ? e : l + zv_strlen(l);
			hit = p && p < e && (uint64_t)zv_cr_dec(p, NULL) == ino && e - l > 10 &&
			      !memcmp(e - 10, " (deleted)", 10);
		}
		zv_cr_kfree(buf, size);
		if (hit || (n >= 0 && (size_t)n + 1 < size))
			return hit;
	}
	return 1;
}

/* A regular file deleted while open: the path it had and its contents
 * (pread: the fd's offset stays), made again in its directory at restore. */
static long describe_deleted(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec,
			     struct zv_cr_extra *x)
{
	uint32_t pathlen = (uint32_t)(zv_strlen(e->link) - 10 + 1); /* "PATH (deleted)" */
	uint64_t size = e->st.st_size;
	if (size > MEMFD_MAX)
		return refuse_fd(o, e, "the file was deleted, and it is larger than 1 GiB");
	if ((e->flags & 3) == O_WRONLY)
		return refuse_fd(o, e, "the file was deleted, and it is open only for writing (its contents cannot be read)");
	if (deleted_mapped(e->st.st_ino))
		return refuse_fd(o, e, "the file was deleted, and it is mapped too");
	rec->u.deleted.size = size;
	rec->u.deleted.ino = e->st.st_ino;
	rec->u.deleted.mode = e->st.st_mode & 07777;
	rec->u.deleted.pathlen = pathlen;
	rec->u.deleted.mtime_sec = (int64_t)e->st.st_mtime;
	rec->u.deleted.mtime_nsec = (int64_t)e->st.st_mtime_nsec;
	return name_and_contents(o, e, rec, x, e->link, pathlen, size, "the deleted file's contents");
}

static long describe_eventfd(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			     struct zv_cr_fd *rec)
{
	const char *v;
	if (zv_cr_fdinfo(s, e->fd) < 0 || !(v = zv_cr_field(s->info, "eventfd-count:")))
		return refuse_fd(o, e, "its fdinfo has no eventfd-count");
	rec->u.eventfd.count = zv_cr_hex(v, NULL);
	v = zv_cr_field(s->info, "eventfd-semaphore:");
	rec->u.eventfd.semaphore = v && zv_cr_dec(v, NULL) != 0;
	return 0;
}

struct its { int64_t isec, insec, vsec, vnsec; };

static long describe_timerfd(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			     struct zv_cr_fd *rec)
{
	const char *c, *t, *f;
	struct its its;
	if (zv_cr_fdinfo(s, e->fd) < 0 || !(c = zv_cr_field(s->info, "clockid:")) ||
	    !(t = zv_cr_field(s->info, "ticks:")) || !(f = zv_cr_field(s->info, "settime flags:")) ||
	    zv_sys2(__NR_timerfd_gettime, e->fd, &its) < 0)
		return refuse_fd(o, e, "cannot read the timerfd's state");
	rec->u.timerfd.clockid = (int32_t)zv_cr_dec(c, NULL);
	rec->u.timerfd.ticks = (uint64_t)zv_cr_dec(t, NULL);
	rec->u.timerfd.settime_flags = (uint32_t)zv_cr_oct(f, NULL);
	rec->u.timerfd.value_ns = its.vsec * 1000000000 + its.vnsec;
	rec->u.timerfd.interval_ns = its.isec * 1000000000 + its.insec;
	return 0;
}

static long describe_signalfd(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			      struct zv_cr_fd *rec)
{
	const char *v;
	if (zv_cr_fdinfo(s, e->fd) < 0 || !(v = zv_cr_field(s->info, "sigmask:")))
		return refuse_fd(o, e, "its fdinfo has no sigmask");
	rec->u.sigmask = zv_cr_hex(v, NULL);
	return 0;
}

/* The value after key on the line at l, or NULL. */
static const char *on_line(const char *l, const char *key)
{
	size_t n = zv_strlen(key);
	for (; *l && *l != '\n'; l++)
		if (zv_strncmp(l, key, n) == 0)
			return l + n;
	return NULL;
}

/* The kernel's dev_t (fdinfo sdev:) as stat's. */
static unsigned long stat_dev(unsigned long kdev)
{
	unsigned long major = kdev >> 20, minor = kdev & 0xfffff;
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffUL) << 12);
}

static long describe_epoll(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
			   struct zv_cr_fd *rec, struct zv_cr_extra *x)
{
	long len = zv_cr_fdinfo(s, e->fd);
	if (len < 0)
		return refuse_fd(o, e, "cannot read the epoll set");
	unsigned n = 0;
	for (const char *l = s->info; l; l = zv_cr_next_line(l))
		n += zv_startswith(l, "tfd:");
	rec->u.epoll.ntargets = n;
	if (!n)
		return 0;
	x->size = n * sizeof(struct zv_cr_epoll_target);
	x->p = zv_cr_kalloc(x->size);
	if (!x->p) {
		x->size = 0;
		return refuse_fd(o, e, "out of memory for the epoll set");
	}
	struct zv_cr_epoll_target *t = x->p;
	for (const char *l = s->info; l; l = zv_cr_next_line(l)) {
		if (!zv_startswith(l, "tfd:"))
			continue;
		const char *ev = on_line(l, "events:"), *data = on_line(l, "data:");
		const char *ino = on_line(l, "ino:"), *sdev = on_line(l, "sdev:");
		if (!ev || !data || !ino || !sdev)
			return refuse_fd(o, e, "cannot parse the epoll set's fdinfo");
		t->fd = (int32_t)zv_cr_dec(l + 4, NULL);
		t->events = (uint32_t)zv_cr_hex(ev, NULL);
		t->data = zv_cr_hex(data, NULL);
		const struct zv_cr_ent *g = NULL;
		for (unsigned i = 0; i < s->n && !g; i++)
			if (s->e[i].fd == t->fd)
				g = &s->e[i];
		if (!g || g->st.st_ino != zv_cr_hex(ino, NULL) || g->st.st_dev != stat_dev(zv_cr_hex(sdev, NULL))) {
			char why[96];
			zv_snprintf(why, sizeof why, "watches fd %d, which was closed or replaced since", t->fd);
			return refuse_fd(o, e, why);
		}
		t++;
	}
	rec->len = (uint32_t)x->size;
	return 0;
}

/* A socket's domain, type, protocol, IPV6_V6ONLY and name into u.sock. */
static long sock_names(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec)
{
	int *sock[] = { &rec->u.sock.domain, &rec->u.sock.type, &rec->u.sock.protocol };
	static const int opt[] = { 39 /* SO_DOMAIN */, 3 /* SO_TYPE */, 38 /* SO_PROTOCOL */ };
	for (int i = 0; i < 3; i++) {
		int len = sizeof(int);
		if (zv_sys5(__NR_getsockopt, e->fd, 1 /* SOL_SOCKET */, opt[i], sock[i], &len) < 0)
			return refuse_fd(o, e, "cannot read the socket's options");
	}
	if (rec->u.sock.domain == 10 /* AF_INET6 */) {
		int len = sizeof(int);
		zv_sys5(__NR_getsockopt, e->fd, 41 /* IPPROTO_IPV6 */, 26 /* IPV6_V6ONLY */, &rec->u.sock.v6only, &len);
	}
	int alen = sizeof rec->u.sock.addr;
	if (zv_sys3(__NR_getsockname, e->fd, rec->u.sock.addr, &alen) < 0)
		return refuse_fd(o, e, "getsockname failed");
	rec->u.sock.addrlen = (uint32_t)alen;
	rec->u.sock.ino = e->st.st_ino;
	return 0;
}

static long describe_listen(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec)
{
	if (sock_names(o, e, rec) < 0)
		return -1;
	rec->u.sock.backlog = 4096; /* not readable back; the host caps it at somaxconn */
	struct { int fd; short events, revents; } p = { e->fd, POLLIN_, 0 };
	if (zv_sys3(__NR_poll, &p, 1, 0) > 0)
		return refuse_fd(o, e, "a listening socket with connections not yet accepted");
	return 0;
}

/* A UDP socket: its name, options, and its peer when connected.
 * Datagrams waiting would be taken by a read: refused. */
static long describe_udp(struct zv_cr_out *o, struct zv_cr_ent *e, struct zv_cr_fd *rec, struct zv_cr_extra *x)
{
	if (sock_names(o, e, rec) < 0)
		return -1;
	int queued = 0;
	if (zv_sys3(__NR_ioctl, e->fd, 0x541b /* SIOCINQ */, &queued) < 0 || queued > 0)
		return refuse_fd(o, e, "a UDP socket with datagrams not yet read");
	static const int opt[] = { 6 /* SO_BROADCAST */, 2 /* SO_REUSEADDR */, 15 /* SO_REUSEPORT */ };
	for (int i = 0; i < 3; i++) {
		int v = 0, len = sizeof v;
		if (zv_sys5(__NR_getsockopt, e->fd, 1 /* SOL_SOCKET */, opt[i], &v, &len) == 0 && v)
			rec->u.sock.backlog |= 1 << i;
	}
	uint8_t peer[112];
	int plen = sizeof peer;
	if (zv_sys3(__NR_getpeername, e->fd, peer, &plen) == 0 && plen > 0) {
		x->p = zv_cr_kalloc((size_t)plen);
		if (!x->p)
			return refuse_fd(o, e, "out of memory");
		x->size = (size_t)plen;
		memcpy(x->p, peer, (size_t)plen);
		rec->len = (uint32_t)plen;
	}
	return 0;
}

long zv_cr_describe(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
		    struct zv_cr_fd *rec, struct zv_cr_extra *x)
{
	switch (e->kind) {
	case ZV_CRFD_FILE:
	case ZV_CRFD_DIR:
	case ZV_CRFD_OPATH:
	case ZV_CRFD_CHR:
		return describe_path(o, e, rec, x);
	case ZV_CRFD_STDIO:
	case ZV_CRFD_EXTERNAL:
		rec->u.stdio = e->stdio;
		return 0;
	case ZV_CRFD_PIPE:
	case ZV_CRFD_FIFO:
		return describe_pipe(o, s, e, rec, x);
	case ZV_CRFD_SOCKET:
		return zv_cr_describe_socket(o, e, rec, x);
	case ZV_CRFD_EVENTFD:
		return describe_eventfd(o, s, e, rec);
	case ZV_CRFD_INOTIFY:
		return zv_cr_describe_inotify(o, s, e, rec, x);
	case ZV_CRFD_PIDFD:
		rec->u.pidfd.vpid = e->pid > 0 ? (int32_t)zv_cr_guest_id(e->pid) : -1;
		return 0;
	case ZV_CRFD_TIMERFD:
		return describe_timerfd(o, s, e, rec);
	case ZV_CRFD_SIGNALFD:
		return describe_signalfd(o, s, e, rec);
	case ZV_CRFD_EPOLL:
		return describe_epoll(o, s, e, rec, x);
	case ZV_CRFD_LISTEN:
		return describe_listen(o, e, rec);
	case ZV_CRFD_UDP:
		return describe_udp(o, e, rec, x);
	case ZV_CRFD_MEMFD:
		return describe_memfd(o, e, rec, x);
	case ZV_CRFD_DELETED:
		return describe_deleted(o, e, rec, x);
	case ZV_CRFD_PTM:
	case ZV_CRFD_PTS:
		return zv_cr_describe_pty(o, e, rec);
	}
	return refuse_fd(o, e, "cannot be saved");
}
