/* Kernel-wide declarations: the umbrella over each subsystem's header,
 * for the many files that use several.
 *   arch/thread.h          the per-thread kernel area (struct zv_thread)
 *   sys/proc.h             the process (struct zv_proc) and its pieces:
 *                          sys/seccomp.h, sys/vtime.h, loader/vdso.h
 *   sys/entry.h            the way into the kernel and out
 *   sys/calls.h            the calls the kernel handles, by file
 *   sys/sysent.h           one row per system call
 *   intercept/intercept.h  the platform's set-up and entries
 *   loader/loader.h        execve's loader
 *   trace/trace.h          zvisor trace */
#ifndef ZV_ZVISOR_H
#define ZV_ZVISOR_H
#include <stdint.h>
#include <stddef.h>
#include "arch/context.h"
#include "arch/fast.h"
#include "arch/thread.h"
#include "loader/loader.h"
#include "loader/vdso.h"
#include "trace/trace.h"
#include "sys/sysent.h"
#include "sys/proc.h"
#include "sys/seccomp.h"
#include "sys/vtime.h"
#include "sys/entry.h"
#include "sys/calls.h"
#include "intercept/intercept.h"

#define ZV_VERSION "0.1.0"

/* For large arrays a new image seldom touches: placed after all of .bss
 * (the linker puts .lbss there), so that the small variables every start
 * writes share a few pages and not one page each (a zero-fill fault per
 * page per exec). */
#define ZV_COLD_BSS __attribute__((section(".lbss.zv")))

/* Fatal error inside zvisor: one line, exit status 126 or as given. */
__attribute__((noreturn)) void zv_die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#endif
