/* What the host's execve would run for a path, and the mapping of an x86-64
 * ELF executable and its interpreter into this process.
 *
 * zv_exec_resolve() follows the host's order of checks so that the guest sees
 * the host's errno (measured on Linux 6.x, fs/exec.c + binfmt_script.c +
 * binfmt_elf.c; tests/test_loader_fuzz.py compares them):
 *   lookup errors (ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG), then EACCES for
 *   anything but a regular file with execute permission;
 *   "#!" scripts, parsed as load_script() does, nesting up to ZV_SCRIPT_DEPTH
 *   (ELOOP beyond);
 *   ELF header and program header table: ENOEXEC (the host allows up to 1170
 *   program headers, 64 KiB);
 *   PT_INTERP (the first): size < 2 or > PATH_MAX or not NUL-terminated is
 *   ENOEXEC, a negative file offset EINVAL, beyond the end of the file EIO;
 *   then open_exec() of the interpreter (ENOENT, EACCES...), EIO if it is
 *   shorter than an ELF header, ELIBBAD if it is not a usable x86-64 ELF.
 * Where the host would accept a file and then kill the new process (bad
 * PT_LOAD segments, nothing to load), zvisor refuses it before the point of
 * no return instead, with ENOEXEC and a reason; these checks come after the
 * host's, so that the host's errno wins when both fail. zvisor is stricter
 * than the host in three ways: it refuses ELFCLASS32 and big-endian e_ident
 * (the host ignores EI_CLASS and EI_DATA of an EM_X86_64 file), more than
 * MAX_PHNUM program headers, and an interpreter that names an interpreter.
 *
 * zv_load_elf() maps as binfmt_elf does: ET_EXEC at its addresses, a PIE at
 * ELF_ET_DYN_BASE plus a random offset, a static PIE (ET_DYN without
 * PT_INTERP) and the interpreter anywhere in the mmap area; .bss pages are
 * read-write (and executable if the segment is) whatever the segment's
 * flags, as vm_brk_flags() maps them; nothing stays mapped between segments. */
#include "loader/loader.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/random.h"
#include "sys/viewhook.h"
#include <asm/stat.h>
#include <linux/elf.h>
#include <linux/fcntl.h>
#include <linux/mman.h>

#define PAGE 4096UL
#define PAGE_DOWN(x) ((uint64_t)(x) & ~(PAGE - 1))
#define PAGE_UP(x) (((uint64_t)(x) + PAGE - 1) & ~(PAGE - 1))
#define TASK_TOP 0x7ffffffff000UL /* x86-64 TASK_SIZE (4-level paging) */
#define ET_DYN_BASE 0x555555554000UL /* the host's ELF_ET_DYN_BASE */
#define MAX_PHNUM 512 /* zvisor's limit; the host's is 65536 / 56 */
#define MAX_ALIGN (1UL << 30) /* larger p_align values are ignored */
#define BINPRM_BUF 256 /* bytes the host reads to choose a binary format */
#define X_OK_ 1
#define IS_REG(m) (((m) & 0170000) == 0100000)
#define ADDR_NO_RANDOMIZE_ 0x0040000

/* The kernel image itself, from the default linker script: an ET_EXEC guest
 * must not land on it. Weak so that the loader links anywhere. */
extern char __executable_start[] __attribute__((weak));
extern char _end[] __attribute__((weak));

/* 28 KiB, on the stack: what every load uses comes first, so that a file
 * with few headers touches (and faults in) one page of it, not two. */
struct elf {
	int fd;
	uint64_t size; /* file size */
	/* from check_loads(): the page-aligned span of the PT_LOAD segments */
	uint64_t lo, hi, align;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[MAX_PHNUM];
};

static int fail(char *why, size_t wl, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t wl, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	zv_vsnprintf(why, wl, fmt, ap);
	va_end(ap);
	return err;
}

/* Reads up to n bytes at off; returns the count (short only at end of file)
 * or -errno. */
