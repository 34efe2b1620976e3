#!/usr/bin/env bash
# The weekly check: do the agents' newest versions still work with ptyvisor?
#
#   scripts/check_agent_updates.sh [AGENT...]     (default: every agent)
#
# Asks the registry for the newest version of every package install_agents.sh pins,
# installs those into a separate cache (${PTYVISOR_AGENTS_DIR_NEWEST:-~/.cache/ptyvisor/
# agents-newest}, so the pinned install the suite uses stays as it is), runs each
# agent's end-to-end tests (tests/agents/clis, selected by the agent's name) against
# them, and prints a table: agent, pinned, newest, passed, failed. Not part of CI: the
# registry moves under it. A failure is where to look before moving a pin; the tests'
# expectations (a version drawn on the start screen, say) may be what changed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
python=${PYTHON:-$root/.venv/bin/python}

# package -> agent name the tests use (node is the runtime, not an agent).
declare -A AGENT_OF=(
    ["@anthropic-ai/claude-code"]=claude-code ["@openai/codex"]=codex
    ["opencode-ai"]=opencode ["@kilocode/cli"]=kilo
    ["@earendil-works/pi-coding-agent"]=pi ["@google/gemini-cli"]=gemini-cli
    ["@qwen-code/qwen-code"]=qwen-code
)
wanted=("$@")

newest_pins=()
declare -A PINNED NEWEST
while read -r pin; do
    package=${pin%@*}
    version=${pin##*@}
    latest=$(npm view "$package" version 2>/dev/null || echo "?")
    [[ $package == node ]] && latest=$version  # the runtime stays pinned
    [[ $latest == "?" ]] && latest=$version
    PINNED[$package]=$version
    NEWEST[$package]=$latest
    newest_pins+=("$package@$latest")
done < <(bash "$here/install_agents.sh" --pins)

echo "check_agent_updates: installing ${newest_pins[*]}" >&2
bin=$(PTYVISOR_AGENTS_DIR=${PTYVISOR_AGENTS_DIR_NEWEST:-$HOME/.cache/ptyvisor/agents-newest} \
    bash "$here/install_agents.sh" "${newest_pins[@]}" | tail -n 1)

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
(cd "$root" && PTYVISOR_AGENTS_BIN=$bin "$python" -m pytest -q --collect-only -p no:randomly \
    tests/agents/clis) | grep '::' >"$results/collected"
printf '%-14s %-12s %-12s %6s %6s\n' agent pinned newest passed failed
for package in "${!AGENT_OF[@]}"; do
    agent=${AGENT_OF[$package]}
    if [[ ${#wanted[@]} -gt 0 && ! " ${wanted[*]} " =~ " $agent " ]]; then continue; fi
    # This agent's tests: its own file (test_<agent>_*.py) and its parameter ([agent]
    # or [agent-N]) in the shared ones.
    underscored=${agent//-/_}
    mapfile -t ids < <(grep -E "/test_${underscored}_[a-z_]+\.py::|\[${agent}(-[0-9]+)?\]" \
        "$results/collected" || true)
    if [[ ${#ids[@]} -eq 0 ]]; then
        printf '%-14s %-12s %-12s %6s %6s\n' "$agent" "${PINNED[$package]}" \
            "${NEWEST[$package]}" - -
        continue
    fi
    (cd "$root" && PTYVISOR_AGENTS_BIN=$bin "$python" -m pytest -q -p no:randomly \
        "${ids[@]}" --junitxml "$results/$agent.xml" >"$results/$agent.log" 2>&1) || true
    counts=$("$python" - "$results/$agent.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
except (OSError, ET.ParseError):
    print("0 0")
    raise SystemExit
tests, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
print(tests - failed - int(suite.get("skipped", 0)), failed)
PY
)
    read -r passed failed <<<"$counts"
    printf '%-14s %-12s %-12s %6s %6s\n' "$agent" "${PINNED[$package]}" \
        "${NEWEST[$package]}" "$passed" "$failed"
    [[ $failed != 0 ]] && echo "  (log: kept below)" && tail -n 5 "$results/$agent.log" | sed 's/^/  /'
done
