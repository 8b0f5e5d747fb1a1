/* The guest's initial stack, laid out as the host's execve lays it out
 * (fs/exec.c + create_elf_tables()), from low to high addresses:
 *   argc, argv[], NULL, envp[], NULL, auxv pairs, AT_NULL pair,
 *   padding to make sp 16-byte aligned,
 *   16 AT_RANDOM bytes, the AT_PLATFORM string,
 *   padding to a 16-byte boundary,
 *   argv strings, envp strings, the execfn string, 8 zero bytes, top.
 * The host also moves the strings down by a random amount; zvisor does not. */
#include "loader/loader.h"
#include "lib/string.h"
#include "lib/syscall.h"
#include "lib/random.h"
#include "sys/setid.h"
#include <linux/auxvec.h>

struct aux_values {
	const struct zv_image *img;
	uint64_t random_at, execfn_at, platform_at;
};

uint64_t (*zv_aux_hook)(uint64_t type, uint64_t value);

/* The value the guest sees for auxv entry type (orig: the host's). */
static uint64_t aux_value(const struct aux_values *av, uint64_t type, uint64_t orig)
{
	if (zv_setid_secure && type == AT_SECURE)
		orig = 1;
	else if (zv_setid_secure && (type == AT_EUID || type == AT_EGID))
		orig = (uint64_t)zv_sys0(type == AT_EUID ? __NR_geteuid : __NR_getegid);
	if (zv_aux_hook)
		orig = zv_aux_hook(type, orig);
	switch (type) {
	case AT_PHDR: return av->img->phdr;
	case AT_PHENT: return av->img->phent;
	case AT_PHNUM: return av->img->phnum;
	case AT_BASE: return av->img->interp_base;
	case AT_ENTRY: return av->img->exe_entry;
	case AT_RANDOM: return av->random_at;
	case AT_EXECFN: return av->execfn_at;
	case AT_PLATFORM: return av->platform_at ? av->platform_at : orig;
	}
	return orig;
}

/* Moves *p down by n bytes unless that leaves [floor, top). */
static int take(uint64_t *p, uint64_t floor, uint64_t n)
{
	if (*p < floor || *p - floor < n)
		return 0;
	*p -= n;
	return 1;
}

uint64_t zv_build_stack(void *buf, size_t bufsize, uint64_t top, char *const argv[], char *const envp[],
			const struct zv_image *img, const char *execfn, const uint64_t *host_auxv)
{
	uint64_t floor = bufsize < top ? top - bufsize : 0, p = top;
	size_t argc = 0, envc = 0, nhost = 0, len;
	const char *platform = 0;
	if (!execfn)
		execfn = img->exe_path;

	/* Sizes and addresses first: the strings from the top down. */
	if (!take(&p, floor, 8))
		return 0;
	len = zv_strlen(execfn) + 1;
	if (!take(&p, floor, len))
		return 0;
	uint64_t execfn_at = p;
	for (; envp && envp[envc]; envc++)
		if (!take(&p, floor, zv_strlen(envp[envc]) + 1))
			return 0;
	for (; argv && argv[argc]; argc++)
		if (!take(&p, floor, zv_strlen(argv[argc]) + 1))
			return 0;
	uint64_t strings_at = p;
	p &= ~15UL;
	int have[AT_EXECFN + 1] = { 0 };
	for (const uint64_t *a = host_auxv; a && a[0] != AT_NULL; a += 2) {
		nhost++;
		if (a[0] < sizeof have / sizeof have[0])
			have[a[0]] = 1;
		if (a[0] == AT_PLATFORM && a[1])
			platform = (const char *)a[1];
	}
	uint64_t platform_at = 0;
	if (platform) {
		if (!take(&p, floor, zv_strlen(platform) + 1))
			return 0;
		platform_at = p;
	}
	if (!take(&p, floor, 16))
		return 0;
	uint64_t random_at = p;
	static const uint64_t added[] = { AT_PHDR, AT_PHENT, AT_PHNUM, AT_BASE, AT_ENTRY, AT_RANDOM, AT_EXECFN };
	size_t nauxv = nhost + 1;
	for (size_t i = 0; i < sizeof added / sizeof added[0]; i++)
		nauxv += !have[added[i]];
	uint64_t words = 1 + argc + 1 + envc + 1 + 2 * nauxv;
	if (words > p / 8 || !take(&p, floor, words * 8))
		return 0;
	p &= ~15UL;
	if (p < floor)
		return 0;
	uint64_t sp = p;

	/* Now write the image: address a is at buf + (a - sp), or at a itself. */
	unsigned char *b = buf ? buf : (unsigned char *)sp;
#define AT(a) (b + ((a) - sp))
	memset(b, 0, top - sp);
	uint64_t *w = (uint64_t *)b, s = strings_at;
	*w++ = argc;
	for (size_t i = 0; i < argc; i++) {
		len = zv_strlen(argv[i]) + 1;
		memcpy(AT(s), argv[i], len);
		*w++ = s;
		s += len;
	}
	*w++ = 0;
	for (size_t i = 0; i < envc; i++) {
		len = zv_strlen(envp[i]) + 1;
		memcpy(AT(s), envp[i], len);
		*w++ = s;
		s += len;
	}
	*w++ = 0;
	memcpy(AT(execfn_at), execfn, zv_strlen(execfn) + 1);
	zv_start_random(AT(random_at), 16);
	if (platform)
		memcpy(AT(platform_at), platform, zv_strlen(platform) + 1);

	struct aux_values av = { img, random_at, execfn_at, platform_at };
	for (const uint64_t *a = host_auxv; a && a[0] != AT_NULL; a += 2) {
		*w++ = a[0];
		*w++ = aux_value(&av, a[0], a[1]);
	}
	for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) {
		if (have[added[i]])
			continue;
		*w++ = added[i];
		*w++ = aux_value(&av, added[i], 0);
	}
	*w++ = AT_NULL;
	*w++ = 0;
#undef AT
	return sp;
}
