/* cr_listen.c: listening sockets for the checkpoint tests. Listens on
 * 127.0.0.1:PORT (TCP) and on the Unix socket PATH, ticks for a while (the
 * checkpoint falls there), then accepts one client on each, reads its line
 * and answers it. The test's client connects only after the restore, so
 * the sockets it reaches are the ones the restore bound again.
 *   cr_listen PORT PATH [TICKS]   default 20 ticks of 50 ms; exits 0 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int serve(int lfd, const char *name)
{
	int c = accept(lfd, NULL, NULL);
	if (c < 0) {
		printf("FAIL: accept %s\n", name);
		return 1;
	}
	char buf[128];
	ssize_t n = read(c, buf, sizeof buf - 1);
	if (n <= 0) {
		printf("FAIL: read %s\n", name);
		return 1;
	}
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	printf("%s client said '%s'\n", name, buf);
	dprintf(c, "%s server heard '%s'\n", name, buf);
	close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cr_listen PORT PATH [TICKS]\n");
		return 2;
	}
	int ticks = argc > 3 ? atoi(argv[3]) : 20;
	setvbuf(stdout, NULL, _IOLBF, 0);

	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(t, (struct sockaddr *)&in, sizeof in) != 0 || listen(t, 4) != 0) {
		perror("tcp");
		return 1;
	}
	int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	snprintf(un.sun_path, sizeof un.sun_path, "%s", argv[2]);
	unlink(argv[2]);
	if (bind(u, (struct sockaddr *)&un, sizeof un) != 0 || listen(u, 4) != 0) {
		perror("unix");
		return 1;
	}
	printf("listening on tcp and unix\n");
	for (int i = 1; i <= ticks; i++) {
		printf("tick %d\n", i);
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	printf("accepting\n");
	int bad = serve(t, "tcp") + serve(u, "unix");
	unlink(argv[2]);
	printf("served both\n");
	return bad;
}
