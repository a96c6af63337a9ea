# ci/lib.sh — shared by the ci/ scripts: package checks and the build.
# Sourced, not run. Every function exits non-zero with a message on failure.

LG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LG_BUILD=${LG_BUILD:-$LG_ROOT/build}

# Debian packages the build and tests need (README "Dependencies" says why each is there).
LG_PACKAGES=(cmake make gcc pkg-config binutils
             libjemalloc-dev libcriterion-dev libopenblas-dev libjansson-dev
             gnuplot-nox libxml2-utils python3 python3-jsonschema python3-yaml)

lg_log() { printf '\033[1m[ci]\033[0m %s\n' "$*" >&2; }

# lg_require_packages PKG... — installs what is missing when root, else prints the command.
lg_require_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        lg_log "installing missing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq || { lg_log "apt-get update failed"; return 2; }
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
            { lg_log "apt-get install failed for: ${missing[*]}"; return 2; }
    else
        lg_log "missing Debian packages; install them with:"
        echo "  sudo apt-get install -y ${missing[*]}" >&2
        return 2
    fi
}

# lg_configure_build [TARGET...] — configures (RelWithDebInfo, CUDA when nvcc is found) and builds.
lg_configure_build() {
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    mkdir -p "$LG_BUILD"
    cmake -S "$LG_ROOT" -B "$LG_BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLG_CUDA=${LG_CUDA:-AUTO} \
        ${LG_CMAKE_ARGS:-} >"$LG_BUILD/configure.log" 2>&1 ||
        { cat "$LG_BUILD/configure.log" >&2; lg_log "configure failed"; return 4; }
    if [ $# -gt 0 ]; then
        cmake --build "$LG_BUILD" -j "$jobs" --target "$@" || { lg_log "build failed"; return 4; }
    else
        cmake --build "$LG_BUILD" -j "$jobs" || { lg_log "build failed"; return 4; }
    fi
}
