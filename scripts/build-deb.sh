#!/usr/bin/env bash
# Builds a Debian package of PushRelay: one command, from the repository.
#
#   scripts/build-deb.sh [--binary PATH] [--output DIR]
#
# Without --binary (or PUSHRELAY_DEB_BINARY) it builds the release binary with the Swift runtime linked in
# statically (`swift build -c release --static-swift-stdlib`), so that the package needs no Swift toolchain on the
# host; the C libraries come from Debian (Depends below). --binary packages an existing binary instead; the tests
# use that with the debug build to stay fast (such a package still needs the Swift runtime, and says so).
# Writes DIR/pushrelay_<version>_<arch>.deb (DIR defaults to .build/deb) and prints its path on the last line.
# PUSHRELAY_VERSION overrides the version; PUSHRELAY_DEB_COMPRESSION (xz, gzip, zstd, none) the compression.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

binary="${PUSHRELAY_DEB_BINARY:-}"
output="$repo/.build/deb"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --binary=*) binary="${1#--binary=}"; shift ;;
    --output) output="$2"; shift 2 ;;
    --output=*) output="${1#--output=}"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "build-deb.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

command -v dpkg-deb >/dev/null || { echo "build-deb.sh: dpkg-deb not found (apt-get install dpkg)" >&2; exit 1; }

if [ -z "$binary" ]; then
  scripts/setup.sh
  swift build -c release --static-swift-stdlib --product pushrelay >&2
  binary="$(swift build -c release --static-swift-stdlib --show-bin-path)/pushrelay"
fi
[ -x "$binary" ] || { echo "build-deb.sh: no executable at $binary" >&2; exit 1; }

base_version="0.1.0"
if [ -n "${PUSHRELAY_VERSION:-}" ]; then
  version="$PUSHRELAY_VERSION"
elif commit="$(git rev-parse --short=10 HEAD 2>/dev/null)"; then
  version="$base_version+git$(git log -1 --format=%cd --date=format:%Y%m%d HEAD).$commit"
else
  version="$base_version"
fi
arch="$(dpkg --print-architecture)"

# Runtime dependencies: the Debian C libraries the daemon links, and the C/C++ runtime.
depends="libc6, libgcc-s1, libstdc++6, libnghttp2-14, libssl3, libsqlite3-0, adduser"
# A release build allocates with jemalloc (Package.swift); a debug binary packaged with --binary does not.
if objdump -p "$binary" 2>/dev/null | grep -q 'NEEDED *libjemalloc'; then depends="$depends, libjemalloc2"; fi
if objdump -p "$binary" 2>/dev/null | grep -q 'NEEDED *libswiftCore'; then
  echo "build-deb.sh: warning: $binary links the Swift runtime dynamically; the package only runs where the" \
       "Swift toolchain's libraries are on the library path (use the default release build for real packages)" >&2
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/pushrelay"
install -d -m 0755 "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/pushrelay" \
                   "$root/usr/share/doc/pushrelay/examples"
install -m 0755 "$binary" "$root/usr/bin/pushrelay"
install -m 0644 deploy/pushrelay.service "$root/lib/systemd/system/pushrelay.service"
install -m 0640 deploy/pushrelay.conf "$root/etc/pushrelay/pushrelay.conf"
for doc in docs/operations.md README.md; do
  [ -f "$doc" ] && install -m 0644 "$doc" "$root/usr/share/doc/pushrelay/$(basename "$doc")"
done
install -m 0644 deploy/prometheus.yml deploy/grafana-dashboard.json deploy/pushrelay.conf \
        "$root/usr/share/doc/pushrelay/examples/"
installed_size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"

cat > "$root/DEBIAN/control" <<CONTROL
Package: pushrelay
Version: $version
Architecture: $arch
Maintainer: PushRelay maintainers <pushrelay@localhost>
Installed-Size: $installed_size
Depends: $depends
Section: net
Priority: optional
Homepage: https://github.com/pushrelay/pushrelay
Description: self-hosted FCM-compatible push-notification relay
 PushRelay accepts sends on the FCM legacy HTTP API (POST /fcm/send), queues
 every message durably per device in SQLite, and delivers it over a
 long-lived HTTP/2 or HTTP/1.1 stream, with per-message acknowledgement and
 redelivery. Runs as the hardened systemd service pushrelay.service.
CONTROL

echo "/etc/pushrelay/pushrelay.conf" > "$root/DEBIAN/conffiles"

cat > "$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    if ! getent passwd pushrelay >/dev/null; then
        adduser --system --group --home /var/lib/pushrelay --no-create-home --shell /usr/sbin/nologin \
                --gecos "PushRelay push relay" pushrelay >/dev/null
    fi
    chown root:pushrelay /etc/pushrelay /etc/pushrelay/pushrelay.conf
    chmod 0750 /etc/pushrelay
    chmod 0640 /etc/pushrelay/pushrelay.conf
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null || true
        if [ -z "$2" ]; then
            # serve refuses a missing store: a first install creates an empty one (never over an existing one).
            if [ ! -s /var/lib/pushrelay/pushrelay.sqlite ]; then
                install -d -o pushrelay -g pushrelay -m 0700 /var/lib/pushrelay
                runuser -u pushrelay -- /usr/bin/pushrelay store init --data-dir /var/lib/pushrelay >/dev/null || true
            fi
            systemctl enable --now pushrelay.service >/dev/null || true
        else
            systemctl try-restart pushrelay.service >/dev/null || true
        fi
    fi
fi
exit 0
POSTINST

cat > "$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl disable --now pushrelay.service >/dev/null || true
fi
exit 0
PRERM

cat > "$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
    # The queues and keys go only on purge; a plain remove keeps them for a reinstall.
    rm -rf /var/lib/pushrelay /var/lib/private/pushrelay /etc/pushrelay
    if getent passwd pushrelay >/dev/null; then
        deluser --system pushrelay >/dev/null 2>&1 || true
    fi
fi
exit 0
POSTRM
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$output"
deb="$output/pushrelay_${version}_${arch}.deb"
dpkg-deb --root-owner-group "-Z${PUSHRELAY_DEB_COMPRESSION:-xz}" --build "$root" "$deb" >&2
echo "$deb"
