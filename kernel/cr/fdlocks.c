/* File locks in a checkpoint (section "fdlocks"): the POSIX record locks,
 * OFD locks and flock(2) locks the process holds, read from the fdinfo
 * lock: lines, and taken again at restore once every fd is back. */
#include "cr/fdent.h"
#include "cr/fdrestore.h"
#include "cr/resutil.h"
#include "cr/procfile.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/fcntl.h>

#define LOCK_SH_ 1
#define LOCK_EX_ 2
#define LOCK_NB_ 4

/* Splits the line at l into at most max blank-separated words. */
static int words(const char *l, const char **w, int *len, int max)
{
	int n = 0;
	while (*l && *l != '\n' && n < max) {
		while (*l == ' ' || *l == '\t')
			l++;
		if (!*l || *l == '\n')
			break;
		w[n] = l;
		while (*l && *l != '\n' && *l != ' ' && *l != '\t')
			l++;
		len[n] = (int)(l - w[n]);
		n++;
	}
	return n;
}

static int word_is(const char *w, int len, const char *s)
{
	return (int)zv_strlen(s) == len && zv_strncmp(w, s, len) == 0;
}

static int same_file(const struct zv_cr_ent *a, const struct zv_cr_ent *b)
{
	return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
}

static const struct zv_cr_ent *ent_of(const struct zv_cr_ents *s, int fd)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i].fd == fd)
			return &s->e[i];
	return NULL;
}

/* A POSIX lock is the process's, shown on every fd of the file: saved once,
 * through an fd whose access mode allows it again. */
static int posix_fd(const struct zv_cr_ents *s, const struct zv_cr_ent *e, int type,
		    const struct zv_cr_buf *locks, int64_t start)
{
	const struct zv_cr_lock *l = (const void *)(locks->p + sizeof(struct zv_cr_fds_head));
	const struct zv_cr_lock *end = (const void *)(locks->p + locks->len);
	for (; l < end; l++) {
		const struct zv_cr_ent *f = ent_of(s, l->fd);
		if (l->kind == ZV_CRLK_POSIX && l->start == start && f && same_file(f, e))
			return -1;
	}
	for (unsigned i = 0; i < s->n; i++) {
		const struct zv_cr_ent *f = &s->e[i];
		unsigned acc = f->flags & 3;
		if (f->dup_of < 0 && f->kind == e->kind && same_file(f, e) &&
		    (type == F_WRLCK ? acc != O_RDONLY : acc != O_WRONLY))
			return f->fd;
	}
	return e->fd;
}

long zv_cr_save_locks(struct zv_cr_out *o, struct zv_cr_ents *s, struct zv_cr_ent *e,
		      struct zv_cr_buf *locks)
{
	if (e->kind != ZV_CRFD_FILE && e->kind != ZV_CRFD_DIR && e->kind != ZV_CRFD_DELETED)
		return 0;
	if (zv_cr_fdinfo(s, e->fd) < 0)
		return zv_cr_refuse(o, "fd %d (%s): cannot read its fdinfo", e->fd, e->link);
	for (const char *l = s->info; l; l = zv_cr_next_line(l)) {
		if (!zv_startswith(l, "lock:"))
			continue;
		const char *w[10];
		int len[10];
		int n = words(l + 5, w, len, 10);
		if (n >= 2 && word_is(w[1], len[1], "->"))
			continue; /* a waiter, not a holder */
		if (n < 8)
			return zv_cr_refuse(o, "fd %d (%s): cannot parse its lock: line", e->fd, e->link);
		struct zv_cr_lock k = { .fd = e->fd };
		if (word_is(w[1], len[1], "POSIX"))
			k.kind = ZV_CRLK_POSIX;
		else if (word_is(w[1], len[1], "OFDLCK"))
			k.kind = ZV_CRLK_OFD;
		else if (word_is(w[1], len[1], "FLOCK"))
			k.kind = ZV_CRLK_FLOCK;
		else
			return zv_cr_refuse(o, "fd %d (%s): holds a lease or delegation, which cannot be saved",
					    e->fd, e->link);
		k.type = word_is(w[3], len[3], "WRITE") ? F_WRLCK : F_RDLCK;
		k.start = zv_cr_dec(w[6], NULL);
		k.len = word_is(w[7], len[7], "EOF") ? 0 : zv_cr_dec(w[7], NULL) - k.start + 1;
		if (k.kind == ZV_CRLK_POSIX && (k.fd = posix_fd(s, e, k.type, locks, k.start)) < 0)
			continue;
		zv_cr_buf_put(locks, &k, sizeof k);
		if (!locks->failed)
			((struct zv_cr_fds_head *)locks->p)->count++;
	}
	return 0;
}

static long take(const struct zv_cr_lock *k)
{
	if (k->kind == ZV_CRLK_FLOCK)
		return zv_sys2(__NR_flock, k->fd, (k->type == F_WRLCK ? LOCK_EX_ : LOCK_SH_) | LOCK_NB_);
	struct flock fl = { .l_type = (short)k->type, .l_whence = 0 /* SEEK_SET */, .l_start = k->start,
			    .l_len = k->len };
	return zv_sys3(__NR_fcntl, k->fd, k->kind == ZV_CRLK_OFD ? F_OFD_SETLK : F_SETLK, &fl);
}

long zv_cr_restore_locks(struct zv_cr_in *in, const uint8_t *p, uint64_t len)
{
	const struct zv_cr_fds_head *h = (const void *)p;
	if (!p || len < sizeof *h || h->magic != ZV_CR_LOCKS_MAGIC || h->version != ZV_CR_FDS_VERSION ||
	    (len - sizeof *h) / sizeof(struct zv_cr_lock) < h->count)
		return zv_cr_in_refuse(in, "the image's fdlocks section is damaged");
	const struct zv_cr_lock *k = (const void *)(p + sizeof *h);
	for (uint32_t i = 0; i < h->count; i++, k++) {
		long r;
		int tries = 0;
		do
			r = take(k);
		while ((r == -EAGAIN || r == -EACCES) && zv_cr_retry(&tries));
		if (r < 0)
			return zv_cr_in_refuse(in, "fd %d: cannot take its %s lock again at %ld: %s%s", k->fd,
					       k->type == F_WRLCK ? "write" : "read", (long)k->start,
					       zv_strerror((int)-r),
					       r == -EAGAIN || r == -EACCES ? " (another process holds it)" : "");
	}
	return 0;
}
