#!/usr/bin/env bash
# tp-kubeconfig.sh writes, from a tenant partition's admin kubeconfig, the
# kubeconfig partition-dns reads that TP with: the user tpkit:partition-dns,
# whom deploy/partition-dns/rbac-per-tp.yaml binds, by a client certificate
# signed with the CA the TP's kube-apiserver trusts (--client-ca-file).
#
#   hack/tp-kubeconfig.sh --admin ADMIN.kubeconfig --ca-cert CA.crt --ca-key CA.key \
#     --out tp1.kubeconfig [--server URL] [--context NAME] [--days N] [--check]
#
# The certificate's subject is O=tenant:system, CN=tpkit:partition-dns.
# Arktos's x509 authenticator takes the user's tenant from an organization
# "tenant:<name>"; without one it takes the part of the CN before a colon,
# which would make this user one of a tenant "tpkit" and deny it every
# other tenant's objects. partition-dns reads /api/v1/tenants/all/..., which
# only a system-tenant user may.
#
# The cluster (server, CA) and the context's name come from ADMIN's current
# context: partition-dns names its TPs by the kubeconfigs' contexts when all
# are set and different (else by the files' names), as the patched kubelet
# and kube-proxy do, so keep the names they use. --server replaces the
# server's URL when ADMIN names one that pods cannot reach (127.0.0.1).
# --check lists one service of every tenant with the new kubeconfig, which
# works once rbac-per-tp.yaml is applied to that TP.
#
# Arktos's local-up scripts (hack/arktos-up.sh) keep the CA as
# /var/run/kubernetes/client-ca.{crt,key}. Without the CA's key, have whoever
# holds it sign a certificate of the same subject; the TP trusts any
# certificate its --client-ca-file does.
set -euo pipefail

usage() { sed -n '7,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
admin= cacert= cakey= out= server= context= days=365 check=
while [[ $# -gt 0 ]]; do
  case $1 in
    --admin) admin=$2; shift 2 ;;
    --ca-cert) cacert=$2; shift 2 ;;
    --ca-key) cakey=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --context) context=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --check) check=1; shift ;;
    -h|--help) usage ;;
    *) echo "tp-kubeconfig.sh: unknown argument $1" >&2; usage ;;
  esac
done
[[ -n $admin && -n $cacert && -n $cakey && -n $out ]] || usage
for f in "$admin" "$cacert" "$cakey"; do
  [[ -r $f ]] || { echo "tp-kubeconfig.sh: cannot read $f" >&2; exit 2; }
done
for c in kubectl openssl; do
  command -v $c >/dev/null || { echo "tp-kubeconfig.sh: needs $c (hack/ensure-tools.sh $c)" >&2; exit 2; }
done
[[ $days =~ ^[1-9][0-9]*$ ]] || { echo "tp-kubeconfig.sh: --days $days: want a positive number" >&2; exit 2; }
[[ ! -e $out ]] || { echo "tp-kubeconfig.sh: $out exists; remove it first" >&2; exit 2; }

view() { kubectl config view --kubeconfig "$admin" --raw --minify --flatten -o "jsonpath=$1"; }
cur=$(view '{.contexts[0].name}')
[[ -n $cur ]] || { echo "tp-kubeconfig.sh: $admin has no current context" >&2; exit 1; }
context=${context:-$cur}
server=${server:-$(view '{.clusters[0].cluster.server}')}
[[ $server == https://* ]] || { echo "tp-kubeconfig.sh: server $server: a client certificate needs https (--server)" >&2; exit 1; }
case $server in
  https://127.*|https://localhost*|https://\[::1\]*)
    echo "tp-kubeconfig.sh: warning: $server is a loopback address; partition-dns's pods cannot reach it (--server)" >&2 ;;
esac
cadata=$(view '{.clusters[0].cluster.certificate-authority-data}')
insecure=$(view '{.clusters[0].cluster.insecure-skip-tls-verify}')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
subject='/O=tenant:system/CN=tpkit:partition-dns'
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/key.pem" 2>/dev/null
openssl req -new -key "$tmp/key.pem" -subj "$subject" -out "$tmp/csr.pem"
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$tmp/ext"
openssl x509 -req -in "$tmp/csr.pem" -CA "$cacert" -CAkey "$cakey" -CAcreateserial -CAserial "$tmp/ca.srl" \
  -days "$days" -sha256 -extfile "$tmp/ext" -out "$tmp/cert.pem" 2>/dev/null
openssl verify -CAfile "$cacert" "$tmp/cert.pem" >/dev/null

k() { kubectl config --kubeconfig "$tmp/out.kubeconfig" "$@" >/dev/null; }
cluster=(--server="$server")
if [[ -n $cadata ]]; then
  base64 -d <<<"$cadata" >"$tmp/server-ca.crt"
  cluster+=(--certificate-authority="$tmp/server-ca.crt" --embed-certs=true)
elif [[ $insecure == true ]]; then
  cluster+=(--insecure-skip-tls-verify=true)
fi
k set-cluster "$context" "${cluster[@]}"
k set-credentials tpkit:partition-dns --client-certificate="$tmp/cert.pem" --client-key="$tmp/key.pem" --embed-certs=true
k set-context "$context" --cluster="$context" --user=tpkit:partition-dns
k use-context "$context"
install -m 0600 "$tmp/out.kubeconfig" "$out"
echo "tp-kubeconfig.sh: wrote $out: context $context, server $server, user tpkit:partition-dns ($subject), valid $days days"

if [[ -n $check ]]; then
  kubectl --kubeconfig "$out" get --raw '/api/v1/tenants/all/services?limit=1' >/dev/null
  echo "tp-kubeconfig.sh: $out lists every tenant's services"
fi
