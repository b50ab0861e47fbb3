#!/usr/bin/env bash
# arktos-src.sh ARKTOS_GIT SRC [STOCK_BIN]: prepare Arktos's source for make
# arktos-patch (make arktos-src).
#
# arktos/apply.sh needs a tree of CentaurusInfra/arktos at 6685f14 that builds
# with today's Go, and Arktos's repository alone does not give one. This script
# makes it, into SRC (which must not exist, or be empty):
#
# 1. The source. ARKTOS_GIT is a git URL or a local clone (or bare git dir)
#    holding 6685f14; a URL is fetched into a scratch bare repository first.
#    `git archive` extracts the commit, keeping symlinks (vendor/k8s.io/* link
#    to staging/src/k8s.io/*) and exec bits. Some copies of the repository
#    lack a few large blobs, and then git archive fails: the tree is then
#    extracted blob by blob (git ls-tree -r -z and one git cat-file --batch),
#    skipping the missing blobs and naming them. Only two matter to a build:
#    vendor/google.golang.org/api/compute/{v0.alpha,v0.beta}/compute-gen.go.
# 2. Those two files, when missing, come from the Go module proxy: the version
#    vendor/modules.txt replaces google.golang.org/api with, downloaded by `go
#    mod download` in a scratch module.
# 3. reflect2 v1.0.1 -> v1.0.2: v1.0.1 reads the runtime's internals in a way
#    Go 1.18 and later break (maps and the JSON codec crash at run time). The
#    go.mod replace, the vendor/modules.txt header, go.sum and the vendored
#    files all move to v1.0.2, so that -mod=vendor stays consistent.
# 4. pkg/generated/openapi/zz_generated.openapi.go, which Arktos does not
#    commit and kube-apiserver needs, is generated as Arktos's
#    build/root/Makefile.generated_files does: the vendored openapi-gen, in
#    GOPATH mode, over every package tagged +k8s:openapi-gen=. The API rule
#    violations it reports must equal api/api-rules/violation_exceptions.list,
#    as Arktos's own build demands.
# 5. A self-check of the result (the same test that lets a second run over a
#    prepared SRC skip straight to the build).
# 6. With STOCK_BIN, the stock binaries the labs compare the patched ones with:
#    kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy and
#    kubectl without cgo, kubelet and hollow-node (cmd/kubemark) with it (the
#    kubelet's NVML binding and the fake docker client need it). -trimpath as
#    in arktos/apply.sh, so that the patched build reuses the build cache.
#
# The tree is built in SRC.arktos-src-partial and renamed to SRC only once
# complete, so a failed run leaves no half-prepared SRC behind.
set -euo pipefail

usage='usage: arktos-src.sh ARKTOS_GIT SRC [STOCK_BIN]'
git_src=${1:?$usage}
src=${2:?$usage}
stock_bin=${3:-}
commit=6685f1442b4ee47ed30ab179adde7bce13150bf6
api_mod=google.golang.org/api@v0.0.0-20181220000619-583d854617af
reflect2_mod=github.com/modern-go/reflect2@v1.0.2
compute_files=(vendor/google.golang.org/api/compute/v0.alpha/compute-gen.go vendor/google.golang.org/api/compute/v0.beta/compute-gen.go)
openapi_file=pkg/generated/openapi/zz_generated.openapi.go

die() { echo "arktos-src.sh: $*" >&2; exit 2; }
command -v go >/dev/null || die "go is not installed (Go 1.18 or later is needed)"
command -v git >/dev/null || die "git is not installed"
export GOTOOLCHAIN=local

