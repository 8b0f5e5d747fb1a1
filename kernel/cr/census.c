/* The census of what the saved processes hold (cr/census.h). */
#include "cr/census.h"
#include "cr/procfile.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/devnum.h"
#include <linux/fcntl.h>
#include <asm/stat.h>

#define MAGIC 0x5a564353u /* "ZVCS" */

static void add_ends(struct zv_cr_buf *b, uint64_t key, uint32_t ends)
{
	struct zv_cr_census_ends *e = (void *)b->p;
	for (size_t i = 0; i < b->len / sizeof *e; i++)
		if (e[i].key == key) {
			e[i].ends |= ends;
			return;
		}
	struct zv_cr_census_ends n = { key, ends, 0 };
	zv_cr_buf_put(b, &n, sizeof n);
}

static uint32_t ends_of(const struct zv_cr_buf *b, uint64_t key)
{
	const struct zv_cr_census_ends *e = (const void *)b->p;
	for (size_t i = 0; i < b->len / sizeof *e; i++)
		if (e[i].key == key)
			return e[i].ends;
	return 0;
}

void zv_cr_census_pipe(struct zv_cr_census *c, uint64_t ino, uint32_t ends)
{
	add_ends(&c->pipes, ino, ends);
}

void zv_cr_census_sock(struct zv_cr_census *c, uint64_t ino)
{
	if (!zv_cr_census_has_sock(c, ino))
		zv_cr_buf_put(&c->socks, &ino, sizeof ino);
}

void zv_cr_census_conn(struct zv_cr_census *c, const struct zv_cr_endpoint *local, const struct zv_cr_endpoint *remote,
		       int orphan)
{
	struct zv_cr_census_tcp t = { *local, *remote, (uint32_t)orphan, 0 };
	zv_cr_buf_put(&c->tcp, &t, sizeof t);
}

void zv_cr_census_pty(struct zv_cr_census *c, uint32_t index, uint32_t ends)
{
	add_ends(&c->ptys, index, ends);
}

uint32_t zv_cr_census_pty_ends(const struct zv_cr_census *c, uint32_t index)
{
	return ends_of(&c->ptys, index);
}

long zv_cr_pts_index(unsigned long rdev)
{
	unsigned long major = zv_dev_major(rdev), minor = zv_dev_minor(rdev);
	return major >= 136 && major <= 143 ? (long)((major - 136) << 8 | minor) : -1;
}

void zv_cr_census_outside(struct zv_cr_census *c, int key, uint64_t dev, uint64_t ino)
{
	struct zv_cr_census_out o = { key, 0, dev, ino };
	zv_cr_buf_put(&c->out, &o, sizeof o);
}

/* Whether the uint64_t array in b holds v. */
static int holds(const struct zv_cr_buf *b, uint64_t v)
{
	const uint64_t *p = (const void *)b->p;
	for (size_t i = 0; i < b->len / sizeof *p; i++)
		if (p[i] == v)
			return 1;
	return 0;
}

void zv_cr_census_proc(struct zv_cr_census *c, int hpid)
{
	uint64_t v = (uint32_t)hpid;
	zv_cr_buf_put(&c->procs, &v, sizeof v);
}

int zv_cr_census_has_proc(const struct zv_cr_census *c, int hpid) { return holds(&c->procs, (uint32_t)hpid); }

uint32_t zv_cr_census_pipe_ends(const struct zv_cr_census *c, uint64_t ino)
{
	return ends_of(&c->pipes, ino);
}

int zv_cr_census_has_sock(const struct zv_cr_census *c, uint64_t ino) { return holds(&c->socks, ino); }

static int same_end(const struct zv_cr_endpoint *a, const struct zv_cr_endpoint *b)
{
	return a->family == b->family && a->port == b->port && !memcmp(a->addr, b->addr, sizeof a->addr);
}

int zv_cr_census_has_peer(const struct zv_cr_census *c, const struct zv_cr_endpoint *local,
			  const struct zv_cr_endpoint *remote)
{
	const struct zv_cr_census_tcp *t = (const void *)c->tcp.p;
	for (size_t i = 0; i < c->tcp.len / sizeof *t; i++)
		if (!t[i].orphan && same_end(&t[i].local, remote) && same_end(&t[i].remote, local))
			return 1;
	return 0;
}

int zv_cr_census_peer_closed(const struct zv_cr_census *c, const struct zv_cr_endpoint *local,
			     const struct zv_cr_endpoint *remote)
{
	const struct zv_cr_census_tcp *t = (const void *)c->tcp.p;
	for (size_t i = 0; i < c->tcp.len / sizeof *t; i++)
		if (t[i].orphan && same_end(&t[i].local, remote) && same_end(&t[i].remote, local))
			return 1;
	return 0;
}

int zv_cr_census_out_key(const struct zv_cr_census *c, uint64_t dev, uint64_t ino)
{
	const struct zv_cr_census_out *o = (const void *)c->out.p;
	for (size_t i = 0; i < c->out.len / sizeof *o; i++)
		if (o[i].dev == dev && o[i].ino == ino)
			return o[i].key;
	return -1;
}

