#!/usr/bin/env bash
# Installs what graphrt needs to build and test on a Debian machine (run as root).
# The CUDA toolkit is optional: with /usr/local/cuda present the CUDA backend is built too.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(cmake g++ make pkg-config nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libpcre2-dev libutf8proc-dev
      libcpp-httplib-dev libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
fi
