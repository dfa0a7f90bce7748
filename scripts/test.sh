#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine with the Swift toolchain, builds, and runs the whole test
# suite: unit tests and end-to-end tests against the real daemon with independent clients.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
swift build --build-tests
# The end-to-end tests start the daemon binary built above.
export PUSHRELAY_BIN="$(swift build --show-bin-path)/pushrelay"
swift test --skip-build "$@"
# A short fuzz run of every parser target (Fuzz/run.sh; seconds each): a crash fails the test command.
Fuzz/run.sh all "${PUSHRELAY_FUZZ_SECONDS:-5}"
