#!/usr/bin/env bash
# Install @xterm/headless (the terminal bench_all.py compares ours with), pinned.
#
#   scripts/install_xterm_headless.sh   -> last stdout line: the node_modules/.bin directory
#                                          (@xterm/headless is in its parent folder)
#
# Cached like the agent CLIs (npm_install_pinned.sh): in
# ${PTYVISOR_XTERM_DIR:-~/.cache/ptyvisor/xterm-headless}/<hash of the pins>. The
# package has no executable for npm_install_pinned.sh to check, so a probe package is
# pinned beside it (from a folder this script writes): its one command loads the
# installed @xterm/headless in Node, makes a terminal and prints the package's version.
set -euo pipefail

PIN="@xterm/headless@6.0.0"

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
new Terminal({cols: 10, rows: 2, allowProposedApi: true}).dispose();
console.log(JSON.parse(require("fs").readFileSync(path + "/package.json", "utf8")).version);
' "$(dirname "$0")/../@xterm/headless"
SH
chmod +x "$probe/version.sh"

exec bash "$(dirname "${BASH_SOURCE[0]}")/npm_install_pinned.sh" \
    --name install_xterm_headless --cache xterm-headless --root-var PTYVISOR_XTERM_DIR \
    --package-name ptyvisor-xterm-headless --bin xterm-headless-version \
    -- "$PIN" "file:$probe"
