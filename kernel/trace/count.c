/* --count: per-syscall counters in a shared memfd (see count.h). */
#include "trace/count.h"
#include "zvisor.h"
#include "lib/syscall.h"
#include "lib/string.h"
#include "lib/fmt.h"
#include "lib/kmem.h"
#include "lib/arith.h"
#include "sys/layer.h"
#include <linux/mman.h>

/* Rows 0..ZV_NSYSCALLS-1: system calls; the next ZV_NSYSCALLS: the same
 * calls made through the vDSO's entries. */
#define NROWS (2 * ZV_NSYSCALLS)
struct count_table {
	uint64_t calls[NROWS];
	uint64_t errors[NROWS];
	uint64_t ns[NROWS]; /* time spent, for zvisor trace -c */
};

static struct count_table *table;
int zv_count_timed;

int zv_count_create(void)
{
	long fd = zv_sys2(__NR_memfd_create, "zvisor-count", 0);
	if (fd < 0)
		return (int)fd;
	if (zv_sys2(__NR_ftruncate, fd, sizeof(struct count_table)) < 0 || zv_count_attach((int)fd) < 0) {
		zv_close((int)fd);
		return -ENOMEM;
	}
	return (int)fd;
}

int zv_count_attach(int fd)
{
	void *p = zv_kmap(sizeof(struct count_table), 4096, fd);
	if (zv_is_err((long)p))
		return (int)(long)p;
	table = p;
	zv_entry_counter = zv_count_record;
	return 0;
}

void zv_count_record(long nr, long ret, int vdso)
{
	if (!table || (unsigned long)nr >= ZV_NSYSCALLS)
		return;
	if (vdso)
		nr += ZV_NSYSCALLS;
	__atomic_fetch_add(&table->calls[nr], 1, __ATOMIC_RELAXED);
	if (ret < 0 && ret > -4096)
		__atomic_fetch_add(&table->errors[nr], 1, __ATOMIC_RELAXED);
}

void zv_count_time(long nr, int vdso, int64_t ns)
{
	if (!table || (unsigned long)nr >= ZV_NSYSCALLS || ns < 0)
		return;
	__atomic_fetch_add(&table->ns[nr + (vdso ? ZV_NSYSCALLS : 0)], (uint64_t)ns, __ATOMIC_RELAXED);
}

static uint64_t tsc0;
static int64_t mono0;

static int64_t mono_ns(void)
{
	struct { int64_t sec; long nsec; } ts = { 0, 0 };
	zv_sys2(__NR_clock_gettime, 1 /* CLOCK_MONOTONIC */, &ts);
	return ts.sec * 1000000000LL + ts.nsec;
}

void zv_count_tsc_init(void)
{
	zv_count_tsc = zv_count_timed && table && zv_tsc_usable();
	if (zv_count_tsc) {
		mono0 = mono_ns();
		tsc0 = zv_rdtsc();
	}
}

void zv_count_flush(void)
{
	if (!zv_count_tsc || !table)
		return;
	uint64_t dtsc = zv_rdtsc() - tsc0;
	int64_t dns = mono_ns() - mono0;
	if (!dtsc || dns <= 0)
		return;
	for (int i = 0; i < NROWS; i++) {
		uint64_t c = __atomic_exchange_n(&zv_count_cycle_sums[i], 0, __ATOMIC_RELAXED);
		if (c)
			__atomic_fetch_add(&table->ns[i], zv_umuldiv(c, (uint64_t)dns, dtsc, 0), __ATOMIC_RELAXED);
	}
}

void zv_count_after_fork(void)
{
	if (zv_count_tsc) /* else untouched: no page to copy for nothing */
		memset(zv_count_cycle_sums, 0, sizeof zv_count_cycle_sums);
}

void zv_count_unrecord(long nr)
{
	if (table && (unsigned long)nr < ZV_NSYSCALLS)
		__atomic_fetch_sub(&table->calls[nr], 1, __ATOMIC_RELAXED);
}

static const char *name_of(int row, char *buf, size_t n)
{
	int nr = row % ZV_NSYSCALLS;
	const char *vdso = row >= ZV_NSYSCALLS ? "[vdso]" : "";
	if (zv_sysname(nr))
		zv_snprintf(buf, n, "%s%s", zv_sysname(nr), vdso);
	else
		zv_snprintf(buf, n, "syscall_%d%s", nr, vdso);
	return buf;
}

/* Buffered output: the table is written in few write(2) calls. */
struct outbuf {
	int fd;
	size_t len;
	char data[4096];
};

static void out(struct outbuf *o, const char *s)
{
	size_t n = zv_strlen(s);
	if (o->len + n > sizeof o->data) {
		zv_write(o->fd, o->data, o->len);
		o->len = 0;
	}
	memcpy(o->data + o->len, s, n);
	o->len += n;
}

/* The next row to print, or -1 when all are: the most time first (by_time),
 * then the most calls, then the name; done marks the rows printed. */
