/* Decoders for process calls beyond the basic ones (decode.h):
 * clone3, prctl, CPU affinity, ids, capabilities, scheduling. */
#include "zvisor.h"
#include "trace/decode.h"
#include "lib/string.h"

static void hex0(struct zv_tb *b, uint64_t v)
{
	if (v)
		tb_printf(b, "0x%lx", v);
	else
		tb_putc(b, '0');
}

/* clone3(args, size): the fields strace shows depend on the flags; on
 * return, the ids the kernel wrote: " => {parent_tid=[N]}" */
void zv_dec_clone3(struct zv_tb *b, const struct zv_tcall *c)
{
	struct { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } a;
	if ((unsigned long)c->a[1] < 64 /* CLONE_ARGS_SIZE_VER0 */ || zv_peek(&a, (uint64_t)c->a[0], sizeof a) < 0) {
		tb_ptr(b, (uint64_t)c->a[0]);
		tb_printf(b, ", %lu", (unsigned long)c->a[1]);
		return;
	}
	tb_puts(b, "{flags=");
	uint64_t known = 0;
	for (size_t i = 0; i < zv_n_clone_flags.n; i++)
		known |= zv_n_clone_flags.v[i].value;
	if (a.flags && !(a.flags & known)) /* no flag strace knows: the number */
		tb_printf(b, "0x%lx /* CLONE_??? */", a.flags);
	else
		tb_flags(b, a.flags, &zv_n_clone_flags, "0");
	if (a.flags & 0x1000 /* CLONE_PIDFD */) {
		tb_puts(b, ", pidfd=");
		tb_ptr(b, a.pidfd);
	}
	if (a.flags & (0x01000000 | 0x00200000)) { /* CHILD_SETTID, CHILD_CLEARTID */
		tb_puts(b, ", child_tid=");
		tb_ptr(b, a.child_tid);
	}
	if (a.flags & 0x00100000) { /* PARENT_SETTID */
		tb_puts(b, ", parent_tid=");
		tb_ptr(b, a.parent_tid);
	}
	tb_puts(b, ", exit_signal=");
	if (a.exit_signal)
		tb_signame(b, (int)a.exit_signal);
	else
		tb_putc(b, '0');
	tb_puts(b, ", stack=");
	tb_ptr(b, a.stack);
	tb_puts(b, ", stack_size=");
	hex0(b, a.stack_size);
	if (a.flags & 0x00080000) { /* SETTLS */
		tb_puts(b, ", tls=");
		tb_ptr(b, a.tls);
	}
	uint8_t tail[64];
	unsigned long size = (unsigned long)c->a[1], more = size > 88 ? size - 88 : 0; /* past clone_args v2 */
	if (more && zv_peek(tail, (uint64_t)c->a[0] + 88, more < sizeof tail ? more : sizeof tail) < 0)
		tb_puts(b, ", ???"); /* a tail strace cannot read */
	tb_putc(b, '}');
	int32_t v;
	if (OK(c) && c->ret > 0 && (a.flags & (0x1000 | 0x00100000))) {
		tb_puts(b, " => {");
		if ((a.flags & 0x1000) && zv_peek(&v, a.pidfd, 4) == 0)
			tb_printf(b, "pidfd=[%d]%s", v, a.flags & 0x00100000 ? ", " : "");
		if ((a.flags & 0x00100000) && zv_peek(&v, a.parent_tid, 4) == 0)
			tb_printf(b, "parent_tid=[%d]", v);
		tb_putc(b, '}');
	}
	tb_printf(b, ", %lu", (unsigned long)c->a[1]);
}

/* prctl(option, ...): each option shows only the arguments it uses */
void zv_dec_prctl(struct zv_tb *b, const struct zv_tcall *c)
{
	long op = c->a[0];
	int32_t v;
	tb_enum(b, (uint64_t)op, &zv_n_prctl, "0x%lx /* PR_??? */");
	switch (op) {
	case 3: case 7: case 13: case 21: case 25: case 27: case 30: case 42: /* GET_ without arguments */
		return;
	case 15: /* PR_SET_NAME */
		SEP(b);
		tb_str(b, (uint64_t)c->a[1]);
		return;
	case 16: /* PR_GET_NAME */
		SEP(b);
		if (OK(c))
			tb_str(b, (uint64_t)c->a[1]);
		else
			tb_ptr(b, (uint64_t)c->a[1]);
		return;
	case 1: /* PR_SET_PDEATHSIG */
		SEP(b);
		tb_signame(b, (int)c->a[1]);
		return;
	case 2: case 37: /* PR_GET_PDEATHSIG, PR_GET_CHILD_SUBREAPER: an int written */
		SEP(b);
		if (OK(c) && zv_peek(&v, (uint64_t)c->a[1], 4) == 0) {
			tb_putc(b, '[');
			if (op == 2)
				tb_signame(b, v);
			else
				tb_printf(b, "%d", v);
			tb_putc(b, ']');
		} else {
			tb_ptr(b, (uint64_t)c->a[1]);
		}
		return;
	case 4: /* PR_SET_DUMPABLE */
		SEP(b);
		tb_enum(b, (uint64_t)c->a[1], &zv_n_dumpable, "0x%lx /* SUID_DUMP_??? */");
		return;
	case 23: case 24: /* PR_CAPBSET_READ, PR_CAPBSET_DROP */
		SEP(b);
		tb_enum(b, (uint64_t)c->a[1], &zv_n_caps, "%lu");
		return;
	case 8: case 29: case 36: case 41: /* SET_KEEPCAPS SET_TIMERSLACK SET_CHILD_SUBREAPER SET_THP_DISABLE */
		tb_printf(b, ", %lu", (unsigned long)c->a[1]);
		return;
	case 38: case 39: /* PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS */
		for (int i = 1; i < 5; i++)
			tb_printf(b, ", %lu", (unsigned long)c->a[i]);
		return;
	}
	for (int i = 1; i < 5; i++) {
		SEP(b);
		zv_dec_arg(b, c, i, 'x');
	}
}

