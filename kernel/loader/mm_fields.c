/* /proc/self/{cmdline,environ,auxv} read the process's argument, environment
 * and auxiliary-vector areas as the host recorded them at execve: zvisor's.
 * Once the guest's stack is in place, point them at the guest's. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/prctl.h>
#include <elf.h>

/* PR_SET_MM_MAP replaces every field at once, so the ones zvisor does not
 * move are passed as the host set them when it loaded zvisor: code and
 * data from zvisor's own program headers, computed as Linux (5.10 and
 * later) does for an ET_EXEC; the stack's start is the stack pointer
 * zvisor began with; brk is where the host put it, which zvisor never
 * moves (the guest's brk is its own, sys/mm.c). The same numbers
 * /proc/self/stat shows, without opening and reading it. */
extern char __executable_start[];

struct own_fields { uint64_t start_code, end_code, start_data, end_data; };

static struct own_fields own_image(void)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)__executable_start;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(__executable_start + eh->e_phoff);
	struct own_fields f = { ~0UL, 0, 0, 0 };
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		uint64_t lo = ph[i].p_vaddr, end = lo + ph[i].p_filesz;
		if (ph[i].p_flags & PF_X) {
			f.start_code = lo < f.start_code ? lo : f.start_code;
			f.end_code = end > f.end_code ? end : f.end_code;
		}
		f.start_data = lo > f.start_data ? lo : f.start_data;
		f.end_data = end > f.end_data ? end : f.end_data;
	}
	return f;
}

/* img is the guest's initial stack image as it is at [sp, sp + len);
 * host_sp is the stack pointer the host started zvisor with. */
void zv_publish_mm_fields(uint64_t host_sp, uint64_t sp, const void *img, size_t len)
{
	struct own_fields f = own_image();
	static long brk; /* zvisor never moves it: asked once per process image (an in-process exec asks none) */
	if (!brk)
		brk = zv_sys1(__NR_brk, 0);
	if (brk <= 0)
		return;

	const uint64_t *w = img;
	uint64_t argc = w[0];
	const uint64_t *argv = w + 1, *envp = argv + argc + 1;
	uint64_t nenv = 0;
	while (envp[nenv])
		nenv++;
	const uint64_t *auxv = envp + nenv + 1, *a = auxv;
	while (a[0])
		a += 2;
	const char *base = img;
#define STR_END(p) ((p) + zv_strlen(base + ((p) - sp)) + 1)
	struct prctl_mm_map m = {
		.start_code = f.start_code,
		.end_code = f.end_code,
		.start_data = f.start_data,
		.end_data = f.end_data,
		.start_brk = (uint64_t)brk,
		.brk = (uint64_t)brk,
		.start_stack = host_sp,
		.arg_start = argc ? argv[0] : sp,
		.arg_end = argc ? STR_END(argv[argc - 1]) : sp,
		.env_start = nenv ? envp[0] : sp,
		.env_end = nenv ? STR_END(envp[nenv - 1]) : sp,
		.auxv = (__u64 *)auxv,
		.auxv_size = (uint32_t)((a + 2 - auxv) * sizeof(uint64_t)),
		.exe_fd = (uint32_t)-1,
	};
#undef STR_END
	(void)len;
	/* Needs CAP_SYS_RESOURCE; without it the fields keep zvisor's values. */
	zv_sys5(__NR_prctl, PR_SET_MM, PR_SET_MM_MAP, &m, sizeof m, 0);
}
