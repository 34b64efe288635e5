"""Crash safety of cuckoo.Store: a writer process is killed with SIGKILL at a random moment (while
writing, syncing or compacting). After reopening, every record acknowledged by a returned sync()
is there with its value, no record is corrupt, a dead compaction left nothing behind, and the store
accepts writes. A few trials run in the default suite; `-m slow` runs 50."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import cuckoo

WRITER = textwrap.dedent("""
    import sys
    import cuckoo
    path = sys.argv[1]
    s = cuckoo.Store(path)
    start = int(sys.argv[2])
    print("READY", flush=True)
    i = start
    while True:
        keys = [f"k{i}-{j}" for j in range(200)]
        s.put_many(keys, [f"v{i}-{j}-".encode() * (1 + j % 5) for j in range(200)])
        for j in range(0, 200, 7):             # temporary keys, overwritten and deleted later
            s[f"t{j}"] = f"t{i}-{j}".encode()
        if i % 3 == 0:
            s.discard_many([f"t{j}" for j in range(0, 200, 14)])
        s.sync()
        print(f"ACK {i}", flush=True)           # batch i is durable
        if i % 8 == 7:
            print("COMPACTING", flush=True)
            s.compact()
            print("COMPACTED", flush=True)
        i += 1
""")


def value_of(key: bytes) -> bytes:
    i, j = key[1:].decode().split("-")
    return f"v{i}-{j}-".encode() * (1 + int(j) % 5)


def check_store(path: str, acked: int) -> int:
    """Reopens the store as a writer; returns its size after checking it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cuckoo.RecoveryWarning)  # a torn tail is expected here
        s = cuckoo.Store(path)
    try:
        assert not os.path.exists(path + ".compact"), "a dead compaction left its file"
        # every acknowledged record is there, with its value
        for i in range(acked + 1):
            keys = [f"k{i}-{j}".encode() for j in range(200)]
            got = s.get_many(keys)
            assert got == [value_of(k) for k in keys], f"batch {i} damaged"
        # no record is corrupt: every key present has a value of its own form
        for k, v in s.items():
            if k == b"after-crash":
                assert v == b"ok"
            elif k.startswith(b"k"):
                assert v == value_of(k)
            else:
                assert k.startswith(b"t") and v.startswith(b"t") and v.endswith(b"-" + k[1:])
        n = len(s)
        s["after-crash"] = b"ok"
        s.sync()
    finally:
        s.close()
    s = cuckoo.Store(path, readonly=True)
    assert s["after-crash"] == b"ok"
    s.close()
    return n


def kill_trial(path: str, rng: random.Random, first_batch: int, during_compaction: bool):
    """Starts a writer, kills it at a random moment; returns the last acknowledged batch and
    whether the kill came during a compaction. As the store grows over the trials, compactions
    (which copy every live record) take most of a writer's time, so a kill after a random delay
    alone lands in one nearly every time: after the delay, the trial waits for the writer to
    start the kind of step asked for (`during_compaction`: a compaction; else a batch that no
    compaction follows) and kills it up to 3 ms into it."""
    proc = subprocess.Popen([sys.executable, "-c", WRITER, path, str(first_batch)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        time.sleep(rng.uniform(0.0, 0.3))
        seen = []  # the lines read before the kill
        while True:
            line = proc.stdout.readline()
            if not line:
                break  # the writer died by itself: communicate() below reports it
            line = line.strip()
            seen.append(line)
            if during_compaction and line == "COMPACTING":
                break
            if not during_compaction and line.startswith("ACK") and int(line.split()[1]) % 8 < 6:
                break  # the next batch is being written, and no compaction comes after it
        time.sleep(rng.uniform(0.0, 0.003))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, err
    lines = seen + out.splitlines()
    acks = [int(line.split()[1]) for line in lines if line.startswith("ACK")]
    return (acks[-1] if acks else first_batch - 1), bool(lines) and lines[-1] == "COMPACTING"


def run_trials(tmp_path, trials: int, seed: int) -> int:
    """Returns how many writers died during a compaction."""
    rng = random.Random(seed)
    path = str(tmp_path / "crash.ckv")
    acked = -1
    in_compaction = 0
    for trial in range(trials):
        # each writer continues where the acknowledged batches end (earlier unacknowledged
        # batches may be partly there; they are rewritten, which is an overwrite)
        last, compacting = kill_trial(path, rng, acked + 1, during_compaction=trial % 2 == 1)
        acked = max(acked, last)
        in_compaction += compacting
        check_store(path, acked)
    assert acked >= 1, "the writers never acknowledged a batch: the trials tested nothing"
    return in_compaction


def test_sigkill_during_writes_and_compaction(tmp_path):
    run_trials(tmp_path, trials=4, seed=1)


@pytest.mark.slow
def test_sigkill_fifty_trials(tmp_path):
    in_compaction = run_trials(tmp_path, trials=50, seed=2)
    print(f"50 writers killed, {in_compaction} of them during a compaction")
    assert 1 <= in_compaction < 50  # both moments were tried
