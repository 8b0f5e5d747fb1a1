/* Jump stubs: the fast path without page 0 (intercept/stubs.c). */
#ifndef ZV_INTERCEPT_STUBS_H
#define ZV_INTERCEPT_STUBS_H
#include <stdint.h>
#include <stddef.h>
#include "intercept/jumptab.h"

#define ZV_STUB_MAX_MOVED 32 /* bytes of instructions a window moves into its stub */
#define ZV_STUB_MAX_FUNCTION (512 * 1024) /* bytes of code judged at once (cc1 has functions of 300 KiB) */

/* A window: the whole instructions [p, s) and the `syscall` at s, replaced
 * by `jmp rel32` to a stub; or, when no such run of 5 bytes exists, the
 * `syscall` alone (p == s) replaced by `jmp rel8` to d, 5 bytes of dead
 * padding nearby that become `jmp rel32` to the stub (DESIGN "Jump stubs and SUD off"). */
struct zv_stub_window {
	uint64_t p, s;
	uint64_t d; /* the trampoline in padding, 0 if none */
	uint8_t code[ZV_STUB_MAX_MOVED]; /* the bytes of [p, s) */
};

/* The windows found in one mapping's code, before its stubs exist. */
struct zv_stub_batch {
	struct zv_stub_window *w;
	int n, max;
	uint8_t *starts, *targets, *pads; /* scratch bitmaps of one function's bytes */
	uint64_t bitmap_bytes;
	uint64_t orphans[16]; /* syscalls of the last function without a window */
	int norphans;
	uint64_t recent[64]; /* the last trampolines made (a ring) */
	int nrecent;
	/* syscall, sysenter or int $0x80 byte pairs that the decode of a
	 * judged function found inside other instructions (intercept/sudoff.c) */
	uint64_t *inside;
	int ninside, maxinside;
	long verdict; /* the scan's count of other pairs after all windows were made; -1: unknown */
	/* every pair the analysis met in the code it read, in order (run
	 * addresses), and the ranges it read: what intercept/sudoff.c counts
	 * without reading the code again (pairs_ok 0: too many, or not kept) */
	uint64_t *pairs;
	int npairs, maxpairs, pairs_ok;
	uint64_t read_lo[4], read_hi[4];
	int nread;
	uint64_t region; /* after a commit: its stub region (b->w then holds the windows made, in its order) */
	uint64_t span_lo; /* where the code's file is mapped from its offset 0 (0: unknown): a region right
			   * below it shares its page table */
	int above; /* the region goes right above the code if it can: the vDSO, atop the mmap area */
	int unmapped; /* the loader's code, not mapped yet: a copy's lookup that maps no copy maps the
		       * original where it maps it itself (then 0) */
	/* the mapped file's identity as the cache keys it (intercept/sitecache.c):
	 * one fstat for the copy's and the windows' lookups and stores */
	uint64_t ident[7];
	int has_ident;
	/* the image's bytes, for jump tables (NULL: none; intercept/jumptab.c) */
	zv_image_reader read;
	void *read_ctx;
	uint32_t ij[16];  /* scratch: one function's indirect jumps */
	uint64_t leas[512]; /* and the addresses its rip-relative leas form */
};

struct zv_stub_batch *zv_stubs_batch_new(void);
/* The identity of the file the loader maps now (sys/exec.h's zv_file_id:
 * the fstat of its open), set around the platform's code_mapped (image.c):
 * a new batch takes it as its key's, instead of asking the host again. */
extern const uint64_t *zv_stubs_loader_ident;
/* Whether the syscall at offset s of code is a signal restorer's
 * rt_sigreturn, which stays in place (unwinders match its bytes). */
int zv_stubs_is_restorer(const uint8_t *code, uint64_t s);
/* Whether the two bytes at p are a syscall, sysenter or int $0x80. */
static inline int zv_stubs_is_call_pair(const uint8_t *p)
{
	return (p[0] == 0x0f && (p[1] == 0x05 || p[1] == 0x34)) || (p[0] == 0xcd && p[1] == 0x80);
}
/* 0x80 in each byte of v that is 0, exactly (no borrow between bytes). */
static inline uint64_t zv_zero_bytes(uint64_t v)
{
	const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL;
	return ~(((v & low7) + low7) | v | low7);
}
/* Of the 8 positions at p (9 bytes read), those where such a pair starts:
 * 0x80 in byte k for p + k. A word at a time: most words hold no 0f or cd. */