# prepared DIR: is DIR a complete prepared tree? Prints what is missing.
prepared() {
	local d=$1 f ok=0
	grep -q '^module k8s.io/kubernetes$' "$d/go.mod" 2>/dev/null || { echo "go.mod is not module k8s.io/kubernetes"; return 1; }
	for f in "$openapi_file" "${compute_files[@]}" vendor/github.com/modern-go/reflect2/go_above_118.go; do
		[ -s "$d/$f" ] || { echo "no $f"; ok=1; }
	done
	grep -q '^	github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.2$' "$d/go.mod" || { echo "go.mod does not replace reflect2 with v1.0.2"; ok=1; }
	grep -q '^# github.com/modern-go/reflect2 v1.0.1 => github.com/modern-go/reflect2 v1.0.2$' "$d/vendor/modules.txt" || { echo "vendor/modules.txt does not name reflect2 v1.0.2"; ok=1; }
	grep -q '^github.com/modern-go/reflect2 v1.0.2 h1:' "$d/go.sum" || { echo "go.sum has no reflect2 v1.0.2"; ok=1; }
	return $ok
}

# extract_blobs GITDIR DEST: the commit's files one by one, skipping missing
# blobs (their paths go to DEST.missing).
extract_blobs() {
	local g=$1 dest=$2 entry meta mode rest type obj path p hobj htype size dir lastdir= fd i
	local -a modes=() objs=() paths=() missing=()
	while IFS= read -r -d '' entry; do
		meta=${entry%%$'\t'*} path=${entry#*$'\t'}
		mode=${meta%% *} rest=${meta#* }
		type=${rest%% *} obj=${rest#* }
		[ "$type" = blob ] || { echo "   skipping $type $path"; continue; }
		modes+=("$mode") objs+=("$obj") paths+=("$path")
	done < <(git -C "$g" ls-tree -r -z "$commit")
	exec {fd}< <(printf '%s\n' "${objs[@]}" | git -C "$g" cat-file --batch)
	for i in "${!objs[@]}"; do
		IFS=' ' read -r -u "$fd" hobj htype size
		[ "$hobj" = "${objs[$i]}" ] || die "git cat-file --batch answered $hobj for ${objs[$i]}"
		if [ "$htype" = missing ]; then
			missing+=("${paths[$i]}")
			continue
		fi
		p=$dest/${paths[$i]}
		dir=${p%/*}
		[ "$dir" = "$lastdir" ] || { mkdir -p "$dir"; lastdir=$dir; }
		# dd with count_bytes reads exactly the blob's size and no further,
		# leaving the stream at the next header.
		if [ "${modes[$i]}" = 120000 ]; then
			ln -s "$(dd bs=1M count="$size" iflag=count_bytes,fullblock status=none <&"$fd")" "$p"
		else
			dd bs=1M count="$size" iflag=count_bytes,fullblock status=none <&"$fd" >"$p"
			[ "${modes[$i]}" != 100755 ] || chmod 755 "$p"
		fi
		IFS= read -r -u "$fd" _ # the newline after the contents
	done
	exec {fd}<&-
	printf '%s\n' "${missing[@]}" >"$dest.missing"
	[ ${#missing[@]} -gt 0 ] || : >"$dest.missing"
}

# modfield JSON FIELD: a string field of go mod download -json's output.
modfield() { sed -n "s|^\t\"$2\": \"\(.*\)\",\{0,1\}$|\1|p" <<<"$1"; }

# download MODULE@VERSION: go mod download -json in the scratch module.
download() {
	(cd "$tmp/mod" && GOFLAGS=-mod=mod go mod download -json "$1") || die "go mod download $1 failed (is the Go module proxy reachable? GOPROXY=$(go env GOPROXY))"
}

build_stock() {
	[ -n "$stock_bin" ] || return 0
	echo "== building the stock binaries into $stock_bin"
	mkdir -p "$stock_bin"
	cd "$src"
	export GOFLAGS="-mod=vendor -trimpath"
	CGO_ENABLED=0 go build -o "$stock_bin/" ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler ./cmd/kube-proxy ./cmd/kubectl
	CGO_ENABLED=1 go build -o "$stock_bin/" ./cmd/kubelet
	CGO_ENABLED=1 go build -o "$stock_bin/hollow-node" ./cmd/kubemark
	ls -l "$stock_bin"
}

src=${src%/}
[ -z "$stock_bin" ] || { mkdir -p "$stock_bin" && stock_bin=$(cd "$stock_bin" && pwd); }
if [ -e "$src" ] && [ -n "$(ls -A "$src" 2>/dev/null)" ]; then
	if why=$(prepared "$src"); then
		echo "== $src is already a prepared Arktos 6685f14 tree: skipping to the build"
		build_stock
		echo "== ok: Arktos source in $src${stock_bin:+, stock binaries in $stock_bin}"
		exit 0
	fi
	die "$src exists, is not empty and is not a prepared tree ($(echo $why)): name a new folder, or remove it"
fi
[ ! -e "$src" ] || [ -d "$src" ] || die "$src exists and is not a folder"
mkdir -p "$(dirname "$src")"
src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")
part=$src.arktos-src-partial
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
umask 022

# 1. The source.
if [ -d "$git_src" ] && git -C "$git_src" rev-parse --git-dir >/dev/null 2>&1; then
	gitdir=$(cd "$git_src" && cd "$(git rev-parse --git-dir)" && pwd)
else
	echo "== fetching $commit from $git_src"
	gitdir=$tmp/arktos.git
	git init -q --bare "$gitdir"
	git -C "$gitdir" fetch -q --depth 1 "$git_src" "$commit" 2>/dev/null ||
		git -C "$gitdir" fetch -q "$git_src" '+refs/heads/*:refs/heads/*' ||
		die "$git_src is neither a git directory nor a git URL that git can fetch from"
fi
git -C "$gitdir" cat-file -e "$commit^{commit}" 2>/dev/null || die "$git_src does not hold Arktos commit ${commit:0:7}"

rm -rf "$part" "$part.missing"
mkdir -p "$part"
echo "== extracting ${commit:0:7} from $gitdir into $part"
if ! git -C "$gitdir" -c tar.umask=022 archive --format=tar "$commit" | tar -x -C "$part"; then
	echo "== git archive failed (missing blobs?): extracting blob by blob"
	rm -rf "$part" && mkdir -p "$part"
	extract_blobs "$gitdir" "$part"
	if [ -s "$part.missing" ]; then
		echo "   missing from $git_src (skipped; only the two compute-gen.go matter, restored next):"
		sed 's/^/     /' "$part.missing"
	fi
	rm -f "$part.missing"
fi
grep -q '^module k8s.io/kubernetes$' "$part/go.mod" || die "$part/go.mod is not module k8s.io/kubernetes"

mkdir -p "$tmp/mod"
(cd "$tmp/mod" && go mod init arktos-src-scratch >/dev/null 2>&1)

# 2. The two compute-gen.go files.
need=()
for f in "${compute_files[@]}"; do [ -s "$part/$f" ] || need+=("$f"); done
if [ ${#need[@]} -gt 0 ]; then
	echo "== restoring ${need[*]} from $api_mod"
	grep -qx "# google.golang.org/api v0.8.0 => ${api_mod/@/ }" "$part/vendor/modules.txt" || die "vendor/modules.txt does not replace google.golang.org/api with ${api_mod#*@}"
	json=$(download "$api_mod")
	dir=$(modfield "$json" Dir)
	[ -d "$dir" ] || die "go mod download $api_mod gave no Dir"
	for f in "${need[@]}"; do
		install -m 644 "$dir/${f#vendor/google.golang.org/api/}" "$part/$f"
	done
fi

# 3. reflect2 v1.0.2.
echo "== reflect2 v1.0.1 -> v1.0.2"
json=$(download "$reflect2_mod")
dir=$(modfield "$json" Dir) sum=$(modfield "$json" Sum) modsum=$(modfield "$json" GoModSum)
[ -n "$dir" ] && [ -n "$sum" ] && [ -n "$modsum" ] || die "go mod download $reflect2_mod gave no Dir, Sum or GoModSum"
grep -q '^	github.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.1$' "$part/go.mod" || die "go.mod does not replace reflect2 with v1.0.1 (not Arktos 6685f14?)"
sed -i 's|^\(\tgithub.com/modern-go/reflect2 => github.com/modern-go/reflect2\) v1.0.1$|\1 v1.0.2|' "$part/go.mod"
sed -i 's|^# github.com/modern-go/reflect2 v1.0.1 => github.com/modern-go/reflect2 v1.0.1$|# github.com/modern-go/reflect2 v1.0.1 => github.com/modern-go/reflect2 v1.0.2|' "$part/vendor/modules.txt"
grep -q '^github.com/modern-go/reflect2 v1.0.2 h1:' "$part/go.sum" || {
	# After v1.0.1's lines, where go mod tidy would put them.
	sed -i -e "/^github.com\/modern-go\/reflect2 v1.0.1\/go.mod /a github.com/modern-go/reflect2 v1.0.2 $sum" \
		-e "/^github.com\/modern-go\/reflect2 v1.0.1\/go.mod /a github.com/modern-go/reflect2 v1.0.2/go.mod $modsum" "$part/go.sum"
}
grep -q "^github.com/modern-go/reflect2 v1.0.2 $sum$" "$part/go.sum" || die "could not add reflect2 v1.0.2 to go.sum"
rdir=$part/vendor/github.com/modern-go/reflect2
rm -rf "$rdir" && mkdir -p "$rdir"
(cd "$dir" && find . -type f ! -name go.mod ! -name '*_test.go' ! -path './tests/*' -print0 | xargs -0 cp --parents -t "$rdir")
chmod -R u+w "$rdir"

# 4. The generated openapi file.
echo "== generating $openapi_file"
(cd "$part" && GOFLAGS="-mod=vendor -trimpath" go build -o "$tmp/openapi-gen" k8s.io/kube-openapi/cmd/openapi-gen)
# Makefile.generated_files: every folder with .go files (staging/src read as
# vendor/; vendor, _*, .* and docs pruned at the top), the .go files there
# with a `// +k8s:` line, those of them naming +k8s:openapi-gen=, minus
# code-generator's and sample-apiserver's.
mapfile -t pkgs < <(cd "$part" && find -H . \( -path ./vendor -o -path './_*' -o -path './.*' -o -path ./docs \) -prune -o -type f -name '*.go' -print |
	sed -e 's|^./staging/src|vendor|' -e 's|^\./||' -e 's|/[^/]*$||' | LC_ALL=C sort -u |
	while read -r d; do find "$d" -maxdepth 1 -type f -name '*.go'; done |
	xargs grep -l '^// *+k8s:' | xargs grep -l '+k8s:openapi-gen=' |
	grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' |
	xargs -n1 dirname | LC_ALL=C sort -u)
[ ${#pkgs[@]} -gt 0 ] || die "found no package tagged +k8s:openapi-gen="
echo "   ${#pkgs[@]} packages"
mkdir -p "$tmp/gopath/src/k8s.io"
ln -s "$part" "$tmp/gopath/src/k8s.io/kubernetes"
inputs=$(printf 'k8s.io/kubernetes/%s,' "${pkgs[@]}")
(cd "$tmp/gopath/src/k8s.io/kubernetes" && GO111MODULE=off GOPATH=$tmp/gopath GOFLAGS= "$tmp/openapi-gen" \
	-i "${inputs%,}" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
	-h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$tmp/violations.report")
[ -s "$part/$openapi_file" ] || die "openapi-gen wrote no $openapi_file"
diff "$tmp/violations.report" "$part/api/api-rules/violation_exceptions.list" ||
	die "openapi-gen's API rule violations differ from api/api-rules/violation_exceptions.list (diff above)"

# 5. The self-check.
why=$(prepared "$part") || die "the prepared tree is incomplete: $(echo $why)"
[ ! -d "$src" ] || rmdir "$src"
mv "$part" "$src"
echo "== prepared Arktos ${commit:0:7} in $src"

# 6. The stock binaries.
build_stock
echo "== ok: Arktos source in $src${stock_bin:+, stock binaries in $stock_bin}"
