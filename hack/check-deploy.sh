#!/usr/bin/env bash
# make check-deploy: `kubectl apply --dry-run=server` of every kustomization
# under deploy/ against two real API servers, both on loopback only:
#   arktos    one Arktos 6685f14 TP from hack/arktos-lab.sh (ARKTOS_BIN
#             names the folder with its kube-apiserver; ARKTOS_LAB another
#             lab script with its interface);
#   upstream  kube-apiserver KUBE_VERSION (v1.37.2) on Debian's etcd, built once
#             from the Go module proxy into $CACHE (KUBE_APISERVER names a
#             binary to use instead).
# The bases (deploy/<x>) and partition-dns's rbac-per-tp.yaml go to both;
# deploy/overlays/newer/<x>, for clusters newer than Arktos's API, to upstream
# only; so do the overlays hack/deploy-overlay.sh writes. Then, on a second
# Arktos TP with client certificates and RBAC, rbac-per-tp.yaml is applied
# and hack/tp-kubeconfig.sh's kubeconfig must list what partition-dns reads,
# and no more. One line per manifest and server, PASS or FAIL with kubectl's message;
# exit 1 on any FAIL (the logs are kept then, in the folder it prints).
set -uo pipefail
[[ -n ${ARKTOS_BIN:-} && -d ${ARKTOS_BIN:-} ]] && ARKTOS_BIN=$(cd "$ARKTOS_BIN" && pwd)
cd "$(dirname "$0")/.."
root=$PWD

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tpkit/kube-apiserver-$KUBE_VERSION}
LAB=${ARKTOS_LAB:-$root/hack/arktos-lab.sh}
READY_TIMEOUT=${READY_TIMEOUT:-180} # seconds each API server has to become ready

die() { echo "check-deploy: $*" >&2; exit 2; }
[[ -n ${ARKTOS_BIN:-} && -x ${ARKTOS_BIN:-}/kube-apiserver ]] ||
  die "set ARKTOS_BIN to the folder holding Arktos's kube-apiserver (make arktos-src STOCK_BIN=DIR builds one)"
[[ -x $LAB ]] || die "no lab script $LAB"
./hack/ensure-tools.sh etcd openssl curl || exit 2
command -v kubectl >/dev/null || die "kubectl is not installed"

