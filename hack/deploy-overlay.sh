#!/usr/bin/env bash
# deploy-overlay.sh writes kustomize overlays of deploy/ for one cluster into
# OUT, a folder outside this checkout, so that nothing tracked is edited (the
# tree stays clean, and every image gets the same tag):
#
#   hack/deploy-overlay.sh OUT [--tag TAG | --image-dir DIR] [--registry REG] [--tps N]
#     [--pod-cidr CIDRS] [--trusted-forwarders CIDRS] [--cluster-ip IP] [--webhook-ca CA.crt] [--newer]
#     [--no-node-cache]
#
#   OUT/dns                   partition-dns (deploy/partition-dns) and the node
#                             cache (deploy/nodelocal): kubectl apply -k OUT/dns
#                             in the system tenant of the TP that runs them
#   OUT/tp-admission-webhook  the webhook (deploy/tp-admission-webhook): kubectl
#                             apply -k in every TP
#
# --tag: the images' tag, as make images printed it (hack/version.sh --tag of
#   the tree that built them); --image-dir reads it from DIR/partition-dns.oci.tar
#   instead; default: hack/version.sh --tag of this checkout.
# --registry: where the images were pushed (REG/tpkit/<program>); default: the
#   name the archives carry (docker.io/tpkit/<program>), for images loaded
#   into each node's runtime.
# --tps N: partition-dns reads tp1.kubeconfig ... tpN.kubeconfig of the
#   Secret partition-dns-kubeconfigs, in that order (default 2).
# --pod-cidr, --trusted-forwarders: partition-dns's flags of those names
#   (docs/dns.md); --cluster-ip: the partition-dns Service's cluster IP, the
#   kubelets' --cluster-dns; --webhook-ca: the CA of the webhook's serving
#   certificate, for both caBundle fields.
# --newer: build on deploy/overlays/newer (Kubernetes 1.19+, not Arktos).
# --no-node-cache: OUT/dns without deploy/nodelocal (which needs kube-proxy
#   in iptables mode).
#
# Check what an overlay gives with kubectl kustomize OUT/dns.
set -euo pipefail

usage() { sed -n '6,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
out=$1; shift
tag= imagedir= registry= tps=2 podcidr= trusted= clusterip= webhookca= newer= nodecache=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --tag) tag=$2; shift 2 ;;
    --image-dir) imagedir=$2; shift 2 ;;
    --registry) registry=${2%/}; shift 2 ;;
    --tps) tps=$2; shift 2 ;;
    --pod-cidr) podcidr=$2; shift 2 ;;
    --trusted-forwarders) trusted=$2; shift 2 ;;
    --cluster-ip) clusterip=$2; shift 2 ;;
    --webhook-ca) webhookca=$2; shift 2 ;;
    --newer) newer=1; shift ;;
    --no-node-cache) nodecache=; shift ;;
    -h|--help) usage ;;
    *) echo "deploy-overlay.sh: unknown argument $1" >&2; usage ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "deploy-overlay.sh: $*" >&2; exit 2; }

