/* say(): printf in one write(2), whole lines even when a tracer and its
 * tracee share the output; CHECK(x): a failed condition's line and exit 1. */
#ifndef GUEST_SAY_H
#define GUEST_SAY_H
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void say(const char *fmt, ...)
{
	char b[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	if (write(1, b, n) < 0)
		_exit(99);
}

#define CHECK(x) do { if (!(x)) { say("FAIL %s:%d %s (errno %d)\n", __FILE__, __LINE__, #x, errno); exit(1); } } while (0)
#endif
