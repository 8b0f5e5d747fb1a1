/* Decoders for the signal calls (decode.h): actions, masks, alternate
 * stacks, waits, queued signals and sigreturn. The "--- SIG" lines are
 * decode_signal.c's. */
#include "zvisor.h"
#include "arch/context.h"
#include "trace/decode.h"
#include <stddef.h>

void zv_dec_rt_sigaction(struct zv_tb *b, const struct zv_tcall *c)
{
	struct { uint64_t handler, flags, restorer, mask; } act;
	tb_signame(b, (int)c->a[0]);
	for (int i = 1; i <= 2; i++) {
		uint64_t p = (uint64_t)c->a[i];
		SEP(b);
		if (!p) {
			tb_puts(b, "NULL");
			continue;
		}
		if ((i == 2 && !OK(c)) || zv_peek(&act, p, sizeof act) < 0) {
			tb_ptr(b, p);
			continue;
		}
		tb_puts(b, "{sa_handler=");
		if (act.handler == 0)
			tb_puts(b, "SIG_DFL");
		else if (act.handler == 1)
			tb_puts(b, "SIG_IGN");
		else
			tb_printf(b, "%p", (void *)act.handler);
		tb_puts(b, ", sa_mask=");
		tb_sigset(b, p + 24, 8);
		tb_puts(b, ", sa_flags=");
		tb_flags(b, act.flags, &zv_n_sa_flags, "0");
		if (act.flags & 0x04000000 /* SA_RESTORER */)
			tb_printf(b, ", sa_restorer=%p", (void *)act.restorer);
		tb_putc(b, '}');
	}
	tb_printf(b, ", %lu", (unsigned long)c->a[3]);
}

void zv_dec_rt_sigsuspend(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_sigset(b, (uint64_t)c->a[0], (uint64_t)c->a[1]);
	tb_printf(b, ", %lu", (unsigned long)c->a[1]);
}

static void stack_t_at(struct zv_tb *b, uint64_t p)
{
	struct { uint64_t sp; int32_t flags, pad; uint64_t size; } s;
	if (!p || zv_peek(&s, p, sizeof s) < 0) {
		tb_ptr(b, p);
		return;
	}
	tb_puts(b, "{ss_sp=");
	tb_ptr(b, s.sp);
	tb_puts(b, ", ss_flags=");
	tb_flags(b, (uint32_t)s.flags, &zv_n_ss_flags, "0");
	tb_printf(b, ", ss_size=%lu}", s.size);
}

void zv_dec_sigaltstack(struct zv_tb *b, const struct zv_tcall *c)
{
	stack_t_at(b, (uint64_t)c->a[0]);
	SEP(b);
	if (OK(c))
		stack_t_at(b, (uint64_t)c->a[1]);
	else
		tb_ptr(b, (uint64_t)c->a[1]);
}

/* The mask being restored: the frame's ucontext is at the stack pointer of
 * the call (the handler's 'ret' popped the return address). */
void zv_dec_rt_sigreturn(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_puts(b, "{mask=");
	tb_sigset(b, c->sp + offsetof(struct zv_ucontext, uc_sigmask), 8);
	tb_putc(b, '}');
}

void zv_dec_rt_sigtimedwait(struct zv_tb *b, const struct zv_tcall *c)
{
	char info[128];
	tb_sigset(b, (uint64_t)c->a[0], (uint64_t)c->a[3]);
	SEP(b);
	if (c->a[1] && OK(c) && c->ret > 0 && zv_peek(info, (uint64_t)c->a[1], sizeof info) == 0)
		zv_decode_siginfo(b, info);
	else
		tb_ptr(b, (uint64_t)c->a[1]);
	SEP(b);
	tb_timespec(b, (uint64_t)c->a[2]);
	tb_printf(b, ", %lu", (unsigned long)c->a[3]);
}

/* a signal number returned (rt_sigtimedwait): 10 (SIGUSR1) */
void zv_dec_signal_ret(struct zv_tb *b, const struct zv_tcall *c)
{
	tb_printf(b, "%ld (", c->ret);
	tb_signame(b, (int)c->ret);
	tb_putc(b, ')');
}

void zv_dec_rt_sigpending(struct zv_tb *b, const struct zv_tcall *c)
{
	if (OK(c))
		tb_sigset(b, (uint64_t)c->a[0], (uint64_t)c->a[1]);
	else
		tb_ptr(b, (uint64_t)c->a[0]);
	tb_printf(b, ", %lu", (unsigned long)c->a[1]);
}

/* rt_sigqueueinfo(pid, sig, info) */
void zv_dec_rt_sigqueueinfo(struct zv_tb *b, const struct zv_tcall *c)
{
	char info[128];
	tb_printf(b, "%d, ", (int)c->a[0]);
	tb_signame(b, (int)c->a[1]);
	SEP(b);
	if (c->a[2] && zv_peek(info, (uint64_t)c->a[2], sizeof info) == 0)
		zv_decode_siginfo(b, info);
	else
		tb_ptr(b, (uint64_t)c->a[2]);
}
