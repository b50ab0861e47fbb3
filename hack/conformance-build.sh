#!/usr/bin/env bash
# conformance-build.sh SRC OUT: build, locally and offline, what it takes to
# run Kubernetes's own "[sig-network] DNS" and "[sig-network] Services" e2e
# specs against a cluster whose nodes run dockerd and cannot pull images.
#
# SRC is an Arktos source tree, the patched one that `make arktos-patch` leaves
# as WORK/src. OUT gets:
#
#   OUT/e2e.test          Kubernetes's e2e suite from SRC (CGO_ENABLED=1, -mod=vendor), its
#                         test/e2e/generated/bindata.go made by SRC's vendored go-bindata
#   OUT/ginkgo            the vendored ginkgo runner
#   OUT/images/*.tar      the images those specs run, one docker-archive each (`docker load -i`),
#                         built from SRC's test/images sources and Debian packages, never pulled
#   OUT/repo-list.yaml    KUBE_TEST_REPO_LIST: the registries the suite's image names start with,
#                         pointed at the local names the archives carry (tpkit-e2e/...)
#   OUT/README            what is where, how to load and run it, what cannot work here
#
# docs/conformance-images.md lists each image, the specs that use it and how it
# is built. Nothing is written into SRC: bindata.go is generated into a
# temporary folder and given to the compiler with `go test -c -overlay`.
#
# A second run skips what is up to date: e2e.test and the binaries while SRC's
# files (names, sizes, times) and the Go version are the same, Debian's root
# filesystems while apt names the same package versions (cached, like
# hack/images.sh's, in CONFORMANCE_CACHE, default ~/.cache/tpkit/conformance),
# and each archive while its layers and config are the same. FORCE=1 rebuilds
# everything. E2E_REGISTRY (default tpkit-e2e) is the prefix of every image
# name; BUSYBOX=FILE puts a static busybox of your own in the busybox images
# instead of the one built here from Debian's source package (see busybox_bin).
# Missing tools (mmdebstrap, gcc, make, dpkg-source, bzip2) come from
# hack/ensure-tools.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
me=conformance-build
say() { echo "$me: $*"; }
die() { echo "$me: error: $*" >&2; exit 1; }

