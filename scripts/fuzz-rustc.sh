#!/usr/bin/env bash
# The compiler wrapper of scripts/fuzz.sh (RUSTC_WORKSPACE_WRAPPER): adds libFuzzer's coverage
# instrumentation to the workspace's own crates. Build scripts are left alone: they run on the
# build machine, linked without libFuzzer's runtime.
rustc="$1"
shift
case " $* " in
*" --crate-name build_script_"*) exec "$rustc" "$@" ;;
esac
# shellcheck disable=SC2086 # one flag a word
exec "$rustc" "$@" $EHDS_FUZZ_RUSTFLAGS
