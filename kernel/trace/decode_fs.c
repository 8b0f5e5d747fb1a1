/* Decoders for file-system calls beyond the basic ones (decode.h): statfs,
 * statx, extended attributes, fcntl's results, and the *at2 variants. */
#include "zvisor.h"
#include "trace/decode.h"

/* struct statfs (x86-64), printed in full as strace does */
static void statfs_struct(struct zv_tb *b, const struct zv_tcall *c, uint64_t p)
{
	struct {
		int64_t type, bsize;
		uint64_t blocks, bfree, bavail, files, ffree;
		uint32_t fsid[2];
		int64_t namelen, frsize, flags, spare[4];
	} s;
	if (!OK(c) || zv_peek(&s, p, sizeof s) < 0) {
		tb_ptr(b, p);
		return;
	}
	tb_puts(b, "{f_type=");
	tb_enum(b, (uint64_t)s.type, &zv_n_fs_magics, "0x%lx");
	tb_printf(b, ", f_bsize=%ld, f_blocks=%lu, f_bfree=%lu, f_bavail=%lu, f_files=%lu, f_ffree=%lu",
		  s.bsize, s.blocks, s.bfree, s.bavail, s.files, s.ffree);
	tb_puts(b, ", f_fsid={val=[");
	for (int i = 0; i < 2; i++) {
		if (i)
			SEP(b);
		tb_printf(b, s.fsid[i] ? "0x%x" : "%u", s.fsid[i]);
	}
	tb_printf(b, "]}, f_namelen=%ld, f_frsize=%ld, f_flags=", s.namelen, s.frsize);
	tb_flags(b, (uint64_t)s.flags, &zv_n_statfs_flags, "0");
	tb_putc(b, '}');
}

void zv_dec_statfs(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 's');
	SEP(b);
	statfs_struct(b, c, (uint64_t)c->a[1]);
}

void zv_dec_fstatfs(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	statfs_struct(b, c, (uint64_t)c->a[1]);
}

/* statx(dirfd, path, flags, mask, buf): the flags start with the sync type
 * (a 2-bit field whose 0 has a name), the result is abbreviated. */
void zv_dec_statx(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const sync[] = { "AT_STATX_SYNC_AS_STAT", "AT_STATX_FORCE_SYNC", "AT_STATX_DONT_SYNC",
					    "AT_STATX_FORCE_SYNC|AT_STATX_DONT_SYNC" };
	uint64_t fl = (uint64_t)c->a[2] & 0xffffffffUL;
	zv_dec_args(b, c, "as");
	SEP(b);
	tb_puts(b, sync[(fl >> 13) & 3]);
	if (fl & ~0x6000UL) {
		tb_putc(b, '|');
		tb_flags(b, fl & ~0x6000UL, &zv_n_statx_at_flags, "0");
	}
	SEP(b);
	tb_flags(b, (uint64_t)(uint32_t)c->a[3], &zv_n_statx_mask, "0");
	SEP(b);
	struct {
		uint32_t mask, blksize;
		uint64_t attributes;
		uint32_t nlink, uid, gid;
		uint16_t mode, pad;
		uint64_t ino, size;
	} x;
	if (!OK(c) || zv_peek(&x, (uint64_t)c->a[4], sizeof x) < 0) {
		tb_ptr(b, (uint64_t)c->a[4]);
		return;
	}
	tb_puts(b, "{stx_mask=");
	tb_flags(b, x.mask, &zv_n_statx_mask, "0");
	tb_puts(b, ", stx_attributes=");
	tb_flags(b, x.attributes, &zv_n_statx_attrs, "0");
	tb_puts(b, ", stx_mode=");
	zv_dec_mode_type(b, x.mode);
	tb_printf(b, ", stx_size=%lu, ...}", x.size);
}

/* getxattr(path, name, value, size): the value as a string of the result's length */
void zv_dec_getxattr(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, c->nr == 193 /* fgetxattr */ ? "fSbU" : "sSbU");
}

