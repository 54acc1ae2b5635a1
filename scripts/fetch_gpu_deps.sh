#!/usr/bin/env bash
# Fills .deps/ from Debian's packages so the build can travel to a GPU machine that has no apt
# (`carry: .deps`):
#   .deps/include  header-only deps (nlohmann-json, CLI11, fmt), PCRE2 and utf8proc headers, and
#                  cpp-httplib's header with the OpenSSL, zlib and brotli headers it includes (Debian
#                  builds it with CPPHTTPLIB_{OPENSSL,ZLIB,BROTLI}_SUPPORT, which change its classes)
#   .deps/lib      static PCRE2 and utf8proc; the shared libcpp-httplib.so.0.11 and the brotli
#                  libraries it needs (files named by their sonames, no links), found at run time
#                  through the rpath CMake sets. libssl.so.3, libcrypto.so.3 and libz.so.1 are not
#                  carried: any image with Python has them (scripts/gpu_serving.sh checks with ldd).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs .deps/include .deps/lib
(cd .deps/debs && apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev \
  libcpp-httplib-dev libcpp-httplib0.11 libbrotli1 libbrotli-dev libssl-dev zlib1g-dev >/dev/null 2>&1)
for d in .deps/debs/*.deb; do dpkg -x "$d" .deps/root; done
cp -r .deps/root/usr/include/* .deps/include/
# OpenSSL's configuration headers live in the multiarch folder; merge them into openssl/.
cp -r .deps/root/usr/include/x86_64-linux-gnu/* .deps/include/ && rm -rf .deps/include/x86_64-linux-gnu
cp .deps/root/usr/lib/*/libpcre2-8.a .deps/root/usr/lib/*/libutf8proc.a .deps/lib/
for so in libcpp-httplib.so.0.11 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp -L .deps/root/usr/lib/x86_64-linux-gnu/$so .deps/lib/$so
done
rm -rf .deps/root .deps/debs
echo "headers in .deps/include: $(ls .deps/include | tr '\n' ' ')"
echo "libraries in .deps/lib: $(ls .deps/lib | tr '\n' ' ')"
