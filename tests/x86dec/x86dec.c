/* Host-side harness for kernel/intercept/x86len.c (tests/test_x86dec.py).
 *
 *   x86dec lens FILE      every instruction of a linear sweep of FILE's
 *                         executable sections: "ADDR LEN" (hex, decimal); an
 *                         undecodable byte is "ADDR -1" and the sweep goes on
 *                         at the next byte
 *   x86dec sites FILE     zv_x86_find_syscalls over each executable section:
 *                         one hex address per line
 *   x86dec segsites FILE  the same over each executable PT_LOAD segment
 *                         (what the loader sees: headers and all)
 *   x86dec datasites FILE the same over each allocated section that is not
 *                         executable (data: every site reported is wrong)
 *   x86dec rsp            for each line of hex bytes on stdin: whether the
 *                         first instruction copies rsp (zv_x86_decode's
 *                         exposes_rsp: 1 or 0; -1: invalid)
 *   x86dec len            for each line of hex bytes on stdin: the length of
 *                         the first instruction (-1: invalid)
 *   x86dec find           for each line "HEX" on stdin: the offsets of the
 *                         syscall sites found in those bytes (base 0), or "-"
 */
#include "intercept/x86len.h"
#include "intercept/x86ops.h"
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SITES 100000

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "x86dec: %s: %s\n", what, arg);
	exit(2);
}

static void sweep(const uint8_t *code, size_t len, uint64_t base)
{
	for (size_t off = 0; off < len;) {
		int l = zv_x86_insn_len(code + off, len - off);
		printf("%llx %d\n", (unsigned long long)(base + off), l);
		off += l > 0 ? l : 1;
	}
}

static void sites(const uint8_t *code, size_t len, uint64_t base)
{
	static uint64_t out[MAX_SITES];
	int n = zv_x86_find_syscalls(code, len, base, out, MAX_SITES);
	for (int i = 0; i < n; i++)
		printf("%llx\n", (unsigned long long)out[i]);
}

static int elf_file(const char *mode, const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		die("cannot open", path);
	const uint8_t *f = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f == MAP_FAILED)
		die("cannot map", path);
	const Elf64_Ehdr *eh = (const void *)f;
	if (st.st_size < (off_t)sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_X86_64)
		die("not an x86-64 ELF file", path);
	if (!strcmp(mode, "segsites")) {
		const Elf64_Phdr *ph = (const void *)(f + eh->e_phoff);
		for (int i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) &&
			    ph[i].p_offset + ph[i].p_filesz <= (uint64_t)st.st_size)
				sites(f + ph[i].p_offset, ph[i].p_filesz, ph[i].p_vaddr);
		return 0;
	}
	const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		int want_x = strcmp(mode, "datasites") != 0;
		if (sh[i].sh_type == SHT_NOBITS || !(sh[i].sh_flags & SHF_ALLOC) ||
		    !(sh[i].sh_flags & SHF_EXECINSTR) != !want_x ||
		    sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size)
			continue;
		if (!strcmp(mode, "lens"))
			sweep(f + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr);
		else
			sites(f + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr);
	}
	return 0;
}

/* Hex digits of line (spaces allowed) into buf; returns the byte count. */
static size_t unhex(const char *line, uint8_t *buf, size_t max)
{
	size_t n = 0;
	int hi = -1;
	for (const char *s = line; *s && n < max; s++) {
		int v = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
		if (v < 0)
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			buf[n++] = hi << 4 | v;
			hi = -1;
		}
	}
	return n;
}

static int hex_lines(const char *mode)
{
	static char line[1 << 20];
	static uint8_t buf[1 << 19];
	static uint64_t out[4096];
	while (fgets(line, sizeof line, stdin)) {
		size_t n = unhex(line, buf, sizeof buf);
		if (!strcmp(mode, "len")) {
			printf("%d\n", zv_x86_insn_len(buf, n));
			continue;
		}
		if (!strcmp(mode, "rsp")) {
			struct zv_x86_insn in;
			printf("%d\n", zv_x86_decode(buf, n, &in) < 0 ? -1 : in.exposes_rsp);
			continue;
		}
		int k = zv_x86_find_syscalls(buf, n, 0, out, 4096);
		if (!k)
			printf("-");
		for (int i = 0; i < k; i++)
			printf("%s%llu", i ? " " : "", (unsigned long long)out[i]);
		printf("\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "len") || !strcmp(argv[1], "find") || !strcmp(argv[1], "rsp")))
		return hex_lines(argv[1]);
	if (argc == 3 && (!strcmp(argv[1], "lens") || !strcmp(argv[1], "sites") ||
			  !strcmp(argv[1], "segsites") || !strcmp(argv[1], "datasites")))
		return elf_file(argv[1], argv[2]);
	fprintf(stderr, "usage: x86dec lens|sites|segsites|datasites FILE, or x86dec len|find|rsp < hex lines\n");
	return 2;
}
