#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine with the Swift toolchain, builds, and runs the whole test
# suite: unit tests and end-to-end tests against the real daemon with independent clients.
#
#   scripts/test.sh               everything: units, peers, end-to-end on SQLite and on PostgreSQL, a short fuzz run
#   scripts/test.sh --unit        the unit tests only (no independent program, no daemon)
#   scripts/test.sh --peer        the peer tests only: in-process servers against curl, nghttp, openssl, Python …
#   scripts/test.sh --e2e         the end-to-end tests only (the daemon binary), on SQLite then PostgreSQL
#
# The kinds are the tags in Tests/TestSupport/TestKinds.swift: `.peer` on suites in the unit targets, `.endToEnd`
# on every suite of Tests/EndToEndTests. Other arguments go to `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=all
case "${1:-}" in
--unit | --peer | --e2e) kind="${1#--}"; shift ;;
esac
scripts/setup.sh --test
swift build --build-tests
# The end-to-end tests start the daemon binary built above.
export PUSHRELAY_BIN="$(swift build --show-bin-path)/pushrelay"

# The type names of the suites tagged `.peer`, as a --filter/--skip pattern over test ids (Module.Suite/test).
peer_suites() {
    python3 - <<'PY'
import glob, re
names = set()
for path in glob.glob("Tests/**/*.swift", recursive=True):
    text = open(path, encoding="utf-8").read()
    for match in re.finditer(r"@Suite\([^\n]*\.tags\(\.peer\)[^\n]*\)\s*(?:final\s+)?(?:struct|class)\s+(\w+)", text):
        names.add(match.group(1))
print(r"\.(" + "|".join(sorted(names)) + r")/")
PY
}

end_to_end_on_postgres() {
    # The end-to-end suite again, every daemon on PostgreSQL (a throwaway cluster the tests start; a database per
    # daemon). Left out: suites that are about SQLite's file (faults, the SQLite → PostgreSQL migration), suites
    # that already run their daemons on PostgreSQL (several nodes, the load balancer), and checks that start no
    # daemon.
    PUSHRELAY_E2E_STORE=postgres swift test --skip-build --filter EndToEndTests \
        --skip 'StoreFaultTests|StoreMigrationTests|MultiNodeTests|LoadBalancerTests|PackageDependencyTests|ClientDependencyTests|ServeHealthzTests' \
        "$@"
}

case "$kind" in
unit) swift test --skip-build --skip "^EndToEndTests\.|$(peer_suites)" "$@" ;;
peer) swift test --skip-build --filter "$(peer_suites)" "$@" ;;
e2e)
    swift test --skip-build --filter EndToEndTests "$@"
    end_to_end_on_postgres "$@"
    ;;
all)
    swift test --skip-build "$@"
    end_to_end_on_postgres "$@"
    # A short fuzz run of every parser target (Fuzz/run.sh; seconds each): a crash fails the test command.
    Fuzz/run.sh all "${PUSHRELAY_FUZZ_SECONDS:-5}"
    ;;
esac
