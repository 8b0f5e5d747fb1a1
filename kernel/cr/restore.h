/* The state of one `zvisor restore` (cr/command.c starts it, cr/restore.c
 * carries it out on the hole's stack). */
#ifndef ZV_CR_RESTORE_H
#define ZV_CR_RESTORE_H
#include "cr/cr.h"
#include "cr/memory.h"
#include "cr/treerestore.h"

struct zv_cr_own { /* a mapping of the restoring process that stays: the vDSO's */
	uint64_t lo, hi;
	char name[24];
};

struct zv_cr_restore {
	struct zv_cr_in *in;
	uint64_t hole, hole_len;
	struct zv_cr_layout layout;
	struct zv_cr_meta meta;
	const char *mm;
	uint64_t mmlen;
	struct zv_cr_own own[8], vdso[8];
	int nown, nvdso;
	int other_host;           /* --other-host: as if the kernel or boot differed */
	int eager;                /* --eager: every page read (and its hash checked), none mapped from the image */
	int inherit[ZV_CR_MAX_INHERIT]; /* --inherit-fd N... */
	int ninherit;
	uint64_t (*lazy)[2];      /* the mappings made from the image (cr/lazy.h) */
	unsigned nlazy, maxlazy;
	uint64_t lazy_dev, lazy_ino;
	char *lazy_path;
	int relocated;            /* they did: the guest keeps its vDSO copy */
	int direct;               /* pages are read with O_DIRECT */
	const char *pages_file;
	uint64_t guest_vdso, host_vdso;
	uint64_t stack_lo, stack_hi; /* the guest's stack, shown as [stack] (sys/procview.c) */
	struct zv_cr_treectx tree;   /* a tree's process: what its restorer made (area NULL: none) */
};

#define HOLE_STACK_LEN (1UL << 20)
uint64_t zv_cr_place_hole(struct zv_cr_in *in, const char *mm, uint64_t mmlen, uint64_t len);
__attribute__((noreturn)) void zv_cr_restore_stage2(void *arg);
/* Whether [lo, hi) meets a saved mapping (mm: the image's, of the
 * version given) or zvisor's window. */
int zv_cr_overlaps_saved(const char *mm, uint64_t mmlen, uint64_t lo, uint64_t hi, int version);
/* The vDSO the guest saw, at its address (cr/restore_vdso.c). */
void zv_cr_place_vdso(struct zv_cr_restore *r);

#endif
