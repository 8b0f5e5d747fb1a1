/* /proc/self/{cmdline,environ,auxv} read the process's argument, environment
 * and auxiliary-vector areas as the host recorded them at execve: zvisor's.
 * Once the guest's stack is in place, point them at the guest's. */
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include <linux/prctl.h>
#include <linux/fcntl.h>

/* Field n (1-based) of /proc/self/stat, after the command name. */
static uint64_t stat_field(const char *stat, int n)
{
	const char *p = zv_strrchr(stat, ')');
	if (!p)
		return 0;
	p += 2; /* field 3 starts here */
	for (int i = 3; i < n && *p; i++) {
		while (*p && *p != ' ')
			p++;
		if (*p)
			p++;
	}
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	return v;
}

/* img is the guest's initial stack image as it is at [sp, sp + len). */
void zv_publish_mm_fields(uint64_t sp, const void *img, size_t len)
{
	char stat[1024];
	long fd = zv_openat(AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	long n = zv_read((int)fd, stat, sizeof stat - 1);
	zv_close((int)fd);
	if (n <= 0)
		return;
	stat[n] = 0;

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
		.start_code = stat_field(stat, 26),
		.end_code = stat_field(stat, 27),
		.start_data = stat_field(stat, 45),
		.end_data = stat_field(stat, 46),
		.start_brk = stat_field(stat, 47),
		.brk = stat_field(stat, 47),
		.start_stack = stat_field(stat, 28),
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
