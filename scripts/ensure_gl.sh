#!/usr/bin/env bash
# Headless rendering for dm_control needs EGL (Mesa on CPU, the NVIDIA driver on GPU nodes).
# Installs Debian's packages when they are missing and we are root; otherwise prints the command and fails.
set -euo pipefail
PKGS="libegl1 libegl-mesa0 libgl1-mesa-dri libglib2.0-0"
have() { ldconfig -p 2>/dev/null | grep -q "$1"; }
if have 'libEGL.so.1' && have 'libEGL_mesa.so.0' && { have 'libgallium' || ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1 || ls /usr/lib/*/dri/*.so >/dev/null 2>&1; }; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] installing headless GL packages: $PKGS"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
else
  echo "[setup] headless rendering needs EGL; run as root: apt-get update && apt-get install -y $PKGS" >&2
  exit 1
fi
