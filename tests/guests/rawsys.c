/* Raw syscall numbers the dispatcher must treat as the host does (DESIGN
 * 5.8): numbers past the table give -ENOSYS (never a jump into the kernel),
 * only the low 32 bits of rax select the call, x32 numbers, and the legacy
 * int $0x80 entry from 64-bit code; and the legacy vsyscall page, which the
 * host emulates (old static binaries call it) if it is mapped at all. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long raw(unsigned long nr)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(0), "S"(0), "d"(0)
			 : "rcx", "r11", "memory");
	return r;
}

static long int80(unsigned long nr)
{
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(0), "c"(0), "d"(0)
			 : "r8", "r9", "r10", "r11", "memory");
	return r;
}

/* Print a result, naming our own pid instead of its value. */
static void show(const char *what, long r, long pid)
{
	if (r == pid)
		printf("%s: pid\n", what);
	else
		printf("%s: %ld\n", what, r);
}

int main(void)
{
	long pid = raw(39);
	show("getpid (39)", raw(39), pid);
	show("nr 400 (unassigned)", raw(400), pid);
	show("nr 512 (x32 range)", raw(512), pid);
	show("nr 1000", raw(1000), pid);
	show("nr 4096", raw(4096), pid);
	show("nr 0x7fffffff", raw(0x7fffffff), pid);
	show("nr -1", raw(~0UL), pid);
	show("nr 0x100000027 (high bits + getpid)", raw(0x100000027UL), pid);
	show("nr 0x40000027 (x32 getpid)", raw(0x40000027UL), pid);
	show("int $0x80 eax=20 (i386 getpid)", int80(20), pid);
	show("int $0x80 eax=5000", int80(5000), pid);

	FILE *maps = fopen("/proc/self/maps", "r");
	char line[256];
	int vsyscall = 0;
	while (maps && fgets(line, sizeof(line), maps))
		if (strstr(line, "[vsyscall]"))
			vsyscall = 1;
	if (maps)
		fclose(maps);
	if (vsyscall) {
		struct timeval tv = { 0, 0 };
		long (*vgettimeofday)(struct timeval *, void *) = (void *)0xffffffffff600000UL;
		long r = vgettimeofday(&tv, NULL);
		long now = time(NULL);
		printf("vsyscall gettimeofday: %ld, close to time() %d\n", r,
		       tv.tv_sec >= now - 5 && tv.tv_sec <= now + 5);
	} else {
		printf("vsyscall page: not mapped\n");
	}
	return 0;
}
