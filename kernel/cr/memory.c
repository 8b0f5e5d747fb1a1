/* The address space in a checkpoint: sections "mm" (one record per
 * mapping), "pages" (the pages worth saving, in record order), "kdata" (the
 * kernel image's own data and bss) and "vdso" (docs/CHECKPOINT.md). Saved
 * from /proc/self/maps and /proc/self/pagemap: anonymous pages that are
 * present or swapped and not all zero, and of private file mappings only
 * the pages that differ from the file (copied on write: not file pages in
 * pagemap), and of a shared copy of rewritten code (intercept/sharedtext.c)
 * the original file's path with the pages holding windows. */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/memory.h"
#include "cr/stream.h"
#include "cr/lazy.h"
#include "sys/filemem.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/dirents.h"
#include "intercept/sharedtext.h"
#include "intercept/stubs.h"
#include <asm/stat.h>
#include <linux/mman.h>
#include <linux/fcntl.h>
#include <linux/elf.h>

#define PAGE 4096UL
#define PM_PRESENT (1UL << 63)
#define PM_SWAPPED (1UL << 62)
#define PM_FILE (1UL << 61)

/* The kernel image's segments, from its own program headers (the first
 * segment maps the ELF header). */
void zv_cr_image_layout(struct zv_cr_layout *l)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)ZV_KWIN_START;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(ZV_KWIN_START + eh->e_phoff);
	l->lo = ~0UL;
	l->hi = 0;
	l->rw_lo = l->rw_hi = 0;
	struct zv_cr_hasher h;
	zv_cr_hash_init(&h, 0x7a76);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		uint64_t lo = ph[i].p_vaddr & ~(PAGE - 1), hi = (ph[i].p_vaddr + ph[i].p_memsz + PAGE - 1) & ~(PAGE - 1);
		if (lo < l->lo)
			l->lo = lo;
		if (hi > l->hi)
			l->hi = hi;
		if (ph[i].p_flags & PF_W) {
			l->rw_lo = lo;
			l->rw_hi = hi;
		} else {
			zv_cr_hash_update(&h, (const void *)ph[i].p_vaddr, ph[i].p_filesz);
		}
	}
	zv_snprintf(l->build, sizeof l->build, "%016lx", (unsigned long)zv_cr_hash_final(&h));
}

/* --- /proc/self/maps, parsed whole (the dump must not map while reading) --- */

static int hexval(const char **s, uint64_t *v)
{
	const char *e;
	*v = zv_parse_hex(*s, &e);
	if (e == *s)
		return -1;
	*s = e;
	return 0;
}

/* Parses one line of maps at *s into m; returns 0, or -1 at the end. */
int zv_cr_maps_next(const char **s, struct zv_cr_mapline *m)
{
	const char *p = *s;
	if (!*p)
		return -1;
	uint64_t dev_major, dev_minor;
	m->shared_copy = m->stub_region = m->lazy = 0;
	if (hexval(&p, &m->lo) || *p++ != '-' || hexval(&p, &m->hi) || *p++ != ' ')
		return -1;
	for (int i = 0; i < 4; i++)
		m->perms[i] = *p++;
	m->perms[4] = 0;
	p++;
	if (hexval(&p, &m->off) || *p++ != ' ' || hexval(&p, &dev_major) || *p++ != ':' || hexval(&p, &dev_minor))
		return -1;
	const char *e;
	m->dev_major = dev_major;
	m->dev_minor = dev_minor;
	m->inode = (uint64_t)zv_parse_dec(p + 1, &e);
	p = e;
	while (*p == ' ')
		p++;
	size_t n = 0;
	while (*p && *p != '\n') {
		if (n + 1 < sizeof m->path)
			m->path[n++] = *p;
		p++;
	}
	m->path[n] = 0;
	if (*p == '\n')
		p++;
	*s = p;
	return 0;
}

/* Reads all of a maps file (/proc/self/maps, or another process's) into
 * kernel memory (*len bytes mapped). */
char *zv_cr_read_maps(const char *path, uint64_t *maplen)
{
	uint64_t cap = 1UL << 20;
	for (;;) {
		char *buf = zv_kmap(cap, 4096, -1);
		if (zv_is_err((long)buf))
			return NULL;
		long fd = zv_openat(-100, path, O_RDONLY | O_CLOEXEC, 0);
		uint64_t used = 0;
		long n = 0;
		while (fd >= 0 && used + 4096 < cap && (n = zv_read((int)fd, buf + used, cap - 1 - used)) > 0)
			used += (uint64_t)n;
		if (fd >= 0)
			zv_close((int)fd);
		if (fd < 0 || n < 0) {
			zv_kunmap(buf, cap);
			return NULL;
		}
		if (used + 4096 < cap) {
			buf[used] = 0;
			*maplen = cap;
			return buf;
		}
		zv_kunmap(buf, cap);
		cap *= 4;
	}
}

