/* Page 0 and the entry page of the zpoline platform.
 *
 * A rewritten site executes `call *%rax` with rax = the syscall number, so
 * it lands at that address in page 0. Every address below ZV_SLED_END must
 * lead into the kernel without changing any register or flag:
 *
 *   [0, 390)    eb 4e eb 4e ...  `jmp +0x4e`; entered at an odd offset the
 *                                4e is a REX.WRX prefix of the next jmp
 *   [390, 470)  eb 26 eb 26 ...  shorter jumps (26 is an ES prefix)
 *   [470, 512)  90 ...           nops
 *   [512, 517)  e9 65 65 65 65   jmp to the entry page (ZV_ENTRY_JMP)
 *   [517, 4096) f4 ...           hlt
 *
 * A plain nop sled costs up to 500 nops; this one at most 7 jumps and 42
 * nops. No REX.B prefix ever precedes the 90 (that would be xchg r8, rax).
 * Numbers at or beyond the tail land on prefixes or hlt, which fault
 * (#GP, SIGSEGV) before any state changes; the SIGSEGV handler recognises
 * a rewritten site in the frame and runs the call (intercept/fastpath.c),
 * as it does for numbers beyond page 0.
 *
 * The tail's rel32 is four gs prefixes, so that entering inside the jmp is
 * such a fault too. It lands in the entry page, ~1.6 GiB up, which holds
 * `movabs $zv_fast_entry, %r11; jmp *%r11` (r11 is the host syscall's to
 * clobber) and the bounce `syscall` (intercept/fastentry.S). */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/mman.h>

_Static_assert(offsetof(struct zv_thread, fast) == 0, "the fast area must start the thread area");
_Static_assert(offsetof(struct zv_fast, kstack) == ZV_F_KSTACK, "ZV_F_KSTACK");
_Static_assert(offsetof(struct zv_fast, bounce_site) == ZV_F_BSITE, "ZV_F_BSITE");
_Static_assert(offsetof(struct zv_fast, result) == ZV_F_RESULT, "ZV_F_RESULT");
_Static_assert(offsetof(struct zv_fast, bounce) == ZV_F_BOUNCE, "ZV_F_BOUNCE");
_Static_assert(offsetof(struct zv_fast, sig_pending) == ZV_F_PENDING, "ZV_F_PENDING");
_Static_assert(offsetof(struct zv_fast, ret) == ZV_F_RET, "ZV_F_RET");
_Static_assert(offsetof(struct zv_fast, uc.mc.r8) == ZV_F_R8, "ZV_F_R8");
_Static_assert(offsetof(struct zv_fast, uc.mc.r9) == ZV_F_R9, "ZV_F_R9");
_Static_assert(offsetof(struct zv_fast, uc.mc.r10) == ZV_F_R10, "ZV_F_R10");
_Static_assert(offsetof(struct zv_fast, uc.mc.rdi) == ZV_F_RDI, "ZV_F_RDI");
_Static_assert(offsetof(struct zv_fast, uc.mc.rsi) == ZV_F_RSI, "ZV_F_RSI");
_Static_assert(offsetof(struct zv_fast, uc.mc.rdx) == ZV_F_RDX, "ZV_F_RDX");
_Static_assert(offsetof(struct zv_fast, uc.mc.rax) == ZV_F_RAX, "ZV_F_RAX");
_Static_assert(offsetof(struct zv_fast, uc.mc.rsp) == ZV_F_RSP, "ZV_F_RSP");
_Static_assert(offsetof(struct zv_fast, uc.mc.eflags) == ZV_F_EFLAGS, "ZV_F_EFLAGS");

#define JUMPS1_END 390
#define JUMPS2_END 470

static void fill_page0(uint8_t *p)
{
	for (int i = 0; i < JUMPS1_END; i++)
		p[i] = (i & 1) ? 0x4e : 0xeb;
	for (int i = JUMPS1_END; i < JUMPS2_END; i++)
		p[i] = (i & 1) ? 0x26 : 0xeb;
	memset(p + JUMPS2_END, 0x90, ZV_SLED_END - JUMPS2_END);
	p[ZV_SLED_END] = 0xe9;
	int32_t rel = (int32_t)ZV_TAIL_REL;
	memcpy(p + ZV_SLED_END + 1, &rel, 4);
	memset(p + ZV_SLED_END + 5, 0xf4, 4096 - ZV_SLED_END - 5);
}

static void fill_entry_page(uint8_t *p)
{
	memset(p, 0xf4, 4096);
	uint8_t *j = p + (ZV_ENTRY_JMP & 4095);
	uint64_t entry = (uint64_t)zv_fast_entry;
	j[0] = 0x49; /* movabs $entry, %r11 */
	j[1] = 0xbb;
	memcpy(j + 2, &entry, 8);
	j[10] = 0x41; /* jmp *%r11 */
	j[11] = 0xff;
	j[12] = 0xe3;
	uint8_t *b = p + (ZV_BOUNCE_SITE & 4095);
	b[0] = 0x0f; /* syscall: trapped, it is outside kernel text */
	b[1] = 0x05;
	b[2] = 0x0f; /* ud2: never reached */
	b[3] = 0x0b;
}

/* Maps one page at addr, filled by fill, then makes it executable only
 * (readable too on CPUs without protection keys). */
static long map_code_page(uint64_t addr, void (*fill)(uint8_t *))
{
	void *p = zv_mmap((void *)addr, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (zv_is_err((long)p))
		return (long)p;
	if ((uint64_t)p != addr) {
		zv_munmap(p, 4096); /* an old kernel that ignores NOREPLACE */
		return -EEXIST;
	}
	fill(p);
	return zv_mprotect(p, 4096, PROT_EXEC);
}

long zv_trampoline_map(void)
{
	long r = map_code_page(0, fill_page0);
	if (r < 0)
		return r;
	r = map_code_page(ZV_ENTRY_PAGE, fill_entry_page);
	if (r < 0) {
		zv_munmap(0, 4096);
		return r;
	}
	return 0;
}