[[ $# -eq 2 && -n $1 && -n $2 ]] || {
  echo "usage: $0 SRC OUT   (SRC: an Arktos source tree, e.g. WORK/src of make arktos-patch)" >&2
  exit 2
}
[[ -d $1 ]] || die "SRC $1: no such directory"
src=$(cd "$1" && pwd)
for f in test/utils/image/manifest.go test/e2e/e2e_test.go vendor/github.com/go-bindata/go-bindata/go-bindata \
  vendor/github.com/onsi/ginkgo/ginkgo test/images/agnhost test/images/test-webserver test/images/serve-hostname \
  test/images/echoserver/nginx.conf build/pause/pause.c hack/generate-bindata.sh; do
  [[ -e $src/$f ]] || die "SRC $src is not an Arktos (Kubernetes) source tree: it has no $f"
done
out=$(realpath -m "$2")
case $out/ in "$src"/*) die "OUT $out is inside SRC $src: SRC must stay untouched" ;; esac
mkdir -p "$out" || die "cannot create OUT $out"

command -v go >/dev/null 2>&1 || die "go is not on PATH"
"$root/hack/ensure-tools.sh" mmdebstrap python3 gcc make dpkg-source bzip2 ||
  die "missing tools (see above): hack/ensure-tools.sh mmdebstrap python3 gcc make dpkg-source bzip2"

FORCE=${FORCE:-0}
reg=${E2E_REGISTRY:-tpkit-e2e}
reg_e2e=$reg reg_library=$reg/library reg_gc=$reg/k8s
suite=${DEBIAN_SUITE:-bookworm}
arch=$(go env GOARCH)
cache=${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tpkit/conformance}
stamps=$out/.stamps
py=$root/hack/conformance-image.py
mkdir -p "$out/images" "$stamps" "$cache"/{bin,layers,rootfs}
work=$(mktemp -d -t tpkit-conformance.XXXXXX)
trap 'rm -rf "$work"' EXIT

export GOFLAGS=-mod=vendor GOWORK=off GO111MODULE=on GOTOOLCHAIN=local

# fresh NAME KEY FILE...: NAME's stamp says KEY and every FILE is there.
fresh() {
  local name=$1 key=$2 f
  shift 2
  [[ $FORCE != 1 && -f $stamps/$name && $(cat "$stamps/$name") == "$key" ]] || return 1
  for f in "$@"; do [[ -s $f ]] || return 1; done
}
stamp() { echo "$2" >"$stamps/$1"; }
sha() { sha256sum | cut -c1-16; }

# SRC's state: every file's name, size and time (a second or so), and the Go
# that compiles it.
say "SRC $src ($(go version | cut -d' ' -f3-))"
srckey=$({
  go version
  find "$src" \( -path "$src/.git" -o -path "$src/_output" \) -prune -o -type f -printf '%P %s %T@\n' | LC_ALL=C sort
} | sha)

# --- 1. e2e.test and ginkgo ---------------------------------------------------
focus='\[sig-network\] (DNS|Services)'
e2ekey="e2e.test v1 CGO_ENABLED=1 $srckey"
if fresh e2e.test "$e2ekey" "$out/e2e.test" "$out/ginkgo"; then
  say "e2e.test, ginkgo: up to date"
else
  say "go-bindata (vendored) -> test/e2e/generated/bindata.go, outside SRC"
  (cd "$src" && CGO_ENABLED=0 go build -o "$work/go-bindata" ./vendor/github.com/go-bindata/go-bindata/go-bindata) ||
    die "building the vendored go-bindata failed"
  # The arguments of SRC's hack/generate-bindata.sh, run from SRC's root.
  (cd "$src" && "$work/go-bindata" -nometadata -o "$work/bindata.go" -pkg generated \
    -ignore .jpg -ignore .png -ignore .md -ignore 'BUILD(\.bazel)?' \
    "test/e2e/testing-manifests/..." "test/images/..." "test/fixtures/...") || die "go-bindata failed"
  gofmt -s -w "$work/bindata.go"
  python3 -c 'import json, sys; json.dump({"Replace": {sys.argv[1]: sys.argv[2]}}, open(sys.argv[3], "w"))' \
    "$src/test/e2e/generated/bindata.go" "$work/bindata.go" "$work/overlay.json"
  say "e2e.test: go test -c ./test/e2e (CGO_ENABLED=1, -mod=vendor; several minutes on a cold build cache; log $work/e2e.log)"
  rm -f "$stamps/e2e.test"
  if ! (cd "$src" && CGO_ENABLED=1 go test -c -overlay "$work/overlay.json" -o "$work/e2e.test" ./test/e2e) >"$work/e2e.log" 2>&1; then
    tail -n 40 "$work/e2e.log" >&2
    die "building e2e.test failed"
  fi
  say "ginkgo: go build ./vendor/github.com/onsi/ginkgo/ginkgo"
  (cd "$src" && CGO_ENABLED=0 go build -buildvcs=false -o "$work/ginkgo" ./vendor/github.com/onsi/ginkgo/ginkgo) ||
    die "building ginkgo failed"
  mv -f "$work/e2e.test" "$out/e2e.test"
  mv -f "$work/ginkgo" "$out/ginkgo"
  stamp e2e.test "$e2ekey"
fi
# The dry run lists the specs without a cluster (and checks the binary runs).
(cd "$work" && "$out/e2e.test" --ginkgo.dryRun --ginkgo.noColor --ginkgo.v --ginkgo.focus="$focus") >"$work/dryrun.log" 2>&1 ||
  { tail -n 20 "$work/dryrun.log" >&2; die "e2e.test --ginkgo.dryRun failed"; }
ran=$(grep -o 'Ran [0-9]* of [0-9]* Specs' "$work/dryrun.log" | tail -n1)
[[ -n $ran ]] || die "e2e.test --ginkgo.dryRun printed no spec count (log: $work/dryrun.log)"
say "dry run, focus '$focus': $ran"
grep -A1 '^\[sig-network\]' "$work/dryrun.log" | grep -v '^--$' | paste - - | sed 's/[[:space:]]\+/ /g; s/ $//' |
  LC_ALL=C sort >"$out/specs.txt"

# --- 2. the static binaries ---------------------------------------------------
# agnhost (also netexec), test-webserver, serve-hostname: CGO_ENABLED=0 from
# SRC's test/images; pause: SRC's build/pause/pause.c, static, as its Makefile
# builds it.
bin=$cache/bin/$srckey
if [[ $FORCE != 1 && -x $bin/agnhost && -x $bin/test-webserver && -x $bin/serve-hostname && -x $bin/pause ]]; then
  say "agnhost, test-webserver, serve-hostname, pause: up to date"
else
  say "go build (CGO_ENABLED=0, static): test/images/agnhost, test/images/test-webserver, test/images/serve-hostname"
  rm -rf "$bin.tmp" && mkdir -p "$bin.tmp"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags=-s -o "$bin.tmp/" \
    ./test/images/agnhost ./test/images/test-webserver ./test/images/serve-hostname) || die "building the test images' binaries failed"
  say "gcc -static build/pause/pause.c"
  gcc -Os -Wall -static -DVERSION=v3.1-tpkit -o "$bin.tmp/pause" "$src/build/pause/pause.c" || die "building pause failed"
  strip "$bin.tmp/pause" 2>/dev/null || true
  rm -rf "$bin" && mv "$bin.tmp" "$bin"
fi
# Keep the newest three builds.
ls -dt "$cache"/bin/*/ 2>/dev/null | tail -n +4 | xargs -r rm -rf

# busybox: Debian's busybox-static, rebuilt from its Debian source package
# with one option more. Debian's bookworm build leaves out wget's -T (the
# "static" config says "# CONFIG_FEATURE_WGET_TIMEOUT is not set", until
# 1.36.1-5), and then `wget -T N` dereferences a null pointer: every use
# segfaults (exit 139). The Services specs run `wget -T ...` in their busybox
# exec pods (affinity, source IP, unready endpoints, no endpoints, serve-
# hostname checks), so the binary on this machine would fail them all. The
# source comes through apt (deb-src of the mirrors apt names for
# busybox-static, with lists of our own in the cache); the config is Debian's
# static one with CONFIG_FEATURE_WGET_TIMEOUT=y; the build takes a minute,
# once per Debian version. BUSYBOX=FILE uses a static busybox of your own.
busybox_bin() {
  local ver srcver d lists uris
  ver=$(apt-cache policy busybox-static 2>/dev/null | awk '$1 == "Candidate:" {print $2}')
  [[ -n $ver && $ver != "(none)" ]] || die "apt knows no busybox-static (apt-get update?); or set BUSYBOX to a static busybox"
  srcver=${ver%+b[0-9]*} # a binNMU (+bN) is built from the source without it
  d=$cache/busybox/${srcver//[:~]/_}
  if [[ $FORCE != 1 && -x $d/busybox ]]; then
    say "busybox $srcver with wget -T: up to date ($d/busybox)" >&2
    echo "$d/busybox"
    return
  fi
  say "busybox: Debian's source package $srcver, static config + CONFIG_FEATURE_WGET_TIMEOUT=y (a minute; log $work/busybox.log)" >&2
  # deb-src of the archives that carry busybox-static, e.g. "http://deb.debian.org/debian bookworm/main".
  uris=$(apt-cache policy busybox-static | awk '$2 ~ /^https?:/ && $3 ~ /\/main$/ {print $2, $3}' | sort -u)
  [[ -n $uris ]] || die "apt names no http(s) Debian archive for busybox-static; set BUSYBOX to a static busybox"
  lists=$cache/apt
  mkdir -p "$lists/lists/partial" "$lists/archives/partial" "$work/busybox"
  local key=/usr/share/keyrings/debian-archive-keyring.gpg opt=""
  [[ -f $key ]] && opt="[signed-by=$key] "
  echo "$uris" | while read -r uri suite; do echo "deb-src $opt$uri ${suite%/main} main"; done >"$lists/sources.list"
  local apt=(apt-get -q -o "Dir::Etc::SourceList=$lists/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$lists/lists" -o "Dir::Cache=$lists" -o APT::Sandbox::User=root)
  # One chain: errexit does not reach into a tested list. yes meets SIGPIPE
  # when make is done, so that pipeline goes without pipefail.
  if ! {
    "${apt[@]}" update &&
      (cd "$work/busybox" && "${apt[@]}" source --download-only "busybox=$srcver" && dpkg-source -x ./*.dsc src) &&
      (
        cd "$work/busybox/src" &&
          { cat debian/config/os/linux 2>/dev/null; cat debian/config/pkg/static; } |
          sed 's/^# CONFIG_FEATURE_WGET_TIMEOUT is not set$/CONFIG_FEATURE_WGET_TIMEOUT=y/' >.config &&
          grep -qx 'CONFIG_FEATURE_WGET_TIMEOUT=y' .config && grep -qx 'CONFIG_STATIC=y' .config &&
          (set +o pipefail; yes "" | make silentoldconfig) &&
          KCONFIG_NOTIMESTAMP=1 make -j"$(nproc)" busybox BB_EXTRA_VERSION="Debian $srcver, wget -T: tpkit" SKIP_STRIP=y &&
          strip busybox
      )
  } >"$work/busybox.log" 2>&1; then
    tail -n 30 "$work/busybox.log" >&2
    die "building busybox $srcver from Debian's source failed (apt reaching deb-src, dpkg-dev, make, gcc); BUSYBOX=FILE uses a static busybox of your own"
  fi
  local rc=0
  "$work/busybox/src/busybox" wget -T 1 -qO /dev/null http://127.0.0.1:1/ >/dev/null 2>&1 || rc=$?
  [[ $rc -eq 1 ]] || die "the busybox built from source fails wget -T (exit $rc, want 1: connection refused)"
  ldd "$work/busybox/src/busybox" >/dev/null 2>&1 && die "the busybox built from source is not static"
  rm -rf "$d.tmp" && mkdir -p "$d.tmp" && cp "$work/busybox/src/busybox" "$d.tmp/busybox"
  rm -rf "$d" && mv "$d.tmp" "$d"
  echo "$d/busybox"
}
if [[ -n ${BUSYBOX:-} ]]; then
  [[ -x $BUSYBOX ]] || die "BUSYBOX=$BUSYBOX is not an executable"
  busybox=$BUSYBOX
  say "busybox: $busybox (BUSYBOX)"
else
  busybox=$(busybox_bin)
fi
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is dynamically linked: the busybox image needs a static one"

# --- 3. Debian root filesystems (mmdebstrap) ----------------------------------
# rootfs NAME PACKAGES: a slim Debian root filesystem as a tar, from
# the cache while apt names the same versions (hack/images.sh's scheme). Prints
# its path.
. "$root/hack/debian-slim.sh"
# /var/log keeps its folders (nginx writes into its own).
mmslim=("${debian_slim[@]}" --customize-hook='find "$1"/var/log -type f -delete')
candidates() { # PKG...: "PKG VERSION" as apt would install each now
  apt-cache policy "$@" 2>/dev/null | awk '/^[^ ].*:$/ {p = substr($1, 1, length($1) - 1)} $1 == "Candidate:" {print p, $2}'
}
rootfs() {
  local name=$1 include=$2 recipe prefix last key tar
  recipe="$suite $arch --include=$include ${mmslim[*]}"
  prefix=$cache/rootfs/$name-$suite-$arch-$(printf '%s\n' "$recipe" | sha | cut -c1-8)
  key_of() { { echo "$recipe"; candidates $(awk '{print $1}' "$1"); } | sha; }
  last=$(ls -t "$prefix"-*.packages 2>/dev/null | head -n1) || true
  if [[ $FORCE != 1 && -n $last ]] && key=$(key_of "$last") && [[ -s $prefix-$key.tar ]]; then
    say "Debian $name root filesystem: up to date ($prefix-$key.tar)" >&2
    echo "$prefix-$key.tar"
    return
  fi
  say "mmdebstrap $suite --variant=essential --include=$include (a minute or so; log $work/mmdebstrap-$name.log)" >&2
  if ! SOURCE_DATE_EPOCH=0 mmdebstrap "${mmslim[@]}" --include="$include" "$suite" "$work/$name.tar" \
    >"$work/mmdebstrap-$name.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap-$name.log" >&2
    die "mmdebstrap failed for the $name root filesystem (does apt reach a Debian mirror? see /etc/apt/sources.list*)"
  fi
  tar -xOf "$work/$name.tar" ./var/lib/dpkg/status | awk '$1 == "Package:" {p = $2} $1 == "Version:" {print p, $2}' |
    sort >"$work/$name.packages"
  key=$(key_of "$work/$name.packages")
  tar=$prefix-$key.tar
  mv "$work/$name.packages" "${tar%.tar}.packages"
  mv "$work/$name.tar" "$tar"
  ls -t "$prefix"-*.tar | tail -n +3 | while read -r old; do rm -f "$old" "${old%.tar}.packages"; done
  echo "$tar"
}
# tools: what dnsutils (Alpine's bind-tools and dnsmasq), jessie-dnsutils
# (Debian's dnsutils) and agnhost (curl, nc, ss from iproute2) put on their
# base; the specs run dig, dnsmasq, getent, hostname -i, awk, seq, sh, cat, ss.
tools_fs=$(rootfs tools bind9-dnsutils,dnsmasq-base,iproute2,curl,netcat-openbsd,mawk,procps)
# nginx: echoserver's nginx with its Lua module, and openssl for its run.sh.
nginx_fs=$(rootfs nginx nginx,libnginx-mod-http-lua,openssl)

# --- 4. layers ----------------------------------------------------------------
# layer VAR NAME SPEC: a reproducible gzip layer in the cache, keyed by SPEC
# and the content of the files it names; sets L_VAR to its path and D_VAR to
# its diff ID.
layer() {
  local var=$1 name=$2 spec=$3 key file
  key=$({
    echo "layer v1 $spec"
    python3 -c 'import json, sys; [print(e["src"]) for e in json.loads(sys.argv[1]).get("entries", []) if "src" in e]' "$spec" |
      while read -r f; do sha256sum "$f"; done
  } | sha)
  file=$cache/layers/$name-$key.tar.gz
  if [[ $FORCE == 1 || ! -s $file || ! -s $file.diffid ]]; then
    say "layer $name"
    python3 -c 'import json, sys; s = json.loads(sys.argv[1]); s["out"] = sys.argv[2]; print(json.dumps(s))' "$spec" "$file" |
      python3 "$py" layer - >/dev/null || die "writing layer $name failed"
    ls -t "$cache/layers/$name"-*.tar.gz | tail -n +3 | while read -r old; do rm -f "$old" "$old.diffid"; done
  fi
  printf -v "L_$var" '%s' "$file"
  printf -v "D_$var" '%s' "$(cat "$file.diffid")"
}
j() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; } # a JSON string

# busybox: Debian's static busybox with a link per applet in /bin, as the
# busybox image has it, and the image's few files.
entries="{\"path\": \"/bin/busybox\", \"src\": $(j "$busybox"), \"mode\": 493}"
for a in $("$busybox" --list | LC_ALL=C sort); do
  [[ $a == busybox ]] || entries+=", {\"path\": \"/bin/$a\", \"type\": \"symlink\", \"target\": \"busybox\"}"
done
entries+=', {"path": "/etc/passwd", "content": "root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\nnobody:x:65534:65534:nobody:/home:/bin/false\n", "mode": 420}'
entries+=', {"path": "/etc/group", "content": "root:x:0:\ndaemon:x:1:\nnogroup:x:65534:\n", "mode": 420}'
for d in /home /usr/sbin /var/www; do entries+=", {\"path\": \"$d\", \"type\": \"dir\"}"; done
entries+=', {"path": "/root", "type": "dir", "mode": 448}, {"path": "/tmp", "type": "dir", "mode": 1023}'
layer busybox busybox "{\"entries\": [$entries]}"
layer tools debian-tools "{\"from_tar\": $(j "$tools_fs"), \"drop_dev\": true}"
layer nginx debian-nginx "{\"from_tar\": $(j "$nginx_fs"), \"drop_dev\": true}"
layer agnhost agnhost "{\"entries\": [{\"path\": \"/agnhost\", \"src\": $(j "$bin/agnhost")}, {\"path\": \"/uploads\", \"type\": \"dir\"}]}"
layer netexec netexec '{"entries": [{"path": "/netexec", "content": "#!/bin/sh\n# netexec:1.1 was its own program; agnhost netexec took its place (test/images/agnhost/netexec)\nexec /agnhost netexec \"$@\"\n", "mode": 493}]}'
layer webserver test-webserver "{\"entries\": [{\"path\": \"/test-webserver\", \"src\": $(j "$bin/test-webserver")}]}"
layer hostname serve-hostname "{\"entries\": [{\"path\": \"/serve_hostname\", \"src\": $(j "$bin/serve-hostname")}]}"
layer pause pause "{\"entries\": [{\"path\": \"/pause\", \"src\": $(j "$bin/pause")}]}"
# echoserver: SRC's nginx.conf, template.lua, README.md and run.sh as its
# Dockerfile adds them. Debian builds no lua-upstream module (nothing in the
# template uses it), so that load_module line goes; Debian's modules live in
# /usr/lib/nginx/modules, and its nginx runs workers as www-data.
sed -e '/ngx_http_lua_upstream_module/d' -e 's#load_module modules/#load_module /usr/lib/nginx/modules/#' \
  "$src/test/images/echoserver/nginx.conf" | { echo 'user www-data;'; cat; } >"$work/nginx.conf"
mkdir -p "$cache/echoserver" && cp "$work/nginx.conf" "$cache/echoserver/nginx.conf"
e=$src/test/images/echoserver
layer echo echoserver "{\"entries\": [
  {\"path\": \"/etc/nginx/nginx.conf\", \"src\": $(j "$cache/echoserver/nginx.conf"), \"mode\": 420},
  {\"path\": \"/usr/local/share/lua/5.1/template.lua\", \"src\": $(j "$e/template.lua"), \"mode\": 420},
  {\"path\": \"/README.md\", \"src\": $(j "$e/README.md"), \"mode\": 420},
  {\"path\": \"/usr/local/bin/run.sh\", \"src\": $(j "$e/run.sh"), \"mode\": 493},
  {\"path\": \"/run/nginx\", \"type\": \"dir\"}]}"

# --- 5. images ----------------------------------------------------------------
path_env='"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]'
built=()
# image FILE REF CONFIG LAYER...: write OUT/images/FILE.tar, the docker-archive
# of REF, unless it is up to date. A LAYER is "NAME:FILE:DIFF_ID".
image() {
  local file=$1 ref=$2 config=$3 layers="" l name lf did spec key
  shift 3
  for l in "$@"; do
    IFS=: read -r name lf did <<<"$l"
    layers+="${layers:+, }{\"file\": $(j "$lf"), \"diff_id\": \"sha256:${did#sha256:}\", \"created_by\": $(j "$name (hack/conformance-build.sh)")}"
  done
  spec="{\"out\": $(j "$out/images/$file.tar"), \"tag\": $(j "$ref"), \"arch\": \"$arch\", \"config\": {$config}, \"layers\": [$layers]}"
  key=$(echo "archive v1 $spec" | sha)
  built+=("$file.tar $ref")
  if fresh "image-$file" "$key" "$out/images/$file.tar"; then
    say "image $ref: up to date (images/$file.tar)"
    return
  fi
  say "image $ref -> images/$file.tar"
  echo "$spec" | python3 "$py" archive - >/dev/null || die "writing images/$file.tar failed"
  stamp "image-$file" "$key"
}
image agnhost "$reg_e2e/agnhost:2.0" \
  "$path_env, \"Entrypoint\": [\"/agnhost\"], \"Cmd\": [\"pause\"], \"ExposedPorts\": {\"8080/tcp\": {}, \"8081/tcp\": {}}" \
  "debian-tools:$L_tools:$D_tools" "agnhost:$L_agnhost:$D_agnhost"
image netexec "$reg_e2e/netexec:1.1" \
  "$path_env, \"Entrypoint\": [\"/agnhost\", \"netexec\"], \"ExposedPorts\": {\"8080/tcp\": {}, \"8081/udp\": {}}" \
  "busybox:$L_busybox:$D_busybox" "agnhost:$L_agnhost:$D_agnhost" "netexec:$L_netexec:$D_netexec"
# net:1.0 was test/images/net, now agnhost's net; the spec that asks for it
# (kube-proxy's mode, framework.ProxyMode) runs /bin/sleep and curl in it.
image net "$reg_e2e/net:1.0" \
  "$path_env, \"Entrypoint\": [\"/agnhost\", \"net\"]" \
  "debian-tools:$L_tools:$D_tools" "agnhost:$L_agnhost:$D_agnhost"
image dnsutils "$reg_e2e/dnsutils:1.1" "$path_env, \"Cmd\": [\"/bin/sh\"]" "debian-tools:$L_tools:$D_tools"
image jessie-dnsutils "$reg_e2e/jessie-dnsutils:1.0" "$path_env, \"Cmd\": [\"bash\"]" "debian-tools:$L_tools:$D_tools"
image test-webserver "$reg_e2e/test-webserver:1.0" \
  "$path_env, \"Entrypoint\": [\"/test-webserver\"], \"ExposedPorts\": {\"80/tcp\": {}}" \
  "test-webserver:$L_webserver:$D_webserver"
image serve-hostname "$reg_e2e/serve-hostname:1.1" \
  "$path_env, \"Entrypoint\": [\"/serve_hostname\"], \"ExposedPorts\": {\"9376/tcp\": {}}" \
  "busybox:$L_busybox:$D_busybox" "serve-hostname:$L_hostname:$D_hostname"
image echoserver "$reg_e2e/echoserver:2.2" \
  "$path_env, \"Entrypoint\": [\"/usr/local/bin/run.sh\"], \"ExposedPorts\": {\"8080/tcp\": {}, \"8443/tcp\": {}}, \"StopSignal\": \"SIGTERM\"" \
  "debian-nginx:$L_nginx:$D_nginx" "echoserver:$L_echo:$D_echo"
image busybox "$reg_library/busybox:1.29" "$path_env, \"Cmd\": [\"sh\"]" "busybox:$L_busybox:$D_busybox"
image pause "$reg_gc/pause:3.1" "$path_env, \"Entrypoint\": [\"/pause\"]" "pause:$L_pause:$D_pause"

# Each archive names its image as the suite will ask for it.
python3 - "$out/images" "${built[@]}" <<'PY' || die "an archive in $out/images is not what it should be"
import json, sys, tarfile
d, rows = sys.argv[1], [r.split(" ", 1) for r in sys.argv[2:]]
for f, ref in rows:
    with tarfile.open(f"{d}/{f}") as t:
        m = json.load(t.extractfile("manifest.json"))
        names = set(t.getnames())
    assert len(m) == 1 and m[0]["RepoTags"] == [ref], f"{f}: RepoTags {m[0]['RepoTags']}, want {ref}"
    missing = [p for p in [m[0]["Config"]] + m[0]["Layers"] if p not in names]
    assert not missing, f"{f}: missing {missing}"
PY

# --- 6. repo-list.yaml, README ------------------------------------------------
cat >"$out/repo-list.yaml" <<EOF
# KUBE_TEST_REPO_LIST for OUT/images (hack/conformance-build.sh): the registries
# of test/utils/image/manifest.go that the [sig-network] DNS and Services specs
# take images from, pointed at the names the archives carry. Registries not
# named here keep their defaults (nothing here provides their images).
e2eRegistry: $reg_e2e
dockerLibraryRegistry: $reg_library
gcRegistry: $reg_gc
EOF

# The names the suite itself makes from repo-list.yaml (SRC's
# test/utils/image, through a test file given by -overlay) must be the
# archives' names.
cat >"$work/names_test.go" <<'EOF'
package image

import (
	"fmt"
	"testing"
)

func TestConformanceBuildNames(t *testing.T) {
	for file, i := range map[string]int{"agnhost": Agnhost, "netexec": Netexec, "net": Net, "dnsutils": Dnsutils,
		"jessie-dnsutils": JessieDnsutils, "test-webserver": TestWebserver, "serve-hostname": ServeHostname,
		"echoserver": EchoServer, "busybox": BusyBox, "pause": Pause} {
		fmt.Printf("NAME %s.tar %s\n", file, GetE2EImage(i))
	}
}
EOF
python3 -c 'import json, sys; json.dump({"Replace": {sys.argv[1]: sys.argv[2]}}, open(sys.argv[3], "w"))' \
  "$src/test/utils/image/zz_conformance_build_names_test.go" "$work/names_test.go" "$work/names-overlay.json"
(cd "$src" && KUBE_TEST_REPO_LIST=$out/repo-list.yaml CGO_ENABLED=0 go test -count=1 -v -overlay "$work/names-overlay.json" \
  -run '^TestConformanceBuildNames$' ./test/utils/image) >"$work/names.log" 2>&1 ||
  { tail -n 20 "$work/names.log" >&2; die "asking SRC's test/utils/image for the suite's image names failed"; }
diff <(printf '%s\n' "${built[@]}" | LC_ALL=C sort) <(awk '$1 == "NAME" {print $2, $3}' "$work/names.log" | LC_ALL=C sort) >&2 ||
  die "the archives' names (<) are not the names the suite asks for with repo-list.yaml (>)"
say "the suite, with KUBE_TEST_REPO_LIST=repo-list.yaml, asks for exactly the ${#built[@]} names the archives carry"

bbnote="Debian's busybox-static, rebuilt from its source package with
    CONFIG_FEATURE_WGET_TIMEOUT=y."
[[ -n ${BUSYBOX:-} ]] && bbnote="$BUSYBOX (BUSYBOX), not Debian's busybox-static."
{
  cat <<EOF
Generated by tpkit's hack/conformance-build.sh from $src
($(cd "$src" && git describe --always --dirty 2>/dev/null || echo "not a git tree")).
The full notes: docs/conformance-images.md in tpkit.

Contents
  e2e.test, ginkgo    Kubernetes's e2e suite and runner, built from SRC
  specs.txt           the specs of --ginkgo.focus='$focus' ($ran, dry run)
  repo-list.yaml      KUBE_TEST_REPO_LIST
  images/*.tar        docker-archives, pulled from no registry:
EOF
  for r in "${built[@]}"; do
    set -- $r
    printf '                        %-24s %s\n' "$1" "$2"
  done
  cat <<EOF

Load the images on every node (dockerd; nothing pulls: no tag is "latest", so
pods use IfNotPresent):
  for f in images/*.tar; do docker load -i "\$f"; done

Run (from a machine that reaches the API server and the nodes' addresses; the
Services specs run kubectl exec, so give the suite Arktos's kubectl):
  KUBE_TEST_REPO_LIST=\$PWD/repo-list.yaml ./e2e.test --kubeconfig=KUBECONFIG \\
    --provider=local --kubectl-path=ARKTOS_KUBECTL \\
    --ginkgo.focus='$focus' --ginkgo.skip='\[Serial\]|\[Disruptive\]|\[Slow\]|\[Feature:'

Notes
  - The names start with $reg (E2E_REGISTRY), a name no registry answers: a
    missing image fails as ErrImagePull instead of fetching something else.
  - agnhost is SRC's test/images/agnhost (VERSION 2.1) under the name the suite
    asks for, agnhost:2.0; netexec:1.1 is agnhost's netexec (the program netexec
    became), on busybox as netexec:1.1 was; net:1.0 is agnhost's net, with curl
    (kube-proxy's mode, framework.ProxyMode).
  - dnsutils and jessie-dnsutils are one Debian $suite layer (dig, dnsmasq, ...),
    not Alpine 3.6 and Debian jessie; the CoreDNS binary their Dockerfiles
    download from GitHub is left out (no spec here runs it).
  - busybox: $bbnote
    Debian's own binary segfaults on every \`wget -T N\`, which the Services
    specs' exec pods run.
  - echoserver is Debian's nginx with its Lua module and SRC's nginx.conf, less
    the lua-upstream module that Debian does not build and nothing uses.
  - Pods' sandboxes use the kubelet's --pod-infra-container-image, not
    images/pause.tar (the suite's own pause pods use that).
  - Not runnable here, skipped or failing whatever the images: the LoadBalancer,
    ESIPP, internal-LB and health-check specs and the [Disruptive] restarts
    (cloud providers gce/gke/aws/azure), the specs that SSH to nodes (up and down
    services, service-proxy-name: --provider with SSH and a key), the DNS
    configMap specs (a kube-dns or CoreDNS pod labelled k8s-app=kube-dns and its
    ConfigMap; partition-dns reads none) and the IPv6 ones. The skip above
    leaves 32 specs: 30 that can pass and the 2 SSH ones, which skip themselves
    without a key.
EOF
} >"$out/README"

# --- 7. what is in OUT --------------------------------------------------------
say "done; OUT $out:"
(cd "$out" && find . -path ./.stamps -prune -o -type f -printf '%s %P\n' | LC_ALL=C sort -k2 |
  while read -r size path; do printf '  %8s  %s\n' "$(numfmt --to=iec --suffix=B "$size")" "$path"; done)
printf '  %8s  total\n' "$(du -sh --exclude=.stamps "$out" | cut -f1)"
