/* brk for the guest. The host's brk area belongs to zvisor's own image (far
 * from the guest), so the program break is emulated: it starts a random
 * number of pages after the executable, as the host's does, and grows and
 * shrinks with anonymous mappings. */
#include "zvisor.h"
#include "sys/exec_reset.h"
#include "sys/layer.h"
#include "lib/syscall.h"
#include "lib/kmem.h"
#include "sys/platform.h"
#include "sys/execstate.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/random.h"
#include <linux/mman.h>

#define PAGE_UP(x) (((x) + 4095UL) & ~4095UL)

static long persona = -1;

long zv_personality(void)
{
	if (persona < 0)
		persona = zv_sys1(__NR_personality, 0xffffffffUL);
	return persona;
}

/* The personality across the host's execve (exec-state field y): the
 * task's, which only its own calls change. Where the guest changed it (a
 * mark of sys/exec_note.c), in a restored process, or for a set-id file
 * (whose exec clears some bits), the new image asks. execve clears
 * READ_IMPLIES_EXEC for a 64-bit ELF without an executable stack (zvisor). */
static int encode_persona(char *buf, size_t n, const struct zv_exec_carry *x)
{
	if (persona < 0 || x->resolved == 2 ||
	    (zv_proc.exec_needs_host & (ZV_EXEC_NEEDS_HOST_LAYOUT | ZV_EXEC_NEEDS_HOST_RESTORED)))
		return -1;
	return zv_snprintf(buf, n, "%lx", (uint64_t)persona & ~0x0400000UL /* READ_IMPLIES_EXEC */);
}

static const char *decode_persona(const char *s, struct zv_exec_carry *x)
{
	(void)x;
	uint64_t v = zv_parse_hex(s, &s);
	persona = v <= 0xffffffffUL ? (long)v : -1;
	return s;
}

ZV_EXEC_FIELD(personality, 337, 'y', encode_persona, decode_persona);

void zv_brk_init(uint64_t start)
{
	uint16_t rnd = 0;
	/* as the host: no random offset under ADDR_NO_RANDOMIZE (gdb runs its
	 * inferiors so) */
	if (!(zv_personality() & 0x0040000 /* ADDR_NO_RANDOMIZE */))
		zv_start_random(&rnd, sizeof rnd);
	zv_proc.brk_start = zv_proc.brk_cur = PAGE_UP(start) + (uint64_t)(rnd & 0x1fff) * 4096;
}

