# Sourced by the benchmark scripts. apt_install_missing WHO PACKAGE...: installs the Debian packages that are not
# installed yet (apt-get update first), as root or through sudo, saying which on stderr as WHO.
apt_install_missing() {
  local who=$1; shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  echo "$who: installing ${missing[*]}" >&2
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