static long pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		long r = zv_sys4(__NR_pread64, fd, (char *)buf + got, n - got, off + got);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		got += r;
	}
	return (long)got;
}

/* Opens the file at (at->dirfd, at->name) for reading if it is a regular
 * file (as open_exec, without its checks: for a file they have passed). */
static int open_regular_at(const struct zv_at *at, uint64_t *size)
{
	struct stat st;
	int nofollow = at->at_flags & AT_SYMLINK_NOFOLLOW ? O_NOFOLLOW : 0;
	int fd = (int)zv_openat(at->dirfd, at->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | nofollow, 0);
	if (fd < 0)
		return fd;
	long r = zv_sys2(__NR_fstat, fd, &st);
	if (r < 0 || !IS_REG(st.st_mode)) {
		zv_close(fd);
		return r < 0 ? (int)r : -EACCES;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

/* The path as the guest names it (through the view, sys/viewhook.h). */
static int open_regular(const char *path, uint64_t *size)
{
	struct zv_at at;
	long r = zv_at_lookup(path, 0, &at);
	if (r == 0)
		r = open_regular_at(&at, size);
	zv_at_release(&at);
	return (int)r;
}

/* Opens path as the host's open_exec() judges it for execve: the lookup's
 * errors, then EACCES for anything but a regular file the caller may execute.
 * Returns the fd (O_CLOEXEC) and the file size, or -errno. */
static int open_exec(const char *path, uint64_t *size)
{
	/* The host looks "" up as the current directory (an interpreter named
	 * by PT_INTERP or #! can be empty): EACCES. */
	if (!*path)
		path = ".";
	if (zv_strlen(path) >= ZV_PATH_MAX)
		return -ENAMETOOLONG;
	struct zv_at at;
	long r = zv_at_lookup(path, 0, &at);
	if (r < 0)
		return (int)r;
	r = -ENOSYS;
#ifdef __NR_faccessat2
	r = zv_sys4(__NR_faccessat2, at.dirfd, at.name, X_OK_, AT_EACCESS | at.at_flags);
#endif
	if (r == -ENOSYS)
		r = zv_sys3(__NR_faccessat, at.dirfd, at.name, X_OK_);
	/* stat before open: opening a FIFO or a device could block or act. */
	struct stat st;
	if (r == 0)
		r = zv_sys4(__NR_newfstatat, at.dirfd, at.name, &st, at.at_flags);
	if (r == 0 && !IS_REG(st.st_mode))
		r = -EACCES;
	if (r == 0)
		r = open_regular_at(&at, size);
	zv_at_release(&at);
	return (int)r;
}

/* ---- ELF headers ------------------------------------------------------- */

/* What zvisor refuses in e_ident that the host ignores for x86-64 (it never
 * looks at EI_CLASS or EI_DATA), or 0. Also the better reason when a check
 * the host makes fails on a file that is 32-bit or big-endian. */
static const char *ident_problem(const Elf64_Ehdr *eh)
{
	const unsigned char *id = eh->e_ident;
	if (id[EI_CLASS] == ELFCLASS32)
		return "32-bit ELF is not supported";
	if (id[EI_DATA] == ELFDATA2MSB)
		return "big-endian ELF is not supported";
	if (id[EI_CLASS] != ELFCLASS64)
		return "bad ELF class (e_ident[EI_CLASS])";
	if (id[EI_DATA] != ELFDATA2LSB)
		return "bad ELF data encoding (e_ident[EI_DATA])";
	return 0;
}

/* The ELF header checks the host makes (binfmt_elf.c: load_elf_binary() and
 * load_elf_phdrs()), all ENOEXEC, in its order. */
static int check_ehdr(const Elf64_Ehdr *eh, char *why, size_t wl)
{
	const char *id = ident_problem(eh);
	int err = -ENOEXEC;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return fail(why, wl, err, "not an ELF file or #! script");
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN)
		return id ? fail(why, wl, err, "%s", id) : fail(why, wl, err, "not an executable ELF (type %u)", eh->e_type);
	if (eh->e_machine != EM_X86_64)
		return id ? fail(why, wl, err, "%s", id)
			  : fail(why, wl, err, "not an x86-64 ELF (machine %u)", eh->e_machine);
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return id ? fail(why, wl, err, "%s", id)
			  : fail(why, wl, err, "bad program header size %u", eh->e_phentsize);
	if (eh->e_phnum == 0)
		return fail(why, wl, err, "no program headers");
	if ((uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > 65536)
		return fail(why, wl, err, "too many program headers (%u)", eh->e_phnum);
	return 0;
}

/* Reads e->eh from the file (zero-padded when the file is shorter, as the
 * host's header buffer is) and returns the number of bytes that were there. */
static long read_ehdr(struct elf *e)
{
	memset(&e->eh, 0, sizeof e->eh);
	return pread_full(e->fd, &e->eh, sizeof e->eh, 0);
}

/* Reads program headers [first, first + n) into e->ph[0..n); any failure
 * is ENOEXEC, as in the host. */
static int read_ph(struct elf *e, unsigned first, unsigned n, char *why, size_t wl)
{
	uint64_t size = (uint64_t)e->eh.e_phnum * sizeof(Elf64_Phdr), off = e->eh.e_phoff;
	if (off > e->size || size > e->size - off)
		return fail(why, wl, -ENOEXEC, "program header table (0x%lx+0x%lx) is beyond the end of the file (truncated?)",
			    (unsigned long)off, (unsigned long)size);
	size = (uint64_t)n * sizeof(Elf64_Phdr);
	off += (uint64_t)first * sizeof(Elf64_Phdr);
	long r = pread_full(e->fd, e->ph, size, off);
	if (r < 0)
		return fail(why, wl, -ENOEXEC, "cannot read program headers: %s", zv_strerror((int)-r));
	if ((uint64_t)r != size)
		return fail(why, wl, -ENOEXEC, "program header table is beyond the end of the file (truncated?)");
	return 0;
}

/* The whole table, or as much as zvisor keeps (it refuses more later). */
static int read_phdrs(struct elf *e, char *why, size_t wl)
{
	return read_ph(e, 0, e->eh.e_phnum < MAX_PHNUM ? e->eh.e_phnum : MAX_PHNUM, why, wl);
}

/* The checks zvisor adds to the host's, made after the host's own (which
 * decide the errno when both fail): all ENOEXEC. */
static int check_loads(struct elf *e, char *why, size_t wl);
static int check_extra(struct elf *e, char *why, size_t wl)
{
	const char *id = ident_problem(&e->eh);
	if (id)
		return fail(why, wl, -ENOEXEC, "%s", id);
	if (e->eh.e_phnum > MAX_PHNUM)
		return fail(why, wl, -ENOEXEC, "too many program headers (%u, zvisor allows %d)", e->eh.e_phnum, MAX_PHNUM);
	return check_loads(e, why, wl);
}

/* The first PT_INTERP (the only one the host looks at), copied into out.
 * Returns 1, 0 without PT_INTERP, or -errno as the host gives it. */
static int get_interp(struct elf *e, char *out, char *why, size_t wl)
{
	for (unsigned i = 0; i < e->eh.e_phnum; i++) {
		if (i && i % MAX_PHNUM == 0) { /* more than zvisor keeps: scan on */
			unsigned n = e->eh.e_phnum - i < MAX_PHNUM ? e->eh.e_phnum - i : MAX_PHNUM;
			int err = read_ph(e, i, n, why, wl);
			if (err)
				return err;
		}
		const Elf64_Phdr *p = &e->ph[i % MAX_PHNUM];
		if (p->p_type != PT_INTERP)
			continue;
		if (p->p_filesz < 2 || p->p_filesz > ZV_PATH_MAX)
			return fail(why, wl, -ENOEXEC, "bad PT_INTERP size %lu", (unsigned long)p->p_filesz);
		/* kernel_read() refuses a negative loff_t (or one the size makes
		 * negative) with EINVAL; a short read is EIO. */
		if ((int64_t)p->p_offset < 0 || (int64_t)(p->p_offset + p->p_filesz) < 0)
			return fail(why, wl, -EINVAL, "PT_INTERP offset 0x%lx is out of range", (unsigned long)p->p_offset);
		if (p->p_offset > e->size || p->p_filesz > e->size - p->p_offset)
			return fail(why, wl, -EIO, "PT_INTERP (0x%lx+0x%lx) is beyond the end of the file",
				    (unsigned long)p->p_offset, (unsigned long)p->p_filesz);
		long r = pread_full(e->fd, out, p->p_filesz, p->p_offset);
		if (r < 0)
			return fail(why, wl, (int)r, "cannot read PT_INTERP: %s", zv_strerror((int)-r));
		if ((uint64_t)r != p->p_filesz)
			return fail(why, wl, -EIO, "PT_INTERP is beyond the end of the file");
		if (out[p->p_filesz - 1])
			return fail(why, wl, -ENOEXEC, "PT_INTERP is not NUL-terminated");
		return 1;
	}
	return 0;
}

static int overlaps_kernel(uint64_t lo, uint64_t hi)
{
	uint64_t ks = (uint64_t)__executable_start, ke = PAGE_UP((uint64_t)_end);
	return ks && ke > ks && lo < ke && hi > ks;
}

/* Checks the PT_LOAD segments zvisor is about to map and records their span
 * in e->lo, e->hi and the alignment of an ET_DYN base in e->align. */
static int check_loads(struct elf *e, char *why, size_t wl)
{
	int nload = 0;
	uint64_t lo = ~0UL, hi = 0, align = PAGE;
	for (int i = 0; i < e->eh.e_phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type != PT_LOAD)
			continue;
		nload++;
		unsigned long off = p->p_offset, va = p->p_vaddr, fsz = p->p_filesz, msz = p->p_memsz;
		if (fsz > msz)
			return fail(why, wl, -ENOEXEC, "segment %d: file size 0x%lx exceeds memory size 0x%lx", i, fsz, msz);
		if ((off ^ va) & (PAGE - 1))
			return fail(why, wl, -ENOEXEC, "segment %d: file offset 0x%lx and address 0x%lx differ modulo the page size",
				    i, off, va);
		if (fsz && (off > e->size || fsz > e->size - off))
			return fail(why, wl, -ENOEXEC, "segment %d: file range 0x%lx+0x%lx is beyond the end of the file (truncated?)",
				    i, off, fsz);
		if (va > TASK_TOP || msz > TASK_TOP - va)
			return fail(why, wl, -ENOEXEC, "segment %d: 0x%lx+0x%lx is outside the user address space", i, va, msz);
		if (!msz)
			continue;
		if (PAGE_DOWN(va) < lo)
			lo = PAGE_DOWN(va);
		if (PAGE_UP(va + msz) > hi)
			hi = PAGE_UP(va + msz);
		uint64_t a = p->p_align;
		if (a > align && a <= MAX_ALIGN && !(a & (a - 1)))
			align = a;
	}
	if (!nload)
		return fail(why, wl, -ENOEXEC, "no PT_LOAD segment");
	if (hi == 0)
		return fail(why, wl, -ENOEXEC, "no PT_LOAD segment has a memory size");
	if (e->eh.e_type == ET_EXEC) {
		if (lo < PAGE)
			return fail(why, wl, -ENOEXEC, "segment at 0x%lx overlaps page 0, which zvisor reserves", (unsigned long)lo);
		if (overlaps_kernel(lo, hi))
			return fail(why, wl, -ENOEXEC, "segments at 0x%lx-0x%lx overlap zvisor at 0x%lx-0x%lx", (unsigned long)lo,
				    (unsigned long)hi, (unsigned long)__executable_start, (unsigned long)PAGE_UP((uint64_t)_end));
	}
	e->lo = lo;
	e->hi = hi;
	e->align = align;
	return 0;
}

/* Reads and checks an interpreter named by PT_INTERP into e (fd open). The
 * host's errors for it: open_exec()'s, EIO for a short header, ELIBBAD for a
 * bad one; zvisor also refuses one that itself names an interpreter. */
static int open_interp(const char *ipath, struct elf *e, int checked, char *why, size_t wl)
{
	char sub[128];
	int err;
	e->fd = checked ? open_regular(ipath, &e->size) : open_exec(ipath, &e->size);
	if (e->fd < 0)
		return fail(why, wl, e->fd, "interpreter %s: %s", ipath, zv_strerror(-e->fd));
	long r = read_ehdr(e);
	if (r < 0) {
		err = fail(why, wl, (int)r, "interpreter %s: %s", ipath, zv_strerror((int)-r));
		goto out;
	}
	if ((size_t)r < sizeof e->eh) {
		err = fail(why, wl, -EIO, "interpreter %s: shorter than an ELF header", ipath);
		goto out;
	}
	err = check_ehdr(&e->eh, sub, sizeof sub);
	if (!err)
		err = read_phdrs(e, sub, sizeof sub);
	if (!err)
		err = check_extra(e, sub, sizeof sub);
	for (int i = 0; !err && i < e->eh.e_phnum; i++)
		if (e->ph[i].p_type == PT_INTERP)
			err = fail(sub, sizeof sub, -ELIBBAD, "it names an interpreter itself");
	if (err) {
		fail(why, wl, 0, "interpreter %s: %s", ipath, sub);
		err = -ELIBBAD;
	}
out:
	if (err) {
		zv_close(e->fd);
		e->fd = -1;
	}
	return err;
}

/* Checks an ELF executable (e->fd, e->size set) as the host and zvisor's
 * mapper will judge it, including its interpreter. e is reused for that. */
static int check_exe(struct elf *e, char *why, size_t wl)
{
	char ipath[ZV_PATH_MAX], lwhy[160];
	int err = check_ehdr(&e->eh, why, wl);
	if (!err)
		err = read_phdrs(e, why, wl);
	if (err)
		return err;
	int has_interp = get_interp(e, ipath, why, wl);
	if (has_interp < 0)
		return has_interp;
	/* The host checks the interpreter first and the segments when it is
	 * past the point of no return, so a segment error comes last. */
	int lerr = check_extra(e, lwhy, sizeof lwhy);
	if (has_interp) {
		int exe_fd = e->fd;
		err = open_interp(ipath, e, 0, why, wl);
		if (!err)
			zv_close(e->fd);
		e->fd = exe_fd;
		if (err)
			return err;
	}
	if (lerr)
		zv_strlcpy(why, lwhy, wl);
	return lerr;
}

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
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static int resolve(const char *path, int host_checked, struct zv_resolved *r)
{
	struct elf e;
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
		e.fd = depth == 0 && host_checked ? open_regular(cur, &e.size) : open_exec(cur, &e.size);
		if (e.fd < 0)
			return fail(r->why, sizeof r->why, e.fd, "%s%s%s%s", who, wname, sep, zv_strerror(-e.fd));
		if (depth > ZV_SCRIPT_DEPTH) {
			zv_close(e.fd);
			return fail(r->why, sizeof r->why, -ELOOP, "more than %d nested #! interpreters", ZV_SCRIPT_DEPTH);
		}
		char buf[BINPRM_BUF + 1];
		memset(buf, 0, sizeof buf);
		long n = pread_full(e.fd, buf, BINPRM_BUF, 0);
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
		else
			err = check_exe(&e, sub, sizeof sub);
		zv_close(e.fd);
		if (err)
			return fail(r->why, sizeof r->why, err, "%s%s%s%s", who, wname, sep, sub);
		zv_strlcpy(r->elf, cur, sizeof r->elf);
		for (int i = 0; i < nrev; i++)
			r->prefix[i] = rev[nrev - 1 - i];
		r->nprefix = nrev;
		return 0;
	}
}

