/* Test program for the loader alone (see Makefile). */
#include "loader/loader.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include <linux/auxvec.h>
#include <linux/mman.h>

asm(".text\n.globl _start\n_start:\n"
    "\txor %ebp, %ebp\n"
    "\tmov %rsp, %rdi\n"
    "\tand $-16, %rsp\n"
    "\tcall harness_main\n"
    "\thlt\n");

/* Starts the guest: rsp = sp, every other register zero, as after execve. */
__attribute__((noreturn)) static void enter(uint64_t sp, uint64_t entry)
{
	asm volatile("mov %0, %%rsp\n\t"
		     "push %1\n\t"
		     "xor %%eax, %%eax\n\txor %%ebx, %%ebx\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t"
		     "xor %%esi, %%esi\n\txor %%edi, %%edi\n\txor %%ebp, %%ebp\n\txor %%r8d, %%r8d\n\t"
		     "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d\n\txor %%r12d, %%r12d\n\t"
		     "xor %%r13d, %%r13d\n\txor %%r14d, %%r14d\n\txor %%r15d, %%r15d\n\t"
		     "ret\n"
		     :
		     : "r"(sp), "r"(entry)
		     : "memory");
	__builtin_unreachable();
}

static int run(int argc, char **argv, char **envp, uint64_t *auxv)
{
	static struct zv_resolved r;
	static struct zv_image img;
	char why[200];
	const char *path = argv[0];
	int err = zv_exec_resolve(path, &r);
	if (err) {
		zv_dprintf(2, "zvisor: %s: %s\n", path, r.why);
		return err == -ENOENT ? 127 : 126;
	}
	err = zv_load_elf(r.elf, &img, why, sizeof why);
	if (err) {
		zv_dprintf(2, "zvisor: %s: %s\n", path, why);
		return 126;
	}
	/* argv' = prefix ++ argv[1..] */
	static char *nargv[4096];
	int n = 0;
	if (r.nprefix)
		for (int i = 0; i < r.nprefix; i++)
			nargv[n++] = r.prefix[i];
	else
		nargv[n++] = argv[0];
	for (int i = 1; i < argc && n < 4095; i++)
		nargv[n++] = argv[i];
	nargv[n] = 0;

	const size_t stack_size = 8 << 20, img_max = 1 << 20;
	char *stack = zv_mmap(0, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *tmp = zv_mmap(0, img_max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (zv_is_err((long)stack) || zv_is_err((long)tmp))
		return 125;
	uint64_t top = (uint64_t)stack + stack_size;
	uint64_t sp = zv_build_stack(tmp, img_max, top, nargv, envp, &img, path, auxv);
	if (!sp) {
		zv_dprintf(2, "harness: stack image does not fit\n");
		return 125;
	}
	memcpy((void *)sp, tmp, top - sp);
	zv_munmap(tmp, img_max);
	enter(sp, img.entry);
}

/* `harness info FILE`: what zv_load_elf reports (the mappings stay). */
static int info(const char *path)
{
	static struct zv_image img;
	char why[200];
	int err = zv_load_elf(path, &img, why, sizeof why);
	if (err) {
		zv_dprintf(1, "error %d %s\n", -err, why);
		return 1;
	}
	zv_dprintf(1, "entry %lx exe_entry %lx phdr %lx phent %lu phnum %lu interp_base %lx brk %lx exe %s\n",
		   (unsigned long)img.entry, (unsigned long)img.exe_entry, (unsigned long)img.phdr,
		   (unsigned long)img.phent, (unsigned long)img.phnum, (unsigned long)img.interp_base,
		   (unsigned long)img.brk_start, img.exe_path);
	return 0;
}

/* `harness resolve FILE ARG...`: the argv zvisor would start. */
static int show_resolve(const char *path)
{
	static struct zv_resolved r;
	int err = zv_exec_resolve(path, &r);
	if (err) {
		zv_dprintf(1, "error %d %s\n", -err, r.why);
		return 1;
	}
	zv_dprintf(1, "elf %s\n", r.elf);
	for (int i = 0; i < r.nprefix; i++)
		zv_dprintf(1, "prefix [%s]\n", r.prefix[i]);
	return 0;
}

/* `harness stack-selftest`: zv_build_stack's invariants and its size limit. */
static int check(int ok, const char *what)
{
	if (!ok)
		zv_dprintf(2, "stack-selftest: FAILED: %s\n", what);
	return !ok;
}

static int stack_selftest(char **envp, uint64_t *auxv)
{
	static unsigned char buf[1 << 16];
	static struct zv_image img = { .entry = 0x1234, .exe_entry = 0x5678, .phdr = 0x9000, .phent = 56,
				       .phnum = 7, .interp_base = 0xabc000, .exe_path = "/exe" };
	char *argv[] = { "prog", "", "third arg", 0 };
	char *env[] = { "A=1", "LONG=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 0 };
	uint64_t bare_auxv[] = { AT_PAGESZ, 4096, AT_NULL, 0 };
	int bad = 0;
	for (int variant = 0; variant < 3; variant++) {
		uint64_t *aux = variant == 0 ? auxv : variant == 1 ? bare_auxv : 0;
		for (uint64_t top = 0x7ffff000; top < 0x7ffff000 + 16; top += 8) {
			uint64_t sp = zv_build_stack(buf, sizeof buf, top, argv, env, &img, "/the/execfn", aux);
			bad |= check(sp && sp % 16 == 0 && sp < top, "sp aligned and below top");
			if (!sp)
				continue;
			size_t len = top - sp;
			bad |= check(zv_build_stack(buf, len - 1, top, argv, env, &img, "/the/execfn", aux) == 0,
				     "returns 0 when one byte short");
			bad |= check(zv_build_stack(buf, len, top, argv, env, &img, "/the/execfn", aux) == sp,
				     "fits in exactly top - sp bytes");
			uint64_t *w = (uint64_t *)buf;
#define PTR(a) ((char *)buf + ((a) - sp))
#define IN(a) ((a) >= sp && (a) < top)
			bad |= check(w[0] == 3, "argc");
			for (int i = 0; i < 3; i++)
				bad |= check(IN(w[1 + i]) && !zv_strcmp(PTR(w[1 + i]), argv[i]), "argv strings");
			bad |= check(w[4] == 0, "argv NULL");
			for (int i = 0; i < 2; i++)
				bad |= check(IN(w[5 + i]) && !zv_strcmp(PTR(w[5 + i]), env[i]), "envp strings");
			bad |= check(w[7] == 0, "envp NULL");
			bad |= check(w[1] < w[2] && w[2] < w[3] && w[3] < w[5] && w[5] < w[6], "strings in order");
			uint64_t *a = w + 8, seen = 0, execfn = 0, random = 0;
			for (; a[0] != AT_NULL; a += 2) {
				if (a[0] < 64)
					seen |= 1UL << a[0];
				if (a[0] == AT_PHDR) bad |= check(a[1] == 0x9000, "AT_PHDR");
				if (a[0] == AT_PHENT) bad |= check(a[1] == 56, "AT_PHENT");
				if (a[0] == AT_PHNUM) bad |= check(a[1] == 7, "AT_PHNUM");
				if (a[0] == AT_BASE) bad |= check(a[1] == 0xabc000, "AT_BASE");
				if (a[0] == AT_ENTRY) bad |= check(a[1] == 0x5678, "AT_ENTRY");
				if (a[0] == AT_EXECFN) execfn = a[1];
				if (a[0] == AT_RANDOM) random = a[1];
				if (a[0] == AT_PLATFORM) bad |= check(IN(a[1]) && !zv_strcmp(PTR(a[1]), "x86_64"), "AT_PLATFORM");
				if (a[0] == AT_PAGESZ) bad |= check(a[1] == 4096, "AT_PAGESZ kept");
			}
			uint64_t want = 1UL << AT_PHDR | 1UL << AT_PHENT | 1UL << AT_PHNUM | 1UL << AT_BASE |
					1UL << AT_ENTRY | 1UL << AT_RANDOM | 1UL << AT_EXECFN;
			bad |= check((seen & want) == want, "the auxv has every replaced entry");
			bad |= check(a[1] == 0, "AT_NULL value");
			uint64_t after_auxv = sp + (uint64_t)((char *)(a + 2) - (char *)buf);
			bad |= check(random >= after_auxv && random + 16 <= w[1], "AT_RANDOM between auxv and strings");
			bad |= check(random - after_auxv < 16 + 16 || variant == 0, "little padding after auxv");
			bad |= check(execfn == ((top - 8 - sizeof "/the/execfn") & ~0UL) && !zv_strcmp(PTR(execfn), "/the/execfn"),
				     "execfn right below top - 8");
			bad |= check(*(uint64_t *)PTR(top - 8) == 0, "8 zero bytes at the top");
			bad |= check(w[6] + zv_strlen(env[1]) + 1 == execfn, "env strings end where execfn starts");
#undef PTR
#undef IN
		}
	}
	(void)envp;
	zv_dprintf(1, bad ? "stack-selftest: FAILED\n" : "stack-selftest: ok\n");
	return bad;
}

__attribute__((used)) void harness_main(uint64_t *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1), **envp = argv + argc + 1, **e = envp;
	while (*e)
		e++;
	uint64_t *auxv = (uint64_t *)(e + 1);
	int rc = 2;
	/* The same command line as zvisor's, so that the tests can use either. */
	if (argc >= 2 && (!zv_strcmp(argv[1], "check-elf") || !zv_strcmp(argv[1], "check")))
		rc = zv_check_main(argc - 2, argv + 2);
	else if (argc >= 4 && !zv_strcmp(argv[1], "run") && !zv_strcmp(argv[2], "--"))
		rc = run(argc - 3, argv + 3, envp, auxv);
	else if (argc >= 3 && !zv_strcmp(argv[1], "run"))
		rc = run(argc - 2, argv + 2, envp, auxv);
	else if (argc == 2 && !zv_strcmp(argv[1], "stack-selftest"))
		rc = stack_selftest(envp, auxv);
	else if (argc == 3 && !zv_strcmp(argv[1], "info"))
		rc = info(argv[2]);
	else if (argc == 3 && !zv_strcmp(argv[1], "resolve"))
		rc = show_resolve(argv[2]);
	else
		zv_dprintf(2, "usage: harness check-elf FILE... | run [--] FILE ARG... | info FILE | resolve FILE | stack-selftest\n");
	zv_exit_group(rc);
}
