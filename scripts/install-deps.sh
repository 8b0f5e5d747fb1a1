#!/bin/sh
# Install what `make check` needs: compilers for the test guests, the real
# programs the differential tests run, strace for the --count comparison, and
# pytest. Idempotent and non-interactive (CI runs as root without stdin): it
# only calls apt-get (with one `apt-get update`) when something is missing, and
# prints one line per thing it installs.
set -u

export DEBIAN_FRONTEND=noninteractive

SUDO=
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO="sudo -n"
	fi
fi

have() { command -v "$1" >/dev/null 2>&1; }

# dpkg_installed PKG: true when dpkg knows PKG as installed.
dpkg_installed() {
	have dpkg-query &&
		dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

updated=no
failed=0
apt_install() {
	if ! have apt-get; then
		echo "install-deps: cannot install $* (no apt-get)" >&2
		failed=1
		return 1
	fi
	if [ "$updated" = no ]; then
		$SUDO apt-get update -qq </dev/null >/dev/null 2>&1 ||
			echo "install-deps: apt-get update failed" >&2
		updated=yes
	fi
	for p in "$@"; do
		echo "install-deps: installing $p"
	done
	if ! $SUDO apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null 2>&1; then
		echo "install-deps: apt-get install $* failed" >&2
		failed=1
		return 1
	fi
}

# package:check pairs; the check is a command name, or dpkg:PKG.
missing=
for spec in gcc:gcc make:make musl-tools:musl-gcc busybox-static:dpkg:busybox-static \
	strace:strace gdb:gdb python3:python3 sqlite3:sqlite3 git:git file:file binutils:objdump; do
	pkg=${spec%%:*}
	chk=${spec#*:}
	case $chk in
	dpkg:*) dpkg_installed "${chk#dpkg:}" || missing="$missing $pkg" ;;
	*) have "$chk" || missing="$missing $pkg" ;;
	esac
done
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086
	apt_install $missing
fi

# pytest for the python3 that `make check` runs.
if ! python3 -c 'import pytest' >/dev/null 2>&1; then
	apt_install python3-pytest
	if ! python3 -c 'import pytest' >/dev/null 2>&1; then
		echo "install-deps: installing pytest (pip)"
		python3 -m pip install -q pytest </dev/null >/dev/null 2>&1 ||
			python3 -m pip install -q --break-system-packages pytest </dev/null >/dev/null 2>&1 ||
			{ echo "install-deps: pip install pytest failed" >&2; failed=1; }
	fi
fi

# pytest-xdist runs the tests on every core (make check's -n). Optional:
# without it they run in one process, so a failure here is not fatal.
if ! python3 -c 'import xdist' >/dev/null 2>&1; then
	have apt-get && ! dpkg_installed python3-pytest-xdist &&
		$SUDO apt-get install -y -qq --no-install-recommends python3-pytest-xdist </dev/null >/dev/null 2>&1
	if ! python3 -c 'import xdist' >/dev/null 2>&1; then
		echo "install-deps: installing pytest-xdist (pip)"
		python3 -m pip install -q pytest-xdist </dev/null >/dev/null 2>&1 ||
			python3 -m pip install -q --break-system-packages pytest-xdist </dev/null >/dev/null 2>&1 ||
			echo "install-deps: pytest-xdist not installed: the tests run in one process" >&2
	fi
fi

# Go: any go on PATH or the upstream tarball's location will do.
if ! have go && [ ! -x /usr/local/go/bin/go ]; then
	apt_install golang-go
fi

# The host's guard stays as it is: vm.mmap_min_addr is never lowered. The
# default platform (stubs) needs no page 0; the opt-in zpoline platform maps
# it with CAP_SYS_RAWIO, which the tests have as root, and falls back to
# stubs otherwise.

exit $failed
