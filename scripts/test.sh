#!/usr/bin/env bash
# The project's test command: everything CI runs. Works on a fresh machine with only the Rust
# toolchain; installs whatever else the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

echo "== benchmarks compile"
cargo bench --workspace --locked --no-run
