"""The Python guest of the checkpoint tests (tests/test_checkpoint.py):
state in dicts, a generator suspended between values, and an open file
read half way. Each step takes the generator's next value and the file's
next line, folds them into the dicts and prints one line that depends only
on the step, so the output is the same however the run is cut.

    python3 cr_python.py [STEPS [MS]]   default 50 steps of 40 ms; exits 6
"""
import os
import sys
import time


def mixer(seed):
    """A generator with state of its own between values."""
    a, b = seed, 1
    while True:
        a, b = b, (a * 31 + b * 17 + 7) % 1000003
        yield a ^ (b & 0xFFFF)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    ms = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    data = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cr_python_data.txt"))
    while data.readline().startswith("#"):  # the header, and the first data line
        pass
    gen = mixer(12345)
    by_key = {}
    counts = {"even": 0, "odd": 0}
    for step in range(1, steps + 1):
        line = data.readline().split()
        value = next(gen)
        key = line[1][:2] if line else "eof"
        by_key[key] = (by_key.get(key, 0) * 7 + value) % 1000003
        counts["even" if value % 2 == 0 else "odd"] += 1
        print("step %d line %s value %d keys %d even %d odd %d check %d" % (
            step, line[0] if line else "-", value, len(by_key), counts["even"], counts["odd"],
            sum(by_key.values()) % 1000003), flush=True)
        time.sleep(ms / 1000)
    print("file at offset %d, next line %r" % (data.tell(), data.readline().strip()), flush=True)
    sys.exit(6)


if __name__ == "__main__":
    main()
