/* zvisor's command line (cmdline.c). */
#ifndef ZV_CMDLINE_H
#define ZV_CMDLINE_H
/* zvisor COMMAND ...: answers help, --version and check-elf and exits; for
 * run and trace returns whether it is trace; proot's argv becomes that of
 * the zvisor run it stands for (*argcp, *argvp replaced). */
int zv_cmdline_command(int *argcp, char ***argvp);
/* zvisor proot ARGS (argv whole, from "zvisor"): the equivalent argv of
 * zvisor run into *out; returns its argc (prootcli.c). */
int zv_proot_argv(int argc, char **argv, char ***out);
/* --kill-on-exit (killexit.c): wanted, and the mark made at start. */
extern int zv_killexit_wanted;
int zv_killexit_start(void);
/* The options of run or trace (argv after the command), into zv_proc;
 * *count is set by -c. Returns the index of the program in argv. */
int zv_cmdline_options(int argc, char **argv, int trace, int *count);
#endif
