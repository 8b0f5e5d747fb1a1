/* zvisor's command line (cmdline.c). */
#ifndef ZV_CMDLINE_H
#define ZV_CMDLINE_H
/* zvisor COMMAND ...: answers help, --version and check-elf and exits; for
 * run and trace returns whether it is trace. */
int zv_cmdline_command(int argc, char **argv);
/* The options of run or trace (argv after the command), into zv_proc;
 * *count is set by -c. Returns the index of the program in argv. */
int zv_cmdline_options(int argc, char **argv, int trace, int *count);
#endif
