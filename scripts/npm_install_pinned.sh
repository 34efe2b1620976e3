#!/usr/bin/env bash
# Install npm packages at exact pinned versions into a cache folder; print its bin dir.
#
#   scripts/npm_install_pinned.sh --name install_agents --cache agents \
#       --root-var PTYVISOR_AGENTS_DIR --bin claude [--bin ...] [options] PIN...
#       -> last stdout line: the node_modules/.bin directory
#
# The shared part of install_agents.sh and install_typescript.sh. Everything goes into
# ${ROOT_VAR:-~/.cache/ptyvisor/CACHE}/<hash of the pins and platform>, so changing a pin
# installs into a fresh folder and never mixes versions. A marker file is written only
# after a complete install whose binaries all answered `--version`; a folder without it
# (an interrupted or failed run) is wiped and installed again. A lock (flock) serialises
# concurrent runs. Log lines go to stderr, prefixed with NAME.
#
# Options (--cache, --root-var, --package-name and one --bin at least are required):
#   --name NAME            prefix of the log lines (the calling script's name)
#   --cache DIR            folder under ~/.cache/ptyvisor that holds the installs
#   --root-var VAR         environment variable that, when set, replaces that folder
#   --package-name NAME    name in the install folder's package.json
#   --bin NAME             a node_modules/.bin entry that must answer --version (repeat)
#   --allow-scripts PKG    a package whose install scripts npm may run (repeat)
#   --env VAR=VALUE        set for the --version checks (repeat)
#   --home-env VAR=PATH    set to PATH inside the throwaway HOME of the checks (repeat)
set -euo pipefail

log_name=npm_install_pinned
cache=
root_var=
package_name=
BINS=()
ALLOW=()
CHECK_ENV=()
HOME_ENV=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --name) log_name=$2; shift 2;;
        --cache) cache=$2; shift 2;;
        --root-var) root_var=$2; shift 2;;
        --package-name) package_name=$2; shift 2;;
        --bin) BINS+=("$2"); shift 2;;
        --allow-scripts) ALLOW+=("$2"); shift 2;;
        --env) CHECK_ENV+=("$2"); shift 2;;
        --home-env) HOME_ENV+=("$2"); shift 2;;
        --) shift; break;;
        -*) printf 'npm_install_pinned: unknown option %s\n' "$1" >&2; exit 2;;
        *) break;;
    esac
done
PINS=("$@")

log() { printf '%s: %s\n' "$log_name" "$*" >&2; }

if [[ -z $cache || -z $root_var || -z $package_name || ${#BINS[@]} -eq 0 || ${#PINS[@]} -eq 0 ]]; then
    log "npm_install_pinned.sh needs --cache, --root-var, --package-name, --bin and pins"
    exit 2
fi
[[ $root_var =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { log "bad --root-var $root_var"; exit 2; }

command -v npm >/dev/null || { log "npm not found on PATH (Node.js 20+ with npm is required)"; exit 2; }
command -v flock >/dev/null || { log "flock not found on PATH (util-linux)"; exit 2; }

root=${!root_var:-${HOME:?HOME is not set}/.cache/ptyvisor/$cache}
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
# has not approved: the packages given with --allow-scripts are approved here.
allow=
for package in "${ALLOW[@]}"; do
    allow+="${allow:+, }\"$package\": true"
done
cat >"$dir/package.json" <<JSON
{
  "name": "$package_name",
  "private": true,
  "allowScripts": {$allow}
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
# The install's own binaries come first on PATH, as the tests run them: a pinned `node`
# there is the one a `#!/usr/bin/env node` script of the install starts on.
check_env=(
    PATH="$bin:$PATH" HOME="$scratch" XDG_CONFIG_HOME="$scratch/.config" XDG_DATA_HOME="$scratch/.data"
    XDG_CACHE_HOME="$scratch/.cache" XDG_STATE_HOME="$scratch/.state"
)
for setting in "${HOME_ENV[@]}"; do
    check_env+=("${setting%%=*}=$scratch/${setting#*=}")
done
check_env+=("${CHECK_ENV[@]}")
for name in "${BINS[@]}"; do
    if [[ ! -x $bin/$name ]]; then
        log "missing $bin/$name after install (is its optional platform package installed?)"
        exit 1
    fi
    if ! version=$(cd "$scratch" && env "${check_env[@]}" \
        timeout 60 "$bin/$name" --version </dev/null 2>&1 9>&-); then
        log "$name --version failed: $version"
        exit 1
    fi
    log "$name --version: $(printf '%s' "$version" | tail -n 1)"
done

date -u +%Y-%m-%dT%H:%M:%SZ >"$marker"
log "done in $((SECONDS - start)) s, $(du -sh "$dir" | cut -f1)"
printf '%s\n' "$bin"
