/* What the host's execve would run for a path: #! scripts and the checks
 * of sys/execelf.c in the host's order (sys/execelf.c explains it). */
#include "sys/execelf.h"

/* ---- #! scripts -------------------------------------------------------- */

static int spacetab(char c) { return c == ' ' || c == '\t'; }

static char *next_non_spacetab(char *first, char *last)
{
	for (; first <= last; first++)
		if (!spacetab(*first))
			return first;
	return 0;
}

static char *next_terminator(char *first, char *last)
{
	for (; first <= last; first++)
		if (spacetab(*first) || !*first)
			return first;
	return 0;
}

/* Parses the #! line in buf (BINPRM_BUF bytes, zero-padded) as the host's
 * load_script() does: the interpreter is the first word, the rest of the line
 * (trimmed) one optional argument; a line that does not fit is accepted only
 * if the interpreter's name does. Returns 0 or -ENOEXEC. */
static int parse_shebang(char *buf, char **name, char **arg)
{
	char *buf_end = buf + BINPRM_BUF - 1, *i_end = 0;
	for (char *s = buf; s <= buf_end && *s; s++) /* strnchr stops at NUL */
		if (*s == '\n') {
			i_end = s;
			break;
		}
	if (!i_end) {
		i_end = next_non_spacetab(buf + 2, buf_end);
		if (!i_end || !next_terminator(i_end, buf_end))
			return -ENOEXEC;
		i_end = buf_end;
	}
	while (spacetab(i_end[-1]))
		i_end--;
	char *i_name = next_non_spacetab(buf + 2, i_end);
	if (!i_name || i_name == i_end)
		return -ENOEXEC;
	char *i_arg = 0, *i_sep = next_terminator(i_name, i_end);
	if (i_sep && *i_sep)
		i_arg = next_non_spacetab(i_sep, i_end);
	*i_end = 0;
	if (i_arg)
		*i_sep = 0;
	*name = i_name;
	*arg = i_arg;
	return 0;
}

static char *stash(struct zv_resolved *r, size_t *used, const char *s)
{
	size_t n = zv_strlen(s) + 1;
	if (n > sizeof r->words - *used)
		return 0;
	char *d = r->words + *used;
	memcpy(d, s, n);
	*used += n;
	return d;
}

/* One line, printable: the reason may quote bytes from a corrupt file. */
void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static int resolve(const char *path, int host_checked, struct zv_resolved *r, int keep, int cloexec)
{
	struct elf e;
	e.cloexec = cloexec;
	char *rev[3 * ZV_SCRIPT_DEPTH + 1]; /* the prefix, last word first */
	int nrev = 0;
	size_t used = 0;
	const char *cur = path;
	if (!path || !*path)
		return fail(r->why, sizeof r->why, -ENOENT, "%s", zv_strerror(ENOENT));
	for (int depth = 0;; depth++) {
		const char *who = depth ? "#! interpreter " : "";
		const char *sep = depth ? ": " : "";
		const char *wname = depth ? cur : "";
		unsigned mode = 0;
		e.fd = depth == 0 && host_checked ? open_regular_mode(cur, &e.id, &mode, cloexec)
						  : open_exec_mode(cur, &e.id, &mode, cloexec);
		e.size = e.id.size;
		if (e.fd < 0)
			return fail(r->why, sizeof r->why, e.fd, "%s%s%s%s", who, wname, sep, zv_strerror(-e.fd));
		if (depth > ZV_SCRIPT_DEPTH) {
			zv_close(e.fd);
			return fail(r->why, sizeof r->why, -ELOOP, "more than %d nested #! interpreters", ZV_SCRIPT_DEPTH);
		}
		char buf[BINPRM_BUF + 1];
		memset(buf, 0, sizeof buf);
		long n = read_head(&e);
		if (n > 0)
			memcpy(buf, e.head, n < BINPRM_BUF ? (size_t)n : BINPRM_BUF);
		if (n < 0) {
			zv_close(e.fd);
			return fail(r->why, sizeof r->why, (int)n, "%s%s%scannot read: %s", who, wname, sep, zv_strerror((int)-n));
		}
		if (buf[0] == '#' && buf[1] == '!') {
			zv_close(e.fd);
			char *name, *arg;
			if (parse_shebang(buf, &name, &arg))
				return fail(r->why, sizeof r->why, -ENOEXEC, "%s%s%sbad #! line", who, wname, sep);
			if (!nrev && !(rev[nrev++] = stash(r, &used, path)))
				return fail(r->why, sizeof r->why, -ENAMETOOLONG, "path too long");
			if (arg && !(rev[nrev++] = stash(r, &used, arg)))
				return fail(r->why, sizeof r->why, -E2BIG, "#! lines too long");
			if (!(rev[nrev++] = stash(r, &used, name)))
				return fail(r->why, sizeof r->why, -E2BIG, "#! lines too long");
			cur = rev[nrev - 1];
			continue;
		}
		char sub[160];
		int err;
		memcpy(&e.eh, buf, sizeof e.eh);
		if (n < (long)sizeof e.eh && !memcmp(buf, ELFMAG, SELFMAG))
			err = fail(sub, sizeof sub, -ENOEXEC, "truncated ELF header (%ld bytes)", n);
		else {
			if (keep) /* the interpreter's take e.head's place */
				memcpy(r->head, e.head, (size_t)n);
			err = check_exe(&e, sub, sizeof sub);
		}
		if (err || !keep) {
			zv_close(e.fd);
			if (!err && e.ifd >= 0)
				zv_close(e.ifd);
		} else {
			/* the program's first bytes, and the interpreter's (e.head's now) */
			r->files = (struct zv_exec_files){ e.fd, e.ifd, e.size, e.isize, r->head, NULL, n, -1, e.id, e.iid };
			if (e.ifd >= 0 && e.iheadn >= 0) {
				memcpy(r->ihead, e.head, (size_t)e.iheadn);
				r->files.ihead = r->ihead;
				r->files.iheadn = e.iheadn;
			}
		}
		if (err)
			return fail(r->why, sizeof r->why, err, "%s%s%s%s", who, wname, sep, sub);
		zv_strlcpy(r->elf, cur, sizeof r->elf);
		r->setid = (mode & 04000) || (mode & 02010) == 02010; /* S_ISUID, S_ISGID with S_IXGRP */
		for (int i = 0; i < nrev; i++)
			r->prefix[i] = rev[nrev - 1 - i];
		r->nprefix = nrev;
		return 0;
	}
}

static int resolve_keep(const char *path, int host_checked, struct zv_resolved *r, int keep, int cloexec)
{
	r->files = ZV_EXEC_FILES_NONE;
	r->nprefix = 0;
	r->setid = 0;
	r->elf[0] = 0;
	r->why[0] = 0;
	int err = resolve(path, host_checked, r, keep, cloexec);
	if (err) {
		r->nprefix = 0;
		sanitize(r->why);
	}
	return err;
}

int zv_exec_resolve(const char *path, int host_checked, struct zv_resolved *r)
{
	return resolve_keep(path, host_checked, r, 0, O_CLOEXEC);
}

int zv_exec_resolve_keep(const char *path, int host_checked, struct zv_resolved *r, int inherit)
{
	return resolve_keep(path, host_checked, r, 1, inherit ? 0 : O_CLOEXEC);
}

void zv_exec_files_close(struct zv_exec_files *f)
{
	if (f->fd >= 0)
		zv_close(f->fd);
	if (f->ifd >= 0)
		zv_close(f->ifd);
	f->fd = f->ifd = -1;
}
