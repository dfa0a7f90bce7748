#!/usr/bin/env bash
# Installs what PushRelay needs on Debian 12 when it is missing: C libraries for the build, and with --test
# the independent peers the tests talk to (curl, nghttp2 tools, openssl, Python h2/httpx/pyfcm/sslyze/google-auth, ...).
# Idempotent: installs nothing that is already there. Needs root (or sudo) only when it installs something.
set -euo pipefail

want_test=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1 ;;
    *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
  esac
done

apt_packages=(libnghttp2-dev libssl-dev libsqlite3-dev libjemalloc-dev pkg-config)
if [ "$want_test" = 1 ]; then
  # The test peers; nginx with its stream module is the load balancer of LoadBalancerTests. (The benchmarks' own
  # peers, nchan and mosquitto, are installed by the benchmark scripts: the test suite does not need them.)
  apt_packages+=(nghttp2-client nghttp2-server curl openssl sqlite3 python3-venv systemd dpkg-dev chromium postgresql
    nginx libnginx-mod-stream)
fi

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$want_test" = 1 ]; then
  py_packages=(h2 "httpx[http2]" pyfcm==1.5.4 sslyze openapi-spec-validator google-auth requests)
  need_pip=0
  python3 - <<'PY' 2>/dev/null || need_pip=1
import h2, httpx, pyfcm, sslyze, openapi_spec_validator, google.auth, google.oauth2.service_account, requests
PY
  if [ "$need_pip" = 1 ]; then
    echo "setup: installing Python test peers: ${py_packages[*]}"
    python3 -m pip install -q --disable-pip-version-check "${py_packages[@]}"
  fi
fi
