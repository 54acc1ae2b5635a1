#!/usr/bin/env bash
# Fills .deps/include with the header-only dependencies (nlohmann-json, CLI11, fmt) and
# .deps/include + .deps/lib with PCRE2 and utf8proc (headers and static archives) from Debian's
# packages, so the build can travel to a GPU machine that has no apt (`carry: .deps`).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs .deps/include .deps/lib
(cd .deps/debs && apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev >/dev/null)
for d in .deps/debs/*.deb; do dpkg -x "$d" .deps/root; done
cp -r .deps/root/usr/include/* .deps/include/
cp .deps/root/usr/lib/*/libpcre2-8.a .deps/root/usr/lib/*/libutf8proc.a .deps/lib/
rm -rf .deps/root .deps/debs
echo "headers in .deps/include: $(ls .deps/include | tr '\n' ' ')"
echo "libraries in .deps/lib: $(ls .deps/lib | tr '\n' ' ')"
