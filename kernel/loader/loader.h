/* The program loader: what execve(2) does for the guest, done in user space.
 * zv_load_elf() maps an x86-64 ELF executable and its interpreter;
 * zv_build_stack() lays out the initial stack (argc, argv, envp, auxv,
 * strings) as the host would. What execve would run and its errnos are
 * the core's (sys/exec.h). */
#ifndef ZV_LOADER_H
#define ZV_LOADER_H
#include <stdint.h>
#include <stddef.h>

#include "sys/exec.h" /* zv_exec_resolve, struct zv_resolved, ZV_PATH_MAX */

struct zv_image {
	uint64_t entry;       /* first guest instruction: interpreter's entry, or AT_ENTRY */
	uint64_t exe_entry;   /* AT_ENTRY */
	uint64_t phdr;        /* AT_PHDR: address of the executable's program headers */
	uint64_t phent, phnum;
	uint64_t interp_base; /* AT_BASE, 0 without interpreter */
	uint64_t brk_start;   /* where the host would start the break: the page-aligned end of
			       * the executable, or ELF_ET_DYN_BASE for a static-pie */
	char exe_path[ZV_PATH_MAX]; /* canonical path of the mapped executable (/proc/self/exe) */
};

/* Maps the ELF executable at path (and its PT_INTERP interpreter) into this
 * process at the addresses the host would choose (ET_EXEC at its vaddr, ET_DYN
 * near 0x555555554000 for an executable with PT_INTERP, in the mmap area for
 * ld.so and for a static PIE). Makes the checks of zv_exec_resolve() again
 * but does not check permissions; an address range already in use is
 * -ENOEXEC ("... overlaps zvisor").
 * Returns 0, or -errno with a one-line reason in why. */
int zv_load_elf(const char *path, struct zv_image *img, char *why, size_t whylen);
/* The next zv_load_elf maps these files (an exec's resolution opened them:
 * the same files, read once) instead of opening path and its interpreter;
 * it closes them. */
void zv_load_elf_given(const struct zv_exec_files *f);
/* When set, maps each executable segment zv_load_elf maps: fd's bytes
 * from file offset off at [addr, addr + len), privately, with protection
 * prot, over the load's reservation (the platform may map a rewritten
 * copy of them instead). Returns addr or -errno. */
struct zv_file_id;
/* fd's identity (id) as the loader's open found it: its code's cache key */
extern long (*zv_exec_map_code)(int fd, uint64_t addr, uint64_t len, uint64_t off, int prot, const struct zv_file_id *id);

/* The host's mmap base and the gap above it that the stack never grows
 * into (zv_proc.mmap_top, upper_hi), from the vDSO the host mapped first
 * and RLIMIT_STACK: at zvisor's start, before anything else is mapped
 * anywhere. stack_top: the top of [stack]. */
void zv_layout_init(const uint64_t *auxv, uint64_t stack_top);

/* Lays out the guest's initial stack in buf as it must appear at addresses
 * [sp, top): argc, argv[], NULL, envp[], NULL, auxv pairs, AT_NULL, then the
 * 16 AT_RANDOM bytes, AT_PLATFORM string, argv/env strings and execfn. The
 * auxv follows host_auxv (the host's pairs, in its order) with PHDR, PHENT,
 * PHNUM, BASE, ENTRY, RANDOM, EXECFN and PLATFORM replaced. Returns sp (16-byte
 * aligned; the image is top - sp bytes long, starting at buf, or in place at
 * sp when buf is NULL), or 0 if it does not fit in bufsize. */
uint64_t zv_build_stack(void *buf, size_t bufsize, uint64_t top, char *const argv[],
			char *const envp[], const struct zv_image *img, const char *execfn,
			const uint64_t *host_auxv);

/* Called, when set, for each auxv entry the guest gets (type, and the
 * value it would get): the value to give instead (AT_UID and the like
 * under virtual ids). */
extern uint64_t (*zv_aux_hook)(uint64_t type, uint64_t value);

/* `zvisor check-elf FILE...`: argv[0..argc) are the files (no command name).
 * Prints one line per file to stdout: "ok", or "<ENAME> <why>" (the errno's
 * symbolic name, e.g. "ENOEXEC 32-bit ELF is not supported"), as
 * zv_exec_resolve() judges it. Returns 0. */
int zv_check_main(int argc, char **argv);

/* loader/mm_fields.c */
void zv_publish_mm_fields(uint64_t host_sp, uint64_t sp, const void *img, size_t len);
#endif
