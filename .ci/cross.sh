#!/usr/bin/env bash
# Portability of the core (called by .ci/run): cross-compiles the C++ tests with zig (the
# `ziglang` PyPI package, a Clang with the C/C++ libraries of every target) and runs them:
#   x86_64-linux-musl     Clang, run here (the AVX2 kernels, chosen at run time)
#   aarch64-linux-musl    run under qemu-user: the portable (non-x86) paths
#   s390x-linux-musl      run under qemu-user: big-endian, so the little-endian file formats and
#                         the golden files of tests/data are read on a machine unlike this one
#   aarch64-macos         compiled to objects (-c), not linked
#   x86_64-windows-gnu    compiled to objects (-c), not linked; not test_store: the store is
#                         POSIX-only and not available on Windows (cpp/include/cuckoo/store_log.hpp)
# Neither is linked: a link makes zig build the target's C++ library first, which took 181 s of
# a core for Windows where its objects took 4.5 s (test_hash, cold cache, Zen 4, 2026-12-02;
# -fsyntax-only builds the library too). The compiler's checks, the kernels' target features
# included, all come before the link. The published macOS and Windows wheels are built and
# tested by cibuildwheel (.github/workflows/wheels.yml).
# Usage: .ci/cross.sh [python]  (the interpreter that gets ziglang). -O1 (-O0 for the objects) and two jobs: the
# compiles dominate (zig also builds each target's C++ library once, cached in ~/.cache/zig).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-python3}"
"$py" -m pip install -q ziglang
if ! command -v qemu-aarch64 >/dev/null || ! command -v qemu-s390x >/dev/null; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"  # CI runs as root; a developer's machine may not
  $sudo apt-get update -qq && $sudo apt-get install -y -qq qemu-user >/dev/null
fi
out=build/cross
rm -rf "$out" && mkdir -p "$out"
all_tests="$(cd cpp/tests && ls test_*.cpp | sed "s/\.cpp$//")"

compile() {  # compile TARGET TEST
  # Objects only for macOS and Windows, at -O0: nothing runs them, and every check the compiler
  # makes (templates, the kernels' target features) comes before the optimizer.
  local what=(-O1 -o "$out/$2-$1")
  case "$1" in *macos*|*windows*) what=(-O0 -c -o "$out/$2-$1.o") ;; esac
  if "$py" -m ziglang c++ -target "$1" -std=c++17 -Icpp/include -DCUCKOO_TEST_DATA='"tests/data"' \
       "cpp/tests/$2.cpp" "${what[@]}" >"$out/$2-$1.log" 2>&1; then
    echo "compiled $2 for $1"
  else
    echo "FAILED to compile $2 for $1:"; cat "$out/$2-$1.log"; return 1
  fi
}
export -f compile
export py out

# Tests outside, targets inside: a target's first compile also builds zig's C++ library for it
# (about 3 minutes, one core, then cached in ~/.cache/zig), and in this order the two jobs build
# two targets' libraries at once instead of waiting on the same one (measured on a 2-vCPU Xeon
# Skylake-SP, 2026-11-26: the compiles took 21.5 minutes target by target).
for t in $all_tests; do
  for target in x86_64-linux-musl aarch64-linux-musl s390x-linux-musl aarch64-macos x86_64-windows-gnu; do
    case "$target/$t" in *windows*/test_store|*windows*/test_dedup) continue ;; esac
    echo "$target $t"
  done
done | xargs -P 2 -L 1 bash -c 'compile "$@"' _

echo "compiles done after $SECONDS s"

# The tests read tests/data relative to the repository root (CUCKOO_TEST_DATA above). Two runs
# at a time (each is one thread; test_dedup and test_store work in their own mkdtemp folders),
# each into its own log, reported in order afterwards.
run_one() {  # run_one TEST TARGET [RUNNER]
  local start=$SECONDS
  if ${3:-} "$out/$1-$2" >"$out/$1-$2.run" 2>&1; then echo ok >"$out/$1-$2.status"; else echo failed >"$out/$1-$2.status"; fi
  echo "$(( SECONDS - start ))" >"$out/$1-$2.seconds"  # (printed with the result: the slow ones show in the log)
}
export -f run_one
for t in $all_tests; do
  for run in "x86_64-linux-musl" "aarch64-linux-musl qemu-aarch64" "s390x-linux-musl qemu-s390x"; do
    echo "$t $run"
  done
done | xargs -P 2 -L 1 bash -c 'run_one "$@"' _
failed=0
for t in $all_tests; do
  for target in x86_64-linux-musl aarch64-linux-musl s390x-linux-musl; do
    if [ "$(cat "$out/$t-$target.status" 2>/dev/null)" = ok ]; then
      echo "$t on $target ($(cat "$out/$t-$target.seconds") s): $(tail -n 1 "$out/$t-$target.run")"
    else
      echo "$t on $target FAILED:"; cat "$out/$t-$target.run"; failed=1
    fi
  done
done
[ "$failed" = 0 ]
echo "cross-compiled C++ tests passed (x86_64 Clang, aarch64 and s390x under qemu-user) in $SECONDS s"
