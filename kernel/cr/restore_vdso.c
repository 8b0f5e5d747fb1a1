/* Restore: the vDSO the guest saw. This host's own moves to the saved
 * address when it is the same build and boot; otherwise the guest's saved
 * copy is mapped there and its functions redirected to kernel stubs
 * (DESIGN "Checkpoint and restore"). */
#include "zvisor.h"
#include "cr/cr.h"
#include "cr/restore.h"
#include "cr/treerestore.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include <linux/mman.h>

/* The GNU build id of a vDSO image, or 0 bytes. */
static int build_id(const uint8_t *img, uint64_t len, uint8_t out[64])
{
	const uint8_t *eh = img;
	if (len < 64 || eh[0] != 0x7f || eh[1] != 'E')
		return 0;
	uint64_t phoff = *(const uint64_t *)(eh + 32);
	uint16_t phnum = *(const uint16_t *)(eh + 56);
	for (int i = 0; i < phnum && phoff + (i + 1) * 56UL <= len; i++) {
		const uint8_t *ph = img + phoff + i * 56UL;
		if (*(const uint32_t *)ph != 4 /* PT_NOTE */)
			continue;
		uint64_t off = *(const uint64_t *)(ph + 8), sz = *(const uint64_t *)(ph + 32);
		for (uint64_t p = off; p + 12 <= off + sz && p + 12 <= len;) {
			uint32_t namesz = *(const uint32_t *)(img + p), descsz = *(const uint32_t *)(img + p + 4),
				 type = *(const uint32_t *)(img + p + 8);
			uint64_t desc = p + 12 + ((namesz + 3) & ~3U);
			if (type == 3 && descsz <= 64 && desc + descsz <= len) {
				memcpy(out, img + desc, descsz);
				return (int)descsz;
			}
			p = desc + ((descsz + 3) & ~3U);
		}
	}
	return 0;
}

/* Another host's vDSO, or another boot's clocks: the guest keeps its copy
 * (as memory; its data pages read as zeros), and this host's goes to a
 * place the saved layout leaves free. zv_vdso_relocated and
 * zv_time_continue finish it once the kernel's data is back. */
