// Package k8s is pkg/admission's apimachinery adapter: it builds the core's
// plain admission.Request from the runtime.Object values that tpkit's own
// servers hold (fake-tp's admission chain, pkg/admission/webhook), and turns
// the core's *admission.Error into the apimachinery StatusError an API
// server returns. Import it as admissionk8s.
//
// Invariants: Record.Request never panics, whatever the objects (typed,
// *unstructured.Unstructured, typed nil pointers, objects without metadata);
// StatusError keeps the core error's code, reason, group, resource or kind,
// name and message, so that StatusError(err).Error() == err.Error() and
// clients see Arktos's words. An Arktos build does not need this package:
// it converts its own admission.Attributes (docs/vendoring.md).
package k8s
