#!/usr/bin/env bash
# Installs PushRelay on a Debian host: the release binary, the systemd unit, a default config, the service user and
# its state directory. Idempotent: running it again upgrades the binary and unit and keeps the config and the data.
#
#   deploy/install.sh [--binary PATH]          install (PATH defaults to .build/release/pushrelay)
#   deploy/install.sh --uninstall              remove binary, unit and docs; keep config, data and user
#   deploy/install.sh --uninstall --purge      also remove /etc/pushrelay, /var/lib/pushrelay and the user
#
# DESTDIR=/some/root installs into a staging root instead of /: no user is created, nothing is chowned, and
# systemctl is not called (for packaging and tests). Needs root otherwise.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
destdir="${DESTDIR:-}"
binary="$repo/.build/release/pushrelay"
mode=install
purge=0
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --binary=*) binary="${1#--binary=}"; shift ;;
    --uninstall) mode=uninstall; shift ;;
    --purge) purge=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$purge" = 1 ] && [ "$mode" != uninstall ]; then
  echo "install.sh: --purge only goes with --uninstall" >&2; exit 2
fi

bin_path="$destdir/usr/bin/pushrelay"
unit_path="$destdir/etc/systemd/system/pushrelay.service"
config_dir="$destdir/etc/pushrelay"
config_path="$config_dir/pushrelay.conf"
doc_dir="$destdir/usr/share/doc/pushrelay"
state_dir="$destdir/var/lib/pushrelay"

real_root=0
[ -z "$destdir" ] && real_root=1
systemd_running=0
[ "$real_root" = 1 ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null && systemd_running=1

if [ "$real_root" = 1 ] && [ "$(id -u)" != 0 ]; then
  echo "install.sh: run as root (or set DESTDIR to stage into a directory)" >&2; exit 1
fi

say() { echo "install.sh: $*"; }

if [ "$mode" = install ]; then
  if [ ! -x "$binary" ]; then
    echo "install.sh: no binary at $binary; build it with 'swift build -c release --product pushrelay'" \
         "or pass --binary PATH" >&2
    exit 1
  fi
  install -d -m 0755 "$destdir/usr/bin" "$destdir/etc/systemd/system" "$doc_dir"
  # Copy to a temporary name and rename, so that a running daemon's binary is replaced atomically.
  install -m 0755 "$binary" "$bin_path.new" && mv -f "$bin_path.new" "$bin_path"
  install -m 0644 "$repo/deploy/pushrelay.service" "$unit_path"
  for doc in docs/operations.md deploy/prometheus.yml deploy/grafana-dashboard.json deploy/pushrelay.conf; do
    [ -f "$repo/$doc" ] && install -m 0644 "$repo/$doc" "$doc_dir/$(basename "$doc")"
  done
  say "installed $bin_path and $unit_path"

  if [ "$real_root" = 1 ] && ! getent passwd pushrelay >/dev/null; then
    useradd --system --user-group --home-dir /var/lib/pushrelay --no-create-home \
            --shell /usr/sbin/nologin --comment "PushRelay push relay" pushrelay
    say "created system user pushrelay"
  fi

  install -d -m 0750 "$config_dir"
  if [ -e "$config_path" ]; then
    say "kept existing $config_path (the new default is in $doc_dir/pushrelay.conf)"
  else
    install -m 0640 "$repo/deploy/pushrelay.conf" "$config_path"
    say "installed default $config_path"
  fi
  install -d -m 0700 "$state_dir"
  if [ "$real_root" = 1 ]; then
    chown root:pushrelay "$config_dir" "$config_path"
    chown pushrelay:pushrelay "$state_dir"
    # serve refuses a missing store: create an empty one on a first install (never over an existing one).
    if [ ! -s "$state_dir/pushrelay.sqlite" ]; then
      runuser -u pushrelay -- "$bin_path" store init --data-dir "$state_dir" >/dev/null
      say "created an empty store in $state_dir"
    fi
  fi

  if [ "$systemd_running" = 1 ]; then
    systemctl daemon-reload
    systemctl enable pushrelay.service >/dev/null
    if systemctl is-active --quiet pushrelay.service; then
      systemctl restart pushrelay.service
      say "restarted pushrelay.service"
    else
      say "enabled pushrelay.service; start it with: systemctl start pushrelay"
    fi
  fi
  exit 0
fi

# Uninstall.
if [ "$systemd_running" = 1 ]; then
  systemctl disable --now pushrelay.service >/dev/null 2>&1 || true
fi
rm -f "$bin_path" "$unit_path"
rm -rf "$doc_dir"
[ "$systemd_running" = 1 ] && systemctl daemon-reload
say "removed the binary, the unit and the docs"
if [ "$purge" = 1 ]; then
  rm -rf "$config_dir" "$state_dir"
  if [ "$real_root" = 1 ] && getent passwd pushrelay >/dev/null; then
    userdel pushrelay >/dev/null 2>&1 || true
  fi
  say "purged $config_dir and $state_dir"
else
  say "kept $config_dir and $state_dir (remove them with --uninstall --purge)"
fi
