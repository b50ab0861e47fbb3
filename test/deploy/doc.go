// Package deploy holds the checks that every manifest under deploy/ applies
// to Arktos as well as to current Kubernetes. Arktos 6685f14's API is older
// than the k8s.io/api this module builds with, and the manifest tests in
// cmd/ and pkg/ decode against the newer types, so they cannot see a field
// Arktos refuses. arktos_test.go lists what Arktos lacks and fails on any
// manifest that uses it; hack/check-deploy.sh (make check-deploy) is the
// real check against both API servers. The checks are tests; this package
// has no code of its own.
package deploy
