#!/bin/sh
# The Debian root filesystem that the --root tests and the rootfs benchmark
# run on, built once with mmdebstrap and kept as a tarball in a cache:
#
#   scripts/rootfs.sh [build] [FLAVOR]   build what is missing or stale (root)
#   scripts/rootfs.sh path [FLAVOR]      print the tarball's path (exit 1 if absent)
#   scripts/rootfs.sh repo               print the local package repository's path
#
# FLAVOR: base (default) is `mmdebstrap --variant=minbase bookworm`; dev adds
# gcc, make and libc6-dev (the benchmark's `make -j2` needs them). Both are
# set up for offline use: /etc/apt/sources.list names only the local
# repository,
#     deb [trusted=yes] file:/srv/zvisor-repo ./
# which the tests bind there (it is not in the tarball). Maintainer scripts
# start and stop no service: /usr/sbin/policy-rc.d says no (exit 101), as in
# container images, so that invoke-rc.d skips the action and succeeds (a
# package's prerm that stops its service, sudo's, then succeeds too).
#
# The cache: $ZV_ROOTFS_CACHE, default /var/cache/zvisor-tests:
#   bookworm-base.tar, bookworm-dev.tar   the root filesystems (owners kept,
#                                         device nodes in /dev included)
#   repo/                                 .deb files and their Packages index:
#                                         python3 with what it needs beyond
#                                         minbase, and uuid-runtime and sudo
#                                         (packages with maintainer scripts
#                                         that add a user, chown and set set-id
#                                         bits)
#   recipe                                what they were built from: a change
#                                         of this script's recipe rebuilds them
# The Debian mirror is the host's (deb.debian.org unless MIRROR is set). A
# build takes about three minutes; it runs under a lock, so parallel callers wait
# for one build. Needs root (mmdebstrap's root mode); install-deps.sh installs
# mmdebstrap.
set -eu

CACHE=${ZV_ROOTFS_CACHE:-/var/cache/zvisor-tests}
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# Packages of the local repository (with their dependencies beyond minbase).
REPO_PKGS="python3 uuid-runtime sudo"
DEV_PKGS="gcc,make,libc6-dev"
# Bump when the way the tarballs or the repository are made changes.
RECIPE="5 $SUITE minbase repo=[$REPO_PKGS] dev=[$DEV_PKGS] sources=local policy-rc.d"

say() { echo "rootfs: $*" >&2; }
die() { say "$*"; exit 1; }

cmd=build
case ${1:-} in
build | path | repo) cmd=$1; shift ;;
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
flavor=${1:-base}
case $flavor in
base | dev) ;;
*) die "unknown flavor '$flavor' (base, dev)" ;;
esac
TAR=$CACHE/$SUITE-$flavor.tar
REPO=$CACHE/repo

fresh() { [ -f "$CACHE/recipe" ] && [ "$(cat "$CACHE/recipe")" = "$RECIPE" ]; }

case $cmd in
path)
	fresh && [ -f "$TAR" ] || exit 1
	echo "$TAR"
	exit 0
	;;
repo)
	fresh && [ -f "$REPO/Packages" ] || exit 1
	echo "$REPO"
	exit 0
	;;
esac

[ "$(id -u)" = 0 ] || die "building $TAR needs root (mmdebstrap's root mode); run it as root once"
command -v mmdebstrap >/dev/null 2>&1 || die "mmdebstrap is missing: scripts/install-deps.sh installs it"
mkdir -p "$CACHE"

# One build at a time; the others wait and then find it done.
exec 9>"$CACHE/.lock"
flock 9

if ! fresh; then
	rm -rf "$CACHE/repo" "$CACHE"/$SUITE-*.tar "$CACHE/recipe"
fi

# The hooks: run as root with the new root's path as $1, before mmdebstrap
# cleans its package lists and cache.
offline='echo "deb [trusted=yes] file:/srv/zvisor-repo ./" > "$1/etc/apt/sources.list" &&
	rm -f "$1"/etc/apt/sources.list.d/*.list "$1"/etc/apt/sources.list.d/*.sources &&
	mkdir -p "$1/srv/zvisor-repo" &&
	printf "#!/bin/sh\n# no service is started or stopped in this root\nexit 101\n" > "$1/usr/sbin/policy-rc.d" &&
	chmod 755 "$1/usr/sbin/policy-rc.d"'

build_tar() { # FLAVOR OUT [mmdebstrap options...]
	f=$1 out=$2
	shift 2
	say "building $out (mmdebstrap --variant=minbase $SUITE, $f)"
	t0=$(date +%s)
	log=$CACHE/build-$f.log
	# mmdebstrap's own policy-rc.d would replace ours and go at the end
	if ! mmdebstrap --variant=minbase --mode=root --format=tar --dpkgopt=force-unsafe-io \
		--skip=chroot/policy-rc.d "$@" \
		--customize-hook="$offline" "$SUITE" "$out.tmp" "$MIRROR" >"$log" 2>&1; then
		tail -20 "$log" >&2
		rm -f "$out.tmp"
		die "mmdebstrap failed (log: $log)"
	fi
	mv "$out.tmp" "$out"
	say "built $out in $(($(date +%s) - t0)) s ($(du -m "$out" | cut -f1) MiB)"
}

# The base tarball and the repository come from one mmdebstrap run: a hook
# asks the new root's apt (which has the mirror's lists then) to download the
# repository's packages with what they need beyond minbase, and moves them out.
if [ ! -f "$CACHE/$SUITE-base.tar" ] || [ ! -f "$REPO/Packages" ]; then
	rm -rf "$REPO.tmp"
	mkdir -p "$REPO.tmp"
	build_tar base "$CACHE/$SUITE-base.tar" \
		--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
		--customize-hook="chroot \"\$1\" apt-get install -y -qq --download-only --no-install-recommends $REPO_PKGS </dev/null" \
		--customize-hook="mv \"\$1\"/var/cache/apt/archives/*.deb '$REPO.tmp/'"
	# The index that apt reads from a flat file: repository.
	for d in "$REPO.tmp"/*.deb; do
		dpkg-deb -f "$d"
		echo "Filename: ./${d##*/}"
		echo "Size: $(stat -c %s "$d")"
		echo "SHA256: $(sha256sum "$d" | cut -d' ' -f1)"
		echo
	done >"$REPO.tmp/Packages"
	rm -rf "$REPO"
	mv "$REPO.tmp" "$REPO"
	say "repository $REPO: $(ls "$REPO"/*.deb | wc -l) packages, $(du -sm "$REPO" | cut -f1) MiB"
fi
if [ "$flavor" = dev ] && [ ! -f "$TAR" ]; then
	build_tar dev "$TAR" --include="$DEV_PKGS"
fi
echo "$RECIPE" >"$CACHE/recipe"