static int next_row(uint8_t *done, int by_time)
{
	char nb[40], nb2[40];
	int best = -1;
	for (int i = 0; i < NROWS; i++) {
		if (done[i] || !table->calls[i])
			continue;
		if (best >= 0 && by_time && table->ns[i] != table->ns[best]) {
			if (table->ns[i] > table->ns[best])
				best = i;
			continue;
		}
		if (best < 0 || table->calls[i] > table->calls[best] ||
		    (table->calls[i] == table->calls[best] &&
		     zv_strcmp(name_of(i, nb, sizeof nb), name_of(best, nb2, sizeof nb2)) < 0))
			best = i;
	}
	if (best >= 0)
		done[best] = 1;
	return best;
}

/* strace -c's table: time, seconds, usecs/call, calls, errors, sorted by
 * time (then calls, then name). */
static void report_timed(struct outbuf *o)
{
	static const char dash[] = "------ ----------- ----------- --------- --------- ----------------\n";
	char line[160], nb[40];
	out(o, "% time     seconds  usecs/call     calls    errors syscall\n");
	out(o, dash);
	uint64_t total_ns = 0, total = 0, errs = 0;
	for (int i = 0; i < NROWS; i++) {
		total_ns += table->ns[i];
		total += table->calls[i];
		errs += table->errors[i];
	}
	uint8_t done[NROWS] = { 0 };
	for (int best; (best = next_row(done, 1)) >= 0;) {
		uint64_t ns = table->ns[best], c = table->calls[best], e = table->errors[best];
		uint64_t pct = total_ns ? (ns * 10000 + total_ns / 2) / total_ns : 0;
		char errs_text[16] = "";
		if (e)
			zv_snprintf(errs_text, sizeof errs_text, "%lu", e);
		zv_snprintf(line, sizeof line, "%3lu.%02lu %4lu.%06lu %11lu %9lu %9s %s\n", pct / 100, pct % 100,
			    ns / 1000000000, ns / 1000 % 1000000, c ? ns / 1000 / c : 0, c, errs_text,
			    name_of(best, nb, sizeof nb));
		out(o, line);
	}
	out(o, dash);
	char errs_text[16] = "";
	if (errs)
		zv_snprintf(errs_text, sizeof errs_text, "%lu", errs);
	zv_snprintf(line, sizeof line, "100.00 %4lu.%06lu %11lu %9lu %9s total\n", total_ns / 1000000000,
		    total_ns / 1000 % 1000000, total ? total_ns / 1000 / total : 0, total, errs_text);
	out(o, line);
}

void zv_count_report(int fd)
{
	if (!table)
		return;
	static const char dash[] = "--------- --------- ----------------\n";
	struct outbuf *o = zv_kmap(sizeof *o, 4096, -1);
	if (zv_is_err((long)o))
		return;
	o->fd = fd;
	o->len = 0;
	if (zv_count_timed) {
		report_timed(o);
		zv_write(fd, o->data, o->len);
		zv_kunmap(o, sizeof *o);
		return;
	}
	char line[128], nb[32];
	out(o, "    calls    errors syscall\n");
	out(o, dash);
	uint64_t total = 0, errs = 0;
	uint8_t done[NROWS] = { 0 };
	for (int best; (best = next_row(done, 0)) >= 0;) {
		uint64_t c = table->calls[best], e = table->errors[best];
		total += c;
		errs += e;
		if (e)
			zv_snprintf(line, sizeof line, "%9lu %9lu %s\n", c, e, name_of(best, nb, sizeof nb));
		else
			zv_snprintf(line, sizeof line, "%9lu %9s %s\n", c, "", name_of(best, nb, sizeof nb));
		out(o, line);
	}
	out(o, dash);
	zv_snprintf(line, sizeof line, "%9lu %9lu total\n", total, errs);
	out(o, line);
	zv_write(fd, o->data, o->len);
	zv_kunmap(o, sizeof *o);
}

/* Counting has no part in a call's layers: the entry counts each call once
 * (zv_entry_count). It follows the events: a fork child starts its own
 * sums, and execve is counted before the image goes (taken back if the
 * host refuses it; the caller then counts the failure). */
static int count_sees(long nr) { return 0; }
static int count_active(void) { return 0; }
static void count_fork_child(struct zv_thread *t) { zv_count_after_fork(); }

static void count_exec(struct zv_thread *t, long nr, const long *a)
{
	zv_count_flush();
	zv_count_record(__NR_execve, 0, 0);
}

static void count_exec_failed(struct zv_thread *t, long nr) { zv_count_unrecord(__NR_execve); }

/* The process ends: its sums go to the table, and the first guest
 * process prints it (trace -c's to the trace output, if any). */
static void count_report(int fd, int leader)
{
	zv_count_flush();
	if (leader)
		zv_count_report(zv_proc.trace.summary && zv_proc.trace.fd >= 0 ? zv_proc.trace.fd : fd);
}

ZV_LAYER(count, 900) = {
	.name = "count", .sees = count_sees, .active = count_active, .fork_child = count_fork_child,
	.exec = count_exec, .exec_failed = count_exec_failed, .report = count_report, .tsc_off = zv_count_flush,
};