static inline uint64_t zv_stubs_pair_mask(const uint8_t *p, int syscall_only)
{
	const uint64_t ones = 0x0101010101010101ULL;
	uint64_t w, w1;
	__builtin_memcpy(&w, p, 8); /* inline: -fno-builtin makes memcpy a call */
	__builtin_memcpy(&w1, p + 1, 8);
	uint64_t f = zv_zero_bytes(w ^ 0x0f * ones), c = syscall_only ? 0 : zv_zero_bytes(w ^ 0xcd * ones);
	if (!(f | c))
		return 0;
	uint64_t second = zv_zero_bytes(w1 ^ 0x05 * ones);
	if (!syscall_only)
		second |= zv_zero_bytes(w1 ^ 0x34 * ones);
	return (f & second) | (c & zv_zero_bytes(w1 ^ 0x80 * ones));
}
void zv_stubs_batch_free(struct zv_stub_batch *b);
/* Adds the windows of the function [code, code + len), which runs at at;
 * the gap bytes after it (up to the next function: code holds them) may
 * hold trampolines if they are all padding. */
void zv_stubs_function(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at);
/* The same with more to say (intercept/loadsites.c): */
struct zv_stub_judge {
	int windows;             /* in: other code enters only at its start and entries, so windows may be made */
	const uint64_t *entries; /* in: offsets where other code may also enter (the parts of a run) */
	int nentries;
	int falls;   /* out: the code goes on at len: it falls through its end, or a branch lands in the gap or at its end */
	int gap_pad; /* out: the gap decoded as padding, whole */
};
/* Returns the count of its syscalls; -1 if it does not decode as code
 * (then nothing was added). */
int zv_stubs_judge(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at,
		   struct zv_stub_judge *j);
/* Gives the syscalls of the last function that got no window (orphans)
 * trampolines in the padding of a neighbouring function [code, code + len)
 * and its gap, which runs at at; the orphans left are kept. */
void zv_stubs_neighbor(struct zv_stub_batch *b, const uint8_t *code, uint64_t len, uint64_t gap, uint64_t at);
/* Writes the stubs of b near [lo, hi) and jumps to them over the windows;
 * the mapping's protection is prot (made writable meanwhile unless
 * already_writable). Thread t; under the patch lock. Returns how many. */
int zv_stubs_commit(struct zv_thread *t, struct zv_stub_batch *b, uint64_t lo, uint64_t hi, int prot,
		    int already_writable);
/* Writes the bytes of the window (p, s, d) whose stub is at stub, as
 * zv_stubs_commit writes them, into b, which stands for [at, at + n) (the
 * bytes outside are left out): a shared copy's check (sharedtext.c). */
void zv_stubs_window_bytes(uint64_t p, uint64_t s, uint64_t d, uint64_t stub, uint8_t *b, uint64_t at, uint64_t n);
/* Where window i of a region at base has its stub. */
uint64_t zv_stubs_stub_at(uint64_t base, int i);
/* A copy's file holding a stub region's bytes (intercept/sharedtext.c):
 * fd and their offset there; trusted when its mark holds (its stubs are
 * then not compared with those the windows make). */
struct zv_stub_file {
	int fd;
	uint64_t off;
	int trusted;
};
/* Makes the stubs of all of b's windows (in b's order: a shared copy's,
 * intercept/sharedtext.c) in a region at exactly base, without writing the
 * windows (the code mapped by map_code(ctx) holds them already): mapped
 * from f if given, once its bytes are the stubs b makes there, else
 * written into anonymous memory. If the region cannot be there, a window
 * does not fit or map_code fails, nothing is left made and 0 is returned;
 * -1 if f's bytes are not those stubs; else how many. */
int zv_stubs_commit_at(struct zv_stub_batch *b, uint64_t lo, uint64_t hi, uint64_t base,
		       const struct zv_stub_file *f, int (*map_code)(void *ctx), void *ctx);
/* The size of a stub region of n stubs. */
size_t zv_stubs_region_size(int n);
/* Whether a region at [at, at + size) for code at [lo, hi) is where
 * zv_stubs_commit would look for one (a copy's region elsewhere would move
 * the guest's own mappings from their native places). */
