/* The debug registers a tracer writes (POKEUSER u_debugreg): DR0-DR3 and
 * DR7 become hardware breakpoints of the traced thread through
 * perf_event_open(PERF_TYPE_BREAKPOINT) with sigtrap set, which an
 * unprivileged process may open on itself; its SIGTRAP (TRAP_PERF, the
 * register's number in si_perf_data) becomes the SIGTRAP of a debug trap
 * (TRAP_HWBKPT) with DR6 saying which register hit. The events are the
 * thread's own, opened by the stopped thread while it serves its tracer;
 * they are fds of the process, moved to the top of its table. */
#include "zvisor.h"
#include "ptrace/ptrace.h"
#include "lib/syscall.h"
#include "lib/string.h"

#define TASK_SIZE 0x7ffffffff000UL
#define TRAP_PERF 6
#define TRAP_HWBKPT 4

struct perf_attr {
	uint32_t type, size;
	uint64_t config, sample_period, sample_type, read_format, flags;
	uint32_t wakeup_events, bp_type;
	uint64_t bp_addr, bp_len, branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack, reserved2;
	uint32_t aux_sample_size, reserved3;
	uint64_t sig_data, config3;
};
#define PERF_TYPE_BREAKPOINT 5
#define F_EXCLUDE_KERNEL (1UL << 5)
#define F_EXCLUDE_HV (1UL << 6)
#define F_REMOVE_ON_EXEC (1UL << 36)
#define F_SIGTRAP (1UL << 37)
#define SIG_DATA_MAGIC 0x7a76647200000000UL /* "zvdr" | the register */

static void close_bp(struct zv_thread *t, int i)
{
	if (t->pt.perf_fd[i]) {
		zv_close(t->pt.perf_fd[i] - 1);
		t->pt.perf_fd[i] = 0;
	}
}

/* DR7's fields for register i: enabled, type (perf's bp_type), length. */
static int field(uint64_t dr7, int i, uint32_t *type, uint64_t *len)
{
	int rw = (int)(dr7 >> (16 + 4 * i)) & 3, ln = (int)(dr7 >> (18 + 4 * i)) & 3;
	static const uint32_t types[4] = { 4 /* X */, 2 /* W */, 0 /* I/O: none */, 3 /* RW */ };
	static const uint64_t lens[4] = { 1, 2, 8, 4 };
	*type = types[rw];
	*len = rw == 0 ? 8 /* sizeof(long): an instruction breakpoint */ : lens[ln];
	if (rw == 2 || (rw == 0 && ln != 0))
		return -EINVAL;
	return (dr7 >> (2 * i)) & 3 ? 1 : 0;
}

static long open_bp(struct zv_thread *t, int i, uint32_t type, uint64_t len)
{
	struct perf_attr a;
	memset(&a, 0, sizeof a);
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof a;
	a.sample_period = 1;
	a.flags = F_EXCLUDE_KERNEL | F_EXCLUDE_HV | F_REMOVE_ON_EXEC | F_SIGTRAP;
	a.bp_type = type;
	a.bp_addr = t->pt.dr[i];
	a.bp_len = len;
	a.sig_data = SIG_DATA_MAGIC | (uint64_t)i;
	long fd = zv_sys5(__NR_perf_event_open, &a, 0, -1, -1, 8 /* PERF_FLAG_FD_CLOEXEC */);
	if (fd < 0)
		return fd == -ENOENT || fd == -EOPNOTSUPP ? -ENOSPC : fd;
	long high = zv_hide_fd((int)fd);
	zv_sys3(__NR_fcntl, high, 2 /* F_SETFD */, 1 /* FD_CLOEXEC */);
	t->pt.perf_fd[i] = (int)high + 1;
	return 0;
}

/* Makes the breakpoints what dr[] and dr7 say. */
static long apply(struct zv_thread *t, uint64_t dr7)
{
	for (int i = 0; i < 4; i++) {
		uint32_t type;
		uint64_t len;
		int on = field(dr7, i, &type, &len);
		if (on < 0)
			return on;
		if (on && (t->pt.dr[i] & (len - 1)) && type != 4)
			return -EINVAL;
	}
	for (int i = 0; i < 4; i++) {
		uint32_t type;
		uint64_t len;
		close_bp(t, i);
		if (field(dr7, i, &type, &len) > 0) {
			long r = open_bp(t, i, type, len);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

long zv_pt_debugreg_set(struct zv_thread *t, int i, uint64_t v)
{
	long r = 0;
	if (i < 0 || i > 7 || i == 4 || i == 5)
		return -EIO;
	if (i < 4) {
		if (v >= TASK_SIZE)
			return -EINVAL; /* the host refuses a user breakpoint on kernel memory */
		t->pt.dr[i] = v;
		uint32_t type;
		uint64_t len;
		if (field(t->pt.dr7, i, &type, &len) > 0) {
			close_bp(t, i);
			r = open_bp(t, i, type, len);
		}
	} else if (i == 6) {
		t->pt.dr6 = v;
	} else {
		r = apply(t, v);
		if (r == 0)
			t->pt.dr7 = v;
	}
	struct zv_pt_slot *s = t->pt.slot;
	for (int k = 0; k < 4; k++)
		s->dr[k] = t->pt.dr[k];
	s->dr[6] = t->pt.dr6;
	s->dr[7] = t->pt.dr7;
	return r;
}

int zv_pt_debugreg_hit(struct zv_thread *t, const zv_siginfo *si)
{
	uint64_t data;
	memcpy(&data, si->bytes + 8, 8);   /* si_perf_data, after si_addr */
	if (si->si_code != TRAP_PERF || (data & ~3UL) != SIG_DATA_MAGIC)
		return 0;
	t->pt.dr6 = 0xffff0ff0UL | (1UL << (data & 3));
	if (t->pt.slot)
		t->pt.slot->dr[6] = t->pt.dr6;
	return 1;
}

void zv_pt_debugreg_drop(struct zv_thread *t)
{
	for (int i = 0; i < 4; i++)
		close_bp(t, i);
	t->pt.dr7 = 0;
}
