#!/usr/bin/env bash
# export.sh TREE: write the series in patches/ anew from the commits of the
# git repository TREE after its first commit (the Arktos tree with tpkit's
# cores vendored, as apply.sh makes it). The way to change the series:
# apply it (apply.sh, or `git am` onto such a tree), commit the change there,
# export. docs/vendoring.md, "Carrying the series", has the whole recipe.
#
# Every patch is authored and signed off (Signed-off-by, the DCO line that
# Arktos's contribution guide asks for) by tpkit's git identity, the one
# that commits to this repository (git var GIT_AUTHOR_IDENT here): the
# commits in TREE are rewritten to it first, keeping their dates and
# messages, so that a commit made in TREE under any name is exported as
# tpkit's.
set -euo pipefail
tree=${1:?usage: export.sh TREE}
here=$(cd "$(dirname "$0")" && pwd)
ident=$(git -C "$here" var GIT_AUTHOR_IDENT | sed 's/ [0-9]* [-+][0-9]*$//')
name=${ident% <*}
email=${ident##*<}
email=${email%>}
[ -n "$name" ] && [ -n "$email" ] || { echo "export.sh: set user.name and user.email in $here's git config" >&2; exit 2; }
base=$(git -C "$tree" rev-list --max-parents=0 HEAD)
out=$(git -C "$tree" -c user.name="$name" -c user.email="$email" rebase -q \
	--exec "git commit -q --amend --no-edit --no-verify --author='$name <$email>' --signoff" "$base" 2>&1) ||
	{ echo "$out" >&2; echo "export.sh: rewriting the authors in $tree failed" >&2; exit 1; }
rm -f "$here"/patches/*.patch
git -C "$tree" format-patch -q --no-numbered --zero-commit --no-signature -o "$here/patches" "$base..HEAD"
ls "$here/patches"