static void relocate_vdso(struct zv_cr_restore *r, const uint8_t *saved, uint64_t vlen)
{
	struct zv_cr_in *in = r->in;
	uint64_t lo = ~0UL, hi = 0;
	for (int i = 0; i < r->nown; i++)
		if (zv_strcmp(r->own[i].name, "[vsyscall]")) {
			lo = r->own[i].lo < lo ? r->own[i].lo : lo;
			hi = r->own[i].hi > hi ? r->own[i].hi : hi;
		}
	r->host_vdso = 0;
	if (hi > lo) {
		uint64_t to = 0;
		for (uint64_t at = 0x5f0000000000UL; at > 0x10000000000UL && !to; at -= 0x10000000000UL)
			if (!zv_cr_overlaps_saved(r->mm, r->mmlen, at, at + (hi - lo), ZV_CR_VERSION))
				to = at;
		for (int i = 0; i < r->nown && to; i++) {
			struct zv_cr_own *o = &r->own[i];
			if (!zv_strcmp(o->name, "[vsyscall]"))
				continue;
			uint64_t len = o->hi - o->lo, dst = to + (o->lo - lo);
			if (zv_is_err((long)zv_sys5(__NR_mremap, o->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst)))
				to = 0;
			else if (!zv_strcmp(o->name, "[vdso]"))
				r->host_vdso = dst;
		}
		if (!to) {
			zv_snprintf(in->why, sizeof in->why, "cannot move this host's vDSO out of the way");
			zv_cr_restore_die(&r->tree, in->why);
		}
	}
	for (int k = 0; k < r->nvdso; k++) {
		struct zv_cr_own *v = &r->vdso[k];
		int code = !zv_strcmp(v->name, "[vdso]");
		void *p = zv_mmap((void *)v->lo, v->hi - v->lo, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if ((uint64_t)p != v->lo) {
			zv_snprintf(in->why, sizeof in->why, "cannot map the saved %s", v->name);
			zv_cr_restore_die(&r->tree, in->why);
		}
		if (code) {
			memcpy(p, saved, vlen < v->hi - v->lo ? vlen : v->hi - v->lo);
			r->guest_vdso = v->lo;
		}
		zv_mprotect(p, v->hi - v->lo, code ? PROT_READ | PROT_EXEC : PROT_READ);
	}
	r->relocated = 1;
}

/* The vDSO the guest saw, at its address: this host's, moved there, when
 * both are the same build (the same kernel) and the clocks the same boot's;
 * the bytes zvisor patched in it come back from the image. Otherwise the
 * guest's copy is redirected (relocate_vdso). */
void zv_cr_place_vdso(struct zv_cr_restore *r)
{
	struct zv_cr_in *in = r->in;
	uint64_t vlen;
	const uint8_t *saved = zv_cr_get(in, "vdso", &vlen);
	if (saved == (void *)-1)
		zv_cr_restore_die(&r->tree, in->why);
	if (!saved || !r->nvdso) {
		for (int i = 0; i < r->nown; i++) /* the guest had none (--vdso=none) */
			if (zv_strcmp(r->own[i].name, "[vsyscall]"))
				zv_munmap((void *)r->own[i].lo, r->own[i].hi - r->own[i].lo);
		return;
	}
	const struct zv_cr_own *cur = NULL;
	for (int i = 0; i < r->nown; i++)
		if (!zv_strcmp(r->own[i].name, "[vdso]"))
			cur = &r->own[i];
	uint8_t a[64], b[64];
	int na = saved ? build_id(saved, vlen, a) : 0, nb = cur ? build_id((const uint8_t *)cur->lo, cur->hi - cur->lo, b) : 0;
	char boot[40];
	zv_cr_boot_id(boot);
	if (r->other_host || !cur || !na || na != nb || memcmp(a, b, (size_t)na) || cur->hi - cur->lo != vlen ||
	    zv_strcmp(boot, r->meta.boot_id)) {
		relocate_vdso(r, saved, vlen);
		return;
	}
	/* Move every piece to scratch first (the old addresses may overlap the
	 * current ones), then each to where the guest had its counterpart. */
	uint64_t tmp = r->hole + r->hole_len - 0x100000;
	for (int i = 0; i < r->nown; i++) {
		struct zv_cr_own *o = &r->own[i];
		if (!zv_strcmp(o->name, "[vsyscall]"))
			continue;
		uint64_t len = o->hi - o->lo;
		long p = (long)zv_sys5(__NR_mremap, o->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, tmp);
		if (zv_is_err(p)) {
			zv_snprintf(in->why, sizeof in->why, "cannot move this host's %s", o->name);
			zv_cr_restore_die(&r->tree, in->why);
		}
		o->hi = tmp + len;
		o->lo = tmp;
		tmp += len;
	}
	for (int i = 0; i < r->nown; i++) {
		struct zv_cr_own *o = &r->own[i];
		if (!zv_strcmp(o->name, "[vsyscall]"))
			continue;
		uint64_t to = 0;
		for (int k = 0; k < r->nvdso; k++)
			if (!zv_strcmp(r->vdso[k].name, o->name) && r->vdso[k].hi - r->vdso[k].lo == o->hi - o->lo)
				to = r->vdso[k].lo;
		if (!to) { /* another layout after all */
			zv_snprintf(in->why, sizeof in->why, "this host's vDSO differs from the one the program saw (%s)", o->name);
			zv_cr_restore_die(&r->tree, in->why);
		}
		uint64_t len = o->hi - o->lo;
		if (zv_is_err((long)zv_sys5(__NR_mremap, o->lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to))) {
			zv_snprintf(in->why, sizeof in->why, "cannot move this host's %s", o->name);
			zv_cr_restore_die(&r->tree, in->why);
		}
		if (!zv_strcmp(o->name, "[vdso]") && memcmp((void *)to, saved, vlen)) {
			zv_mprotect((void *)to, len, PROT_READ | PROT_WRITE);
			memcpy((void *)to, saved, vlen);
			zv_mprotect((void *)to, len, PROT_READ | PROT_EXEC);
		}
	}
}