long zv_sys_brk(struct zv_call *c)
{
	long *a = c->a;
	uint64_t want = (uint64_t)a[0];
	zv_lock(&zv_proc.lock);
	uint64_t cur = zv_proc.brk_cur;
	if (want >= zv_proc.brk_start && want < ZV_KWIN_START) {
		uint64_t old_end = PAGE_UP(cur), new_end = PAGE_UP(want);
		int ok = 1;
		if (new_end > old_end) {
			void *p = zv_mmap((void *)old_end, new_end - old_end, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			ok = (uint64_t)p == old_end;
			if (!ok && !zv_is_err((long)p))
				zv_munmap(p, new_end - old_end);
		} else if (new_end < old_end) {
			zv_munmap((void *)new_end, old_end - new_end);
		}
		if (ok)
			zv_proc.brk_cur = cur = want;
	}
	zv_unlock(&zv_proc.lock);
	return (long)cur;
}

/* Memory the guest must not see or touch: the kernel's window (its image,
 * stacks and data) and the platform's (page 0 and the entry page on
 * zpoline, the stub regions). In address order. */
struct range { uint64_t start, end; };
#define MAX_RESERVED 260

static int reserved(struct range *r)
{
	int n = zv_plat->reserved ? zv_plat->reserved((uint64_t (*)[2])r, MAX_RESERVED - 1) : 0;
	r[n++] = (struct range){ ZV_KWIN_START, ZV_KWIN_END };
	for (int i = 1; i < n; i++) /* insertion sort: the list is short and nearly sorted */
		for (int j = i; j > 0 && r[j].start < r[j - 1].start; j--) {
			struct range x = r[j];
			r[j] = r[j - 1];
			r[j - 1] = x;
		}
	return n;
}

/* The first reserved range that [addr, addr+len) overlaps, or NULL. */
static const struct range *overlap(const struct range *r, int n, uint64_t addr, uint64_t len)
{
	if (addr + len < addr)
		return NULL; /* a wrapping range: the host rejects it itself */
	for (int i = 0; i < n; i++)
		if (addr < r[i].end && addr + len > r[i].start)
			return &r[i];
	return NULL;
}

/* Reserved memory does not exist for the guest: calls that would touch it
 * fail as on unmapped memory, and munmap leaves it out. */
static long mm_call(struct zv_thread *t, long *a, long nr);

static int on_vdso(uint64_t addr, uint64_t len)
{
	return addr < zv_proc.vdso_hi && addr + len > zv_proc.vdso_lo;
}

/* A memory call waits for a site being rewritten, whose page's protection
 * the platform changes and restores (intercept/sites.c, stubs.c). */
long zv_sys_mm_call(struct zv_call *c)
{
	struct zv_thread *t = c->t;
	long *a = c->a;
	long nr = c->nr;
	int mem = zv_row(nr)->mem;
	if (zv_proc.host_vdso.ok && mem != ZV_MEM_ADVISE) {
		if (mem != ZV_MEM_MAP || (a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE)))
			zv_host_vdso_touched((uint64_t)a[0], (uint64_t)a[1]);
		if (mem == ZV_MEM_REMAP && (a[3] & MREMAP_FIXED))
			zv_host_vdso_touched((uint64_t)a[4], (uint64_t)a[2]);
	}
	/* the vDSO moved, unmapped or changed: an exec in this process would
	 * keep it as it is now, the host's maps a new one */
	if (zv_proc.vdso_hi && (((nr != __NR_mmap || (a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE))) &&
				 on_vdso((uint64_t)a[0], (uint64_t)a[1])) ||
				(nr == __NR_mremap && (a[3] & MREMAP_FIXED) && on_vdso((uint64_t)a[4], (uint64_t)a[2]))))
		zv_exec_needs_host(ZV_EXEC_NEEDS_HOST_MM);
	if (!zv_plat->mm_lock)
		return mm_call(t, a, nr);
	/* h: as a, or without PROT_EXEC until its scan (intercept/sudoff_mm.c) */
	long h[6] = { a[0], a[1], a[2], a[3], a[4], a[5] };
	int later = zv_plat->mm_before ? zv_plat->mm_before(t, nr, a, h) : 0;
	zv_plat->mm_lock();
	long r = mm_call(t, h, nr);
	zv_plat->mm_unlock();
	/* a file's code just mapped */
	if (mem == ZV_MEM_MAP && !zv_is_err(r) && zv_plat->code_mapped && (a[2] & PROT_EXEC) &&
	    (a[3] & (MAP_ANONYMOUS | MAP_TYPE)) == MAP_PRIVATE && (int)a[4] >= 0)
		zv_plat->code_mapped(t, (int)a[4], (uint64_t)r, ((uint64_t)a[1] + 4095) & ~4095UL, (uint64_t)a[5],
				     (int)h[2], (int)a[3]);
	return zv_plat->mm_after ? zv_plat->mm_after(t, nr, a, r, later) : r;
}

/* shmat: SHM_EXEC makes memory executable that other processes may
 * write, so SUD is armed for good first. */
