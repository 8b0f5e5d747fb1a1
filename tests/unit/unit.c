/* The unit tests' entry point: no libc, so _start calls unit_main and exits
 * with the verdict through raw system calls. */
#include "unit.h"
#include "lib/syscall.h"

int unit_checks, unit_failures;

void unit_start(void);
__attribute__((noreturn, used)) void unit_start(void)
{
	unit_main();
	zv_dprintf(1, "%d checks, %d failed\n", unit_checks, unit_failures);
	zv_exit_group(unit_failures ? 1 : 0);
}

/* The entry: clear the frame pointer, align the stack, call unit_start. */
__asm__(".globl _start\n"
	"_start:\n"
	"	xor %ebp, %ebp\n"   /* outermost frame */
	"	and $-16, %rsp\n"   /* the ABI's alignment at a call */
	"	call unit_start\n"  /* never returns */
	"	ud2\n");
