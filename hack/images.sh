#!/usr/bin/env bash
# images.sh DIR (make images IMAGE_DIR=DIR): build tpkit's container images,
# pulling nothing from any container registry, as one OCI archive per image:
#
#   DIR/partition-dns.oci.tar         tpkit/partition-dns:TAG         the binary on a slim Debian
#                                                                     root filesystem with iptables
#                                                                     and ip (node-cache's tools)
#   DIR/tp-admission-webhook.oci.tar  tpkit/tp-admission-webhook:TAG  the binary alone (FROM scratch)
#   DIR/fake-tp.oci.tar               tpkit/fake-tp:TAG               the binary alone (FROM scratch)
#
# TAG is the version the binaries print for --version (hack/version.sh; set
# VERSION to override it), made fit for a tag (hack/version.sh --tag). The binaries are static
# (CGO_ENABLED=0, -trimpath) and every file and the image's creation time
# carry the commit's time (the Debian layer's, 1970), so the same commit
# gives the same binaries and the same layers. The script prints their sha256 and, at the end, a table of
# the images and their sizes.
#
# The Debian root filesystem comes from mmdebstrap (Debian's archive, through
# the machine's apt sources), slimmed, and is cached in TPKIT_IMAGE_CACHE
# (default ~/.cache/tpkit/images) under the versions that the machine's apt
# lists name for its packages: only the first build, and the first after
# apt-get update brings new versions, pay for it (a minute or two).
#
# buildah works in a private, temporary storage root (vfs), never the
# machine's container storage, and runs nothing in a container. Missing tools
# (buildah, mmdebstrap, ...) are installed by hack/ensure-tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -eq 1 && -n $1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)

./hack/ensure-tools.sh buildah mmdebstrap newuidmap python3

VERSION=${VERSION:-$(./hack/version.sh)}
tag=$(VERSION=$VERSION ./hack/version.sh --tag)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# Every timestamp in the images: the commit's time (SOURCE_DATE_EPOCH wins).
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
arch=$(go env GOARCH)
suite=${DEBIAN_SUITE:-bookworm}
cache=${TPKIT_IMAGE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tpkit/images}
images=(partition-dns tp-admission-webhook fake-tp)

