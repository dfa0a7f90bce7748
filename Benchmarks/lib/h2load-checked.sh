# Sourced by the h2load benchmarks. h2load_checked PROTOCOL ARGS...: runs `h2load ARGS...` and prints its output
# when every request was done and answered 2xx over PROTOCOL (h2 over TLS, h2c in cleartext, http/1.1 with --h1);
# otherwise prints why and the output to stderr and returns 1, so that no rate is printed as if the run were fine
# (the caller's `x=$(h2load_checked ...)` then stops a `set -e` script with a non-zero status).
h2load_checked() {
  local want=$1; shift
  local out status=0
  out=$(h2load "$@" 2>&1) || status=$?
  local counts done failed errored timeout ok2xx protocol
  local n='\([0-9]*\)'
  local pat="^requests: [0-9]* total, [0-9]* started, $n done, [0-9]* succeeded, $n failed, $n errored, $n timeout"
  counts=$(echo "$out" | sed -n "s/$pat.*/\\1 \\2 \\3 \\4/p")
  read -r done failed errored timeout <<< "${counts:-0 1 1 1}"
  ok2xx=$(echo "$out" | sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p')
  protocol=$(echo "$out" | sed -n 's/^Application protocol: \(.*\)$/\1/p')
  local why=""
  [ "$status" = 0 ] || why="h2load exited $status; "
  [ "${done:-0}" -gt 0 ] || why+="no request done; "
  [ "$failed/$errored/$timeout" = "0/0/0" ] || why+="$failed failed, $errored errored, $timeout timeout; "
  [ "${ok2xx:-0}" = "${done:-0}" ] || why+="$(( ${done:-0} - ${ok2xx:-0} )) answers not 2xx; "
  [ "$protocol" = "$want" ] || why+="protocol '${protocol}', not '$want'; "
  if [ -n "$why" ]; then
    echo "FAILED: h2load $*: ${why%; }" >&2
    echo "$out" >&2
    return 1
  fi
  echo "$out"
}
