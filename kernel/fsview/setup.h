/* The view's options and its making at start (options.c, setup.c): what
 * cmdline.c and main.c call. */
#ifndef ZV_FSVIEW_SETUP_H
#define ZV_FSVIEW_SETUP_H

enum { FSV_PRESET_NONE, FSV_PRESET_HOST, FSV_PRESET_BUILD };

struct fsv_opts {
	int any;              /* some view option was given */
	const char *root;     /* --root (NULL: the host's /) */
	const char *cwd;      /* --cwd */
	int cwd_soft;         /* zvisor proot: a --cwd the view lacks is / (2: without a word), as PRoot's */
	int no_default;       /* --no-default-binds */
	int preset;           /* --bind-preset */
	int nbinds;
	const char *binds[32]; /* --bind HOST[:GUEST], in order */
};
extern struct fsv_opts fsv_opts;

/* One of run's and trace's view options at argv[0]: the words it took, or
 * 0 if it is none of them. A bad value is one line on stderr, status 2. */
int zv_fsv_option(int argc, char **argv);
/* Makes the view the options ask for (before the program is looked up:
 * PATH is the guest's, in the view). envp: zvisor's environment ($HOME for
 * the presets). A root or bind that cannot be opened is one line, status 2. */
void zv_fsv_start(char **envp);
/* Whether a view is set. */
int zv_fsv_on(void);
#endif
