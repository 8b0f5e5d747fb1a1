/* A tiny runtime for unit tests of kernel sources: each test program
 * includes one kernel .c file (so its static functions are in reach), is
 * built freestanding with the kernel's flags (Makefile: make unit) and
 * prints one line per failed check, then a summary; it exits 1 if any
 * check failed. Run by tests/test_unit.py. */
#ifndef ZV_UNIT_H
#define ZV_UNIT_H
#include "lib/fmt.h"

extern int unit_checks, unit_failures;

/* CHECK(cond, fmt, ...): count a check, report it with fmt when cond is false. */
#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		unit_checks++;                                                             \
		if (!(cond)) {                                                             \
			unit_failures++;                                                   \
			zv_dprintf(1, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
			zv_dprintf(1, __VA_ARGS__);                                        \
			zv_dprintf(1, "\n");                                               \
		}                                                                          \
	} while (0)

/* CHECK_EQ(got, want): both as signed 64-bit numbers. */
#define CHECK_EQ(got, want)                                                                \
	do {                                                                               \
		long _g = (long)(got), _w = (long)(want);                                  \
		CHECK(_g == _w, "got %ld (0x%lx), want %ld (0x%lx)", _g, _g, _w, _w);      \
	} while (0)

/* The test program's body; its checks decide the exit status. */
void unit_main(void);
#endif
