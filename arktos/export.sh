#!/usr/bin/env bash
# export.sh TREE: write the series in patches/ anew from the commits of the
# git repository TREE after its first commit (the Arktos tree with tpkit's
# cores vendored, as apply.sh makes it). The way to change the series:
# apply it (apply.sh, or `git am` onto such a tree), commit the change there,
# export. docs/vendoring.md, "Carrying the series", has the whole recipe.
set -euo pipefail
tree=${1:?usage: export.sh TREE}
here=$(cd "$(dirname "$0")" && pwd)
base=$(git -C "$tree" rev-list --max-parents=0 HEAD)
rm -f "$here"/patches/*.patch
git -C "$tree" format-patch -q --no-numbered --zero-commit --no-signature -o "$here/patches" "$base..HEAD"
ls "$here/patches"