int zv_cr_endpoint_of(const void *sa, uint32_t len, struct zv_cr_endpoint *e)
{
	const uint8_t *b = sa;
	*e = (struct zv_cr_endpoint){ 0 };
	if (len < 8)
		return -1;
	e->family = *(const uint16_t *)b;
	e->port = *(const uint16_t *)(b + 2);
	if (e->family == 2 /* AF_INET */) {
		memcpy(e->addr, b + 4, 4);
		return 0;
	}
	if (e->family == 10 /* AF_INET6 */ && len >= 24) {
		memcpy(e->addr, b + 8, 16);
		return 0;
	}
	return -1;
}

void zv_cr_census_free(struct zv_cr_census *c)
{
	zv_cr_buf_free(&c->pipes);
	zv_cr_buf_free(&c->socks);
	zv_cr_buf_free(&c->tcp);
	zv_cr_buf_free(&c->out);
	zv_cr_buf_free(&c->ptys);
	zv_cr_buf_free(&c->procs);
}

/* --- from /proc --- */

/* A hex number as /proc/net/tcp prints them, in capitals. */
static uint64_t hex(const char *s, const char **end)
{
	uint64_t v = 0;
	for (;; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 :
			*s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (d < 0)
			break;
		v = v * 16 + (uint64_t)d;
	}
	*end = s;
	return v;
}

/* "0100007F:1F90" (v4) or 32 hex digits and a port (v6), as
 * /proc/net/tcp prints an address: each 32-bit word in the host's order. */
static const char *parse_end(const char *p, int v6, struct zv_cr_endpoint *e)
{
	*e = (struct zv_cr_endpoint){ .family = v6 ? 10 : 2 };
	for (int w = 0; w < (v6 ? 4 : 1); w++) {
		char h[9];
		memcpy(h, p, 8);
		h[8] = 0;
		const char *end;
		uint32_t v = (uint32_t)hex(h, &end);
		memcpy(e->addr + 4 * w, &v, 4);
		p += 8;
	}
	const char *end;
	uint16_t port = (uint16_t)hex(p + 1, &end);
	e->port = (uint16_t)(port >> 8 | port << 8);
	return end;
}

/* The connections of the processes' sockets in /proc/PID/net/tcp{,6}. */
static void tcp_table(struct zv_cr_census *c, int pid, int v6, char *buf, size_t size, int orphans_only)
{
	char path[64];
	zv_snprintf(path, sizeof path, "/proc/%d/net/tcp%s", pid, v6 ? "6" : "");
	if (zv_cr_read_file(path, buf, size) < 0)
		return;
	for (const char *l = zv_cr_next_line(buf); l; l = zv_cr_next_line(l)) {
		const char *p = l;
		while (*p == ' ')
			p++;
		while (*p && *p != ' ') /* "sl:" */
			p++;
		struct zv_cr_endpoint local, remote;
		p = parse_end(p + 1, v6, &local);
		p = parse_end(p + 1, v6, &remote);
		const char *e;
		int state = (int)hex(p + 1, &e);
		/* tx:rx tr:when retrnsmt uid timeout, then the inode */
		p = e;
		for (int f = 0; f < 5 && *p; f++) {
			while (*p == ' ')
				p++;
			while (*p && *p != ' ')
				p++;
		}
		uint64_t ino = (uint64_t)zv_parse_dec(p + 1, &e);
		if (state != 10 /* LISTEN */ && !orphans_only && zv_cr_census_has_sock(c, ino))
			zv_cr_census_conn(c, &local, &remote, 0);
		/* closed by its owner, its FIN sent: fin-wait-1 or 2 (a socket
		 * no process holds shows inode 0) */
		else if ((state == 4 || state == 5) && ino == 0)
			zv_cr_census_conn(c, &local, &remote, 1);
	}
}

/* Whether the socket at path (/proc/PID/fd/N) is a TCP one (its protocol's
 * name, "TCP" or "TCPv6", as sockfs tells it); yes when unknown. */
static int tcp_socket(const char *path)
{
	char name[32] = "";
	long n = zv_sys4(__NR_getxattr, path, "system.sockprotoname", name, sizeof name - 1);
	return n <= 0 || zv_startswith(name, "TCP");
}

void zv_cr_census_closed_peers(struct zv_cr_census *c)
{
	char *buf = zv_cr_kalloc(4UL << 20);
	if (!buf)
		return;
	tcp_table(c, (int)zv_getpid(), 0, buf, 4UL << 20, 1);
	tcp_table(c, (int)zv_getpid(), 1, buf, 4UL << 20, 1);
	zv_cr_kfree(buf, 4UL << 20);
}