/* Whether page a is the checkpoint's own memory (a mapping of its own, or
 * merged by the host into a neighbour's): restored as zeros. */
static int is_scratch(uint64_t a)
{
	for (int i = 0; i < ZV_CR_SCRATCH; i++)
		if (a >= zv_cr.scratch[i][0] && a < zv_cr.scratch[i][1])
			return 1;
	return 0;
}

void zv_cr_scratch(void *p, uint64_t len)
{
	for (int i = 0; i < ZV_CR_SCRATCH; i++)
		if (!zv_cr.scratch[i][1]) {
			zv_cr.scratch[i][0] = (uint64_t)p;
			zv_cr.scratch[i][1] = (uint64_t)p + len;
			return;
		}
}

/* --- saving --- */

struct saver {
	struct zv_cr_out *o;
	struct zv_cr_holes holes; /* the image a restore mapped memory from */
	struct zv_cr_stream mm, pages;
	int pagemap;
	uint64_t *pm;            /* pagemap entries, PM_CHUNK at a time */
	uint8_t *core;           /* mincore's, as many */
	struct zv_cr_run *runs;  /* one mapping's runs */
	uint64_t maxruns;        /* as many again for the holes zero pages leave */
	uint8_t *bounce;         /* a page: the checkpointing thread's own, copied */
};
#define PM_CHUNK 8192UL

/* A private anonymous mapping with this many saved pages, a quarter of it
 * at least, has its pages placed as in memory, so that a restore can map
 * it from the image and read only the pages the program touches; smaller
 * or sparser ones are read whole at restore (a mapping of their own would
 * cost more than the read). Not the kernel's window (its memory is read
 * before anything runs) nor executable mappings (an image on a noexec
 * filesystem could not be mapped so). */
#define PLACE_MIN_PAGES 64

static int placed(const struct zv_cr_mapline *m, int kind, int prot, uint64_t saved)
{
	uint64_t npages = (m->hi - m->lo) / PAGE;
	return kind == ZV_CR_ANON && !(prot & PROT_EXEC) && !m->stub_region && !(m->lo < ZV_KWIN_END && m->hi > ZV_KWIN_START) &&
	       saved >= PLACE_MIN_PAGES && saved * 4 >= npages;
}
static int deleted(const char *path)
{
	size_t n = zv_strlen(path);
	return n > 10 && !zv_strcmp(path + n - 10, " (deleted)");
}

static int kind_of(const struct zv_cr_mapline *m, const struct zv_cr_layout *l)
{
	if (m->lo >= l->lo && m->hi <= l->hi)
		return 0; /* the kernel image: text is the build, data is "kdata" */
	if (!zv_strcmp(m->path, "[vsyscall]"))
		return 0;
	if (!zv_strcmp(m->path, "[vdso]"))
		return ZV_CR_VDSO;
	if (zv_startswith(m->path, "[vvar"))
		return ZV_CR_VVAR;
	int shared = m->perms[3] == 's';
	int anon = !m->path[0] || m->path[0] == '[' || !m->inode;
	if (!zv_strcmp(m->path, "[stack]"))
		return ZV_CR_STACK;
	if (shared && zv_startswith(m->path, "/memfd:"))
		return ZV_CR_SHMEMFD;
	if (shared && !anon && !zv_startswith(m->path, "/SYSV") && !zv_startswith(m->path, "/dev/zero") && deleted(m->path))
		return ZV_CR_SHDEL;
	if (shared && zv_startswith(m->path, "/SYSV")) /* "/SYSVkey (deleted)"; its inode is its id */
		return ZV_CR_SYSV;
	if (shared)
		return anon || zv_startswith(m->path, "/dev/zero") ? ZV_CR_SHANON : ZV_CR_SHFILE;
	return anon ? ZV_CR_ANON : ZV_CR_FILE;
}


