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
