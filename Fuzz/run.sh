#!/usr/bin/env bash
# Builds a libFuzzer target (with AddressSanitizer) and runs it for a set time.
#
#   Fuzz/run.sh TARGET SECONDS      one target: json, form, condition, sse, config
#   Fuzz/run.sh all SECONDS         every target in turn
#   Fuzz/run.sh list                the targets
#
# Each target is one harness in Fuzz/Targets/ compiled with the sources it exercises into one module (so it
# reaches internal API), with `swiftc -sanitize=fuzzer,address`. Binaries go to .build-fuzz/ and are rebuilt only
# when an input is newer. The run starts from the seed corpus in Fuzz/Corpus/TARGET (kept read-only: new inputs go
# to .build-fuzz/corpus/TARGET). A crash, a Swift trap, a leak-free sanitizer report or a timeout writes the input
# to .build-fuzz/crashes/ and makes the script exit non-zero; the last line per target says how many inputs ran.
#
# To add a target: write Fuzz/Targets/NameTarget.swift defining `LLVMFuzzerTestOneInput` with @_cdecl, add a
# `sources_NAME` function below listing the files it needs (its binary is NAME unless `binary_of` says otherwise),
# add NAME to TARGETS, and put a few seeds in Fuzz/Corpus/NAME/. Extra compiler or linker flags for a binary (a C
# library: `-I`, `-l`) go in `flags_NAME`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(json form condition sse config)

# The binary a target runs in: the core targets share one (CoreEntry.swift dispatches on PUSHRELAY_FUZZ_TARGET).
binary_of() {
    case "$1" in
        json | form | condition) echo core ;;
        *) echo "$1" ;;
    esac
}

sources_core() {
    ls Sources/PushRelayCore/*.swift
    echo Fuzz/Targets/JSONTarget.swift Fuzz/Targets/FormTarget.swift Fuzz/Targets/ConditionTarget.swift \
        Fuzz/Targets/CoreEntry.swift
}
sources_sse() { echo Sources/PushRelayClient/ServerSentEventParser.swift Fuzz/Targets/SSETarget.swift; }
sources_config() {
    echo Sources/PushRelayServer/Configuration/ConfigurationFileParser.swift Fuzz/Targets/ConfigurationTarget.swift
}

# Largest input libFuzzer generates, per target: above the limits the parsers must enforce.
max_len() {
    case "$1" in
        condition) echo 20000 ;;
        *) echo 8192 ;;
    esac
}

# Extra swiftc flags of a binary, from `flags_NAME` when it is defined.
flags_of() {
    if declare -F "flags_$1" >/dev/null; then "flags_$1"; fi
}

build() {
    local target=$1 binary=.build-fuzz/$1
    local sources
    sources=$("sources_$target")
    mkdir -p .build-fuzz
    local stale=1
    if [[ -x $binary ]]; then
        stale=0
        for file in $sources "$0"; do
            [[ $file -nt $binary ]] && stale=1
        done
    fi
    if ((stale)); then
        echo "building fuzz binary $target" >&2
        # shellcheck disable=SC2086
        # The linker's warnings about ASan's local symbols are noise: the log is shown only when the build fails.
        if ! swiftc -parse-as-library -sanitize=fuzzer,address -O -g -swift-version 6 \
            -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
            -enable-upcoming-feature InternalImportsByDefault \
            $(flags_of "$target") -module-name "Fuzz_$target" $sources -o "$binary" >".build-fuzz/$target.build.log" 2>&1; then
            grep -v "Cannot export local symbol" ".build-fuzz/$target.build.log" >&2
            return 1
        fi
    fi
}

run() {
    local target=$1 seconds=$2 binary
    binary=$(binary_of "$target")
    build "$binary" || return 1
    mkdir -p ".build-fuzz/corpus/$target" .build-fuzz/crashes
    local log=.build-fuzz/$target.log
    local status=0
    PUSHRELAY_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 ".build-fuzz/$binary" \
        -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix=".build-fuzz/crashes/$target-" -print_final_stats=1 \
        ".build-fuzz/corpus/$target" "Fuzz/Corpus/$target" >"$log" 2>&1 || status=$?
    local runs
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    if ((status != 0)); then
        echo "fuzz $target: FAILED after $runs executions (exit $status); see $log and .build-fuzz/crashes/" >&2
        tail -40 "$log" >&2
        return 1
    fi
    echo "fuzz $target: $runs executions in ${seconds}s, no crash"
}

case "${1:-}" in
    list) printf '%s\n' "${TARGETS[@]}" ;;
    all)
        failed=0
        for target in "${TARGETS[@]}"; do run "$target" "${2:?seconds}" || failed=1; done
        exit $failed
        ;;
    "") echo "usage: Fuzz/run.sh TARGET|all SECONDS | list" >&2; exit 2 ;;
    *)
        [[ " ${TARGETS[*]} " == *" $1 "* ]] || { echo "unknown target $1 (Fuzz/run.sh list)" >&2; exit 2; }
        run "$1" "${2:?seconds}"
        ;;
esac
