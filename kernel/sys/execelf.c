/* What the host's execve would run for a path: opening and checking an
 * x86-64 ELF executable and its interpreter (sys/resolve.c follows #!
 * scripts; loader/elf_map.c maps the result into this process).
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
 * MAX_PHNUM program headers, and an interpreter that names an interpreter. */
#include "sys/execelf.h"
#include "sys/viewhook.h"

/* The kernel image itself, from the default linker script: an ET_EXEC guest
 * must not land on it. Weak so that the loader links anywhere. */
extern char __executable_start[] __attribute__((weak));
extern char _end[] __attribute__((weak));

int fail(char *why, size_t wl, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	zv_vsnprintf(why, wl, fmt, ap);
	va_end(ap);
	return err;
}

/* Reads up to n bytes at off; returns the count (short only at end of file)
 * or -errno. */
long pread_full(int fd, void *buf, size_t n, uint64_t off)
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
 * file (as open_exec, without its checks: for a file they have passed);
 * *mode: its st_mode. */
static int open_regular_at(const struct zv_at *at, struct zv_file_id *id, unsigned *mode, int cloexec)
{
	struct stat st;
	int nofollow = at->at_flags & AT_SYMLINK_NOFOLLOW ? O_NOFOLLOW : 0;
	int fd = (int)zv_openat(at->dirfd, at->name, O_RDONLY | cloexec | O_NOCTTY | O_NONBLOCK | nofollow, 0);
	if (fd < 0)
		return fd;
	long r = zv_sys2(__NR_fstat, fd, &st);
	if (r < 0 || !IS_REG(st.st_mode)) {
		zv_close(fd);
		return r < 0 ? (int)r : -EACCES;
	}
	*id = (struct zv_file_id){ st.st_dev, st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtime, st.st_mtime_nsec,
				   (uint64_t)st.st_ctime, st.st_ctime_nsec };
	*mode = st.st_mode;
	return fd;
}

/* The path as the guest names it (through a root of its own, if it has
 * one: sys/viewhook.h). cloexec: O_CLOEXEC, or 0 for a file the host's
 * execve of zvisor hands to the next image (sys/exec.c). */
int open_regular_mode(const char *path, struct zv_file_id *id, unsigned *mode, int cloexec)
{
	struct zv_at at;
	long r = zv_at_lookup(path, 0, &at);
	if (r == 0)
		r = open_regular_at(&at, id, mode, cloexec);
	zv_at_release(&at);
	return (int)r;
}

int open_regular(const char *path, struct zv_file_id *id)
{
	unsigned mode;
	return open_regular_mode(path, id, &mode, O_CLOEXEC);
}

/* Opens path as the host's open_exec() judges it for execve: the lookup's
 * errors, then EACCES for anything but a regular file the caller may execute.
 * Returns the fd (cloexec as open_regular_mode), the file size and st_mode,
 * or -errno. */
int open_exec_mode(const char *path, struct zv_file_id *id, unsigned *mode, int cloexec)
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
		r = open_regular_at(&at, id, mode, cloexec);
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
int check_ehdr(const Elf64_Ehdr *eh, char *why, size_t wl)
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

/* The file's first HEAD_BYTES into e->head: one read serves the ELF
 * header, the program headers and PT_INTERP of most files. Returns the
 * count (short only at end of file) or -errno. */
long read_head(struct elf *e)
{
	e->headn = pread_full(e->fd, e->head, HEAD_BYTES, 0);
	return e->headn;
}

/* pread_full of e->fd, from e->head where it holds the range (or the
 * whole file). */
static long elf_read(struct elf *e, void *buf, size_t n, uint64_t off)
{
	uint64_t hn = e->headn >= 0 ? (uint64_t)e->headn : 0;
	if (e->headn >= 0 && off <= hn && (n <= hn - off || hn < HEAD_BYTES)) {
		size_t k = n <= hn - off ? n : hn - off;
		memcpy(buf, e->head + off, k);
		return (long)k;
	}
	return pread_full(e->fd, buf, n, off);
}

