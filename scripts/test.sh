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
# The end-to-end suite again, every daemon on PostgreSQL (a throwaway cluster the tests start; a database per
# daemon). Left out: suites that are about SQLite's file (faults, the SQLite → PostgreSQL migration), suites that
# already run their daemons on PostgreSQL (several nodes, the load balancer), and checks that start no daemon.
PUSHRELAY_E2E_STORE=postgres swift test --skip-build --filter EndToEndTests \
    --skip 'StoreFaultTests|StoreMigrationTests|MultiNodeTests|LoadBalancerTests|PackageDependencyTests|ClientDependencyTests|ServeHealthzTests' \
    "$@"
# A short fuzz run of every parser target (Fuzz/run.sh; seconds each): a crash fails the test command.
Fuzz/run.sh all "${PUSHRELAY_FUZZ_SECONDS:-5}"