# testbed/testbin's lock: see the build below.
lockfile=${TMPDIR:-/tmp}/tpkit-testbin-build.lock
work=$(mktemp -d -t tpkit-images.XXXXXX)
# buildah and the containers libraries read these: a storage of our own
# (removed on exit), their temporary files inside it.
export CONTAINERS_STORAGE_CONF=$work/storage.conf TMPDIR=$work/tmp
mkdir -p "$work/tmp" "$work/bin"
cat >"$CONTAINERS_STORAGE_CONF" <<EOF
[storage]
driver = "vfs"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
cleanup() {
  buildah rm --all >/dev/null 2>&1 || true
  buildah rmi --all --force >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- The binaries. -----------------------------------------------------------
# The lock is testbed/testbin's: test binaries that build the programs
# (go test -p N) take turns with this build instead of compiling the same
# packages beside it, and find its packages in the build cache.
echo "images: building ${images[*]} $VERSION (CGO_ENABLED=0, -trimpath)"
ldflags="-s -w -X github.com/tpkit-dev/tpkit/internal/cliflag.version=$VERSION"
lock=(flock "$lockfile")
command -v flock >/dev/null 2>&1 || lock=()
CGO_ENABLED=0 "${lock[@]}" go build -trimpath -buildvcs=auto -ldflags "$ldflags" -o "$work/bin/" \
  "${images[@]/#/./cmd/}"
(cd "$work/bin" && sha256sum "${images[@]}" | sed 's/^/images: sha256 /')

# --- The slim Debian root filesystem, from the cache or mmdebstrap. ---------
# iptables: node-cache-watch (and node-cache --setup-iptables) run it through
# go-iptables; iproute2: node-cache puts its addresses on an interface with
# ip. The merged-usr hook keeps usrmerge (and perl with it) out. What dpkg
# would put under the excluded paths is never unpacked; copyright files stay.
include=iptables,iproute2
. "$(dirname "${BASH_SOURCE[0]}")/debian-slim.sh"
mmopts=(--include="$include" "${debian_slim[@]}" --customize-hook='rm -rf "$1"/var/log/*')
recipe="$suite $arch ${mmopts[*]}"
# The cache key: the recipe, and the versions that the machine's apt lists
# name for the packages of the last root filesystem built from it. It moves
# on when apt-get update brings new versions (or the recipe changes).
prefix=$cache/rootfs-$suite-$arch-$(printf '%s\n' "$recipe" | sha256sum | cut -c1-8)
candidates() { # candidates PKG...: "PKG VERSION" for each, as apt would install it now
  apt-cache policy "$@" 2>/dev/null | awk '/^[^ ].*:$/ {p = substr($1, 1, length($1) - 1)} $1 == "Candidate:" {print p, $2}'
}
key_of() { # key_of PACKAGES-FILE
  { echo "$recipe"; candidates $(awk '{print $1}' "$1"); } | sha256sum | cut -c1-16
}
mkdir -p "$cache"
rootfs=
last=$(ls -t "$prefix"-*.packages 2>/dev/null | head -n1) || true
if [[ -n $last ]] && key=$(key_of "$last") && [[ -s $prefix-$key.tar ]]; then
  rootfs=$prefix-$key.tar
  echo "images: Debian root filesystem from the cache: $rootfs"
else
  echo "images: mmdebstrap $suite --variant=essential --include=$include (once per Debian update; log: $work/mmdebstrap.log)"
  if ! SOURCE_DATE_EPOCH=0 mmdebstrap "${mmopts[@]}" "$suite" "$work/rootfs.tar" >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log" >&2
    echo "images: mmdebstrap failed" >&2
    exit 1
  fi
  tar -xOf "$work/rootfs.tar" ./var/lib/dpkg/status | awk '$1 == "Package:" {p = $2} $1 == "Version:" {print p, $2}' | sort >"$work/rootfs.packages"
  key=$(key_of "$work/rootfs.packages")
  rootfs=$prefix-$key.tar
  mv "$work/rootfs.packages" "${rootfs%.tar}.packages"
  mv "$work/rootfs.tar" "$rootfs"
  echo "images: cached as $rootfs ($(wc -l <"${rootfs%.tar}.packages") packages, listed beside it)"
  # Keep the three newest.
  ls -t "$cache"/rootfs-*.tar | tail -n +4 | while read -r old; do rm -f "$old" "${old%.tar}.packages"; done
fi

# --- The images. -------------------------------------------------------------
labels=(
  --label org.opencontainers.image.version="$VERSION"
  --label org.opencontainers.image.revision="$revision"
  --label org.opencontainers.image.vendor=tpkit
)
# commit CONTAINER IMAGE: commit the working container CONTAINER as the image
# tpkit/IMAGE:TAG and write it to DIR/IMAGE.oci.tar. The archive names it in
# full, docker.io/tpkit/IMAGE:TAG, what tpkit/IMAGE:TAG stands for in a pod
# spec: ctr images import keeps a name as written, and kubelet looks for the
# full one (podman load keeps it too, and finds it as tpkit/IMAGE:TAG).
commit() {
  local ctr=$1 img=$2
  buildah commit --quiet --timestamp "$epoch" --identity-label=false --rm "$ctr" "tpkit/$img:$tag" >/dev/null
  rm -f "$out/$img.oci.tar"
  buildah push --quiet "tpkit/$img:$tag" "oci-archive:$out/$img.oci.tar:docker.io/tpkit/$img:$tag"
}
# new_from BASE IMAGE: a working container for IMAGE from the local BASE (or scratch).
new_from() { buildah from --quiet --pull=never --name "tpkit-$2" "$1"; }

# partition-dns: two layers, the root filesystem and the binary. The root
# filesystem's layer is dated 1970, not the commit, so it is the same for
# every version of tpkit until Debian updates a package: a node or registry
# that has it fetches only the binary's layer of the next version. Its user is
# 65532, which serving DNS needs no more than (with NET_BIND_SERVICE for port
# 53); the node-cache modes need root for their interface and iptables rules,
# and the DaemonSet in deploy/nodelocal asks for it (runAsUser: 0).
base=localhost/tpkit/rootfs:$suite-${rootfs##*-}
base=${base%.tar}
ctr=$(new_from scratch rootfs)
buildah add --quiet "$ctr" "$rootfs" / >/dev/null
buildah config --os linux --arch "$arch" --created-by "mmdebstrap $suite --variant=essential --include=$include, slimmed (hack/images.sh)" "$ctr"
buildah commit --quiet --timestamp 0 --identity-label=false --rm "$ctr" "$base" >/dev/null
ctr=$(new_from "containers-storage:$base" partition-dns)
buildah copy --quiet --chmod 0755 --chown 0:0 "$ctr" "$work/bin/partition-dns" /usr/local/bin/partition-dns >/dev/null
buildah config --entrypoint '["/usr/local/bin/partition-dns"]' --cmd '' --user 65532:65532 --workingdir / \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --created-by "partition-dns $VERSION (hack/images.sh)" \
  --label org.opencontainers.image.title=partition-dns "${labels[@]}" "$ctr"
commit "$ctr" partition-dns

# tp-admission-webhook, fake-tp: the binary and an empty /tmp (fake-tp keeps
# its kubeconfigs there without --kubeconfig-dir), user 65532, no /etc.
# Neither makes a TLS connection that would need CA certificates.
mkdir -p "$work/static/tmp"
chmod 1777 "$work/static/tmp"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$work/static" -cf "$work/static.tar" ./tmp
for img in tp-admission-webhook fake-tp; do
  ctr=$(new_from scratch "$img")
  buildah add --quiet "$ctr" "$work/static.tar" / >/dev/null
  buildah copy --quiet --chmod 0755 --chown 0:0 "$ctr" "$work/bin/$img" "/usr/local/bin/$img" >/dev/null
  buildah config --os linux --arch "$arch" --entrypoint "[\"/usr/local/bin/$img\"]" --cmd '' --user 65532:65532 \
    --workingdir / --env PATH=/usr/local/bin --created-by "$img $VERSION (hack/images.sh)" \
    --label org.opencontainers.image.title="$img" "${labels[@]}" "$ctr"
  commit "$ctr" "$img"
done

# --- What was built. ---------------------------------------------------------
python3 - "$out" "$tag" "${images[@]}" <<'PY'
import json, os, sys, tarfile

out, tag, names = sys.argv[1], sys.argv[2], sys.argv[3:]
def mb(n): return f"{n / 1e6:.1f} MB"
rows = []
for name in names:
    path = f"{out}/{name}.oci.tar"
    with tarfile.open(path) as t:
        blob = lambda d: json.load(t.extractfile("blobs/" + d.replace(":", "/")))
        index = json.load(t.extractfile("index.json"))
        desc = index["manifests"][0]
        manifest = blob(desc["digest"])
        layers = manifest["layers"]
    print(f"images: {name} manifest {desc['digest']}")
    for l in layers:
        print(f"images: {name} layer {l['digest']} {l['size']} bytes")
    rows.append((name, f"tpkit/{name}:{tag}", mb(os.path.getsize(path)),
                 " + ".join(mb(l["size"]) for l in layers) + (f" = {mb(sum(l['size'] for l in layers))}" if len(layers) > 1 else "")))
head = ("image", "tag", "archive", "compressed layers")
w = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
print()
for r in [head] + rows:
    print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
print(f"\nin {out}")
PY