int zv_stubs_place_ok(uint64_t lo, uint64_t hi, uint64_t at, size_t size);
/* Whether [lo, hi) meets a stub region. */
int zv_stubs_is_region(uint64_t lo, uint64_t hi);
/* The format of the stubs and of the jumps to them: part of the key of a
 * copy of code holding those jumps and of its stub region
 * (intercept/sharedtext.c). Version 2: the site relative to the key; 3: a
 * trampoline's window keeps the padding it replaced; 4: regions above the
 * mmap area's top. */
#define ZV_STUBS_FORMAT 0x04004010ULL /* version (jmp rel32, rel8, int3), STUB_SIZE, TAIL_SIZE */
/* The version of what the analysis finds (windows, trampolines, pairs
 * proven inside instructions, the count left): part of every cached
 * entry's key, so that a zvisor that judges more code never reuses an
 * older one's verdicts. 2: runs, code without FDEs, memory-bounded jump
 * tables, trampolines for unjudged functions; 3: landing pads; 4: cache
 * files marked (intercept/sitecache.c), so an unmarked one is not met as
 * damaged. */
#define ZV_ANALYSIS_VERSION 4ULL
/* Whether the page at page holds a byte of a window or trampoline. */
int zv_stubs_window_page(uint64_t page);
/* already_writable for a mapping that zv_stubs_open opened (the patch lock
 * is held, zv_stubs_close restores it). */
#define ZV_STUBS_OPENED 2
/* Takes the patch lock, makes [lo, hi) (protection prot) writable, and
 * writes over itself one byte of each page that b's windows will change,
 * before anything reads them: the first access to a page of a private file
 * mapping, if a write, copies it in one fault; a read first maps it from
 * the page cache and the write then faults again. 1 if done; 0 (lock not
 * held) if the mapping cannot be made writable. */
int zv_stubs_open(const struct zv_stub_batch *b, uint64_t lo, uint64_t hi, int prot);
/* Restores prot on [lo, hi) and releases the patch lock. */
void zv_stubs_close(uint64_t lo, uint64_t hi, int prot);

/* The platform's bounce `syscall`, in zvisor's image. */
uint64_t zv_stubs_bounce_site(void);

/* The address of the `syscall` a stub's key (its rcx at entry) stands for. */
static inline uint64_t zv_stub_site(uint64_t key) { return key + *(const uint64_t *)(key + 5); }

/* Signals and faults: the rip the guest sees for ip in a stub (rcx: the
 * thread's rcx there), and the stub address at which an rip the guest
 * resumes at, inside a window, continues. Both return ip unchanged when it
 * is not such an address. */
uint64_t zv_stubs_guest_ip(uint64_t ip, uint64_t rcx);
uint64_t zv_stubs_resume_ip(uint64_t ip);

/* A window or trampoline as a region keeps it. */
struct zv_stub_rec {
	uint64_t p, s, d;
	/* the code the window replaced: [p, s) (a trampoline: the 5 bytes of
	 * padding at d); a tracer reads it back (stubs_original.c) */
	uint8_t orig[ZV_STUB_MAX_MOVED];
	int restored; /* the original code is back (a tracer wrote there) */
};
/* Calls fn for each window or trampoline whose bytes meet [addr, addr + n). */
void zv_stubs_each_window(uint64_t addr, size_t n, void (*fn)(struct zv_stub_rec *w, void *arg), void *arg);
/* A tracer's view of the code (the guest's ptrace): the original bytes
 * of every window and trampoline meeting [addr, addr + n) laid over buf,
 * which holds that memory; and the original code written back there
 * (through memfd, an fd of /proc/self/mem) before a tracer writes over it,
 * so that those sites take the catch-all from then on. Returns how many
 * windows were put back. */
void zv_stubs_show_original(uint64_t addr, uint8_t *buf, size_t n);
int zv_stubs_restore_original(uint64_t addr, size_t n, int memfd);

/* The stub regions, for the memory calls that must leave them alone:
 * stores up to max [start, end) pairs and returns how many. */
int zv_stubs_regions(uint64_t (*r)[2], int max);
/* Counters for --stats. */
unsigned long zv_stubs_count(void);
/* An exec made in this process: only the regions serving code in [lo, hi)
 * stay (zv_stubs_kept lists them first, for the unmapping). */
void zv_stubs_exec(uint64_t lo, uint64_t hi);
int zv_stubs_kept(uint64_t lo, uint64_t hi, uint64_t (*out)[2], int max);
#endif
