/* A file's record, and its text as containers/storage writes
 * user.containers.override_stat (pkg/idtools): "UID:GID:MODE:TYPE", UID
 * and GID in decimal, MODE the permission, set-id and sticky bits in
 * octal ("%04o"), TYPE one of file, dir, symlink, pipe, socket,
 * block-MAJOR-MINOR, char-MAJOR-MINOR. A reader takes three fields at
 * least, a type by its prefix, and ignores more parts of a device's. */
#include "fakeid/fakeid.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include <linux/stat.h>

static const struct {
	uint32_t type;
	const char *name;
} types[] = {
	{ S_IFREG, "file" }, { S_IFDIR, "dir" }, { S_IFLNK, "symlink" }, { S_IFIFO, "pipe" },
	{ S_IFSOCK, "socket" }, { S_IFBLK, "block" }, { S_IFCHR, "char" },
};
#define NTYPES (sizeof types / sizeof types[0])

int zv_fid_rec_format(char *buf, size_t n, const struct zv_fid_rec *r)
{
	uint32_t type = r->mode & S_IFMT;
	const char *name = "file";
	for (size_t i = 0; i < NTYPES; i++)
		if (types[i].type == type)
			name = types[i].name;
	if (type == S_IFBLK || type == S_IFCHR)
		return zv_snprintf(buf, n, "%u:%u:%04o:%s-%u-%u", r->uid, r->gid, r->mode & 07777, name, r->major,
				   r->minor);
	return zv_snprintf(buf, n, "%u:%u:%04o:%s", r->uid, r->gid, r->mode & 07777, name);
}

/* A number of base 8 or 10 at *s, up to a separator; it must fit 32 bits. */
static int number(const char **s, const char *end, int base, uint32_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	if (p == end || *p < '0' || *p > '0' + base - 1)
		return 0;
	for (; p < end && *p >= '0' && *p <= '0' + base - 1; p++)
		if ((v = v * base + (uint64_t)(*p - '0')) > 0xffffffffu)
			return 0;
	*s = p;
	*out = (uint32_t)v;
	return 1;
}

/* Returns 1 and the record, or 0 for a text that is not one. */
int zv_fid_rec_parse(const char *s, size_t n, struct zv_fid_rec *r)
{
	const char *end = s + n, *p = s;
	uint32_t mode;
	*r = (struct zv_fid_rec){ 0 };
	if (!number(&p, end, 10, &r->uid) || p == end || *p++ != ':' || !number(&p, end, 10, &r->gid) || p == end ||
	    *p++ != ':' || !number(&p, end, 8, &mode))
		return 0;
	r->mode = mode & 07777;
	if (p == end)
		return 1; /* no type: the file's own */
	if (*p++ != ':')
		return 0;
	for (size_t i = 0; i < NTYPES; i++) {
		size_t l = zv_strlen(types[i].name);
		if ((size_t)(end - p) < l || memcmp(p, types[i].name, l))
			continue;
		r->mode |= types[i].type;
		if (types[i].type != S_IFBLK && types[i].type != S_IFCHR)
			return 1;
		p += l;
		if (p == end || *p++ != '-' || !number(&p, end, 10, &r->major) || p == end || *p++ != '-' ||
		    !number(&p, end, 10, &r->minor))
			return 0;
		return 1;
	}
	return 0;
}

/* The view of a file whose host stat is s and whose record is r (NULL:
 * none): the record's owner and mode, and its type where the host holds a
 * regular file in place of a device node, FIFO or socket; without one, the
 * host's owner through the id map. */
void zv_fid_apply(struct zv_fid_stat *s, const struct zv_fid_rec *r)
{
	if (!r) {
		s->uid = zv_fid_guest_uid(s->uid);
		s->gid = zv_fid_guest_gid(s->gid);
		return;
	}
	uint32_t type = s->mode & S_IFMT, rtype = r->mode & S_IFMT;
	if (type == S_IFREG && rtype && rtype != S_IFREG && rtype != S_IFDIR && rtype != S_IFLNK) {
		type = rtype;
		if (type == S_IFBLK || type == S_IFCHR) {
			s->rmajor = r->major;
			s->rminor = r->minor;
		}
	}
	s->mode = type | (r->mode & 07777);
	s->uid = r->uid;
	s->gid = r->gid;
}

/* The record that says what view shows. */
void zv_fid_rec_of(struct zv_fid_rec *r, const struct zv_fid_stat *view)
{
	r->uid = view->uid;
	r->gid = view->gid;
	r->mode = view->mode;
	r->major = r->minor = 0;
	if ((view->mode & S_IFMT) == S_IFBLK || (view->mode & S_IFMT) == S_IFCHR) {
		r->major = view->rmajor;
		r->minor = view->rminor;
	}
}

/* Whether r says more than the host's stat of the file (host) does. */
int zv_fid_rec_needed(const struct zv_fid_rec *r, const struct zv_fid_stat *host)
{
	struct zv_fid_stat plain = *host;
	zv_fid_apply(&plain, NULL);
	/* a regular file's set-id bits: the host clears its own at the user's
	 * next write, where a writer with CAP_FSETID keeps them */
	int setid = (host->mode & S_IFMT) == S_IFREG && (r->mode & (S_ISUID | S_ISGID));
	return setid || r->uid != plain.uid || r->gid != plain.gid || (r->mode & 07777) != (host->mode & 07777) ||
	       ((r->mode & S_IFMT) && (r->mode & S_IFMT) != (host->mode & S_IFMT));
}