long zv_cr_census_of(struct zv_cr_census *c, const int *pids, int n)
{
	char *buf = zv_cr_kalloc(4UL << 20);
	if (!buf)
		return -ENOMEM;
	long r = 0;
	for (int i = 0; i < n && r == 0; i++) {
		char dir[48];
		zv_snprintf(dir, sizeof dir, "/proc/%d/fd", pids[i]);
		long dfd = zv_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		if (dfd < 0) {
			r = dfd;
			break;
		}
		long k;
		char ents[4096];
		while ((k = zv_sys3(__NR_getdents64, dfd, ents, sizeof ents)) > 0) {
			for (long off = 0; off < k;) {
				const char *name = ents + off + 19;
				off += *(unsigned short *)(ents + off + 16);
				if (name[0] == '.')
					continue;
				char link[80], path[96];
				zv_snprintf(path, sizeof path, "%s/%s", dir, name);
				long ln = zv_sys4(__NR_readlinkat, AT_FDCWD, path, link, sizeof link - 1);
				if (ln < 0)
					continue;
				link[ln] = 0;
				struct stat st;
				const char *e;
				if (zv_startswith(link, "socket:[")) {
					zv_cr_census_sock(c, (uint64_t)zv_parse_dec(link + 8, &e));
					c->tcp_held |= tcp_socket(path);
					continue;
				}
				if (zv_sys2(__NR_stat, path, &st) < 0)
					continue;
				char info[96];
				zv_snprintf(info, sizeof info, "/proc/%d/fdinfo/%s", pids[i], name);
				if ((st.st_mode & 0170000) == 0020000) { /* a pty's master (its number in fdinfo) or terminal */
					long k = zv_cr_pts_index(st.st_rdev);
					if (k >= 0)
						zv_cr_census_pty(c, (uint32_t)k, 2);
					const char *ix;
					if (zv_cr_is_ptmx(st.st_rdev) && zv_cr_read_file(info, buf, 4096) >= 0 &&
					    (ix = zv_cr_field(buf, "tty-index:")))
						zv_cr_census_pty(c, (uint32_t)zv_cr_dec(ix, NULL), 1);
					continue;
				}
				if ((st.st_mode & 0170000) != 0010000 || zv_cr_read_file(info, buf, 4096) < 0)
					continue;
				/* a pipe or FIFO end: its mode from fdinfo's flags */
				const char *fl = zv_cr_field(buf, "flags:");
				uint32_t mode = fl ? (uint32_t)zv_cr_oct(fl, NULL) & 3 : O_RDWR;
				zv_cr_census_pipe(c, st.st_ino, (mode != O_WRONLY ? 1 : 0) | (mode != O_RDONLY ? 2 : 0));
			}
		}
		zv_close((int)dfd);
	}
	/* Each table costs its walk of the host's whole connection hash (6 ms
	 * apiece here): read only when a process holds a TCP socket (every
	 * process holds a Unix one now, its checkpoint's session). */
	if (r == 0 && n && c->tcp_held) {
		tcp_table(c, pids[0], 0, buf, 4UL << 20, 0);
		tcp_table(c, pids[0], 1, buf, 4UL << 20, 0);
	}
	zv_cr_kfree(buf, 4UL << 20);
	if (r == 0 && (c->pipes.failed || c->socks.failed || c->tcp.failed || c->out.failed || c->ptys.failed))
		r = -ENOMEM;
	return r;
}

/* --- as a file --- */

long zv_cr_census_write(const struct zv_cr_census *c, int dirfd, const char *name)
{
	const struct zv_cr_buf *part[6] = { &c->pipes, &c->socks, &c->tcp, &c->out, &c->ptys, &c->procs };
	uint64_t head[8] = { MAGIC, (uint64_t)c->self, c->pipes.len, c->socks.len, c->tcp.len, c->out.len, c->ptys.len,
			     c->procs.len };
	long fd = zv_openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	long r = zv_write((int)fd, head, sizeof head) == sizeof head ? 0 : -EIO;
	for (int i = 0; i < 6 && r == 0; i++)
		if (part[i]->len && zv_write((int)fd, part[i]->p, part[i]->len) != (long)part[i]->len)
			r = -EIO;
	zv_close((int)fd);
	return r;
}

long zv_cr_census_read(struct zv_cr_census *c, int dirfd, const char *name)
{
	struct zv_cr_buf *part[6] = { &c->pipes, &c->socks, &c->tcp, &c->out, &c->ptys, &c->procs };
	uint64_t head[8];
	long fd = zv_openat(dirfd, name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long r = zv_read((int)fd, head, sizeof head) == sizeof head && head[0] == MAGIC ? 0 : -EIO;
	if (r == 0)
		c->self = (int)head[1];
	for (int i = 0; i < 6 && r == 0; i++) {
		uint8_t *p = head[2 + i] ? zv_cr_buf_add(part[i], head[2 + i]) : NULL;
		if (head[2 + i] && (!p || zv_read((int)fd, p, head[2 + i]) != (long)head[2 + i]))
			r = -EIO;
	}
	zv_close((int)fd);
	return r;
}
