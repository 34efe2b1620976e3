#!/usr/bin/env bash
# Make a Chromium for the web page's browser tests available; print its path.
#
#   scripts/install_chromium.sh      -> last stdout line: the chromium executable
#
# Playwright drives Debian's `chromium` package (Playwright's own browser download
# does not work on these machines). Order: $PTYVISOR_CHROMIUM, chromium on PATH,
# otherwise `apt-get install chromium` when running as root (flock-serialised, so
# CI and the test suite can both call this). Exit 2 with a clear message otherwise.
set -euo pipefail

log() { printf 'install_chromium: %s\n' "$*" >&2; }

find_chromium() {
    if [ -n "${PTYVISOR_CHROMIUM:-}" ] && [ -x "$PTYVISOR_CHROMIUM" ]; then
        echo "$PTYVISOR_CHROMIUM"; return 0
    fi
    for name in chromium chromium-browser; do
        if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    done
    return 1
}

if find_chromium; then exit 0; fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    log "Chromium not found. Install it (Debian/Ubuntu: sudo apt-get install chromium)"
    log "or point PTYVISOR_CHROMIUM at a Chromium/Chrome executable."
    exit 2
fi

exec 9>/tmp/.ptyvisor-install-chromium.lock
flock -w 1800 9 || { log "timed out waiting for another install"; exit 1; }
if find_chromium; then exit 0; fi
log "installing Debian's chromium package (apt-get)"
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
find_chromium || { log "apt-get installed chromium but no executable was found"; exit 1; }
