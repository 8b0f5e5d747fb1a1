/* The mapping of an x86-64 ELF executable and its interpreter into this
 * process (sys/execelf.c reads and checks them).
 *
 * zv_load_elf() maps as binfmt_elf does: ET_EXEC at its addresses, a PIE at
 * ELF_ET_DYN_BASE plus a random offset, a static PIE (ET_DYN without
 * PT_INTERP) and the interpreter anywhere in the mmap area; .bss pages are
 * read-write (and executable if the segment is) whatever the segment's
 * flags, as vm_brk_flags() maps them; nothing stays mapped between segments. */
#include "sys/execelf.h"
#include "loader/loader.h"
#include "loader/vdso.h"
#include "sys/viewhook.h"
#include "sys/calls.h"
#include "sys/txtbusy.h"
#include "lib/fdlist.h"

static uint64_t random_pages(void)
{
	uint64_t v = 0;
	long pers = zv_personality();
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

long (*zv_exec_map_code)(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, const struct zv_file_id *id);

static int prot_of(uint32_t flags)
{
	return (flags & PF_R ? PROT_READ : 0) | (flags & PF_W ? PROT_WRITE : 0) | (flags & PF_X ? PROT_EXEC : 0);
}

/* The segment whose file mapping, made as long as the whole span, can
 * reserve it, as binfmt_elf's first mapping does: the first, if it starts
 * the span, has bytes in the file and is not executable (no code is
 * mapped before it is scanned); and not where the reservation is trimmed
 * to an alignment afterwards (its file offset would move). -1: none. */
static int reserving_segment(const struct elf *e, enum place place)
{
	if (place == PLACE_ANY && e->align > PAGE)
		return -1;
	for (int i = 0; i < e->eh.e_phnum; i++) {
		const Elf64_Phdr *p = &e->ph[i];
		if (p->p_type != PT_LOAD || !p->p_memsz)
			continue;
		return PAGE_DOWN(p->p_vaddr) == e->lo && p->p_filesz && !(p->p_flags & PF_X) ? i : -1;
	}
	return -1;
}

/* Reserves the span of e's segments with one mapping placed as the host
 * would (the first segment's, or PROT_NONE), then maps every other PT_LOAD
 * over it; what no segment covers is unmapped. Returns 0 with the load
 * bias. */
static int map_elf(struct elf *e, enum place place, uint64_t *biasp, char *why, size_t wl)
{
	uint64_t span = e->hi - e->lo, start;
	int rflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, rprot = PROT_NONE, rfd = -1;
	long r, roff = 0;
	int first = reserving_segment(e, place);
	if (first >= 0) {
		rflags = MAP_PRIVATE;
		rprot = prot_of(e->ph[first].p_flags);
		rfd = e->fd;
		roff = (long)PAGE_DOWN(e->ph[first].p_offset);
	}
	if (place == PLACE_FIXED) {
		r = (long)zv_mmap((void *)e->lo, span, rprot, rflags | MAP_FIXED_NOREPLACE, rfd, roff);
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
				r = (long)zv_mmap((void *)base, span, rprot, rflags | MAP_FIXED_NOREPLACE, rfd, roff);
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
			zv_vdso_make_room(span + extra); /* the host maps this before the vDSO */
			r = (long)zv_mmap(0, span + extra, rprot, rflags, rfd, roff);
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
			if (i == first)
				r = (long)pstart; /* the reservation's start */
			else if ((prot & PROT_EXEC) && zv_exec_map_code)
				r = zv_exec_map_code(e->fd, pstart, PAGE_UP(fend) - pstart, PAGE_DOWN(p->p_offset), prot, &e->id);
			else
				r = (long)zv_mmap((void *)pstart, PAGE_UP(fend) - pstart, prot, MAP_PRIVATE | MAP_FIXED, e->fd,
						  (long)PAGE_DOWN(p->p_offset));
			if (zv_is_err(r))
				goto bad;
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
	char link[40], host[ZV_PATH_MAX];
	zv_snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
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

/* The files an exec's resolution left open (zv_load_elf_given), taken by
 * the next zv_load_elf. */
static struct zv_exec_files given = { .fd = -1, .ifd = -1, .headn = -1, .iheadn = -1 };

void zv_load_elf_given(const struct zv_exec_files *f)
{
	given = *f;
}

int zv_load_elf(const char *path, struct zv_image *img, char *why, size_t wl)
{
	struct elf e;
	char ipath[ZV_PATH_MAX];
	uint64_t bias, ibias;
	int err, efd = -1;
	long r;
	struct zv_exec_files f = given;
	given = ZV_EXEC_FILES_NONE;
	e.cloexec = O_CLOEXEC;
	if (wl)
		why[0] = 0;
	/* not the path's 4 KiB: clearing them would touch a second page */
	memset(img, 0, __builtin_offsetof(struct zv_image, exe_path));
	img->exe_path[0] = 0;
	e.fd = f.fd >= 0 ? f.fd : open_regular(path, &e.id);
	if (f.fd >= 0)
		e.id = f.id;
	e.size = e.id.size;
	if (e.fd < 0) {
		zv_exec_files_close(&f);
		return fail(why, wl, e.fd, "%s", zv_strerror(-e.fd));
	}
	f.fd = -1; /* e's now */
	if (f.head && f.headn >= 0 && f.headn <= HEAD_BYTES) { /* as the resolution read them */
		e.headn = f.headn;
		memcpy(e.head, f.head, (size_t)f.headn);
		r = ehdr_from_head(&e);
	} else {
		r = read_ehdr(&e);
	}
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
		img->brk_start = 0x555555554aaaUL; /* ELF_ET_DYN_BASE, 2/3 of the 47-bit space: its page up */
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
	zv_txt_hold(e.fd); /* the program file is this image's: writes to it fail (ETXTBSY) */
	efd = e.fd; /* closed with the interpreter's: one close_range for both */
	e.fd = -1;

	if (has_interp) {
		/* zv_exec_resolve checked it (this image's or the exec'ing one's) */
		if (f.ifd >= 0) {
			e.fd = f.ifd;
			e.size = f.isize;
			e.id = f.iid;
			e.headn = -1;
			if (f.ihead && f.iheadn >= 0 && f.iheadn <= HEAD_BYTES) {
				e.headn = f.iheadn;
				memcpy(e.head, f.ihead, (size_t)f.iheadn);
			}
			f.ifd = -1;
			err = check_interp(ipath, &e, why, wl);
		} else {
			err = open_interp(ipath, &e, 1, why, wl);
		}
		if (err)
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
	/* with the load's other files, a run at a time (lib/fdlist.c) */
	zv_fdlist_close(zv_load_fds, efd, efd);
	zv_fdlist_close(zv_load_fds, e.fd, e.fd);
	zv_exec_files_close(&f);
	if (err && wl)
		sanitize(why);
	return err;
}
