#!/bin/sh
# What `make check-suites` needs beyond `make check`: stress-ng and CPython's
# test package (Debian). Go comes from scripts/install-deps.sh. LTP is built
# from its source by the user (see suites/README.md): no network here but
# the package registries.
set -e
need=""
command -v stress-ng >/dev/null 2>&1 || need="$need stress-ng"
/usr/bin/python3.11 -c 'import test.test_os' >/dev/null 2>&1 || need="$need libpython3.11-testsuite"
if [ -n "$need" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-suites: missing:$need (run as root or install them)" >&2
		exit 0
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q $need >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $need >/dev/null; }
fi

# LTP, built from its source when LTP_SRC names one: scripts/build-ltp.sh
# installs it into $LTP_ROOT (default /opt/ltp) and skips what is already
# installed.
LTP_ROOT=${LTP_ROOT:-/opt/ltp}
if [ -n "${LTP_SRC:-}" ]; then
	LTP_ROOT=$LTP_ROOT sh "$(dirname "$0")/build-ltp.sh" || echo "install-suites: LTP build failed; the ltp suite is skipped" >&2
elif [ ! -f "$LTP_ROOT/runtest/syscalls" ]; then
	echo "install-suites: no LTP source (set LTP_SRC to an LTP source tree or git directory) and no LTP in $LTP_ROOT: the ltp suite is skipped" >&2
fi
