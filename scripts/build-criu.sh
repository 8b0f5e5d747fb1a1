#!/bin/sh
# Build a current CRIU from source for bench/checkpoint.py's comparison:
# Debian's criu 3.17.1 stops at `vdso: Failed to fill self vdso
# symtable` on these machines' kernel. Not part of `make check` or CI: it
# calls apt-get for CRIU's build dependencies (as root).
#
#   CRIU_SRC=SOURCE scripts/build-criu.sh
#
# SOURCE: a CRIU source tree (has a Makefile), or a bare git directory
# (its HEAD is exported); required. The binary lands in build/criu/criu
# (nothing is installed system-wide); the script ends with `criu check`
# and prints its verdict.
# Exit 0 when built and `criu check` passes; 2 when CRIU_SRC is not set.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/build/criu
SRC=$ROOT/build/criu-src
SRC_ARG=${CRIU_SRC:-}

say() { echo "build-criu: $*"; }

if [ -z "$SRC_ARG" ]; then
	say "CRIU_SRC is not set: set it to a CRIU source tree or bare git directory (git clone https://github.com/checkpoint-restore/criu)" >&2
	exit 2
fi

# 1. The source tree.
if [ -f "$SRC_ARG/Makefile" ]; then
	SRC=$SRC_ARG
	say "source: tree $(cd "$SRC_ARG" && pwd)"
elif git --git-dir="$SRC_ARG" rev-parse HEAD >/dev/null 2>&1; then
	rm -rf "$SRC" && mkdir -p "$SRC"
	git --git-dir="$SRC_ARG" archive HEAD | tar -x -C "$SRC"
	say "source: $SRC_ARG at $(git --git-dir="$SRC_ARG" describe --tags --always HEAD)"
else
	say "$SRC_ARG is neither a CRIU source tree nor a git directory" >&2
	exit 1
fi

# 2. Build dependencies (what CRIU's own contrib/dependencies lists, less
# the documentation, test and plugin tools).
DEPS="build-essential pkg-config python3 python3-protobuf protobuf-compiler protobuf-c-compiler
      libprotobuf-dev libprotobuf-c-dev libnl-3-dev libnl-route-3-dev libcap-dev libnet-dev
      libbsd-dev libgnutls28-dev libaio-dev uuid-dev iproute2"
missing=
for p in $DEPS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	say "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq </dev/null >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing </dev/null >/dev/null
fi

# 3. Build the criu binary only (no docs, no plugins: none of them is
# needed to dump a plain process).
make -C "$SRC" -j"$(nproc)" criu >"$SRC/build.log" 2>&1 || {
	tail -30 "$SRC/build.log" >&2
	say "make failed (full log: $SRC/build.log)"
	exit 1
}
mkdir -p "$OUT"
cp "$SRC/criu/criu" "$OUT/criu"
say "built $OUT/criu: $("$OUT/criu" --version | tr '\n' ' ')"

# 4. Does it start on this kernel?
if "$OUT/criu" check >"$OUT/check.log" 2>&1; then
	say "criu check: $(tail -1 "$OUT/check.log")"
else
	say "criu check failed: $(grep -m1 -i 'error' "$OUT/check.log" || tail -1 "$OUT/check.log")"
	exit 1
fi