[[ $tps =~ ^[1-9][0-9]*$ ]] || fail "--tps $tps: want a positive number"
if [[ -n $imagedir ]]; then
  [[ -z $tag ]] || fail "give --tag or --image-dir, not both"
  a=$imagedir/partition-dns.oci.tar
  [[ -r $a ]] || fail "$a is missing (make images IMAGE_DIR=$imagedir)"
  ref=$(tar -xOf "$a" index.json | python3 -c '
import json, sys
a = json.load(sys.stdin)["manifests"][0].get("annotations", {})
print(a.get("org.opencontainers.image.ref.name") or a.get("io.containerd.image.name") or "")')
  tag=${ref##*:}
  [[ $ref == *tpkit/partition-dns:* && -n $tag ]] || fail "$a names no tpkit/partition-dns:TAG image ($ref)"
fi
[[ -n $tag ]] || tag=$("$root/hack/version.sh" --tag)
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "--tag $tag: not an image tag"
[[ -z $webhookca || -r $webhookca ]] || fail "cannot read $webhookca"

out=$(realpath -m "$out")
case $out/ in "$root"/*) fail "$out is inside the checkout $root: put the overlays outside it, so that git status stays clean" ;; esac
mkdir -p "$out"
for d in dns tp-admission-webhook; do
  [[ ! -e $out/$d ]] || fail "$out/$d exists; remove it first"
done
mkdir "$out/dns" "$out/tp-admission-webhook"

# base PART: the folder an overlay of PART builds on, relative to OUT/<any>.
base() {
  local b=$root/deploy/$1
  [[ -z $newer || ! -d $root/deploy/overlays/newer/$1 ]] || b=$root/deploy/overlays/newer/$1
  realpath --relative-to="$out/dns" "$b"
}
# images PROGRAM: the images: entry that sets PROGRAM's tag (and registry).
images() {
  echo "  - name: tpkit/$1"
  [[ -z $registry ]] || echo "    newName: $registry/tpkit/$1"
  echo "    newTag: \"$tag\""
}
json() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

kcs=
for i in $(seq 1 "$tps"); do kcs+=${kcs:+,}/etc/partition-dns/tp$i.kubeconfig; done
{
  echo "# Written by hack/deploy-overlay.sh: partition-dns${nodecache:+ and the node cache}, tag $tag."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - $(base partition-dns)"
  [[ -z $nodecache ]] || echo "  - $(base nodelocal)"
  echo "images:"
  images partition-dns
  echo "patches:"
  echo "  - target: {group: apps, version: v1, kind: Deployment, name: partition-dns}"
  echo "    patch: |-"
  # The test keeps the patch honest: it fails when the base's first
  # argument is no longer the kubeconfig list.
  echo "      - op: test"
  echo "        path: /spec/template/spec/containers/0/args/0"
  echo "        value: --tenant-server-kubeconfig=/etc/partition-dns/tp1.kubeconfig,/etc/partition-dns/tp2.kubeconfig"
  echo "      - op: replace"
  echo "        path: /spec/template/spec/containers/0/args/0"
  echo "        value: --tenant-server-kubeconfig=$kcs"
  for f in pod-cidr:"$podcidr" trusted-forwarders:"$trusted"; do
    [[ -n ${f#*:} ]] || continue
    echo "      - op: add"
    echo "        path: /spec/template/spec/containers/0/args/-"
    echo "        value: $(json "--${f%%:*}=${f#*:}")"
  done
  if [[ -n $clusterip ]]; then
    echo "  - target: {version: v1, kind: Service, name: partition-dns}"
    echo "    patch: |-"
    echo "      - op: add"
    echo "        path: /spec/clusterIP"
    echo "        value: $(json "$clusterip")"
  fi
} >"$out/dns/kustomization.yaml"

{
  echo "# Written by hack/deploy-overlay.sh: the webhook, tag $tag; apply in every TP."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - $(base tp-admission-webhook)"
  echo "images:"
  images tp-admission-webhook
  if [[ -n $webhookca ]]; then
    ca=$(base64 -w0 "$webhookca")
    echo "patches:"
    echo "  - target: {group: admissionregistration.k8s.io, version: v1, kind: ValidatingWebhookConfiguration, name: tp-admission-webhook}"
    echo "    patch: |-"
    for i in 0 1; do
      echo "      - op: replace"
      echo "        path: /webhooks/$i/clientConfig/caBundle"
      echo "        value: $ca"
    done
  fi
} >"$out/tp-admission-webhook/kustomization.yaml"

echo "deploy-overlay.sh: wrote $out/dns and $out/tp-admission-webhook (tag $tag${registry:+, registry $registry}, $tps TPs)"
echo "  kubectl kustomize $out/dns    # to read what it gives"
