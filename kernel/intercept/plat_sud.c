/* The sud platform: every guest syscall arrives as SIGSYS from Syscall User
 * Dispatch (plat_catchall.c); nothing is rewritten. */
#include "zvisor.h"
#include "intercept/platform.h"

ZV_PLATFORM(sud, 0) = {
	.name = "sud",
	ZV_PLATFORM_COMMON,
	.arm_thread = zv_catchall_arm_thread,
	.host_vdso = 1,
};
