/* Stubs for the kernel functions a unit under test calls but the test does
 * not exercise: reaching one is a test failure (exit 99). */
#ifndef ZV_UNIT_STUBS_H
#define ZV_UNIT_STUBS_H
#include "lib/fmt.h"
#include "lib/syscall.h"

#define UNIT_UNREACHED(name)                                                   \
	do {                                                                   \
		zv_dprintf(1, "FAIL: the test reached the stub %s\n", name);  \
		zv_exit_group(99);                                             \
	} while (0)
#endif