int zv_exec_resolve(const char *path, int host_checked, struct zv_resolved *r)
{
	r->nprefix = 0;
	r->elf[0] = 0;
	r->why[0] = 0;
	int err = resolve(path, host_checked, r);
	if (err) {
		r->nprefix = 0;
		sanitize(r->why);
	}
	return err;
}

/* ---- mapping ----------------------------------------------------------- */

static uint64_t random_pages(void)
{
	uint64_t v = 0;
	long pers = zv_sys1(__NR_personality, 0xffffffffUL);
	if (pers >= 0 && (pers & ADDR_NO_RANDOMIZE_))
		return 0;
	zv_start_random(&v, sizeof v);
	return v & 0xffff;
}

enum place { PLACE_FIXED, PLACE_PIE, PLACE_ANY };

/* Gives back the reserved pages no segment covers: the host leaves nothing
 * mapped between segments. */
static void unmap_holes(const struct elf *e, uint64_t bias)
{
	uint64_t cur = e->lo;
	while (cur < e->hi) {
		uint64_t next = e->hi;
		int covered = 0;
		for (int i = 0; i < e->eh.e_phnum; i++) {
			const Elf64_Phdr *p = &e->ph[i];
			if (p->p_type != PT_LOAD || !p->p_memsz)
				continue;
			uint64_t s = PAGE_DOWN(p->p_vaddr), end = PAGE_UP(p->p_vaddr + p->p_memsz);
			if (s <= cur && cur < end) {
				cur = end;
				covered = 1;
				break;
			}
			if (s > cur && s < next)
				next = s;
		}
		if (covered)
			continue;
		zv_munmap((void *)(cur + bias), next - cur);
		cur = next;
	}
}