# build_upstream: kube-apiserver KUBE_VERSION from the Go module proxy. A
# scratch module requires k8s.io/kubernetes and points each staging module
# (k8s.io/kubernetes's own go.mod replaces them with ./staging/src/k8s.io/X)
# at its published release, v0.<minor>.<patch>; the binary is kept in $CACHE.
build_upstream() {
  local bin=$CACHE/kube-apiserver mod=$CACHE/mod kmod m minor=${KUBE_VERSION#v1.}
  [[ -x $bin ]] && return 0
  echo "check-deploy: building kube-apiserver $KUBE_VERSION into $CACHE (once; 10 minutes and more on 2 cores)" >&2
  rm -rf "$mod" && mkdir -p "$mod" || return 1
  local -x GOFLAGS=-mod=mod GOWORK=off
  kmod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [[ -f $kmod ]] || { echo "check-deploy: cannot download k8s.io/kubernetes@$KUBE_VERSION" >&2; return 1; }
  {
    printf 'module tpkit.local/kube-apiserver\n\n%s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$(grep -m1 '^go ' "$kmod")" "$KUBE_VERSION"
    for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// {print $1}' "$kmod"); do
      printf '\t%s => %s v0.%s\n' "$m" "$m" "$minor"
    done
    printf ')\n'
  } >"$mod/go.mod"
  (cd "$mod" && go get "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" &&
    go build -trimpath -o "$bin.tmp" -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
      -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=${minor%%.*} \
      -X k8s.io/component-base/version.gitTreeState=clean" \
      k8s.io/kubernetes/cmd/kube-apiserver) && mv "$bin.tmp" "$bin"
}

upstream_bin=${KUBE_APISERVER:-$CACHE/kube-apiserver}
if [[ -z ${KUBE_APISERVER:-} ]]; then
  build_upstream || die "building kube-apiserver $KUBE_VERSION failed"
fi
[[ -x $upstream_bin ]] || die "no kube-apiserver at $upstream_bin"

work=$(mktemp -d /tmp/tpkit-check-deploy.XXXXXX)
pids=()
failed=0
# stop PID: SIGTERM, and SIGKILL after 20 s.
stop() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 40); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}
cleanup() {
  local i
  "$LAB" down "$work/arktos" >/dev/null 2>&1
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop "${pids[i]}"; done # kube-apiserver before its etcd
  if ((failed)); then echo "check-deploy: logs in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'failed=1; exit 1' INT TERM

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# --- Arktos: one TP, its insecure port on 127.0.0.1, every caller a system
# admin; kube-system exists from the start.
if ! ARKTOS_BIN=$ARKTOS_BIN "$LAB" up 1 "$work/arktos" >"$work/arktos.log" 2>&1; then
  failed=1
  echo "check-deploy: Arktos did not start:" >&2
  cat "$work/arktos.log" >&2
  exit 1
fi
arktos_kc=$work/arktos/kc/tp1.kubeconfig

# --- Upstream: etcd and kube-apiserver on 127.0.0.1, a self-signed serving
# certificate from --cert-dir, a token for kubectl, service-account keys.
u=$work/upstream
mkdir -p "$u/certs"
ec=$(port) ep=$(port) api=$(port)
etcd --name upstream --data-dir "$u/etcd" \
  --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
  --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
  --initial-cluster "upstream=http://127.0.0.1:$ep" --listen-metrics-urls "http://127.0.0.1:$(port)" \
  >"$u/etcd.log" 2>&1 </dev/null &
pids+=($!)
openssl genrsa -out "$u/sa.key" 2048 2>/dev/null && openssl rsa -in "$u/sa.key" -pubout -out "$u/sa.pub" 2>/dev/null ||
  { failed=1; die "openssl could not make the service-account keys"; }
token=$(openssl rand -hex 16)
echo "$token,check-deploy,check-deploy,system:masters" >"$u/tokens.csv"
for _ in $(seq 120); do curl -sf --max-time 2 "http://127.0.0.1:$ec/health" >/dev/null && break; sleep 0.5; done
"$upstream_bin" --etcd-servers="http://127.0.0.1:$ec" \
  --bind-address=127.0.0.1 --secure-port="$api" --cert-dir="$u/certs" \
  --authorization-mode=AlwaysAllow --token-auth-file="$u/tokens.csv" \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$u/sa.pub" --service-account-signing-key-file="$u/sa.key" \
  --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none \
  >"$u/apiserver.log" 2>&1 </dev/null &
pids+=($!)
upstream_kc=$u/kubeconfig
cat >"$upstream_kc" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:$api", certificate-authority: "$u/certs/apiserver.crt"}
  name: upstream
users:
- name: check-deploy
  user: {token: "$token"}
contexts:
- context: {cluster: upstream, user: check-deploy}
  name: upstream
current-context: upstream
EOF
ready=0
for _ in $(seq $((READY_TIMEOUT * 2))); do
  # The API server is ready, and its system namespaces exist.
  if [[ -f $u/certs/apiserver.crt ]] && kubectl --kubeconfig "$upstream_kc" get --raw /readyz >/dev/null 2>&1 &&
    kubectl --kubeconfig "$upstream_kc" get namespace kube-system >/dev/null 2>&1; then
    ready=1
    break
  fi
  kill -0 "${pids[-1]}" 2>/dev/null || break
  sleep 0.5
done
if ((!ready)); then
  failed=1
  echo "check-deploy: kube-apiserver $KUBE_VERSION did not become ready; the end of its log:" >&2
  tail -20 "$u/apiserver.log" >&2
  exit 1
fi

# check SERVER KUBECONFIG WHAT ARGS...: one dry run, one line.
check() {
  local server=$1 kc=$2 what=$3 out
  shift 3
  local verdict=PASS
  out=$(kubectl --kubeconfig "$kc" apply --dry-run=server "$@" 2>&1) || { verdict=FAIL; failed=1; }
  # kubectl's lines joined by "; ", the ones it wrapped (indented) by a space.
  out=$(echo "$out" | awk 'NR > 1 { printf("%s", /^[ \t]/ ? " " : "; ") } { sub(/^[ \t]+/, ""); printf "%s", $0 }')
  printf '%s  %-9s %-42s %s\n' "$verdict" "$server" "$what" "$out"
}

echo "arktos:   Arktos 6685f14 kube-apiserver from $ARKTOS_BIN"
echo "upstream: kube-apiserver $(kubectl --kubeconfig "$upstream_kc" get --raw /version | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p'), etcd $(etcd --version | sed -n 's/^etcd Version: //p')"
echo "kubectl:  $(kubectl version --client 2>/dev/null | sed -n 's/^Client Version: //p')"
for d in deploy/*/kustomization.yaml; do
  d=$(dirname "$d")
  [[ $d == deploy/overlays ]] && continue
  check arktos "$arktos_kc" "$d" -k "$d"
  check upstream "$upstream_kc" "$d" -k "$d"
done
for f in deploy/*/rbac-per-tp.yaml; do
  check arktos "$arktos_kc" "$f" -f "$f"
  check upstream "$upstream_kc" "$f" -f "$f"
done
for d in deploy/overlays/newer/*/kustomization.yaml; do
  d=$(dirname "$d")
  check upstream "$upstream_kc" "$d" -k "$d"
done

# The overlays an admin applies (README.md, "Deploy on Arktos"), written by
# hack/deploy-overlay.sh outside the checkout: for Arktos on the base, for
# upstream on deploy/overlays/newer.
ca=$work/webhook-ca.crt
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/webhook-ca.key" -out "$ca" -days 1 -subj /CN=webhook-ca 2>/dev/null ||
  { failed=1; die "openssl could not make the webhook's CA"; }
for server in arktos upstream; do
  o=$work/overlay-$server kc=$arktos_kc newer=
  [[ $server == upstream ]] && kc=$upstream_kc newer=--newer
  if out=$(./hack/deploy-overlay.sh "$o" --tag "$(./hack/version.sh --tag)" --tps 2 --pod-cidr 10.244.0.0/16 \
    --trusted-forwarders 10.0.0.0/16 --cluster-ip 10.0.0.10 --webhook-ca "$ca" $newer 2>&1); then
    check "$server" "$kc" "deploy-overlay.sh: dns" -k "$o/dns"
    check "$server" "$kc" "deploy-overlay.sh: tp-admission-webhook" -k "$o/tp-admission-webhook"
  else
    failed=1
    printf 'FAIL  %-9s %-42s %s\n' "$server" "deploy-overlay.sh" "$out"
  fi
done

# rbac-per-tp.yaml and hack/tp-kubeconfig.sh for real, on a second Arktos TP
# that authenticates clients by certificate and authorizes by RBAC (the
# lab's TP lets every caller do anything): the kubeconfig the script writes
# lists every tenant's services, endpoints, pods and namespaces and not their
# secrets, and a certificate without the organization tenant:system is
# refused, since Arktos then takes the tenant from the CN's "tpkit:" prefix.
r=$work/arktos-rbac
mkdir -p "$r/certs"
cert() { # cert NAME SUBJECT: NAME.crt and NAME.key, signed by the TP's client CA
  openssl req -newkey rsa:2048 -nodes -keyout "$r/$1.key" -out "$r/$1.csr" -subj "$2" 2>/dev/null &&
    openssl x509 -req -in "$r/$1.csr" -CA "$r/ca.crt" -CAkey "$r/ca.key" -CAcreateserial -days 1 -extfile "$r/ext" -out "$r/$1.crt" 2>/dev/null
}
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$r/ca.key" -out "$r/ca.crt" -days 1 -subj /CN=client-ca 2>/dev/null &&
  printf 'extendedKeyUsage=clientAuth\n' >"$r/ext" &&
  cert admin "/O=system:masters/CN=system:admin" && cert cn-only "/CN=tpkit:partition-dns" ||
  { failed=1; die "openssl could not make the RBAC check's certificates"; }
ec=$(port) ep=$(port) api=$(port)
etcd --name arktos-rbac --data-dir "$r/etcd" \
  --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
  --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
  --initial-cluster "arktos-rbac=http://127.0.0.1:$ep" --listen-metrics-urls "http://127.0.0.1:$(port)" \
  >"$r/etcd.log" 2>&1 </dev/null &
pids+=($!)
for _ in $(seq 120); do curl -sf --max-time 2 "http://127.0.0.1:$ec/health" >/dev/null && break; sleep 0.5; done
"$ARKTOS_BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ec" --storage-backend=etcd3 --insecure-port=0 \
  --bind-address=127.0.0.1 --secure-port="$api" --cert-dir="$r/certs" --client-ca-file="$r/ca.crt" \
  --authorization-mode=RBAC --disable-admission-plugins=ServiceAccount --service-cluster-ip-range=10.95.0.0/16 \
  --feature-gates=AllAlpha=false,WorkloadInfoDefaulting=true,QPSDoubleGCController=true,QPSDoubleRSController=true,MandatoryArktosNetwork=true \
  >"$r/apiserver.log" 2>&1 </dev/null &
pids+=($!)
for u in admin cn-only; do
  cat >"$r/$u.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:$api", insecure-skip-tls-verify: true}
  name: arktos-rbac
users:
- name: $u
  user: {client-certificate: "$r/$u.crt", client-key: "$r/$u.key"}
contexts:
- context: {cluster: arktos-rbac, user: $u}
  name: arktos-rbac
current-context: arktos-rbac
EOF
done
ready=0
for _ in $(seq $((READY_TIMEOUT * 2))); do
  kubectl --kubeconfig "$r/admin.kubeconfig" get namespace kube-system >/dev/null 2>&1 && { ready=1; break; }
  kill -0 "${pids[-1]}" 2>/dev/null || break
  sleep 0.5
done
# verdict WHAT OK OUT: one line, as check's.
verdict() {
  local v=PASS
  (($2)) || { v=FAIL; failed=1; }
  printf '%s  %-9s %-42s %s\n' "$v" arktos "$1" "$(echo "$3" | tr '\n' ' ')"
}
if ((!ready)); then
  verdict "the RBAC TP started" 0 "$(tail -5 "$r/apiserver.log")"
else
  out=$(kubectl --kubeconfig "$r/admin.kubeconfig" apply -f deploy/partition-dns/rbac-per-tp.yaml 2>&1)
  verdict "rbac-per-tp.yaml, applied" $((!$?)) "$out"
  out=$(./hack/tp-kubeconfig.sh --admin "$r/admin.kubeconfig" --ca-cert "$r/ca.crt" --ca-key "$r/ca.key" \
    --out "$r/tp1.kubeconfig" --check 2>&1)
  verdict "tp-kubeconfig.sh --check" $((!$?)) "$(grep -v 'loopback address' <<<"$out")"
  for res in services endpoints pods namespaces; do
    out=$(kubectl --kubeconfig "$r/tp1.kubeconfig" get --raw "/api/v1/tenants/all/$res?limit=1" 2>&1)
    verdict "tpkit:partition-dns lists all $res" $((!$?)) "${out:0:60}"
  done
  out=$(kubectl --kubeconfig "$r/tp1.kubeconfig" get --raw "/api/v1/tenants/all/secrets?limit=1" 2>&1)
  verdict "tpkit:partition-dns may not list secrets" $(($? != 0)) "$out"
  out=$(kubectl --kubeconfig "$r/cn-only.kubeconfig" get --raw "/api/v1/tenants/all/services?limit=1" 2>&1)
  verdict "CN tpkit:partition-dns alone is refused" $(($? != 0)) "$out"
fi
exit $failed
