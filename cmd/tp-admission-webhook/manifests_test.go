package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const deployDir = "../../deploy/tp-admission-webhook"

func readManifest(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestManifests keeps deploy/ true to the program: the webhook configuration
// is safe (Fail, no side effects, v1 reviews first) and points at the Service and
// path the program serves, and the Deployment's args are flags it accepts.
func TestManifests(t *testing.T) {
	var d appsv1.Deployment
	var svc corev1.Service
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	readManifest(t, "deployment.yaml", &d)
	readManifest(t, "service.yaml", &svc)
	readManifest(t, "validatingwebhookconfiguration.yaml", &vwc)

	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container")
	}
	c := d.Spec.Template.Spec.Containers[0]
	o, err := parseFlags(c.Args, io.Discard)
	if err != nil {
		t.Fatalf("deployment args %q: %v", c.Args, err)
	}
	if o.certFile == "" || o.keyFile == "" || o.selfSignedDir != "" {
		t.Errorf("deployment must serve a mounted certificate, not a self-signed one: %+v", o)
	}
	if !strings.HasPrefix(o.certFile, c.VolumeMounts[0].MountPath+"/") {
		t.Errorf("cert %s is not under the mount %s", o.certFile, c.VolumeMounts[0].MountPath)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("probe %+v must be an HTTPS GET", p)
		}
	}
	if !strings.HasSuffix(o.listen, ":8443") || c.Ports[0].ContainerPort != 8443 {
		t.Errorf("listen %s vs container port %d", o.listen, c.Ports[0].ContainerPort)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if svc.Spec.Selector[k] != v || d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match service and pods", k, v)
		}
	}

	if len(vwc.Webhooks) != 2 {
		t.Fatalf("want 2 webhooks (daemonsets, tenants), got %d", len(vwc.Webhooks))
	}
	var resources []string
	for _, w := range vwc.Webhooks {
		if w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("%s: failurePolicy must be Fail", w.Name)
		}
		if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
			t.Errorf("%s: sideEffects must be None", w.Name)
		}
		// The API server sends the first version it knows: v1, the only one
		// the program reads. v1beta1 follows because Arktos refuses a list
		// without it (test/deploy).
		if !slices.Equal(w.AdmissionReviewVersions, []string{"v1", "v1beta1"}) {
			t.Errorf("%s: admissionReviewVersions %v, want [v1 v1beta1]", w.Name, w.AdmissionReviewVersions)
		}
		s := w.ClientConfig.Service
		if s == nil || s.Name != svc.Name || s.Namespace != svc.Namespace || s.Path == nil || *s.Path != ValidatePath ||
			s.Port == nil || *s.Port != svc.Spec.Ports[0].Port {
			t.Errorf("%s: clientConfig.service %+v does not reach the Service at %s", w.Name, s, ValidatePath)
		}
		if s != nil && !slices.Contains(strings.Split(defaultSelfSignedHosts, ","), s.Name+"."+s.Namespace+".svc") {
			t.Errorf("default --self-signed-hosts lacks %s.%s.svc", s.Name, s.Namespace)
		}
		for _, r := range w.Rules {
			resources = append(resources, r.Resources...)
		}
	}
	slices.Sort(resources)
	if !slices.Equal(resources, []string{"daemonsets", "tenants"}) {
		t.Errorf("rules cover %v", resources)
	}
}

func TestManifestGracePeriodCoversShutdown(t *testing.T) {
	var d appsv1.Deployment
	readManifest(t, "deployment.yaml", &d)
	o, err := parseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	grace := d.Spec.Template.Spec.TerminationGracePeriodSeconds
	// ops' graceful shutdown takes up to 5 s after the delay.
	if o.shutdownDelay <= 0 || grace == nil || time.Duration(*grace)*time.Second < o.shutdownDelay+5*time.Second {
		t.Fatalf("shutdown delay %v and grace period %v: the kubelet would kill the pod mid-shutdown", o.shutdownDelay, grace)
	}
}