void (*zv_exec_mapped)(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot);

static int prot_of(uint32_t flags)
{
	return (flags & PF_R ? PROT_READ : 0) | (flags & PF_W ? PROT_WRITE : 0) | (flags & PF_X ? PROT_EXEC : 0);
}

/* Reserves the span of e's segments with one PROT_NONE mapping placed as the
 * host would, then maps every PT_LOAD over it. Returns 0 with the load bias. */
static int map_elf(struct elf *e, enum place place, uint64_t *biasp, char *why, size_t wl)
{
	uint64_t span = e->hi - e->lo, start;
	const int rflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	long r;
	if (place == PLACE_FIXED) {
		r = (long)zv_mmap((void *)e->lo, span, PROT_NONE, rflags | MAP_FIXED_NOREPLACE, -1, 0);
		if (!zv_is_err(r) && (uint64_t)r != e->lo) { /* a kernel without MAP_FIXED_NOREPLACE */
			zv_munmap((void *)r, span);
			r = -EEXIST;
		}
		if (r == -EEXIST)
			return fail(why, wl, -ENOEXEC, "cannot map segments at 0x%lx-0x%lx: %s", (unsigned long)e->lo,
				    (unsigned long)e->hi,
				    overlaps_kernel(e->lo, e->hi) ? "overlaps zvisor" : "address range already in use");
		if (r == -EPERM || r == -EACCES)
			return fail(why, wl, -ENOEXEC, "cannot map segments at 0x%lx: below vm.mmap_min_addr", (unsigned long)e->lo);
		if (zv_is_err(r))
			return fail(why, wl, (int)r, "cannot map segments at 0x%lx-0x%lx: %s", (unsigned long)e->lo,
				    (unsigned long)e->hi, zv_strerror((int)-r));
		start = e->lo;
	} else {
		r = -EEXIST;
		if (place == PLACE_PIE) {
			uint64_t base = (ET_DYN_BASE + (random_pages() << 12)) & ~(e->align - 1);
			if (span <= TASK_TOP - base) {
				r = (long)zv_mmap((void *)base, span, PROT_NONE, rflags | MAP_FIXED_NOREPLACE, -1, 0);
				if (!zv_is_err(r) && (uint64_t)r != base) {
					zv_munmap((void *)r, span);
					r = -EEXIST;
				}
			}
		}
		if (zv_is_err(r)) { /* anywhere in the mmap area, aligned */
			uint64_t extra = e->align > PAGE ? e->align : 0;
			if (span + extra < span)
				return fail(why, wl, -ENOMEM, "cannot map 0x%lx bytes", (unsigned long)span);
			r = (long)zv_mmap(0, span + extra, PROT_NONE, rflags, -1, 0);
			if (zv_is_err(r))
				return fail(why, wl, (int)r, "cannot map 0x%lx bytes: %s", (unsigned long)span,
					    zv_strerror((int)-r));
			uint64_t got = (uint64_t)r, al = (got + e->align - 1) & ~(e->align - 1);
			if (al > got)
				zv_munmap((void *)got, al - got);
			if (got + span + extra > al + span)
				zv_munmap((void *)(al + span), got + span + extra - (al + span));
			r = (long)al;
		}
		start = (uint64_t)r;
	}
	uint64_t bias = start - e->lo;
	for (int i = 0; i < e->eh.e_phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type != PT_LOAD || !p->p_memsz)
			continue;
		int prot = prot_of(p->p_flags);
		uint64_t va = bias + p->p_vaddr, pstart = PAGE_DOWN(va);
		uint64_t fend = va + p->p_filesz, mend = va + p->p_memsz, anon = pstart;
		if (p->p_filesz) {
			r = (long)zv_mmap((void *)pstart, PAGE_UP(fend) - pstart, prot, MAP_PRIVATE | MAP_FIXED, e->fd,
					  (long)PAGE_DOWN(p->p_offset));
			if (zv_is_err(r))
				goto bad;
			if ((prot & PROT_EXEC) && zv_exec_mapped)
				zv_exec_mapped(e->fd, pstart, PAGE_UP(fend) - pstart, PAGE_DOWN(p->p_offset), prot);
			anon = PAGE_UP(fend);
			/* The rest of the last file page is .bss: zero it (the host
			 * does so only when the segment is writable). */
			if (p->p_memsz > p->p_filesz && (prot & PROT_WRITE) && (fend & (PAGE - 1)))
				memset((void *)fend, 0, PAGE_UP(fend) - fend);
		}
		if (PAGE_UP(mend) > anon) {
			/* The host maps whole .bss pages with vm_brk_flags(): always
			 * read-write (executable if the segment is), and accounted. */
			int bss_prot = PROT_READ | PROT_WRITE | (prot & PROT_EXEC);
			r = (long)zv_mmap((void *)anon, PAGE_UP(mend) - anon, bss_prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
					  -1, 0);
			if (zv_is_err(r))
				goto bad;
		}
		continue;
	bad:
		zv_munmap((void *)start, span);
		return fail(why, wl, (int)r, "cannot map segment %d at 0x%lx: %s", i, (unsigned long)pstart,
			    zv_strerror((int)-r));
	}
	unmap_holes(e, bias);
	*biasp = bias;
	return 0;
}

