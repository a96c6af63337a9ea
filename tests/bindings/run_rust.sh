#!/usr/bin/env bash
# tests/bindings/run_rust.sh BUILD_DIR SOURCE_DIR — the Rust crate's tests and the seed's leak in
# Rust (ctest test_bindings_rust): `cargo test` of bindings/rust (offline: no dependencies), then
# examples/rust-varmap built in release (with debug info) and run under leakgate exec: the buggy
# version must be a leak (exit 1) whose heap profile names VarMap::init_var, demangled, with its
# bytes per session, and whose ledger names the duplicate Arc's retain; the fixed one must pass
# (exit 0). Exit 77 (ctest: Skipped) only when cargo is absent.
set -euo pipefail
build=$1 src=$2
command -v cargo >/dev/null || PATH=$HOME/.cargo/bin:$PATH # rustup's, when PATH lacks it
command -v cargo >/dev/null || { echo "SKIP: cargo is not installed"; exit 77; }
export LEAKGATE_LIB_DIR=$build/agent CARGO_TARGET_DIR=$build/bindings-rust/target
(cd "$src/bindings/rust" && cargo test --offline -q)
(cd "$src/examples/rust-varmap" && cargo build --offline --release -q)
bin=$CARGO_TARGET_DIR/release/rust-varmap out=$build/bindings-rust
fail() { echo "FAIL: $*"; exit 1; }
set +e
"$build/harness/leakgate" exec --quiet --out "$out/buggy" -- "$bin" >"$out/buggy.txt" 2>&1
rc=$?
"$build/harness/leakgate" exec --quiet --out "$out/fixed" -- "$bin" --fixed >"$out/fixed.txt" 2>&1
rc_fixed=$?
set -e
cat "$out/buggy.txt"
[ $rc -eq 1 ] || fail "the buggy rust-varmap: leakgate exec exit $rc, not 1 (leak)"
grep -Eq '^ +[0-9.]+ (KiB|MiB)/session .*rust_varmap::VarMap::init_var \(main\.rs:[0-9]+\)' "$out/buggy.txt" ||
    fail "no heap-profile line naming rust_varmap::VarMap::init_var with its bytes per session"
grep -q 'varmap tft.varmap retained at rust_varmap::TFTTrainer::new (main.rs:' "$out/buggy.txt" ||
    fail "the ledger does not name the duplicate Arc's retain in TFTTrainer::new"
cat "$out/fixed.txt"
[ $rc_fixed -eq 0 ] || fail "the fixed rust-varmap: leakgate exec exit $rc_fixed, not 0 (pass)"
echo "1 passed, 0 failed: rust-varmap caught (VarMap::init_var named), its fix passes"
