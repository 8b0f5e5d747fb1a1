"""Restore at the cost of what the program touches (kernel/cr/lazy.c,
docs/CHECKPOINT.md): a large anonymous mapping is mapped from the image
(MAP_PRIVATE of pages.bin) instead of read, and must stay the anonymous
memory it was. The guest cr_lazy checks its bytes, maps, smaps, numa_maps,
smaps_rollup, fork, MADV_DONTNEED, MADV_WIPEONFORK and mremap's growth
after each of two cuts (the second taken of the restored process, whose
memory is still partly the first image's); its output joined over the cuts
must be the native one. Also: --eager reads every page, and a version 1
image (this one made over, tests/crimage.py) still restores."""
import os
import shutil
import signal

import pytest

import crharness as cr
import crimage
import zvtest

GUEST = "cr_lazy"
MARKERS = ["ready", "ready 2"]


def native(tmp):
    return cr.staged_native_once(GUEST, MARKERS, tmp)


def mapped_from_image(pid):
    """How many of the host's mappings of process pid are an image's pages.bin."""
    with open("/proc/%d/maps" % pid) as f:
        return sum(1 for line in f if line.rstrip().endswith("/pages.bin"))


@pytest.mark.parametrize("platform", ["stubs", "sud", "seccomp"])
@pytest.mark.parametrize("gone", [False, True], ids=["image-kept", "image-removed"])
def test_lazy_restore_is_anonymous_memory(platform, gone, tmp_path):
    """Cut, restore (the heap mapped from the image), cut the restored
    process again (image-removed: after the first image was deleted, so
    its untouched pages are read through the mapping), restore: the
    output is the native run's."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native(tmp)
    seen = []

    def before_cut(n, g):
        if n == 2:
            seen.append(mapped_from_image(g.pid))
            if gone:
                shutil.rmtree(os.path.join(tmp, "image1"))

    argv = zvtest.zv_argv([zvtest.guest(GUEST)], platform)
    joined, _ = cr.staged_cuts(argv, MARKERS, tmp, as_user=cr.user(), before_cut=before_cut)
    zvtest.assert_same(nat, joined, "cr_lazy cut twice on %s" % platform)
    assert seen and seen[0] >= 1, "the first restore mapped nothing from its image: %s" % seen


def test_eager_restore(tmp_path):
    """`zvisor restore --eager` reads every page (none is mapped from the
    image) and finishes the run as natively."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    nat = native(tmp)
    seen = []

    def before_cut(n, g):
        if n == 2:
            seen.append(mapped_from_image(g.pid))

    argv = zvtest.zv_argv([zvtest.guest(GUEST)])
    joined, _ = cr.staged_cuts(argv, MARKERS, tmp, as_user=cr.user(), restore_opts=["--eager"],
                               before_cut=before_cut)
    zvtest.assert_same(nat, joined, "cr_lazy restored with --eager")
    assert seen == [0], "an --eager restore mapped its image: %s" % seen


def test_version1_image_restores(tmp_path):
    """An image in version 1's layout (this build's image made over) is
    restored as before."""
    cr.need_core()
    tmp = cr.workdir(tmp_path)
    argv = [zvtest.guest("cr_counter")]
    nat = zvtest.run_native(argv)
    g = cr.Running(zvtest.zv_argv(argv), cwd=tmp, as_user=cr.user())
    try:
        g.wait_for(lambda out: out.count("\n") >= 3)
        image = os.path.join(tmp, "image")
        cr.checkpoint(g.pid, image, as_user=cr.user())
        orig = g.finish(timeout=30)
    finally:
        g.kill()
    if os.path.exists(os.path.join(image, "pages.bin.zst")):
        pytest.skip("the image was compressed")
    crimage.to_version1(image)
    if cr.user():
        zvtest.chown_tree(image, cr.user())
    rest = cr.zv("restore", image, as_user=cr.user(), cwd=tmp)
    joined = zvtest.Result(orig.stdout + rest.stdout, orig.stderr + rest.stderr, rest.returncode)
    zvtest.assert_same(nat, joined, "a version 1 image")