/* an loff_t the call reads and updates: [N], or NULL */
void zv_dec_loff(struct zv_tb *b, uint64_t p)
{
	int64_t v;
	if (p && zv_peek(&v, p, 8) == 0)
		tb_printf(b, "[%ld]", v);
	else
		tb_ptr(b, p);
}

/* (fd_in, off_in, fd_out, off_out, ...) of copy_file_range and splice */
void zv_dec_fd_offsets(struct zv_tb *b, const struct zv_tcall *c)
{
	for (int i = 0; i < 4; i += 2) {
		if (i)
			SEP(b);
		zv_dec_arg(b, c, i, 'f');
		SEP(b);
		zv_dec_loff(b, (uint64_t)c->a[i + 1]);
	}
}

void zv_dec_copy_file_range(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_fd_offsets(b, c);
	tb_printf(b, ", %lu, %u", (unsigned long)c->a[4], (unsigned)c->a[5]);
}

/* utimensat(dirfd, path, times, flags): the times as [UTIME_NOW, {...}] */
static void utime_ns(struct zv_tb *b, int64_t sec, int64_t nsec)
{
	if (nsec == 0x3fffffff)
		tb_puts(b, "UTIME_NOW");
	else if (nsec == 0x3ffffffe)
		tb_puts(b, "UTIME_OMIT");
	else {
		tb_printf(b, "{tv_sec=%ld, tv_nsec=%ld} /* ", sec, nsec);
		zv_dec_iso_time(b, sec, nsec);
		tb_puts(b, " */");
	}
}

void zv_dec_utimensat(struct zv_tb *b, const struct zv_tcall *c)
{
	int64_t t[4];
	zv_dec_args(b, c, "as");
	SEP(b);
	if (!c->a[2] || zv_peek(t, (uint64_t)c->a[2], sizeof t) < 0) {
		tb_ptr(b, (uint64_t)c->a[2]);
	} else {
		tb_putc(b, '[');
		utime_ns(b, t[0], t[1]);
		SEP(b);
		utime_ns(b, t[2], t[3]);
		tb_putc(b, ']');
	}
	SEP(b);
	zv_dec_arg(b, c, 3, 'A');
}

/* struct flock for F_GETLK/F_SETLK(W) and the OFD locks */
static void flock_struct(struct zv_tb *b, const struct zv_tcall *c, int with_pid)
{
	static const char *const types[] = { "F_RDLCK", "F_WRLCK", "F_UNLCK" };
	static const char *const whence[] = { "SEEK_SET", "SEEK_CUR", "SEEK_END" };
	struct { int16_t type, whence; int32_t pad; int64_t start, len; int32_t pid; } f;
	if (zv_peek(&f, (uint64_t)c->a[2], sizeof f) < 0) {
		tb_ptr(b, (uint64_t)c->a[2]);
		return;
	}
	tb_puts(b, "{l_type=");
	if ((uint16_t)f.type < 3)
		tb_puts(b, types[f.type]);
	else
		tb_printf(b, "0x%x /* F_??? */", (unsigned)(uint16_t)f.type);
	tb_puts(b, ", l_whence=");
	if ((uint16_t)f.whence < 3)
		tb_puts(b, whence[f.whence]);
	else
		tb_printf(b, "0x%x /* SEEK_??? */", (unsigned)(uint16_t)f.whence);
	tb_printf(b, ", l_start=%ld, l_len=%ld", f.start, f.len);
	if (with_pid)
		tb_printf(b, ", l_pid=%d", f.pid);
	tb_putc(b, '}');
}