void zv_dec_prctl_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%ld", c->ret);
	if (c->a[0] == 3 /* PR_GET_DUMPABLE */) {
		tb_puts(b, " (");
		tb_enum(b, (uint64_t)c->ret, &zv_n_dumpable, "0x%lx");
		tb_putc(b, ')');
	}
}

/* a CPU mask of n bytes as [0 1 5] */
static void cpu_mask(struct zv_tb *b, uint64_t p, long n)
{
	uint64_t w;
	int first = 1;
	tb_putc(b, '[');
	for (long off = 0; off + 8 <= n && off < 1024; off += 8) {
		if (zv_peek(&w, p + off, 8) < 0)
			break;
		for (int i = 0; i < 64; i++)
			if (w >> i & 1) {
				tb_printf(b, first ? "%ld" : " %ld", off * 8 + i);
				first = 0;
			}
	}
	tb_putc(b, ']');
}

void zv_dec_sched_getaffinity(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%d, %u, ", (int)c->a[0], (unsigned)c->a[1]);
	if (OK(c))
		cpu_mask(b, (uint64_t)c->a[2], c->ret);
	else
		tb_ptr(b, (uint64_t)c->a[2]);
}

void zv_dec_sched_setaffinity(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%d, %u, ", (int)c->a[0], (unsigned)c->a[1]);
	cpu_mask(b, (uint64_t)c->a[2], c->a[1]);
}

/* getresuid(&r, &e, &s), getresgid: [0], [0], [0] */
void zv_dec_getresuid(struct zv_tb *b, const struct zv_tcall *c)
{
	uint32_t v;
	for (int i = 0; i < 3; i++) {
		if (i)
			SEP(b);
		if (OK(c) && zv_peek(&v, (uint64_t)c->a[i], 4) == 0)
			tb_printf(b, "[%u]", v);
		else
			tb_ptr(b, (uint64_t)c->a[i]);
	}
}

/* getgroups(size, list): the ids the call returned; setgroups(n, list) */
void zv_dec_getgroups(struct zv_tb *b, const struct zv_tcall *c)
{
	long n = c->nr == 115 /* getgroups: the ids it wrote, none for size 0 */
			 ? (OK(c) ? (c->ret < (int)c->a[0] ? c->ret : (int)c->a[0]) : -1) : c->a[0];
	uint32_t g;
	tb_printf(b, "%d, ", (int)c->a[0]);
	if (n < 0 || !c->a[1]) {
		tb_ptr(b, (uint64_t)c->a[1]);
		return;
	}
	tb_putc(b, '[');
	for (long i = 0; i < n && i < 32; i++) {
		if (zv_peek(&g, (uint64_t)c->a[1] + 4 * i, 4) < 0)
			break;
		tb_printf(b, i ? ", %u" : "%u", g);
	}
	tb_puts(b, n > 32 ? ", ...]" : "]");
}

/* waitid(idtype, id, info, options, rusage) */
void zv_dec_waitid(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const types[] = { "P_ALL", "P_PID", "P_PGID", "P_PIDFD" };
	char info[128];
	int32_t signo;
	if ((unsigned long)c->a[0] < 4)
		tb_puts(b, types[c->a[0]]);
	else
		tb_printf(b, "%d /* P_??? */", (int)c->a[0]);
	tb_printf(b, ", %d, ", (int)c->a[1]);
	/* with WNOHANG and no child ready the kernel leaves si_signo 0: {} */
	if (OK(c) && c->a[2] && zv_peek(info, (uint64_t)c->a[2], sizeof info) == 0) {
		memcpy(&signo, info, 4);
		if (signo)
			zv_decode_siginfo(b, info);
		else
			tb_puts(b, "{}");
	} else {
		tb_ptr(b, (uint64_t)c->a[2]);
	}
	SEP(b);
	tb_flags(b, (uint64_t)(uint32_t)c->a[3], &zv_n_wait_options, "0");
	SEP(b);
	tb_ptr(b, (uint64_t)c->a[4]);
}

