/* Decoders for the most frequent calls whose arguments a signature cannot
 * describe (decode.h): files, memory, processes. */
#include "zvisor.h"
#include "trace/decode.h"
#include "lib/string.h"
#include "lib/devnum.h"

/* ---- files ---------------------------------------------------------------- */

/* open's flags, then the mode only when the call may create a file */
static void open_tail(struct zv_tb *b, const struct zv_tcall *c, int fi)
{
	zv_dec_arg(b, c, fi, 'o');
	long fl = c->a[fi];
	if (fl & (0100 /* O_CREAT */ | 020000000 /* __O_TMPFILE */)) {
		SEP(b);
		zv_dec_arg(b, c, fi + 1, 'm');
	}
}

void zv_dec_open(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 's');
	SEP(b);
	open_tail(b, c, 1);
}

void zv_dec_openat(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "as");
	SEP(b);
	open_tail(b, c, 2);
}

void zv_dec_mode_type(struct zv_tb *b, uint32_t mode)
{
	static const char *const types[16] = {
		[1] = "S_IFIFO", [2] = "S_IFCHR", [4] = "S_IFDIR", [6] = "S_IFBLK", [8] = "S_IFREG",
		[10] = "S_IFLNK", [12] = "S_IFSOCK",
	};
	const char *t = types[(mode >> 12) & 15];
	if (t)
		tb_puts(b, t);
	else
		tb_mode(b, mode & 0170000);
	if (mode & 04000)
		tb_puts(b, "|S_ISUID");
	if (mode & 02000)
		tb_puts(b, "|S_ISGID");
	if (mode & 01000)
		tb_puts(b, "|S_ISVTX");
	tb_putc(b, '|');
	tb_mode(b, mode & 0777);
}

/* struct stat, abbreviated as strace does by default */
void zv_dec_stat_struct(struct zv_tb *b, uint64_t p, int ok)
{
	struct {
		uint64_t dev, ino, nlink;
		uint32_t mode, uid, gid, pad;
		uint64_t rdev;
		int64_t size, blksize, blocks;
	} st;
	if (!ok || zv_peek(&st, p, sizeof st) < 0) {
		tb_ptr(b, p);
		return;
	}
	tb_puts(b, "{st_mode=");
	zv_dec_mode_type(b, st.mode);
	uint32_t type = st.mode & 0170000;
	if (type == 0020000 || type == 0060000) {
		uint32_t major = zv_dev_major(st.rdev), minor = zv_dev_minor(st.rdev);
		tb_printf(b, major ? ", st_rdev=makedev(0x%x, " : ", st_rdev=makedev(%u, ", major);
		tb_printf(b, minor ? "0x%x)" : "%u)", minor);
	} else {
		tb_putn(b, ", st_size=", 10);
		tb_dec(b, st.size);
	}
	tb_puts(b, ", ...}");
}

void zv_dec_stat(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 's');
	SEP(b);
	zv_dec_stat_struct(b, (uint64_t)c->a[1], OK(c));
}

void zv_dec_fstat(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	zv_dec_stat_struct(b, (uint64_t)c->a[1], OK(c));
}

void zv_dec_newfstatat(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "as");
	SEP(b);
	zv_dec_stat_struct(b, (uint64_t)c->a[2], OK(c));
	SEP(b);
	zv_dec_arg(b, c, 3, 'A');
}

void zv_dec_lseek(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const whence[] = { "SEEK_SET", "SEEK_CUR", "SEEK_END", "SEEK_DATA", "SEEK_HOLE" };
	zv_dec_args(b, c, "fD");
	SEP(b);
	if ((unsigned long)c->a[2] < 5)
		tb_puts(b, whence[c->a[2]]);
	else
		tb_printf(b, "0x%lx /* SEEK_??? */", c->a[2]);
}

void zv_dec_getcwd(struct zv_tb *b, const struct zv_tcall *c)
{
	if (OK(c))
		tb_path(b, (uint64_t)c->a[0]);
	else
		tb_ptr(b, (uint64_t)c->a[0]);
	SEP(b);
	zv_dec_arg(b, c, 1, 'U');
}

static void link_target(struct zv_tb *b, const struct zv_tcall *c, int i)
{
	if (OK(c))
		tb_buf(b, (uint64_t)c->a[i], c->ret);
	else
		tb_ptr(b, (uint64_t)c->a[i]);
}

void zv_dec_readlink(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 's');
	SEP(b);
	link_target(b, c, 1);
	SEP(b);
	zv_dec_arg(b, c, 2, 'U');
}

void zv_dec_readlinkat(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "as");
	SEP(b);
	link_target(b, c, 2);
	SEP(b);
	zv_dec_arg(b, c, 3, 'U');
}

