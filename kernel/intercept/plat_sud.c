/* The sud platform: every guest syscall arrives as SIGSYS from Syscall User
 * Dispatch (plat_catchall.c); nothing is rewritten. */
#include "zvisor.h"
#include "intercept/platform.h"

const struct zv_platform_ops zv_plat_sud = {
	.name = "sud",
	.arm_thread = zv_catchall_arm_thread,
	.host_vdso = 1,
};