/* Whether a page with pagemap entry e is saved for a mapping of kind k. */
static int worth_saving(int k, uint64_t e)
{
	if (!(e & (PM_PRESENT | PM_SWAPPED)))
		return 0; /* never touched: zero, or still the file's */
	if (k == ZV_CR_FILE)
		return !(e & PM_FILE) || (e & PM_SWAPPED); /* copied on write */
	return 1;
}

/* Zero pages are left out of the image where an unsaved page reads as zero
 * after the restore (not in a private file mapping, where it reads as the
 * file), while the holes they leave use at most maxruns runs: the runs a
 * mapping had without them still fit. Never in the checkpointing thread's
 * own block, which changes while it is saved. */
static int zero_page(const struct saver *s, int kind, int prot, uint64_t a, uint64_t nruns)
{
	if (kind == ZV_CR_FILE || !(prot & PROT_READ) || nruns >= s->maxruns)
		return 0;
	uint64_t self = zv_block_of(zv_current());
	if (a >= self && a < self + ZV_BLOCK_SIZE)
		return 0;
	const uint64_t *w = (const uint64_t *)a;
	for (uint64_t i = 0; i < PAGE / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

/* Pages go to the file as they are, except the checkpointing thread's own
 * block, whose stack changes under the writes (the hash would not match
 * the bytes written): copied first. */
static long write_run(struct saver *s, uint64_t addr, uint64_t len)
{
	uint64_t self = zv_block_of(zv_current());
	if (addr >= self + ZV_BLOCK_SIZE || addr + len <= self)
		return zv_cr_stream_write(&s->pages, (const void *)addr, len);
	for (uint64_t done = 0; done < len; done += PAGE) {
		memcpy(s->bounce, (const void *)(addr + done), PAGE);
		if (zv_cr_stream_write(&s->pages, s->bounce, PAGE) < 0)
			return -1;
	}
	return 0;
}

/* Whether an fd of the process holds the memfd of inode ino (its contents
 * are saved with the fds, and its mappings are made from that fd again). */
static long holds_ino(const char *name, void *arg)
{
	unsigned long fd;
	struct stat st;
	return zv_parse_ulong(name, &fd) == 0 && zv_sys2(__NR_fstat, fd, &st) == 0 && st.st_ino == *(uint64_t *)arg;
}

static int memfd_open(uint64_t ino)
{
	long dfd = zv_openat(-100, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dfd < 0)
		return 0;
	int found = zv_dirents_each((int)dfd, holds_ino, &ino) > 0;
	zv_close((int)dfd);
	return found;
}

static long save_one(struct saver *s, const struct zv_cr_mapline *m, int kind)
{
	struct zv_cr_out *o = s->o;
	struct zv_cr_vma v = { .start = m->lo, .end = m->hi, .off = m->lazy ? 0 : m->off, .kind = (uint32_t)kind };
	v.prot = (m->perms[0] == 'r' ? PROT_READ : 0) | (m->perms[1] == 'w' ? PROT_WRITE : 0) |
		 (m->perms[2] == 'x' ? PROT_EXEC : 0);
	if (kind == ZV_CR_SYSV && zv_cr_sysv_describe(o, m->inode, &v) < 0)
		return -1;
	if (kind == ZV_CR_SHANON || kind == ZV_CR_SHDEL)
		v.fsize = m->inode; /* processes sharing it restore one object (cr/treerestore.c) */
	if (kind == ZV_CR_SHDEL) /* its path (without " (deleted)": zv_cr_save_memory) */
		v.pathlen = (uint32_t)zv_strlen(m->path);
	if (kind == ZV_CR_SHMEMFD) {
		if (!memfd_open(m->inode))
			return zv_cr_refuse(o, "a shared mapping of a memfd no fd holds: %s", m->path);
		v.fsize = m->inode;
	} else if (kind == ZV_CR_FILE || kind == ZV_CR_SHFILE) {
		if (deleted(m->path))
			return zv_cr_refuse(o, "a mapping of a deleted file: %s", m->path);
		struct zv_cr_stat st = { 0 };
		if (zv_cr_stat_path(m->path, &st) < 0)
			return zv_cr_refuse(o, "cannot stat mapped file %s", m->path);
		v.fsize = st.size;
		v.mtime_s = st.mtime_s;
		v.mtime_ns = st.mtime_ns;
		v.pathlen = (uint32_t)zv_strlen(m->path);
	}
	/* Which pages: runs of consecutive saved pages. */
	uint64_t npages = (m->hi - m->lo) / PAGE, nruns = 0;
	if (kind != ZV_CR_SHFILE && kind != ZV_CR_SHMEMFD && kind != ZV_CR_VVAR && kind != ZV_CR_VDSO) {
		uint64_t run_start = 0, run_len = 0;
		for (uint64_t base = 0; base < npages; base += PM_CHUNK) {
			uint64_t n = npages - base < PM_CHUNK ? npages - base : PM_CHUNK;
			long r = zv_sys4(__NR_pread64, s->pagemap, s->pm, n * 8, ((m->lo / PAGE) + base) * 8);
			if (r != (long)(n * 8))
				return zv_cr_refuse(o, "cannot read /proc/self/pagemap");
			/* a shared object's page another process touched is in
			 * it (mincore) but not in this one's page tables */
			int shobj = kind == ZV_CR_SHANON || kind == ZV_CR_SHDEL || kind == ZV_CR_SYSV;
			if (shobj && zv_sys3(__NR_mincore, m->lo + base * PAGE, n * PAGE, s->core) < 0)
				memset(s->core, 0, n);
			for (uint64_t i = 0; i < n; i++) {
				uint64_t a = m->lo + (base + i) * PAGE;
				/* a shared copy's window pages are not the file's; a
				 * page of memory a restore mapped from its image is
				 * there until touched */
				int differs = worth_saving(kind, s->pm[i]) || (shobj && (s->core[i] & 1)) || (m->shared_copy && zv_stubs_window_page(a)) ||
					      m->stub_region ||
					      (m->lazy && zv_cr_holes_data(&s->holes, m->off + (a - m->lo)));
				if (differs && !is_scratch(a) && !zero_page(s, kind, v.prot, a, nruns)) {
					if (run_len && run_start + run_len * PAGE == a) {
						run_len++;
						continue;
					}
					if (run_len) {
						if (nruns == 2 * s->maxruns)
							return zv_cr_refuse(o, "too fragmented a mapping at %lx", (unsigned long)m->lo);
						s->runs[nruns++] = (struct zv_cr_run){ run_start, run_len };
					}
					run_start = a;
					run_len = 1;
				}
			}
		}
		if (run_len) {
			if (nruns == 2 * s->maxruns)
				return zv_cr_refuse(o, "too fragmented a mapping at %lx", (unsigned long)m->lo);
			s->runs[nruns++] = (struct zv_cr_run){ run_start, run_len };
		}
	}
	v.nruns = nruns;
	uint64_t saved = 0;
	for (uint64_t i = 0; i < nruns; i++)
		saved += s->runs[i].npages;
	v.pages_off = s->pages.off;
	v.flags = placed(m, kind, (int)v.prot, saved) ? ZV_CR_VMA_PLACED : 0;
	if (zv_cr_stream_write(&s->mm, &v, sizeof v) < 0 ||
	    (v.pathlen && zv_cr_stream_write(&s->mm, m->path, (v.pathlen + 8) & ~7UL) < 0) ||
	    (nruns && zv_cr_stream_write(&s->mm, s->runs, nruns * sizeof *s->runs) < 0))
		return -1;
	if (!nruns)
		return 0;
	int unreadable = !(v.prot & PROT_READ);
	if (unreadable)
		zv_mprotect((void *)m->lo, m->hi - m->lo, v.prot | PROT_READ);
	long r = 0;
	for (uint64_t i = 0; i < nruns && r == 0; i++) {
		if (v.flags & ZV_CR_VMA_PLACED)
			r = zv_cr_stream_skip(&s->pages, v.pages_off + (s->runs[i].addr - m->lo) - s->pages.off);
		if (r == 0)
			r = write_run(s, s->runs[i].addr, s->runs[i].npages * PAGE);
	}
	if (r == 0 && (v.flags & ZV_CR_VMA_PLACED))
		r = zv_cr_stream_skip(&s->pages, v.pages_off + (m->hi - m->lo) - s->pages.off);
	if (unreadable)
		zv_mprotect((void *)m->lo, m->hi - m->lo, v.prot);
	return r;
}

long zv_cr_save_memory(struct zv_cr_out *o)
{
	struct zv_cr_layout l;
	zv_cr_image_layout(&l);
	struct saver s = { .o = o, .maxruns = 1UL << 16 };
	uint64_t maplen = 0, pmlen = PM_CHUNK * 8, runlen = 2 * s.maxruns * sizeof *s.runs;
	/* The checkpoint's own memory is mapped before the mappings are read:
	 * a chunk of kernel memory mapped later (lib/kmem.c) would be missing
	 * from the image while the kernel's data, saved last, says it is there. */
	s.pm = zv_kmap(pmlen + PAGE + PM_CHUNK, 4096, -1);
	s.runs = zv_kmap(runlen, 4096, -1);
	char *maps = zv_cr_read_maps("/proc/self/maps", &maplen);
	s.bounce = (uint8_t *)s.pm + pmlen;
	s.core = s.bounce + PAGE;
	long r = -1;
	if (!maps || zv_is_err((long)s.pm) || zv_is_err((long)s.runs)) {
		zv_cr_refuse(o, "out of memory reading the mappings");
		goto out;
	}
	zv_cr_scratch(maps, maplen);
	zv_cr_scratch(s.pm, pmlen + PAGE + PM_CHUNK);
	zv_cr_scratch(s.runs, runlen);
	zv_cr_holes_open(&s.holes);
	s.pagemap = (int)zv_openat(-100, "/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
	if (s.pagemap < 0) {
		zv_cr_refuse(o, "cannot open /proc/self/pagemap");
		goto out;
	}
	if (zv_cr_stream_open(o, &s.mm, "mm") < 0)
		goto out;
	/* through the page cache at every size (docs/DESIGN.md, "What a
	 * checkpoint spends its time on"): a restore right after reads it there */
	if (zv_cr_stream_open(o, &s.pages, "pages") < 0) {
		zv_close(s.mm.fd);
		goto out;
	}
	const char *p = maps;
	struct zv_cr_mapline m;
	r = 0;
	while (r == 0 && zv_cr_maps_next(&p, &m) == 0) {
		int kind = kind_of(&m, &l);
		if (!kind)
			continue;
		/* a shared copy of rewritten code is saved as the original file
		 * and the pages that differ from it: the image never needs the copy */
		uint64_t ma, mi, ino;
		const char *orig = NULL;
		if (kind == ZV_CR_FILE)
			orig = zv_sharedtext_original(m.dev_major, m.dev_minor, m.inode, &ma, &mi, &ino);
		if (orig) {
			zv_strlcpy(m.path, orig, sizeof m.path);
			m.inode = ino;
			m.shared_copy = 1;
		}
		/* memory a restore mapped from its image is anonymous memory:
		 * its pages are the image's until touched */
		if (kind == ZV_CR_FILE && zv_filemem_is(m.dev_major, m.dev_minor, m.inode)) {
			kind = ZV_CR_ANON;
			m.path[0] = 0;
			m.inode = 0;
			m.lazy = 1;
		}
		/* a stub region mapped from a copy's file is saved whole, as
		 * anonymous memory, as one made privately is */
		if (kind == ZV_CR_FILE && zv_stubs_is_region(m.lo, m.hi)) {
			kind = ZV_CR_ANON;
			m.path[0] = 0;
			m.inode = m.off = 0;
			m.shared_copy = 0;
			m.stub_region = 1;
		}
		if (kind == ZV_CR_SHDEL)
			m.path[zv_strlen(m.path) - 10] = 0;
		r = save_one(&s, &m, kind);
		if (r == 0 && kind == ZV_CR_VDSO)
			r = zv_cr_put(o, "vdso", (const void *)m.lo, m.hi - m.lo);
	}
	zv_close(s.pagemap);
	zv_cr_holes_close(&s.holes);
	zv_cr_stream_close(&s.mm);
	s.pages.mode = 0400; /* a restore may map it: it must not change (docs/CHECKPOINT.md) */
	zv_cr_stream_close(&s.pages);
	if (r == 0)
		r = zv_cr_put(o, "kdata", (const void *)l.rw_lo, l.rw_hi - l.rw_lo);
out:
	if (maps)
		zv_kunmap(maps, maplen);
	if (!zv_is_err((long)s.pm))
		zv_kunmap(s.pm, pmlen + PAGE + PM_CHUNK);
	if (!zv_is_err((long)s.runs))
		zv_kunmap(s.runs, runlen);
	return r;
}

int zv_cr_stat_path(const char *path, struct zv_cr_stat *out)
{
	struct stat st;
	long r = zv_sys2(__NR_stat, path, &st);
	if (r < 0)
		return (int)r;
	out->size = (uint64_t)st.st_size;
	out->held = (uint64_t)st.st_blocks * 512;
	out->mtime_s = (int64_t)st.st_mtime;
	out->mtime_ns = (int64_t)st.st_mtime_nsec;
	return 0;
}