void zv_dec_getdents64(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	if (OK(c)) {
		/* count the entries the call returned */
		long n = 0;
		for (long off = 0; off < c->ret;) {
			uint16_t reclen;
			if (zv_peek(&reclen, (uint64_t)c->a[1] + off + 16, 2) < 0 || !reclen)
				break;
			off += reclen;
			n++;
		}
		tb_ptr(b, (uint64_t)c->a[1]);
		tb_printf(b, " /* %ld entries */", n);
	} else {
		tb_ptr(b, (uint64_t)c->a[1]);
	}
	SEP(b);
	zv_dec_arg(b, c, 2, 'U');
}

/* an iovec array of cnt entries; filled: -1 for data the call reads (each
 * entry in full), else the bytes the call stored (the result), -2 for a
 * read that failed (the bases as addresses) */
void zv_dec_iovec(struct zv_tb *b, uint64_t p, long cnt, long filled)
{
	struct { uint64_t base, len; } iov;
	long left = filled;
	tb_putc(b, '[');
	for (long i = 0; i < cnt && i < 16; i++) {
		if (zv_peek(&iov, p + 16 * i, sizeof iov) < 0)
			break;
		if (i)
			SEP(b);
		tb_puts(b, "{iov_base=");
		if (filled == -2) {
			tb_ptr(b, iov.base);
		} else {
			long n = filled >= 0 && left < (long)iov.len ? left : (long)iov.len;
			tb_buf(b, iov.base, n);
			if (filled >= 0)
				left -= n;
		}
		tb_printf(b, ", iov_len=%lu}", iov.len);
	}
	if (cnt > 16)
		tb_puts(b, ", ...");
	tb_putc(b, ']');
}

void zv_dec_readv(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	zv_dec_iovec(b, (uint64_t)c->a[1], c->a[2], OK(c) ? c->ret : -2);
	tb_printf(b, ", %ld", c->a[2]);
}

void zv_dec_writev(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	zv_dec_iovec(b, (uint64_t)c->a[1], c->a[2], -1);
	tb_printf(b, ", %ld", c->a[2]);
}

static void fd_pair(struct zv_tb *b, const struct zv_tcall *c)
{
	int fds[2];
	if (OK(c) && zv_peek(fds, (uint64_t)c->a[0], sizeof fds) == 0)
		tb_printf(b, "[%d, %d]", fds[0], fds[1]);
	else
		tb_ptr(b, (uint64_t)c->a[0]);
}

void zv_dec_pipe(struct zv_tb *b, const struct zv_tcall *c) { fd_pair(b, c); }

void zv_dec_pipe2(struct zv_tb *b, const struct zv_tcall *c)
{
	fd_pair(b, c);
	SEP(b);
	tb_flags(b, (uint64_t)c->a[1], &zv_n_pipe_flags, "0");
}

void zv_dec_poll(struct zv_tb *b, const struct zv_tcall *c)
{
	struct { int fd; short events, revents; } p;
	long n = c->a[1];
	if (!c->a[0]) {
		tb_printf(b, "NULL, %lu, %d", (unsigned long)n, (int)c->a[2]);
		return;
	}
	tb_putc(b, '[');
	for (long i = 0; i < n && i < 16; i++) {
		if (zv_peek(&p, (uint64_t)c->a[0] + 8 * i, sizeof p) < 0)
			break;
		if (i)
			SEP(b);
		tb_printf(b, "{fd=%d, events=", p.fd);
		tb_flags(b, (uint16_t)p.events, &zv_n_poll_events, "0");
		tb_putc(b, '}');
	}
	tb_putc(b, ']');
	tb_printf(b, ", %lu, %d", (unsigned long)n, (int)c->a[2]);
}

/* after "= N": the events that happened, " ([{fd=3, revents=POLLIN}])" */
void zv_dec_poll_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	struct { int fd; short events, revents; } p;
	if (c->ret <= 0) {
		if (c->ret == 0)
			tb_puts(b, " (Timeout)");
		return;
	}
	tb_puts(b, " ([");
	int first = 1;
	for (long i = 0; i < c->a[1] && i < 16; i++) {
		if (zv_peek(&p, (uint64_t)c->a[0] + 8 * i, sizeof p) < 0 || !p.revents)
			continue;
		if (!first)
			SEP(b);
		first = 0;
		tb_printf(b, "{fd=%d, revents=", p.fd);
		tb_flags(b, (uint16_t)p.revents, &zv_n_poll_events, "0");
		tb_putc(b, '}');
	}
	tb_puts(b, "])");
}

