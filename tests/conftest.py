"""Shared configuration of the cuckoo test suite.

The tests import the *installed* package (``pip install .[test]``), never the source tree.

Hypothesis profiles (select with ``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE=NAME``):

* ``cuckoo`` (default): no deadline (the machines running this suite are small and shared, and
  a slow example is not a failure), example counts bounded so that the property tests stay well
  under a minute.
* ``cuckoo-thorough``: ten times as many examples, for a long run before a release.

Kernel levels: a test marked ``@pytest.mark.every_cpu_level`` runs once per level this CPU has
(``cuckoo.cpu_levels()``: portable, avx2, avx512), its id ending in the level; the other tests run
at the default level (``CUCKOO_CPU`` or the best one). The property tests of bulk == scalar carry
the mark, so that each level's kernels are checked on whichever machine runs the suite.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import cuckoo

# A suite started as a background job of a non-interactive shell (`cmd &`, nohup) inherits
# SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the tests of Ctrl-C
# (in this process and in the CLI processes it starts, which inherit the ignore) would see no
# signal. Restore Python's default so that they test the code, not how pytest was launched.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile(
    "cuckoo",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "cuckoo-thorough",
    parent=settings.get_profile("cuckoo"),
    max_examples=1000,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "cuckoo"))

CPU_LEVELS = cuckoo.cpu_levels()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("every_cpu_level"):
        metafunc.parametrize("_cpu_level", CPU_LEVELS, indirect=True)


@pytest.fixture(autouse=True)
def _cpu_level(request: pytest.FixtureRequest):
    """The kernel level of an every_cpu_level test (else nothing). Autouse, so that hypothesis
    accepts it: it is set once for all of a test's examples, which is what is wanted here (no
    filter remembers the level; each call asks)."""
    level = getattr(request, "param", None)
    if level is None:
        yield
        return
    before = cuckoo.cpu_level()
    cuckoo._core._set_cpu_level(level)
    try:
        yield
    finally:
        cuckoo._core._set_cpu_level(before)


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator with a fixed seed: every test that draws random keys is reproducible."""
    return np.random.default_rng(20240611)


@pytest.fixture
def wide_filter() -> cuckoo.Filter:
    """An empty filter with 32-bit fingerprints: with the few fixed keys the unit tests use, a
    false positive (about 2 * 4 / 2**32 per lookup) does not happen, so exact answers can be
    asserted."""
    return cuckoo.Filter(1000, fingerprint_bits=32)
