#!/bin/sh
# Build PRoot from its source for the rootfs benchmark (bench/rootfs.py), the
# way its own CI does (make -C src proot), and install the binary into
# $PROOT_ROOT/bin/proot (default /opt/proot). Its seccomp acceleration is
# compiled in and on at run time (PROOT_NO_SECCOMP unset), as users run it.
#
#   PROOT_SRC=SOURCE scripts/build-proot.sh
#
# SOURCE: a PRoot source tree (has src/GNUmakefile), or a bare git directory
# (its HEAD is exported); required. Its build dependencies (libtalloc-dev,
# uthash-dev, make, gcc, pkg-config) come from apt when missing (as root).
# Idempotent: when $PROOT_ROOT holds a build of the same source, it says so
# and stops. Exit 0 when installed; 2 when PROOT_SRC is not set.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROOT_ROOT=${PROOT_ROOT:-/opt/proot}
SRC_ARG=${PROOT_SRC:-}
BUILD=$ROOT/build/proot-src
STAMP=$PROOT_ROOT/.zvisor-proot-source

say() { echo "build-proot: $*"; }

if [ -z "$SRC_ARG" ]; then
	say "PROOT_SRC is not set: set it to a PRoot source tree or bare git directory (git clone https://github.com/proot-me/proot)" >&2
	exit 2
fi

# 1. Which source, and is it already installed?
VERSION=
if [ -f "$SRC_ARG/src/GNUmakefile" ]; then
	ID="tree $(cd "$SRC_ARG" && pwd)"
	if [ -d "$SRC_ARG/.git" ]; then
		ID="$ID $(git -C "$SRC_ARG" rev-parse HEAD 2>/dev/null || true)"
		VERSION=$(git -C "$SRC_ARG" describe --tags 2>/dev/null || true)
	fi
elif git --git-dir="$SRC_ARG" rev-parse HEAD >/dev/null 2>&1; then
	ID="git $(git --git-dir="$SRC_ARG" rev-parse HEAD)"
	VERSION=$(git --git-dir="$SRC_ARG" describe --tags 2>/dev/null || true)
else
	say "$SRC_ARG is neither a PRoot source tree nor a git directory" >&2
	exit 1
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$ID" ] && [ -x "$PROOT_ROOT/bin/proot" ]; then
	say "already installed: $PROOT_ROOT/bin/proot ($ID)"
	exit 0
fi

# 2. Build dependencies: talloc, uthash (a git submodule upstream; Debian's
# header instead), and the tools.
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need=
for p in libtalloc-dev uthash-dev pkg-config make gcc; do
	have_pkg "$p" || need="$need $p"
done
if [ -n "$need" ]; then
	if [ "$(id -u)" != 0 ]; then
		say "missing build dependencies:$need (run as root or install them)" >&2
		exit 1
	fi
	say "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $need </dev/null >/dev/null 2>&1 ||
		{ apt-get update -qq </dev/null >/dev/null && apt-get install -y -qq --no-install-recommends $need </dev/null >/dev/null; }
fi

# 3. A fresh copy of the source to build in.
say "source: $ID"
rm -rf "$BUILD" && mkdir -p "$BUILD"
if [ -f "$SRC_ARG/src/GNUmakefile" ]; then
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
# No Python extension (it needs swig) and no CARE (libarchive): PRoot alone.
# The version is the source's (git describe), not that of a repository the
# build directory happens to lie in.
step "make -C src proot" make -C "$BUILD/src" -j"$(nproc)" proot HAS_SWIG= HAS_PYTHON_CONFIG= \
	VERSION="${VERSION:-unknown}"
mkdir -p "$PROOT_ROOT/bin"
install -m 755 "$BUILD/src/proot" "$PROOT_ROOT/bin/proot"
echo "$ID" >"$STAMP"
say "installed: $PROOT_ROOT/bin/proot (${VERSION:-unknown version}; $("$PROOT_ROOT/bin/proot" --version 2>/dev/null | grep accelerators))"