void zv_dec_fadvise64(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const advice[] = { "POSIX_FADV_NORMAL", "POSIX_FADV_RANDOM", "POSIX_FADV_SEQUENTIAL",
					      "POSIX_FADV_WILLNEED", "POSIX_FADV_DONTNEED", "POSIX_FADV_NOREUSE" };
	zv_dec_args(b, c, "fDD");
	SEP(b);
	if ((unsigned long)c->a[3] < 6)
		tb_puts(b, advice[c->a[3]]);
	else
		tb_printf(b, "%d", (int)c->a[3]);
}

/* ---- memory --------------------------------------------------------------- */

void zv_dec_madvise(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "pU");
	SEP(b);
	tb_enum(b, (uint64_t)c->a[2], &zv_n_madvise, "0x%lx /* MADV_??? */");
}

void zv_dec_getrandom(struct zv_tb *b, const struct zv_tcall *c)
{
	if (OK(c)) {
		/* random bytes: strace prints them in \x hex */
		unsigned char d[64];
		long n = c->ret < zv_tb_strsize ? c->ret : zv_tb_strsize;
		if (n > (long)sizeof d)
			n = sizeof d;
		if (zv_peek(d, (uint64_t)c->a[0], (size_t)n) == 0) {
			tb_putc(b, '"');
			for (long i = 0; i < n; i++)
				tb_printf(b, "\\x%02x", d[i]);
			tb_putc(b, '"');
			if (n < c->ret)
				tb_puts(b, "...");
		} else {
			tb_ptr(b, (uint64_t)c->a[0]);
		}
	} else {
		tb_ptr(b, (uint64_t)c->a[0]);
	}
	SEP(b);
	zv_dec_arg(b, c, 1, 'U');
	SEP(b);
	tb_flags(b, (uint64_t)c->a[2], &zv_n_getrandom_flags, "0");
}

void zv_dec_mremap(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "pUU");
	SEP(b);
	tb_flags(b, (uint64_t)c->a[3], &zv_n_mremap_flags, "0");
	if (c->a[3] & 2 /* MREMAP_FIXED */) {
		SEP(b);
		tb_ptr(b, (uint64_t)c->a[4]);
	}
}

/* ---- processes ------------------------------------------------------------ */

/* ["a", "b"], at most 32 shown */
static void str_array(struct zv_tb *b, uint64_t p)
{
	if (!p) {
		tb_puts(b, "NULL");
		return;
	}
	tb_putc(b, '[');
	for (int i = 0;; i++) {
		uint64_t s;
		if (zv_peek(&s, p + 8 * i, 8) < 0 || !s)
			break;
		if (i)
			SEP(b);
		if (i == 32) {
			tb_puts(b, "...");
			break;
		}
		tb_str(b, s);
	}
	tb_putc(b, ']');
}

static void env_count(struct zv_tb *b, uint64_t p)
{
	int n = 0;
	uint64_t s;
	while (p && zv_peek(&s, p + 8 * n, 8) == 0 && s)
		n++;
	tb_ptr(b, p);
	if (p)
		tb_printf(b, " /* %d var%s */", n, n == 1 ? "" : "s");
}

void zv_dec_execve(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 's');
	SEP(b);
	str_array(b, (uint64_t)c->a[1]);
	SEP(b);
	env_count(b, (uint64_t)c->a[2]);
}

void zv_dec_execveat(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "as");
	SEP(b);
	str_array(b, (uint64_t)c->a[2]);
	SEP(b);
	env_count(b, (uint64_t)c->a[3]);
	SEP(b);
	zv_dec_arg(b, c, 4, 'A');
}

void zv_dec_clone(struct zv_tb *b, const struct zv_tcall *c)
{
	/* x86-64: clone(flags, stack, parent_tid, child_tid, tls) */
	uint64_t flags = (uint64_t)c->a[0];
	tb_puts(b, "child_stack=");
	tb_ptr(b, (uint64_t)c->a[1]);
	tb_puts(b, ", flags=");
	int any = 0;
	if (flags & ~0xffUL) {
		tb_flags(b, flags & ~0xffUL, &zv_n_clone_flags, "0");
		any = 1;
	}
	if (flags & 0xff) {
		if (any)
			tb_putc(b, '|');
		tb_signame(b, (int)(flags & 0xff));
	} else if (!any) {
		tb_putc(b, '0');
	}
	if (flags & 0x00100000 /* CLONE_PARENT_SETTID */) {
		tb_puts(b, ", parent_tid=");
		tb_ptr(b, (uint64_t)c->a[2]);
	}
	if (flags & (0x01000000 | 0x00200000) /* CHILD_SETTID, CHILD_CLEARTID */) {
		tb_puts(b, ", child_tidptr=");
		tb_ptr(b, (uint64_t)c->a[3]);
	}
	if (flags & 0x00080000 /* CLONE_SETTLS */) {
		tb_puts(b, ", tls=");
		tb_ptr(b, (uint64_t)c->a[4]);
	}
}

