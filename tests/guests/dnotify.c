/* Real-time signals that arrive together, as in LTP's fcntl38: dnotify
 * watches on a directory and on its subdirectory, with F_SETSIG to one
 * real-time signal, and a chmod of the subdirectory that sends that signal
 * once per watching fd during the one call. Real-time signals queue, so
 * each watch's handler call must arrive, with its own si_fd. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NFD 3
static int fds[NFD];
static volatile int got[NFD], other;

static void handler(int sig, siginfo_t *si, void *uc)
{
	for (int i = 0; i < NFD; i++)
		if (si->si_fd == fds[i]) {
			got[i]++;
			return;
		}
	other++;
}

static void watch(int fd)
{
	struct sigaction sa = { .sa_sigaction = handler, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN + 1, &sa, NULL);
	if (fcntl(fd, F_SETSIG, SIGRTMIN + 1) || fcntl(fd, F_NOTIFY, DN_ATTRIB | DN_MULTISHOT))
		printf("F_SETSIG/F_NOTIFY failed\n");
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char dir[] = "/tmp/zv-dnotify-XXXXXX";
	if (!mkdtemp(dir) || chdir(dir) || mkdir("sub", 0700))
		return 1;
	fds[0] = open(".", O_RDONLY);
	fds[1] = open("sub", O_RDONLY);
	fds[2] = open("sub", O_RDONLY);
	for (int i = 0; i < NFD; i++)
		watch(fds[i]);
	chmod("sub", 0755);
	printf("after one chmod: parent %d, subdir %d, subdir again %d, unknown fd %d\n", got[0], got[1], got[2],
	       other);
	chmod("sub", 0700);
	printf("after two: parent %d, subdir %d, subdir again %d, unknown fd %d\n", got[0], got[1], got[2], other);
	for (int i = 0; i < NFD; i++)
		close(fds[i]);
	rmdir("sub");
	chdir("/");
	rmdir(dir);
	return 0;
}
