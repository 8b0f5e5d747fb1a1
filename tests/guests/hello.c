/* The smallest guest: stdio output, argv and a non-zero exit status prove
 * loading, the write path and exit_group work. */
#include <stdio.h>

int main(int argc, char **argv)
{
	printf("hello, world\n");
	for (int i = 1; i < argc; i++)
		printf("arg %d: %s\n", i, argv[i]);
	fflush(stdout);
	fprintf(stderr, "hello on stderr\n");
	return argc > 1 ? 3 : 0;
}
