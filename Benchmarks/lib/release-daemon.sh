# Sourced by the benchmarks that start the daemon themselves (http2.sh, tls.sh, many-keys.sh): the binary, a work
# directory, and the cleanup of what they started.

# Sets `bin`: PUSHRELAY_BIN, else the release build in .build-release, built first unless SKIP_BUILD=1.
release_binary() {
  if [ "${SKIP_BUILD:-0}" != 1 ] && [ -z "${PUSHRELAY_BIN:-}" ]; then
    swift build -c release --product pushrelay --scratch-path .build-release >&2
  fi
  bin=${PUSHRELAY_BIN:-"$(swift build -c release --scratch-path .build-release --show-bin-path)/pushrelay"}
}

# Sets `work` (a new temporary directory) and `pids` (add every process the benchmark starts); at exit the processes
# are ended and the directory removed.
bench_workspace() {
  work=$(mktemp -d)
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
