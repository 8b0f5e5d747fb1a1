/* struct termios as strace 6.1 prints it for TCGETS and the TCSETS family
 * (decode_io.c's ioctl): each mode word by name, the output delays and
 * the baud rate and character size as fields; strace leaves a trailing '|'
 * after the fields when no flag follows, and prints nothing for an empty
 * word, which is kept here. */
#include "zvisor.h"
#include "trace/decode.h"

/* the delay fields of c_oflag: mask, shift, names by value */
static const struct { uint32_t mask; int shift; const char *names[4]; } delays[] = {
	{ 0400, 8, { "NL0", "NL1" } },
	{ 03000, 9, { "CR0", "CR1", "CR2", "CR3" } },
	{ 014000, 11, { "TAB0", "TAB1", "TAB2", "XTABS" } },
	{ 020000, 13, { "BS0", "BS1" } },
	{ 040000, 14, { "VT0", "VT1" } },
	{ 0100000, 15, { "FF0", "FF1" } },
};

static const uint32_t bauds[] = { 0, 50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400,
				  0, 57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000,
				  1500000, 2000000, 2500000, 3000000, 3500000, 4000000 };

static void oflag(struct zv_tb *b, uint32_t v)
{
	for (size_t i = 0; i < sizeof delays / sizeof delays[0]; i++) {
		tb_puts(b, delays[i].names[(v & delays[i].mask) >> delays[i].shift]);
		tb_putc(b, '|');
		v &= ~delays[i].mask;
	}
	tb_flags(b, v, &zv_n_tty_oflags, "");
}

static void cflag(struct zv_tb *b, uint32_t v)
{
	uint32_t baud = v & 010017;
	tb_printf(b, "B%u|CS%u|", bauds[(baud & 017) | (baud & 010000 ? 16 : 0)], 5 + (v >> 4 & 3));
	tb_flags(b, v & ~(010017U | 060U), &zv_n_tty_cflags, "");
}

void zv_dec_termios(struct zv_tb *b, uint64_t p)
{
	struct { uint32_t iflag, oflag, cflag, lflag; } t;
	if (zv_peek(&t, p, sizeof t) < 0) {
		tb_ptr(b, p);
		return;
	}
	tb_puts(b, "{c_iflag=");
	tb_flags(b, t.iflag, &zv_n_tty_iflags, "");
	tb_puts(b, ", c_oflag=");
	oflag(b, t.oflag);
	tb_puts(b, ", c_cflag=");
	cflag(b, t.cflag);
	tb_puts(b, ", c_lflag=");
	tb_flags(b, t.lflag, &zv_n_tty_lflags, "");
	tb_puts(b, ", ...}");
}
