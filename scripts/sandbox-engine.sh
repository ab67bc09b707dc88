#!/usr/bin/env bash
# A Docker engine and the sandbox's base image, for the smoke-run tests (idempotent).
# Installs docker.io from Debian when no engine answers, starts dockerd, and builds
# `paperlens-sandbox:bookworm` (Debian minbase + python3, pytest and numpy; no registry needed).
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE="${PAPERLENS_SANDBOX_BASE:-paperlens-sandbox:bookworm}"
LOGDIR="${TMPDIR:-/tmp}/paperlens-engine"
mkdir -p "$LOGDIR"

if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    echo "sandbox-engine: installing docker.io and debootstrap from Debian" >&2
    apt-get update -qq >"$LOGDIR/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >>"$LOGDIR/apt.log" 2>&1
  fi
  # A pid file an engine left when it did not stop cleanly makes dockerd wait for a containerd
  # that is gone (its pid may even belong to another process by now).
  PIDFILE=/var/run/docker/containerd/containerd.pid
  if [ -f "$PIDFILE" ] && [ "$(cat "/proc/$(cat "$PIDFILE")/comm" 2>/dev/null)" != containerd ]; then rm -f "$PIDFILE"; fi
  echo "sandbox-engine: starting dockerd (log: $LOGDIR/dockerd.log)" >&2
  (setsid dockerd >"$LOGDIR/dockerd.log" 2>&1 &)
  for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "sandbox-engine: dockerd did not start; see $LOGDIR/dockerd.log" >&2; exit 1; }
fi

if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >>"$LOGDIR/apt.log" 2>&1
  ROOTFS="$(mktemp -d)"
  echo "sandbox-engine: building $IMAGE from Debian packages (about a minute)" >&2
  debootstrap --variant=minbase --include=python3,python3-pytest,python3-numpy bookworm "$ROOTFS" http://deb.debian.org/debian >"$LOGDIR/debootstrap.log" 2>&1
  tar -C "$ROOTFS" -c . | docker import - "$IMAGE" >/dev/null
  rm -rf "$ROOTFS"
fi
echo "sandbox-engine: ready ($IMAGE)" >&2
