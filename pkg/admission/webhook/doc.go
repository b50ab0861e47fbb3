// Package webhook serves tpkit admission plugins as a Kubernetes
// ValidatingAdmissionWebhook speaking admission.k8s.io/v1 AdmissionReview.
//
// The job is translation only: DecodeReview checks and decodes a review,
// RecordFromRequest turns its request into an admissionk8s.Record (the tenant
// comes from the raw object's Arktos metadata.tenant, or the old object's for
// DELETE), and Handler runs an admission.ValidationInterface on the plain
// admission.Request the adapter (pkg/admission/k8s) makes of it and writes the
// AdmissionReview response, with a refusal as the adapter's API status.
// Decisions live in the plugins.
//
// Invariants:
//   - Malformed input never panics: it gets 400 (413 when too large, 405 for a
//     method other than POST) with a plain-text message saying what was wrong.
//   - A well-formed review always gets 200 with response.uid equal to
//     request.uid; a rejection carries the plugin's metav1.Status.
//   - Metrics are registered on the caller's prometheus.Registerer; label
//     values come from fixed sets, so hostile input cannot grow them.
//
// SelfSigned writes a development CA and serving certificate (--self-signed-dir).
package webhook
