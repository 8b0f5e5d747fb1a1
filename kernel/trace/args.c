/* zvisor trace's arguments: a call's argument list as strace prints it,
 * from its row's decoder, its signature letters, or in hex. */
#include "zvisor.h"
#include "trace/trace.h"
#include "trace/decode.h"
#include "trace/output.h"
#include "lib/string.h"

void zv_dec_arg(struct zv_tb *b, const struct zv_tcall *c, int i, char kind)
{
	long v = c->a[i];
	int ok = c->ret >= 0 || c->ret <= -4096;
	if (zv_proc.trace.raw && kind != 's' && kind != 'S' && kind != 'b' && kind != 'w')
		kind = 'x';
	switch (kind) {
	case 'd': tb_dec(b, (int)v); break;
	case 'D': tb_dec(b, v); break;
	case 'u': tb_udec(b, (unsigned)v); break;
	case 'U': tb_udec(b, (unsigned long)v); break;
	case 'p': tb_ptr(b, (uint64_t)v); break;
	case 'X':
		if (v)
			tb_hex(b, (unsigned long)v);
		else
			tb_putc(b, '0');
		break;
	case 'f': tb_fd(b, v); break;
	case 'a': tb_atfd(b, v); break;
	case 's': tb_path(b, (uint64_t)v); break;
	case 'S': tb_str(b, (uint64_t)v); break;
	case 'm': tb_mode(b, (uint64_t)(unsigned)v); break; /* strace shows the file type bits too */
	case 'b':
		if (ok && c->exiting)
			tb_buf(b, (uint64_t)v, c->ret);
		else
			tb_ptr(b, (uint64_t)v);
		break;
	case 'w': tb_buf(b, (uint64_t)v, i + 1 < 6 ? c->a[i + 1] : 0); break;
	case 'c': tb_enum(b, (uint64_t)(uint32_t)v, &zv_n_clocks, "0x%lx /* CLOCK_??? */"); break;
	case 'P': tb_flags(b, (uint64_t)v, &zv_n_prot, "PROT_NONE"); break;
	case 'F':
		tb_enum(b, (uint64_t)v & 3, &zv_n_map_type, "0x%lx");
		if (v & ~3L) {
			tb_putc(b, '|');
			tb_flags(b, (uint64_t)v & ~3UL, &zv_n_map_flags, "0");
		}
		break;
	case 'A': tb_flags(b, (uint64_t)v, &zv_n_at_flags, "0"); break;
	case 'k': tb_flags(b, (uint64_t)v, &zv_n_access_modes, "F_OK"); break;
	case 'h': tb_enum(b, (uint64_t)v, &zv_n_sigprocmask_how, "0x%lx"); break;
	case 'g': tb_sigset(b, (uint64_t)v, (uint64_t)c->a[3]); break;
	case 't': tb_timespec(b, (uint64_t)v); break;
	case 'T':
		if (ok)
			tb_timespec(b, (uint64_t)v);
		else
			tb_ptr(b, (uint64_t)v);
		break;
	case 'e': tb_signame(b, (int)v); break;
	case 'o': {
		static const char *const acc[] = { "O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE" };
		tb_puts(b, acc[v & 3]);
		if (v & ~3L) {
			tb_putc(b, '|');
			tb_flags(b, (uint64_t)v & ~3UL, &zv_n_open_flags, "0");
		}
		break;
	}
	default: tb_hex(b, (unsigned long)v); break;
	}
}

void zv_trace_args(struct zv_tb *b, const struct zv_tcall *c)
{
	const struct zv_sysdesc *d = &zv_row(c->nr)->trace;
	if (d->decode && !zv_proc.trace.raw) {
		zv_decoders[d->decode](b, c);
		return;
	}
	if (d->sig) {
		zv_dec_args(b, c, d->sig);
		if (d->flags) {
			size_t n = zv_strlen(d->sig);
			if (n)
				tb_puts(b, ", ");
			if (zv_proc.trace.raw)
				zv_dec_arg(b, c, (int)n, 'x');
			else
				tb_flags(b, (uint64_t)(uint32_t)c->a[n], zv_flag_tables[d->flags], "0");
		}
		return;
	}
	for (int i = 0; i < d->nargs && i < 6; i++) {
		if (i)
			tb_puts(b, ", ");
		zv_dec_arg(b, c, i, 'x');
	}
}

void zv_dec_args(struct zv_tb *b, const struct zv_tcall *c, const char *sig)
{
	for (int i = 0; sig[i] && i < 6; i++) {
		if (i)
			tb_puts(b, ", ");
		zv_dec_arg(b, c, i, sig[i]);
	}
}

