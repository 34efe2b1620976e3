#!/usr/bin/env bash
# The weekly check: do the agents' newest versions still work with ptyvisor?
#
#   scripts/check_agent_updates.sh [AGENT...]     (default: every agent)
#
# Asks the registry for the newest version of every package install_agents.sh pins.
# For each agent whose newest differs from its pin, installs the pinned set with just
# that one moved (into ${PTYVISOR_AGENTS_DIR_NEWEST:-~/.cache/ptyvisor/agents-newest},
# so the install the suite uses stays as it is) and runs that agent's end-to-end tests
# (tests/agents/clis) against it. Prints a table: agent, pinned, newest, passed,
# failed; a newest version that does not install says so in its row (the registry
# sometimes lacks a platform package for days). Not part of CI: the registry moves
# under it. A failure is where to look before moving a pin; the tests' expectations
# (a version drawn on the start screen, say) may be what changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
python=${PYTHON:-$root/.venv/bin/python}
cache=${PTYVISOR_AGENTS_DIR_NEWEST:-$HOME/.cache/ptyvisor/agents-newest}

# package -> agent name the tests use (node and bun are runtimes, not agents;
# @factory/cli-linux-x64 is droid's binary, moved with its pin by hand).
declare -A AGENT_OF=(
    ["@anthropic-ai/claude-code"]=claude-code ["@openai/codex"]=codex
    ["opencode-ai"]=opencode ["@kilocode/cli"]=kilo
    ["@earendil-works/pi-coding-agent"]=pi ["@google/gemini-cli"]=gemini-cli
    ["@qwen-code/qwen-code"]=qwen-code ["@github/copilot"]=copilot
    ["@oh-my-pi/pi-coding-agent"]=oh-my-pi ["@factory/cli"]=droid
    ["cline"]=cline
)
wanted=("$@")

mapfile -t pins < <(bash "$here/install_agents.sh" --pins)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
(cd "$root" && "$python" -m pytest -q --collect-only -p no:randomly tests/agents/clis) \
    | grep '::' >"$results/collected"

row() { printf '%-12s %-10s %-10s %6s %6s  %s\n' "$@"; }
row agent pinned newest passed failed ""
for pin in "${pins[@]}"; do
    package=${pin%@*}
    pinned=${pin##*@}
    agent=${AGENT_OF[$package]:-}
    [[ -z $agent ]] && continue
    if [[ ${#wanted[@]} -gt 0 && ! " ${wanted[*]} " =~ " $agent " ]]; then continue; fi
    newest=$(npm view "$package" version 2>/dev/null || echo "?")
    if [[ $newest == "?" || $newest == "$pinned" ]]; then
        row "$agent" "$pinned" "$newest" - - "the pinned version is the newest"
        continue
    fi
    # The pinned set with this one agent moved to its newest version.
    moved=()
    for other in "${pins[@]}"; do
        [[ ${other%@*} == "$package" ]] && moved+=("$package@$newest") || moved+=("$other")
    done
    if ! bin=$(PTYVISOR_AGENTS_DIR=$cache bash "$here/install_agents.sh" "${moved[@]}" \
        2>"$results/$agent.install" | tail -n 1); then
        why=$( (grep -m1 -iE 'notarget|no matching version|failed to' "$results/$agent.install" \
            || grep -m1 -i 'error' "$results/$agent.install") | sed 's/^npm error //' | cut -c1-90)
        row "$agent" "$pinned" "$newest" - - "does not install: ${why:-see the npm log}"
        continue
    fi
    # This agent's tests: its own file (test_<agent>_*.py) and its parameter ([agent]
    # or [agent-N]) in the shared ones.
    underscored=${agent//-/_}
    mapfile -t ids < <(grep -E "/test_${underscored}_[a-z0-9_]+\.py::|\[${agent}(-[0-9]+)?\]" \
        "$results/collected" || true)
    (cd "$root" && PTYVISOR_AGENTS_BIN=$bin "$python" -m pytest -q -p no:randomly \
        "${ids[@]}" --junitxml "$results/$agent.xml" >"$results/$agent.log" 2>&1) || true
    read -r passed failed < <("$python" - "$results/$agent.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
except (OSError, ET.ParseError):
    suite = None
if suite is None:
    print("0 0")
else:
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    print(int(suite.get("tests", 0)) - failed - int(suite.get("skipped", 0)), failed)
PY
)
    row "$agent" "$pinned" "$newest" "$passed" "$failed" ""
    if [[ $failed != 0 ]]; then tail -n 5 "$results/$agent.log" | sed 's/^/    /'; fi
done
