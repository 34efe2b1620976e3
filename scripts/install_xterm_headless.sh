#!/usr/bin/env bash
# Install @xterm/headless and its Unicode 11 width addon, pinned: the terminal
# bench_all.py compares ours with, and the one tests/terminal/xterm/test_fidelity.py
# draws the raw stream and the snapshot into (the addon's version is the web page's,
# src/ptyvisor/web/package.json, so the widths are the ones the page draws with).
#
#   scripts/install_xterm_headless.sh   -> last stdout line: the node_modules/.bin directory
#                                          (@xterm/headless is in its parent folder)
#
# Cached like the agent CLIs (npm_install_pinned.sh): in
# ${PTYVISOR_XTERM_DIR:-~/.cache/ptyvisor/xterm-headless}/<hash of the pins>. The
# package has no executable for npm_install_pinned.sh to check, so a probe package is
# pinned beside it (from a folder this script writes): its one command loads the
# installed @xterm/headless and the addon in Node, makes a terminal with Unicode 11
# widths and prints the package's version.
set -euo pipefail

PIN="@xterm/headless@6.0.0"
UNICODE11_PIN="@xterm/addon-unicode11@0.9.0"

root=${PTYVISOR_XTERM_DIR:-${HOME:?HOME is not set}/.cache/ptyvisor/xterm-headless}
probe=$root/probe
mkdir -p "$probe"
cat >"$probe/package.json" <<'JSON'
{
  "name": "ptyvisor-xterm-probe",
  "version": "1.0.0",
  "private": true,
  "bin": {"xterm-headless-version": "version.sh"}
}
JSON
# $0 is the link in node_modules/.bin, so the package is found beside it.
cat >"$probe/version.sh" <<'SH'
#!/bin/sh
exec node -e '
const path = process.argv[1];
const {Terminal} = require(path);
const {Unicode11Addon} = require(process.argv[2]);
const term = new Terminal({cols: 10, rows: 2, allowProposedApi: true});
term.loadAddon(new Unicode11Addon());
term.unicode.activeVersion = "11";
term.dispose();
console.log(JSON.parse(require("fs").readFileSync(path + "/package.json", "utf8")).version);
' "$(dirname "$0")/../@xterm/headless" "$(dirname "$0")/../@xterm/addon-unicode11"
SH
chmod +x "$probe/version.sh"

exec bash "$(dirname "${BASH_SOURCE[0]}")/npm_install_pinned.sh" \
    --name install_xterm_headless --cache xterm-headless --root-var PTYVISOR_XTERM_DIR \
    --package-name ptyvisor-xterm-headless --bin xterm-headless-version \
    -- "$PIN" "$UNICODE11_PIN" "file:$probe"
