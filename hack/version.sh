#!/usr/bin/env bash
# version.sh prints the version that make stamps into every program, shown by
# --version (internal/cliflag): git describe --tags --always --dirty, e.g.
# v0.3.0-4-g1a2b3c4, or 14dbf14-dirty before the first tag; "unknown" outside
# a git checkout; VERSION instead when it is set.
#
# version.sh --tag prints it fit for an image tag (hack/images.sh): only
# [A-Za-z0-9_.-], other characters turned into -, at most 128 characters, not
# starting with . or -.
set -euo pipefail
cd "$(dirname "$0")/.."

v=${VERSION:-}
[[ -n $v ]] || v=$(git describe --tags --always --dirty 2>/dev/null) || v=unknown
if [[ ${1:-} == --tag ]]; then
  v=${v//[^A-Za-z0-9_.-]/-}
  [[ $v == [.-]* ]] && v=v$v
  v=${v:0:128}
fi
echo "$v"
