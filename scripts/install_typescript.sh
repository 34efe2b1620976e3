#!/usr/bin/env bash
# Install the TypeScript compiler that checks `ptyvisor schema --typescript`, pinned.
#
#   scripts/install_typescript.sh    -> last stdout line: the node_modules/.bin directory
#
# Cached like the agent CLIs (npm_install_pinned.sh): in
# ${PTYVISOR_TYPESCRIPT_DIR:-~/.cache/ptyvisor/typescript}/<hash of the pin>, reused
# once a complete install's tsc answered --version. tsc 7 is a native binary that comes
# in a platform package (an optional dependency).
set -euo pipefail

PIN="typescript@7.0.2"

exec bash "$(dirname "${BASH_SOURCE[0]}")/npm_install_pinned.sh" \
    --name install_typescript --cache typescript --root-var PTYVISOR_TYPESCRIPT_DIR \
    --package-name ptyvisor-typescript --bin tsc -- "$PIN"