static void wait_status(struct zv_tb *b, int s)
{
	if ((s & 0x7f) == 0)
		tb_printf(b, "[{WIFEXITED(s) && WEXITSTATUS(s) == %d}]", (s >> 8) & 0xff);
	else if ((s & 0xff) == 0x7f) {
		tb_puts(b, "[{WIFSTOPPED(s) && WSTOPSIG(s) == ");
		tb_signame(b, (s >> 8) & 0xff);
		tb_puts(b, "}]");
	} else {
		tb_puts(b, "[{WIFSIGNALED(s) && WTERMSIG(s) == ");
		tb_signame(b, s & 0x7f);
		tb_puts(b, s & 0x80 ? "&& WCOREDUMP(s)}]" : "}]");
	}
}

void zv_dec_wait4(struct zv_tb *b, const struct zv_tcall *c)
{
	int st;
	zv_dec_arg(b, c, 0, 'd');
	SEP(b);
	if (c->a[1] && OK(c) && c->ret > 0 && zv_peek(&st, (uint64_t)c->a[1], 4) == 0)
		wait_status(b, st);
	else
		tb_ptr(b, (uint64_t)c->a[1]);
	SEP(b);
	tb_flags(b, (uint64_t)c->a[2], &zv_n_wait_options, "0");
	SEP(b);
	if (c->a[3] && OK(c) && c->ret > 0)
		zv_dec_rusage(b, (uint64_t)c->a[3]);
	else
		tb_ptr(b, (uint64_t)c->a[3]);
}

void zv_dec_uname(struct zv_tb *b, const struct zv_tcall *c)
{
	char u[65 * 2];
	if (!OK(c) || zv_peek(u, (uint64_t)c->a[0], sizeof u) < 0) {
		tb_ptr(b, (uint64_t)c->a[0]);
		return;
	}
	u[64] = u[129] = 0;
	tb_puts(b, "{sysname=");
	tb_quote(b, u, zv_strlen(u), 0);
	tb_puts(b, ", nodename=");
	tb_quote(b, u + 65, zv_strlen(u + 65), 0);
	tb_puts(b, ", ...}");
}

void zv_dec_arch_prctl(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_enum(b, (uint64_t)c->a[0], &zv_n_arch_prctl, "0x%lx /* ARCH_??? */");
	SEP(b);
	long code = c->a[0];
	uint64_t v;
	if ((code == 0x1003 || code == 0x1004) && OK(c) && zv_peek(&v, (uint64_t)c->a[1], 8) == 0)
		tb_printf(b, "[0x%lx]", v); /* ARCH_GET_FS, ARCH_GET_GS */
	else
		tb_ptr(b, (uint64_t)c->a[1]);
}

/* struct rlimit; inf: how strace names RLIM_INFINITY for this call */
void zv_dec_rlimit(struct zv_tb *b, uint64_t p, const char *inf)
{
	uint64_t r[2];
	if (!p || zv_peek(r, p, sizeof r) < 0) {
		tb_ptr(b, p);
		return;
	}
	tb_puts(b, "{rlim_cur=");
	for (int k = 0; k < 2; k++) {
		if (k)
			tb_puts(b, ", rlim_max=");
		if (r[k] == ~0UL)
			tb_puts(b, inf);
		else if (r[k] && !(r[k] % 1024))
			tb_printf(b, "%lu*1024", r[k] / 1024);
		else
			tb_printf(b, "%lu", r[k]);
	}
	tb_putc(b, '}');
}

void zv_dec_prlimit64(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'd');
	SEP(b);
	tb_enum(b, (uint64_t)c->a[1], &zv_n_rlimits, "0x%lx /* RLIMIT_??? */");
	SEP(b);
	zv_dec_rlimit(b, (uint64_t)c->a[2], "RLIM64_INFINITY");
	SEP(b);
	if (OK(c))
		zv_dec_rlimit(b, (uint64_t)c->a[3], "RLIM64_INFINITY");
	else
		tb_ptr(b, (uint64_t)c->a[3]);
}

/* getrlimit(resource, filled), setrlimit(resource, read) */
void zv_dec_getrlimit(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_enum(b, (uint64_t)c->a[0], &zv_n_rlimits, "0x%lx /* RLIMIT_??? */");
	SEP(b);
	if (c->nr == 160 /* setrlimit */ || OK(c))
		zv_dec_rlimit(b, (uint64_t)c->a[1], "RLIM_INFINITY");
	else
		tb_ptr(b, (uint64_t)c->a[1]);
}

void zv_dec_rseq(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_ptr(b, (uint64_t)c->a[0]);
	tb_printf(b, ", 0x%lx, %ld, 0x%lx", c->a[1], c->a[2], c->a[3]);
}
