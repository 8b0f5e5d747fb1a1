/* The view across exec: one field of the exec state (sys/execstate.c),
 * "R=", that names the view's hidden fds (which the host's execve keeps
 * open) and its strings, escaped (',' ends a field). The new image takes
 * them back before it looks its program up. */
#include "fsview/fsview.h"
#include "fsview/atcalls.h"
#include "fsview/shared.h"
#include "zvisor.h"
#include "sys/execstate.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/syscall.h"

/* Strings with ',', ';', '%' and bytes outside printable ASCII as %XX. */
static int put_str(char *buf, size_t n, const char *s)
{
	size_t k = 0;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (k + 4 >= n)
			return -1;
		if (ch == ',' || ch == ';' || ch == '%' || ch <= ' ' || ch >= 0x7f)
			k += (size_t)zv_snprintf(buf + k, n - k, "%%%02x", ch);
		else
			buf[k++] = (char)ch;
	}
	if (k + 2 >= n)
		return -1;
	buf[k++] = ';';
	buf[k] = 0;
	return (int)k;
}

static const char *get_str(const char *s, char *out, size_t n)
{
	size_t k = 0;
	while (*s && *s != ';' && *s != ',') {
		char ch = *s++;
		if (ch == '%' && s[0] && s[1]) {
			const char *e;
			char hex[3] = { s[0], s[1], 0 };
			ch = (char)zv_parse_hex(hex, &e);
			s += 2;
		}
		if (k + 1 < n)
			out[k++] = ch;
	}
	out[k] = 0;
	return *s == ';' ? s + 1 : s;
}

static const char *get_num(const char *s, long *v)
{
	*v = zv_parse_dec(s, &s);
	return *s == ';' ? s + 1 : s;
}

extern int fsv_dc_saved;

static int encode(char *buf, size_t n, const struct zv_exec_carry *x)
{
	if (!fsv.on)
		return -1;
	/* made anew for each exec (a vfork child's exec leaves its number in this
	 * memory); exec_failed closes it */
	fsv_dc_saved = fsv_dc_save();
	int k = zv_snprintf(buf, n, "%d;%d;%d;%d;%d;%d;%d;", fsv.rootfd, fsv.gluefd, fsv.vrootfd, fsv_shared_fd,
			    fsv_dc_saved, fsv_have_xattrat, fsv.nbinds);
	int w;
#define PUT(s) do { if ((w = put_str(buf + k, n - (size_t)k, (s))) < 0) return (int)n; k += w; } while (0)
	PUT(fsv.root_host);
	PUT(fsv.vroot);
	for (int i = 0; i < fsv.nbinds; i++) {
		const struct fsv_bind *b = &fsv.binds[i];
		k += zv_snprintf(buf + k, n - (size_t)k, "%d;%d;%d;", b->fd, b->kind, b->procfs);
		if ((size_t)k >= n)
			return (int)n;
		PUT(fsv_str(b->guest));
		PUT(fsv_str(b->host));
		PUT(fsv_str(b->name));
	}
#undef PUT
	return k;
}

static const char *decode(const char *s, struct zv_exec_carry *x)
{
	long v, nb;
	char str[FSV_PATH_MAX];
	s = get_num(s, &v), fsv.rootfd = (int)v;
	s = get_num(s, &v), fsv.gluefd = (int)v;
	s = get_num(s, &v), fsv.vrootfd = (int)v;
	s = get_num(s, &v), fsv_shared_attach((int)v);
	long dc;
	s = get_num(s, &dc);
	s = get_num(s, &v), fsv_have_xattrat = (int)v;
	s = get_num(s, &nb);
	s = get_str(s, fsv.root_host, sizeof fsv.root_host);
	fsv.root_host_len = zv_strlen(fsv.root_host);
	s = get_str(s, fsv.vroot, sizeof fsv.vroot);
	fsv.vroot_len = zv_strlen(fsv.vroot);
	fsv.nbinds = 0;
	fsv.pool_len = 0;
	fsv.basenames[0] = 0;
	fsv.gluenames[0] = 0;
	memset(fsv.basefirst, 0, sizeof fsv.basefirst);
	memset(fsv.gluefirst, 0, sizeof fsv.gluefirst);
	for (long i = 0; i < nb && i < FSV_MAX_BINDS; i++) {
		struct fsv_bind *b = &fsv.binds[fsv.nbinds++];
		s = get_num(s, &v), b->fd = (int)v;
		s = get_num(s, &v), b->kind = (uint8_t)v;
		s = get_num(s, &v), b->procfs = (uint8_t)v;
		s = get_str(s, str, sizeof str);
		fsv_pool_add(str, zv_strlen(str), &b->guest);
		const char *base = zv_strrchr(fsv_str(b->guest), '/') + 1;
		b->base = (uint16_t)(base - fsv.pool);
		fsv_names_add(fsv_str(b->guest));
		s = get_str(s, str, sizeof str);
		fsv_pool_add(str, zv_strlen(str), &b->host);
		s = get_str(s, str, sizeof str);
		fsv_pool_add(str, zv_strlen(str), &b->name);
		zv_keep_hidden_fd(&b->fd);
	}
	zv_keep_hidden_fd(&fsv.rootfd);
	if (fsv.gluefd >= 0) {
		char host[FSV_PATH_MAX];
		long k = fsv_fd_host(fsv.gluefd, host, sizeof host);
		if (k > 0 && fsv_pool_add(host, (size_t)k, &fsv.glue_host) == 0)
			fsv.glue_host_len = (size_t)k;
		zv_keep_hidden_fd(&fsv.gluefd);
	}
	if (fsv.vrootfd != fsv.rootfd)
		zv_keep_hidden_fd(&fsv.vrootfd);
	fsv_alias_find();
	fsv_hooks_on();
	fsv_dc_load((int)dc); /* after the hidden fds: its entries' join them */
	return s;
}
ZV_EXEC_FIELD(fsview, 300, 'R', encode, decode);

int fsv_dc_saved = -1;
