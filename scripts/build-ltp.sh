#!/bin/sh
# Build the part of LTP that `suites/run.py --suite ltp` runs (runtest/syscalls)
# from its source, and install it into $LTP_ROOT (default /opt/ltp).
#
#   LTP_SRC=SOURCE scripts/build-ltp.sh
#
# SOURCE: an LTP source tree (has configure.ac), or a bare git directory
# (its HEAD is exported); required. Only lib/, libs/, testcases/lib (the
# shell tests' helpers) and testcases/kernel/syscalls are built, not the
# whole tree. As root the build tools are installed with apt-get if
# missing. Idempotent: when $LTP_ROOT holds an install of the same source,
# it says so and stops.
# Exit 0 when installed; 2 when LTP_SRC is not set.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LTP_ROOT=${LTP_ROOT:-/opt/ltp}
SRC_ARG=${LTP_SRC:-}
BUILD=$ROOT/build/ltp-src
STAMP=$LTP_ROOT/.zvisor-ltp-source

say() { echo "build-ltp: $*"; }

if [ -z "$SRC_ARG" ]; then
	say "LTP_SRC is not set: set it to an LTP source tree or bare git directory (git clone https://github.com/linux-test-project/ltp)" >&2
	exit 2
fi

# 1. Which source, and is it already installed?
if [ -f "$SRC_ARG/configure.ac" ]; then
	ID="tree $(cd "$SRC_ARG" && pwd)"
	[ -d "$SRC_ARG/.git" ] && ID="$ID $(git -C "$SRC_ARG" rev-parse HEAD 2>/dev/null || true)"
elif git --git-dir="$SRC_ARG" rev-parse HEAD >/dev/null 2>&1; then
	ID="git $(git --git-dir="$SRC_ARG" rev-parse HEAD)"
else
	say "$SRC_ARG is neither an LTP source tree nor a git directory" >&2
	exit 1
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$ID" ] && [ -f "$LTP_ROOT/runtest/syscalls" ]; then
	say "already installed in $LTP_ROOT ($ID)"
	exit 0
fi

# 2. Build tools.
need=
for t in autoconf:autoconf automake:automake m4:m4 pkg-config:pkg-config make:make gcc:gcc; do
	command -v "${t%%:*}" >/dev/null 2>&1 || need="$need ${t#*:}"
done
if [ -n "$need" ]; then
	if [ "$(id -u)" != 0 ]; then
		say "missing build tools:$need (run as root or install them)" >&2
		exit 1
	fi
	say "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -qq $need </dev/null >/dev/null 2>&1 ||
		{ apt-get update -qq </dev/null >/dev/null && apt-get install -y -qq $need </dev/null >/dev/null; }
fi

# 3. A fresh copy of the source to build in.
say "source: $ID"
rm -rf "$BUILD" && mkdir -p "$BUILD"
if [ -f "$SRC_ARG/configure.ac" ]; then
	(cd "$SRC_ARG" && tar -c --exclude=.git .) | tar -x -C "$BUILD"
else
	git --git-dir="$SRC_ARG" archive HEAD | tar -x -C "$BUILD"
fi

LOG=$BUILD/build.log
step() {
	what=$1; shift
	say "$what"
	"$@" >>"$LOG" 2>&1 || { tail -30 "$LOG" >&2; say "failed: $what (full log: $LOG)" >&2; exit 1; }
}
JOBS=$(nproc)
step "make autotools" make -C "$BUILD" autotools
step "configure --prefix=$LTP_ROOT" sh -c "cd '$BUILD' && ./configure --prefix='$LTP_ROOT'"
# 4. Only what runtest/syscalls needs: the test library, the helper
# libraries some syscalls tests link (libs/), the shell helpers
# (testcases/lib) and the syscalls tests themselves.
step "build lib and libs" make -C "$BUILD" -j"$JOBS" lib-all libs-all
step "build testcases/lib" make -C "$BUILD/testcases/lib" -j"$JOBS"
step "build testcases/kernel/syscalls (the long step)" make -C "$BUILD/testcases/kernel/syscalls" -j"$JOBS"
mkdir -p "$LTP_ROOT/runtest"
step "install into $LTP_ROOT" make -C "$BUILD/testcases/lib" install
step "install the syscalls tests" make -C "$BUILD/testcases/kernel/syscalls" install
cp "$BUILD/runtest/syscalls" "$LTP_ROOT/runtest/syscalls"
echo "$ID" >"$STAMP"
say "installed: $(ls "$LTP_ROOT/testcases/bin" | wc -l) programs in $LTP_ROOT/testcases/bin," \
	"$(grep -cv '^\s*\(#\|$\)' "$LTP_ROOT/runtest/syscalls") entries in runtest/syscalls"