/* a persona: PER_LINUX|ADDR_NO_RANDOMIZE */
static void persona(struct zv_tb *b, uint64_t v)
{
	tb_enum(b, v & 0xff, &zv_n_personality, "0x%lx /* PER_??? */");
	if (v & ~0xffUL) {
		tb_putc(b, '|');
		tb_flags(b, v & ~0xffUL, &zv_n_personality_flags, "0");
	}
}

void zv_dec_personality(struct zv_tb *b, const struct zv_tcall *c)
{
	uint32_t v = (uint32_t)c->a[0];
	if (v == 0xffffffff) /* the query */
		tb_puts(b, "0xffffffff");
	else
		persona(b, v);
}

void zv_dec_personality_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%ld (", c->ret);
	persona(b, (uint64_t)c->ret);
	tb_putc(b, ')');
}

/* sched_getparam(pid, filled), sched_setparam(pid, read): [priority] */
void zv_dec_sched_getparam(struct zv_tb *b, const struct zv_tcall *c)
{
	int32_t prio;
	tb_printf(b, "%d, ", (int)c->a[0]);
	if ((c->nr == 142 /* setparam */ || OK(c)) && zv_peek(&prio, (uint64_t)c->a[1], 4) == 0)
		tb_printf(b, "[%d]", prio);
	else
		tb_ptr(b, (uint64_t)c->a[1]);
}

void zv_dec_sched_setscheduler(struct zv_tb *b, const struct zv_tcall *c)
{
	int32_t prio;
	tb_printf(b, "%d, ", (int)c->a[0]);
	tb_enum(b, (uint64_t)c->a[1], &zv_n_sched_policies, "%ld /* SCHED_??? */");
	SEP(b);
	if (zv_peek(&prio, (uint64_t)c->a[2], 4) == 0)
		tb_printf(b, "[%d]", prio);
	else
		tb_ptr(b, (uint64_t)c->a[2]);
}

/* sched_getscheduler's result: 0 (SCHED_OTHER) */
void zv_dec_policy_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%ld (", c->ret);
	tb_enum(b, (uint64_t)c->ret, &zv_n_sched_policies, "%ld");
	tb_putc(b, ')');
}

void zv_dec_getpriority(struct zv_tb *b, const struct zv_tcall *c)
{
	static const char *const which[] = { "PRIO_PROCESS", "PRIO_PGRP", "PRIO_USER" };
	if ((unsigned long)c->a[0] < 3)
		tb_puts(b, which[c->a[0]]);
	else
		tb_printf(b, "%d /* PRIO_??? */", (int)c->a[0]);
	tb_printf(b, ", %d", (int)c->a[1]);
	if (c->nr == 141 /* setpriority */)
		tb_printf(b, ", %d", (int)c->a[2]);
}

/* capability sets as strace prints them: 1<<CAP_CHOWN|1<<CAP_KILL */
static void cap_set(struct zv_tb *b, uint64_t set)
{
	if (!set) {
		tb_putc(b, '0');
		return;
	}
	for (int i = 0, first = 1; i < 64; i++)
		if (set >> i & 1) {
			tb_puts(b, first ? "1<<" : "|1<<");
			tb_enum(b, (uint64_t)i, &zv_n_caps, "%ld");
			first = 0;
		}
}

/* capget(header, data) and capset: version 1 has one 32-bit set of each */
void zv_dec_capget(struct zv_tb *b, const struct zv_tcall *c)
{
	struct { uint32_t version; int32_t pid; } h;
	uint32_t d[6];
	int get = c->nr == 125;
	if (zv_peek(&h, (uint64_t)c->a[0], sizeof h) < 0) {
		tb_ptr(b, (uint64_t)c->a[0]);
	} else {
		tb_puts(b, "{version=");
		tb_enum(b, h.version, &zv_n_cap_versions, "0x%lx /* _LINUX_CAPABILITY_VERSION_??? */");
		tb_printf(b, ", pid=%d}", h.pid);
	}
	SEP(b);
	int words = h.version == 0x19980330 ? 1 : 2;
	if (!c->a[1] || (get && !OK(c)) || zv_peek(d, (uint64_t)c->a[1], 12 * (size_t)words) < 0) {
		tb_ptr(b, (uint64_t)c->a[1]);
		return;
	}
	static const char *const names[] = { "{effective=", ", permitted=", ", inheritable=" };
	for (int k = 0; k < 3; k++) {
		tb_puts(b, names[k]);
		cap_set(b, d[k] | (words == 2 ? (uint64_t)d[3 + k] << 32 : 0));
	}
	tb_putc(b, '}');
}

/* getcpu(&cpu, &node, cache) */
void zv_dec_getcpu(struct zv_tb *b, const struct zv_tcall *c)
{
	uint32_t v;
	for (int i = 0; i < 2; i++) {
		if (OK(c) && c->a[i] && zv_peek(&v, (uint64_t)c->a[i], 4) == 0)
			tb_printf(b, "[%u], ", v);
		else {
			tb_ptr(b, (uint64_t)c->a[i]);
			SEP(b);
		}
	}
	tb_ptr(b, (uint64_t)c->a[2]);
}