long zv_sys_shmat(struct zv_call *c)
{
	long h[6], *a = c->a;
	if (zv_plat->mm_before)
		zv_plat->mm_before(c->t, c->nr, a, h);
	return zv_host_call(c->t, c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* MAP_FIXED_NOREPLACE over reserved memory: the host has memory there, so
 * EEXIST, as over any mapping, after the checks the host makes first (an
 * unaligned offset, a bad fd, length 0). */
static long noreplace_on_reserved(const long *a)
{
	if ((uint64_t)a[5] & 4095)
		return -EINVAL;
	if (!(a[3] & MAP_ANONYMOUS) && zv_sys3(__NR_fcntl, a[4], 1 /* F_GETFD */, 0) < 0)
		return -EBADF;
	return a[1] ? -EEXIST : -EINVAL;
}

/* mprotect's refusals of its prot, which come before it looks for memory. */
static int bad_prot(int mem, uint64_t prot)
{
	const uint64_t grows = PROT_GROWSDOWN | PROT_GROWSUP;
	if (mem == ZV_MEM_ADVISE)
		return 0;
	return (prot & grows) == grows ||
	       (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_SEM | grows)) != 0;
}

static long mm_call(struct zv_thread *t, long *a, long nr)
{
	uint64_t addr = (uint64_t)a[0], len = (uint64_t)a[1];
	struct range res[MAX_RESERVED];
	int n = reserved(res), mem = zv_row(nr)->mem;
	const struct range *hit = overlap(res, n, addr, mem == ZV_MEM_MAP && !len ? 1 : len);
	int fixed = mem != ZV_MEM_MAP || (a[3] & (MAP_FIXED | MAP_FIXED_NOREPLACE));
	/* An unaligned start is refused before anything is touched. */
	if ((!hit && !(mem == ZV_MEM_REMAP && (a[3] & MREMAP_FIXED))) || (fixed && (addr & 4095)))
		return zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	switch (mem) {
	case ZV_MEM_MAP:
		if (a[3] & MAP_FIXED_NOREPLACE)
			return noreplace_on_reserved(a);
		if (a[3] & MAP_FIXED)
			return -ENOMEM;
		a[0] = 0; /* a hint only: let the host choose */
		break;
	case ZV_MEM_UNMAP: {
		/* Unmap the pieces between the reserved ranges. */
		long r = 0;
		uint64_t at = addr, end = addr + len;
		for (int i = 0; i < n && r == 0 && at < end; i++) {
			if (res[i].end <= at)
				continue;
			uint64_t stop = res[i].start < end ? res[i].start : end;
			if (stop > at)
				r = zv_host_call(t, nr, at, stop - at, 0, 0, 0, 0);
			at = res[i].end;
		}
		if (r == 0 && at < end)
			r = zv_host_call(t, nr, at, end - at, 0, 0, 0, 0);
		return r;
	}
	case ZV_MEM_REMAP:
		if (hit || overlap(res, n, (uint64_t)a[4], (uint64_t)a[2]))
			return -EFAULT;
		break;
	default: { /* mprotect, pkey_mprotect, madvise */
		/* As on a hole in the address space: the part below it is
		 * changed, then the call fails. */
		long r = 0;
		if (addr < hit->start)
			r = zv_host_call(t, nr, addr, hit->start - addr, a[2], a[3], 0, 0);
		else if (bad_prot(mem, (uint64_t)a[2]))
			r = -EINVAL;
		return r < 0 ? r : -ENOMEM;
	}
	}
	return zv_host_call(t, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int zv_guest_unreadable(uint64_t p)
{
	uint8_t b;
	struct { void *base; size_t len; } local = { &b, 1 }, remote = { (void *)p, 1 };
	return zv_sys6(__NR_process_vm_readv, zv_getpid(), (long)&local, 1, (long)&remote, 1, 0) != 1;
}

/* The guest's stack when it is not where the host put it (a restored
 * process's), which its maps still name [stack]. */
static uint64_t stack_lo, stack_hi;

void zv_procview_stack(uint64_t lo, uint64_t hi)
{
	stack_lo = lo;
	stack_hi = hi;
}

uint64_t zv_pv_stack(uint64_t *hi)
{
	*hi = stack_hi;
	return stack_lo;
}
