#!/bin/sh
# Builds the binaries the Docker image ships (bgcheck-api, bgcheck-worker, bgcheckctl) into the
# directory given, creating it if need be:
#
#   deploy/build-static.sh OUTDIR
#
# The Dockerfile runs this script, and so does deploy's TestStaticBuild, so the build the tests
# check is the build the image ships. GOOS and GOARCH, when set, pick the target (the Dockerfile
# sets them for multi-platform builds); GO names the go command (default: go).
set -eu
out=${1:?usage: deploy/build-static.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

# CGO_ENABLED=0: no C library, so the binaries run on distroless/static or scratch.
# -trimpath: no paths of the build machine in the binaries (and reproducible builds).
# -s -w: no symbol table and no DWARF, a third smaller; panics still print file:line.
CGO_ENABLED=0 exec "${GO:-go}" build -trimpath -ldflags="-s -w" -o "$out/" \
	./cmd/bgcheck-api ./cmd/bgcheck-worker ./cmd/bgcheckctl
