#!/usr/bin/env bash
# Builds a libFuzzer target (with AddressSanitizer) and runs it for a set time.
#
#   Fuzz/run.sh TARGET SECONDS      one target: json, form, condition, v1, oauth, sse, config, http1, http2
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

TARGETS=(json form condition v1 oauth sse config http1 http2)

# The binary a target runs in: the core targets share one (CoreEntry.swift dispatches on PUSHRELAY_FUZZ_TARGET).
binary_of() {
    case "$1" in
        json | form | condition | v1 | oauth) echo core ;;
        http1) echo http2 ;;  # the HTTP/1.1 and HTTP/2 server targets share one SwiftPM build
        *) echo "$1" ;;
    esac
}

sources_core() {
    ls Sources/PushRelayCore/*.swift
    echo Fuzz/Targets/JSONTarget.swift Fuzz/Targets/FormTarget.swift Fuzz/Targets/ConditionTarget.swift \
        Fuzz/Targets/V1Target.swift Fuzz/Targets/OAuthTarget.swift Fuzz/Targets/CoreEntry.swift
}
# Modules a binary imports, each built first from Sources/MODULE/*.swift as a static library.
modules_core() { echo PushRelayWire; }
sources_sse() { ls Sources/PushRelayWire/*.swift; echo Fuzz/Targets/SSETarget.swift; }
sources_config() {
    echo Sources/PushRelayServer/Configuration/ConfigurationFileParser.swift Fuzz/Targets/ConfigurationTarget.swift
}

# The HTTP/2 server (Fuzz/HTTP2/FuzzHTTP2.swift) needs SwiftNIO, so SwiftPM builds it: the FuzzHTTP2 target is
# declared only when PUSHRELAY_FUZZ_HTTP2=1, every Swift module of the product is compiled with
# -sanitize=fuzzer,address in its own scratch directory (the first build takes several minutes).
build_http2() {
    # shellcheck disable=SC2046
    if stale .build-fuzz/http2 $(find Sources/PushRelayHTTP Sources/PushRelayWire Fuzz/HTTP2 -name '*.swift') Package.swift "$0"; then
        echo "building fuzz binary http2 (SwiftPM, every module instrumented)" >&2
        local spm=(--product FuzzHTTP2 --scratch-path .build-fuzz/spm -Xswiftc -sanitize=fuzzer,address)
        if ! PUSHRELAY_FUZZ_HTTP2=1 swift build "${spm[@]}" >.build-fuzz/http2.build.log 2>&1; then
            grep -v "Cannot export local symbol" .build-fuzz/http2.build.log | tail -40 >&2
            return 1
        fi
        cp "$(PUSHRELAY_FUZZ_HTTP2=1 swift build "${spm[@]}" --show-bin-path)/FuzzHTTP2" .build-fuzz/http2
    fi
}

# Largest input libFuzzer generates, per target: above the limits the parsers must enforce.
max_len() {
    case "$1" in
        condition) echo 20000 ;;
        *) echo 8192 ;;
    esac
}

SWIFTC_FLAGS=(-parse-as-library -sanitize=fuzzer,address -O -g -swift-version 6
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
    -enable-upcoming-feature InternalImportsByDefault -I .build-fuzz/modules -L .build-fuzz/modules)

# Extra swiftc flags of a binary, from `flags_NAME` when it is defined.
flags_of() {
    if declare -F "flags_$1" >/dev/null; then "flags_$1"; fi
}

# Whether OUTPUT is missing or older than one of the files after it.
stale() {
    local output=$1 file
    shift
    [[ -e $output ]] || return 0
    for file in "$@"; do [[ $file -nt $output ]] && return 0; done
    return 1
}

# Compiles with the shared flags, quietly: the linker's warnings about ASan's local symbols are noise, so the log
# is shown only when the build fails.
compile() {
    local log=$1
    shift
    if ! swiftc "${SWIFTC_FLAGS[@]}" "$@" >"$log" 2>&1; then
        grep -v "Cannot export local symbol" "$log" >&2
        return 1
    fi
}

build() {
    local binary=$1 module sources link=() archives=()
    mkdir -p .build-fuzz/modules
    if declare -F "build_$binary" >/dev/null; then
        "build_$binary"
        return
    fi
    if declare -F "modules_$binary" >/dev/null; then
        for module in $("modules_$binary"); do
            local archive=.build-fuzz/modules/lib$module.a
            if stale "$archive" Sources/"$module"/*.swift "$0"; then
                echo "building fuzz module $module" >&2
                compile ".build-fuzz/$module.build.log" -module-name "$module" -emit-library -static \
                    -emit-module -emit-module-path ".build-fuzz/modules/$module.swiftmodule" \
                    Sources/"$module"/*.swift -o "$archive" || return 1
            fi
            link+=("-l$module")
            archives+=("$archive")
        done
    fi
    sources=$("sources_$binary")
    # shellcheck disable=SC2086
    if stale ".build-fuzz/$binary" $sources "$0" "${archives[@]}"; then
        echo "building fuzz binary $binary" >&2
        # shellcheck disable=SC2046,SC2086
        compile ".build-fuzz/$binary.build.log" $(flags_of "$binary") "${link[@]}" \
            -module-name "Fuzz_$binary" $sources -o ".build-fuzz/$binary" || return 1
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
