"""A multiprocessing pool across a checkpoint (tests/test_cr_tree.py): two
worker processes map a function over the first half of the work, the main
process says "ready" on stderr and waits for a file named go in the
working directory (the test cuts the tree meanwhile), then the pool does
the second half. Prints every result and the pool's end."""
import hashlib
import multiprocessing as mp
import os
import sys
import time


def work(n):
    h = hashlib.sha256(str(n).encode())
    for _ in range(2000):
        h = hashlib.sha256(h.digest())
    return n, h.hexdigest()[:12], os.getpid() != MAIN


MAIN = os.getpid()

if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(2) as pool:
        for n, digest, elsewhere in pool.map(work, range(8)):
            print("first half", n, digest, "in a worker" if elsewhere else "FAIL: in the main process", flush=True)
        print("ready", file=sys.stderr, flush=True)
        while not os.path.exists("go"):
            time.sleep(0.005)
        for n, digest, elsewhere in pool.map(work, range(8, 16)):
            print("second half", n, digest, "in a worker" if elsewhere else "FAIL: in the main process", flush=True)
    print("the pool ended", flush=True)
