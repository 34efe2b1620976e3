#!/usr/bin/env bash
# Install the four agent CLIs the end-to-end tests drive, at exact pinned versions.
#
#   scripts/install_agents.sh        -> last stdout line: the node_modules/.bin directory
#
# Everything goes into ${PTYVISOR_AGENTS_DIR:-~/.cache/ptyvisor/agents}/<hash of the pins>,
# so changing a pin installs into a fresh folder and never mixes versions. A marker file
# is written only after a complete install whose binaries all answered `--version`; a
# folder without it (an interrupted or failed run) is wiped and installed again. A lock
# (flock) serialises concurrent runs. Pins are exact because an unpinned install of
# claude-code was seen resolving an old version.
set -euo pipefail

PINS=(
    "@anthropic-ai/claude-code@2.1.332"
    "@openai/codex@0.171.0"
    "opencode-ai@1.18.33"
    "@mariozechner/pi-coding-agent@0.73.1"
)
# The bin names the tests call; each must answer --version.
BINS=(claude codex opencode pi)

log() { printf 'install_agents: %s\n' "$*" >&2; }

command -v npm >/dev/null || { log "npm not found on PATH (Node.js 20+ with npm is required)"; exit 2; }
command -v flock >/dev/null || { log "flock not found on PATH (util-linux)"; exit 2; }

root=${PTYVISOR_AGENTS_DIR:-${HOME:?HOME is not set}/.cache/ptyvisor/agents}
hash=$(printf '%s\n' "${PINS[@]}" "$(uname -s)-$(uname -m)" | sha256sum | cut -c1-16)
dir=$root/$hash
bin=$dir/node_modules/.bin
marker=$dir/.ptyvisor-complete

mkdir -p "$root"
# The lock lives beside the folder, so the folder itself can be wiped while it is held.
exec 9>"$root/.lock-$hash"
if ! flock -n 9; then
    log "another install holds $root/.lock-$hash; waiting"
    flock -w 3600 9 || { log "timed out waiting for the lock"; exit 1; }
fi

installed() {
    [[ -f $marker ]] || return 1
    local name
    for name in "${BINS[@]}"; do
        [[ -x $bin/$name ]] || return 1
    done
}

if installed; then
    printf '%s\n' "$bin"
    exit 0
fi

if [[ -e $dir ]]; then
    log "removing incomplete install in $dir"
    rm -rf "$dir"
fi
mkdir -p "$dir"
# Newer npm (11.x) only warns about, and will later block, install scripts that a project
# has not approved; claude-code's and opencode's postinstall put the native binary in place.
cat >"$dir/package.json" <<'JSON'
{
  "name": "ptyvisor-test-agents",
  "private": true,
  "allowScripts": {"@anthropic-ai/claude-code": true, "opencode-ai": true}
}
JSON
log "installing ${PINS[*]} into $dir"
start=$SECONDS
# --include=optional and --ignore-scripts=false override any user/CI npm config that would
# leave out the platform binaries (they are optional dependencies) or their postinstall.
npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier \
    --include=optional --ignore-scripts=false --save-exact --loglevel=warn \
    "${PINS[@]}" >&2 9>&-

# Prove every binary runs, in a throwaway HOME so nothing writes to the user's config.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for name in "${BINS[@]}"; do
    if [[ ! -x $bin/$name ]]; then
        log "missing $bin/$name after install (is its optional platform package installed?)"
        exit 1
    fi
    if ! version=$(cd "$scratch" && HOME=$scratch XDG_CONFIG_HOME=$scratch/.config \
        XDG_DATA_HOME=$scratch/.data XDG_CACHE_HOME=$scratch/.cache \
        XDG_STATE_HOME=$scratch/.state CODEX_HOME=$scratch/.codex \
        CLAUDE_CONFIG_DIR=$scratch/.claude PI_CODING_AGENT_DIR=$scratch/.pi PI_OFFLINE=1 \
        DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
        OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
        timeout 60 "$bin/$name" --version </dev/null 2>&1 9>&-); then
        log "$name --version failed: $version"
        exit 1
    fi
    log "$name --version: $(printf '%s' "$version" | tail -n 1)"
done

date -u +%Y-%m-%dT%H:%M:%SZ >"$marker"
log "done in $((SECONDS - start)) s, $(du -sh "$dir" | cut -f1)"
printf '%s\n' "$bin"
