// Package admission holds the shape that tpkit's admission plugins share with
// an Arktos (k8s.io/apiserver based) API server, without importing
// k8s.io/apiserver: an operation, the attributes of one request, and the
// ValidationInterface that plugins implement. Its sub-packages hold the plugins;
// fake-tp runs them in its admission chain, and cmd/tp-admission-webhook serves
// them as a ValidatingAdmissionWebhook.
//
// The method names and meanings follow k8s.io/apiserver/pkg/admission, so that
// an Arktos build adapts a plugin in a few lines (docs/vendoring.md).
package admission