void zv_dec_fcntl(struct zv_tb *b, const struct zv_tcall *c)
{
	int cmd = (int)c->a[1];
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	tb_enum(b, (uint64_t)cmd, &zv_n_fcntl_cmds, "0x%lx /* F_??? */");
	switch (cmd) {
	case 1: case 3: case 9: case 11: case 1025: case 1032: case 1034:
		/* GETFD GETFL GETOWN GETSIG GETLEASE GETPIPE_SZ GET_SEALS */
		return;
	case 2: /* F_SETFD */
		SEP(b);
		tb_flags(b, (uint64_t)c->a[2], &zv_n_fd_flags, "0");
		return;
	case 4: /* F_SETFL */
		SEP(b);
		zv_dec_arg(b, c, 2, 'o');
		return;
	case 5: case 6: case 7: case 36: case 37: case 38: /* GETLK SETLK SETLKW, OFD_* */
		SEP(b);
		flock_struct(b, c, (cmd == 5 || cmd == 36) && OK(c));
		return;
	case 0: case 8: case 10: case 1030: case 1031: /* DUPFD SETOWN SETSIG DUPFD_CLOEXEC SETPIPE_SZ */
		SEP(b);
		zv_dec_arg(b, c, 2, 'd');
		return;
	default:
		SEP(b);
		zv_dec_arg(b, c, 2, 'x');
	}
}

/* fcntl's result: the flags F_GETFD and F_GETFL return, in hex with names */
void zv_dec_fcntl_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	long r = c->ret;
	int cmd = (int)c->a[1];
	if ((cmd != 1 && cmd != 3) || (cmd == 1 && r == 0)) {
		tb_printf(b, "%ld", r);
		return;
	}
	tb_printf(b, "0x%lx (flags ", r);
	if (cmd == 1) {
		tb_flags(b, (uint64_t)r, &zv_n_fd_flags, "0");
	} else {
		struct zv_tcall as_arg = *c;
		as_arg.a[0] = r;
		zv_dec_arg(b, &as_arg, 0, 'o');
	}
	tb_putc(b, ')');
}

void zv_dec_flock(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const ops[] = { 0, "LOCK_SH", "LOCK_EX", 0, 0, 0, 0, 0, "LOCK_UN" };
	long op = c->a[1];
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	if ((op & ~4L) > 0 && (op & ~4L) < 9 && ops[op & ~4L]) {
		tb_puts(b, ops[op & ~4L]);
		if (op & 4)
			tb_puts(b, "|LOCK_NB");
	} else {
		tb_printf(b, "%ld", op);
	}
}

void zv_dec_fallocate(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_arg(b, c, 0, 'f');
	SEP(b);
	tb_flags(b, (uint64_t)(uint32_t)c->a[1], &zv_n_falloc_flags, "0");
	tb_printf(b, ", %ld, %ld", c->a[2], c->a[3]);
}

void zv_dec_sendfile(struct zv_tb *b, const struct zv_tcall *c)
{
	zv_dec_args(b, c, "ff");
	SEP(b);
	zv_dec_loff(b, (uint64_t)c->a[2]);
	tb_printf(b, ", %lu", (unsigned long)c->a[3]);
}

/* openat2(dirfd, path, {flags, mode, resolve}, size) */
void zv_dec_openat2(struct zv_tb *b, const struct zv_tcall *c)
{
	uint64_t how[3];
	zv_dec_args(b, c, "as");
	SEP(b);
	if (!c->a[2] || (unsigned long)c->a[3] < sizeof how || zv_peek(how, (uint64_t)c->a[2], sizeof how) < 0) {
		tb_ptr(b, (uint64_t)c->a[2]);
	} else {
		struct zv_tcall fl = *c;
		fl.a[0] = (long)how[0];
		tb_puts(b, "{flags=");
		zv_dec_arg(b, &fl, 0, 'o');
		if (how[0] & (0100 | 020000000)) { /* O_CREAT, __O_TMPFILE */
			tb_puts(b, ", mode=");
			tb_mode(b, how[1]);
		}
		tb_puts(b, ", resolve=");
		tb_flags(b, how[2], &zv_n_resolve_flags, "0");
		tb_putc(b, '}');
	}
	tb_printf(b, ", %lu", (unsigned long)c->a[3]);
}