/* Reads e->eh from the file (zero-padded when the file is shorter, as the
 * host's header buffer is) and returns the number of bytes that were
 * there (up to HEAD_BYTES). */
long read_ehdr(struct elf *e)
{
	read_head(e);
	return ehdr_from_head(e);
}

/* The same from the e->headn bytes already in e->head. */
long ehdr_from_head(struct elf *e)
{
	long r = e->headn;
	memset(&e->eh, 0, sizeof e->eh);
	if (r > 0)
		memcpy(&e->eh, e->head, (size_t)r < sizeof e->eh ? (size_t)r : sizeof e->eh);
	return r;
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
	long r = elf_read(e, e->ph, size, off);
	if (r < 0)
		return fail(why, wl, -ENOEXEC, "cannot read program headers: %s", zv_strerror((int)-r));
	if ((uint64_t)r != size)
		return fail(why, wl, -ENOEXEC, "program header table is beyond the end of the file (truncated?)");
	return 0;
}

/* The whole table, or as much as zvisor keeps (it refuses more later). */
int read_phdrs(struct elf *e, char *why, size_t wl)
{
	return read_ph(e, 0, e->eh.e_phnum < MAX_PHNUM ? e->eh.e_phnum : MAX_PHNUM, why, wl);
}

/* The checks zvisor adds to the host's, made after the host's own (which
 * decide the errno when both fail): all ENOEXEC. */
static int check_loads(struct elf *e, char *why, size_t wl);
int check_extra(struct elf *e, char *why, size_t wl)
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
int get_interp(struct elf *e, char *out, char *why, size_t wl)
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
		long r = elf_read(e, out, p->p_filesz, p->p_offset);
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

int overlaps_kernel(uint64_t lo, uint64_t hi)
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
int open_interp(const char *ipath, struct elf *e, int checked, char *why, size_t wl)
{
	unsigned mode;
	e->fd = checked ? open_regular_mode(ipath, &e->id, &mode, e->cloexec)
			: open_exec_mode(ipath, &e->id, &mode, e->cloexec);
	e->size = e->id.size;
	e->headn = -1; /* not read yet */
	if (e->fd < 0)
		return fail(why, wl, e->fd, "interpreter %s: %s", ipath, zv_strerror(-e->fd));
	return check_interp(ipath, e, why, wl);
}

/* The checks of open_interp on an interpreter already open in e->fd (its
 * first e->headn bytes in e->head, if not -1); closes it on failure. */
int check_interp(const char *ipath, struct elf *e, char *why, size_t wl)
{
	char sub[128];
	int err;
	long r = e->headn >= 0 ? ehdr_from_head(e) : read_ehdr(e);
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

/* Checks an ELF executable (e->fd, e->size set, e->head read) as the host
 * and zvisor's mapper will judge it, including its interpreter, which is
 * left open in e->ifd (e->isize) when all is well. e's headers are the
 * interpreter's afterwards. */
int check_exe(struct elf *e, char *why, size_t wl)
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
	e->ifd = -1;
	if (has_interp) {
		int exe_fd = e->fd;
		uint64_t exe_size = e->size;
		struct zv_file_id exe_id = e->id;
		err = open_interp(ipath, e, 0, why, wl);
		if (!err) {
			e->ifd = e->fd;
			e->isize = e->size;
			e->iid = e->id;
			e->iheadn = e->headn;
		}
		e->fd = exe_fd;
		e->size = exe_size;
		e->id = exe_id;
		e->headn = -1; /* the interpreter's */
		if (err)
			return err;
		if (lerr) {
			zv_close(e->ifd);
			e->ifd = -1;
		}
	}
	if (lerr)
		zv_strlcpy(why, lwhy, wl);
	return lerr;
}
