#!/usr/bin/env bash
# Fuzzes every parser of untrusted input for a bounded time (docs/fuzzing.md).
#
#   scripts/fuzz.sh [seconds-per-target] [target...]
#
# EHDS_FUZZ_ENGINE chooses how:
#   libfuzzer (the default): coverage-guided, libFuzzer built from source and the code
#     instrumented with the compiler's stable `sancov-module` pass, so no nightly toolchain is
#     needed. The workspace's crates are instrumented, in the ordinary debug build;
#     EHDS_FUZZ_INSTRUMENT=all instruments the dependencies too, in a build of its own (the
#     first one compiles every dependency again).
#   mutate: the same targets in the workspace's ordinary test build, fed the committed corpus
#     and blind mutations of it (`fuzz/tests/fuzz_corpus.rs`). No build of its own after
#     `cargo test --workspace`, which is why CI uses it.
#
# Fails if any target panics, hangs or runs out of memory; the input is kept under
# $CARGO_TARGET_DIR/fuzz/artifacts (libfuzzer) or the test's scratch directory (mutate).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
shift || true
all_targets=(fhir_bundle fhir_ndjson feature_spec safetensors optout_ndjson fhir_consent jwt)
if [ "$#" -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi
engine="${EHDS_FUZZ_ENGINE:-libfuzzer}"
target_dir="${CARGO_TARGET_DIR:-target}"

case "$engine" in
mutate)
  filters=()
  for t in "${targets[@]}"; do filters+=("$t"); done
  # One test per target, one after the other: each gets the whole time on a small machine.
  EHDS_FUZZ_SECONDS="$seconds" cargo test --workspace --locked --test fuzz_corpus -- \
    --test-threads=1 --exact "${filters[@]}"
  ;;
libfuzzer)
  # What cargo-fuzz passes with `--sanitizer none`: coverage counters and comparison tracing.
  flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
  flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
  flags+=" -Cllvm-args=-sanitizer-coverage-pc-table"
  flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
  if [ "${EHDS_FUZZ_INSTRUMENT:-workspace}" = all ]; then
    # Dependencies instrumented too (serde_json, safetensors, jsonwebtoken): their own build,
    # every dependency compiled again. `--target` keeps the flags off build scripts and
    # procedural macros, which run on the build machine without libFuzzer's runtime.
    host="$(rustc -vV | sed -n 's/^host: //p')"
    RUSTFLAGS="$flags -Cdebug-assertions -Coverflow-checks" cargo build --locked \
      --profile fuzz --target "$host" -p ehds-fuzz --features libfuzzer --bins
    bin_dir="$target_dir/$host/fuzz"
  else
    # Only the workspace's crates instrumented, in the ordinary debug build: dependencies
    # already built for the tests are used as they are, so only the workspace is compiled.
    EHDS_FUZZ_RUSTFLAGS="$flags" RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/fuzz-rustc.sh" \
      cargo build --locked -p ehds-fuzz --features libfuzzer --bins
    bin_dir="$target_dir/debug"
  fi
  failed=()
  for t in "${targets[@]}"; do
    # New inputs go to a scratch corpus; the committed one is only read.
    work="$target_dir/fuzz/corpus/$t"
    artifacts="$target_dir/fuzz/artifacts/$t"
    mkdir -p "$work" "$artifacts"
    echo "== $t: $seconds s"
    if ! "$bin_dir/$t" "$work" "fuzz/corpus/$t" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$artifacts/" -print_final_stats=1 2>"$target_dir/fuzz/$t.log"; then
      tail -n 40 "$target_dir/fuzz/$t.log" >&2
      failed+=("$t")
    else
      grep -E '^(stat::number_of_executed_units|stat::new_units_added)' \
        "$target_dir/fuzz/$t.log" || true
    fi
  done
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]} (inputs under $target_dir/fuzz/artifacts)" >&2
    exit 1
  fi
  ;;
*)
  echo "EHDS_FUZZ_ENGINE must be libfuzzer or mutate, not $engine" >&2
  exit 2
  ;;
esac
