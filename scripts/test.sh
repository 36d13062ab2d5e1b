#!/usr/bin/env bash
# The project's test command: everything CI runs. Works on a fresh machine with only the Rust
# toolchain; installs whatever else the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

# The aws provider's tests run against moto (an AWS API server, from PyPI) in server mode. Its
# venv is made here, once per moto version: quiet when it is already there. Without PyPI the
# install fails and the AWS tests then fail, saying what is missing (they are never skipped).
MOTO_VERSION=5.2.5
export CA_MOTO_VENV="${CA_MOTO_VENV:-$PWD/.venv}"
if [ "$(cat "$CA_MOTO_VENV/.moto-version" 2>/dev/null)" != "$MOTO_VERSION" ]; then
    echo "== python venv with moto $MOTO_VERSION at $CA_MOTO_VENV"
    if python3 -m venv "$CA_MOTO_VENV" \
        && "$CA_MOTO_VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server,ec2,autoscaling]==$MOTO_VERSION"; then
        echo "$MOTO_VERSION" > "$CA_MOTO_VENV/.moto-version"
    else
        echo "warning: could not install moto $MOTO_VERSION (is PyPI reachable?); the AWS tests will fail" >&2
    fi
fi

# The simulate report's browser test (tests/tests/report_browser.rs) renders the page in headless
# Chromium: Debian's `chromium` package, installed here when `chromium` is not on PATH (apt-get,
# through sudo unless root). When the install fails the browser test fails, saying what is
# missing (it is never skipped).
if ! command -v chromium >/dev/null 2>&1; then
    echo "== installing Debian's chromium (for the report's browser test)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    if ! { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }; then
        echo "warning: could not install Debian's chromium package (apt-get install chromium failed: no root or sudo, or no Debian mirror?); the report's browser test will fail" >&2
    fi
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --workspace --locked

# Only the `[[bench]]` targets: plain `--no-run` also builds every library and binary as a
# release test harness (the autoscaler crate twice over), a quarter of a cold run's time.
echo "== benchmarks compile"
cargo bench --workspace --locked --bench '*' --no-run
