/* The ELF executable as execve's checks and the loader read it
 * (sys/execelf.c: reading and checks; sys/resolve.c: #! scripts and what
 * execve would run; loader/elf_map.c: mapping). Internal to those files. */
#ifndef ZV_LOADER_ELF_H
#define ZV_LOADER_ELF_H
#include "sys/exec.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/random.h"
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

/* 28 KiB, on the stack: what every load uses comes first, so that a file
 * with few headers touches (and faults in) one page of it, not two. */
#define HEAD_BYTES ZV_EXEC_HEAD /* read at once at offset 0: the headers and PT_INTERP of most files */
struct elf {
	int fd;
	int ifd;       /* check_exe: the interpreter, left open (-1: none) */
	int cloexec;   /* the open flag of fd and ifd: O_CLOEXEC, or 0 to survive the host's execve */
	uint64_t size; /* file size */
	uint64_t isize;
	struct zv_file_id id, iid; /* fd's and ifd's, as opened */
	/* from check_loads(): the page-aligned span of the PT_LOAD segments */
	uint64_t lo, hi, align;
	long headn; /* bytes of head read from fd (-1: none yet) */
	long iheadn; /* check_exe: the interpreter's headn (its head is then in head) */
	Elf64_Ehdr eh;
	char head[HEAD_BYTES];
	Elf64_Phdr ph[MAX_PHNUM];
};

int fail(char *why, size_t wl, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
long pread_full(int fd, void *buf, size_t n, uint64_t off);
int open_regular(const char *path, struct zv_file_id *id);
int open_regular_mode(const char *path, struct zv_file_id *id, unsigned *mode, int cloexec); /* and its st_mode */
int open_exec_mode(const char *path, struct zv_file_id *id, unsigned *mode, int cloexec);
int check_ehdr(const Elf64_Ehdr *eh, char *why, size_t wl);
long read_ehdr(struct elf *e);
long ehdr_from_head(struct elf *e);
int read_phdrs(struct elf *e, char *why, size_t wl);
int check_extra(struct elf *e, char *why, size_t wl);
int get_interp(struct elf *e, char *out, char *why, size_t wl);
int overlaps_kernel(uint64_t lo, uint64_t hi);
int open_interp(const char *ipath, struct elf *e, int checked, char *why, size_t wl);
int check_interp(const char *ipath, struct elf *e, char *why, size_t wl);
long read_head(struct elf *e);
int check_exe(struct elf *e, char *why, size_t wl);
void sanitize(char *s);
#endif