/* The canonical path of the open file, as /proc/self/exe will show it (the
 * guest's name for it). */
static void file_path(int fd, const char *path, char *out)
{
	char link[40];
	zv_snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	char host[ZV_PATH_MAX];
	long n = zv_sys4(__NR_readlinkat, AT_FDCWD, link, host, ZV_PATH_MAX - 1);
	if (n > 0 && n < ZV_PATH_MAX - 1) {
		host[n] = 0;
		zv_guest_path_of(host, out, ZV_PATH_MAX);
		return;
	}
	/* No /proc: the path made absolute, not canonical. */
	out[0] = 0;
	if (path[0] != '/') {
		long c = zv_sys2(__NR_getcwd, out, ZV_PATH_MAX);
		if (c <= 0)
			out[0] = 0;
		else if (zv_strcmp(out, "/"))
			zv_strlcpy(out + zv_strlen(out), "/", ZV_PATH_MAX - zv_strlen(out));
	}
	zv_strlcpy(out + zv_strlen(out), path, ZV_PATH_MAX - zv_strlen(out));
}

int zv_load_elf(const char *path, struct zv_image *img, char *why, size_t wl)
{
	struct elf e;
	char ipath[ZV_PATH_MAX];
	uint64_t bias, ibias;
	int err;
	long r;
	if (wl)
		why[0] = 0;
	/* not the path's 4 KiB: clearing them would touch a second page */
	memset(img, 0, __builtin_offsetof(struct zv_image, exe_path));
	img->exe_path[0] = 0;
	e.fd = open_regular(path, &e.size);
	if (e.fd < 0)
		return fail(why, wl, e.fd, "%s", zv_strerror(-e.fd));
	r = read_ehdr(&e);
	if (r < 0) {
		err = fail(why, wl, (int)r, "cannot read: %s", zv_strerror((int)-r));
		goto out;
	}
	if (r < (long)sizeof e.eh) {
		err = fail(why, wl, -ENOEXEC, "truncated ELF header (%ld bytes)", r);
		goto out;
	}
	if ((err = check_ehdr(&e.eh, why, wl)) || (err = read_phdrs(&e, why, wl)))
		goto out;
	int has_interp = get_interp(&e, ipath, why, wl);
	if (has_interp < 0) {
		err = has_interp;
		goto out;
	}
	if ((err = check_extra(&e, why, wl)))
		goto out;
	enum place place = e.eh.e_type == ET_EXEC ? PLACE_FIXED : has_interp ? PLACE_PIE : PLACE_ANY;
	if ((err = map_elf(&e, place, &bias, why, wl)))
		goto out;

	img->exe_entry = e.eh.e_entry + bias;
	img->entry = img->exe_entry;
	img->phent = sizeof(Elf64_Phdr);
	img->phnum = e.eh.e_phnum;
	img->brk_start = e.hi + bias;
	/* The host starts the break of an ET_DYN run without interpreter
	 * (static-pie, ld.so itself) at ELF_ET_DYN_BASE, not after the image. */
	if (place == PLACE_ANY)
		img->brk_start = 0x555555554000UL;
	/* AT_PHDR as the host computes it (binfmt_elf.c since 5.18): where the
	 * last PT_LOAD whose file range holds e_phoff maps it, else the load bias
	 * itself. PT_PHDR is not used: ld.so reads it from there, and a corrupt
	 * file must fail in the guest as it does on the host. */
	img->phdr = bias;
	for (int i = 0; i < e.eh.e_phnum; i++) {
		const Elf64_Phdr *p = &e.ph[i];
		if (p->p_type == PT_LOAD && p->p_offset <= e.eh.e_phoff && e.eh.e_phoff - p->p_offset < p->p_filesz)
			img->phdr = e.eh.e_phoff - p->p_offset + p->p_vaddr + bias;
	}
	file_path(e.fd, path, img->exe_path);
	uint64_t exe_lo = e.lo + bias, exe_span = e.hi - e.lo;
	zv_close(e.fd);
	e.fd = -1;

	if (has_interp) {
		/* zv_exec_resolve checked it (this image's or the exec'ing one's) */
		if ((err = open_interp(ipath, &e, 1, why, wl)))
			goto unmap;
		err = map_elf(&e, e.eh.e_type == ET_EXEC ? PLACE_FIXED : PLACE_ANY, &ibias, why, wl);
		if (err) {
			char sub[160];
			zv_strlcpy(sub, why, sizeof sub);
			fail(why, wl, 0, "interpreter %s: %s", ipath, sub);
			goto unmap;
		}
		img->interp_base = ibias;
		img->entry = e.eh.e_entry + ibias;
	}
	err = 0;
	goto out;
unmap:
	zv_munmap((void *)exe_lo, exe_span);
out:
	if (e.fd >= 0)
		zv_close(e.fd);
	if (err && wl)
		sanitize(why);
	return err;
}
