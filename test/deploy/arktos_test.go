package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// arktosGroupVersions is what an Arktos 6685f14 TP serves (GET /api and
// /apis on hack/arktos-lab.sh): no discovery.k8s.io, no policy/v1. A
// manifest's apiVersion must be one of them, and its kind one of
// checkedKinds, which current Kubernetes serves too (unlike policy/v1beta1
// or extensions/v1beta1 workloads).
var arktosGroupVersions = []string{
	"v1",
	"admissionregistration.k8s.io/v1", "admissionregistration.k8s.io/v1beta1",
	"apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1",
	"apiregistration.k8s.io/v1", "apiregistration.k8s.io/v1beta1",
	"apps/v1", "apps/v1beta1", "apps/v1beta2",
	"authentication.k8s.io/v1", "authentication.k8s.io/v1beta1",
	"authorization.k8s.io/v1", "authorization.k8s.io/v1beta1",
	"autoscaling/v1", "autoscaling/v2beta1", "autoscaling/v2beta2",
	"batch/v1", "batch/v1beta1",
	"certificates.k8s.io/v1beta1",
	"coordination.k8s.io/v1", "coordination.k8s.io/v1beta1",
	"events.k8s.io/v1beta1",
	"extensions/v1beta1",
	"networking.k8s.io/v1", "networking.k8s.io/v1beta1",
	"node.k8s.io/v1beta1",
	"policy/v1beta1",
	"rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io/v1beta1",
	"scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1",
	"storage.k8s.io/v1", "storage.k8s.io/v1beta1",
}

// checkedKinds are the kinds newerThanArktos was derived for. A manifest of
// another kind fails the test until its types are compared too.
var checkedKinds = []string{
	"apps/v1 Deployment", "apps/v1 DaemonSet",
	"v1 Service", "v1 ConfigMap", "v1 Secret", "v1 ServiceAccount",
	"rbac.authorization.k8s.io/v1 ClusterRole", "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
	"rbac.authorization.k8s.io/v1 Role", "rbac.authorization.k8s.io/v1 RoleBinding",
	"admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration",
	"scheduling.k8s.io/v1 PriorityClass",
}

// newerThanArktos lists the fields of this module's k8s.io/api, reachable
// from checkedKinds' specs, that Arktos 6685f14's API lacks: each is absent
// from the definition of its type in the /openapi/v2 of a TP started by
// hack/arktos-lab.sh (Arktos's Handler and ResizePolicy stand for
// LifecycleHandler and ContainerResizePolicy). Arktos's client-side schema
// check in kubectl refuses every one ("unknown field"). Type is the Go type
// that declares the field, as group/version.Name; since is the Kubernetes
// release that added it, where that explains the entry. Fields under one of
// these (seccompProfile's type, say) are not listed. Redo the comparison when
// k8s.io/api moves or a kind joins checkedKinds.
var newerThanArktos = []struct{ typ, field, since string }{
	{"admissionregistration/v1.ValidatingWebhook", "matchConditions", "1.27"},
	{"apps/v1.RollingUpdateDaemonSet", "maxSurge", "1.21"},
	{"core/v1.ConfigMap", "immutable", "1.18 (alpha)"},
	{"core/v1.Secret", "immutable", "1.18 (alpha)"},
	{"core/v1.ConfigMapVolumeSource", "defaultUser", ""},
	{"core/v1.Container", "startupProbe", "1.16 (alpha)"},
	{"core/v1.Container", "restartPolicy", "1.28 (sidecar containers)"},
	{"core/v1.Container", "restartPolicyRules", ""},
	{"core/v1.ContainerResizePolicy", "restartPolicy", "Arktos's own resizePolicy has resourceName and policy"},
	{"core/v1.DownwardAPIVolumeFile", "user", ""},
	{"core/v1.DownwardAPIVolumeSource", "defaultUser", ""},
	{"core/v1.EmptyDirVolumeSource", "mode", ""},
	{"core/v1.EnvVarSource", "fileKeyRef", ""},
	{"core/v1.HTTPGetAction", "protocol", ""},
	{"core/v1.KeyToPath", "user", ""},
	{"core/v1.Lifecycle", "stopSignal", "1.33"},
	{"core/v1.LifecycleHandler", "sleep", "1.29"},
	{"core/v1.PodAffinityTerm", "namespaceSelector", "1.21"},
	{"core/v1.PodAffinityTerm", "matchLabelKeys", "1.29"},
	{"core/v1.PodAffinityTerm", "mismatchLabelKeys", "1.29"},
	{"core/v1.PodSecurityContext", "seccompProfile", "1.19; Arktos takes the seccomp.security.alpha.kubernetes.io/pod annotation"},
	{"core/v1.PodSecurityContext", "fsGroupChangePolicy", "1.18 (alpha)"},
	{"core/v1.PodSecurityContext", "appArmorProfile", "1.30"},
	{"core/v1.PodSecurityContext", "supplementalGroupsPolicy", "1.31"},
	{"core/v1.PodSecurityContext", "seLinuxChangePolicy", "1.32"},
	{"core/v1.PodSpec", "ephemeralContainers", "1.16 (alpha)"},
	{"core/v1.PodSpec", "setHostnameAsFQDN", "1.19"},
	{"core/v1.PodSpec", "os", "1.23"},
	{"core/v1.PodSpec", "hostUsers", "1.25"},
	{"core/v1.PodSpec", "schedulingGates", "1.26"},
	{"core/v1.PodSpec", "resourceClaims", "1.26"},
	{"core/v1.PodSpec", "resources", "1.32"},
	{"core/v1.PodSpec", "hostnameOverride", ""},
	{"core/v1.PodSpec", "schedulingGroup", ""},
	{"core/v1.PodSpec", "evictionResponders", ""},
	{"core/v1.Probe", "terminationGracePeriodSeconds", "1.21"},
	{"core/v1.ProbeHandler", "grpc", "1.23"},
	{"core/v1.ProjectedVolumeSource", "defaultUser", ""},
	{"core/v1.ResourceRequirements", "claims", "1.26"},
	{"core/v1.SecretVolumeSource", "defaultUser", ""},
	{"core/v1.SecurityContext", "seccompProfile", "1.19"},
	{"core/v1.SecurityContext", "appArmorProfile", "1.30"},
	{"core/v1.ServiceAccountTokenProjection", "user", ""},
	{"core/v1.ServicePort", "appProtocol", "1.18 (alpha)"},
	{"core/v1.ServiceSpec", "clusterIPs", "1.20 (dual stack)"},
	{"core/v1.ServiceSpec", "ipFamilies", "1.20 (dual stack)"},
	{"core/v1.ServiceSpec", "ipFamilyPolicy", "1.20 (dual stack)"},
	{"core/v1.ServiceSpec", "allocateLoadBalancerNodePorts", "1.20"},
	{"core/v1.ServiceSpec", "loadBalancerClass", "1.21"},
	{"core/v1.ServiceSpec", "internalTrafficPolicy", "1.21"},
	{"core/v1.ServiceSpec", "trafficDistribution", "1.30"},
	{"core/v1.TopologySpreadConstraint", "minDomains", "1.24"},
	{"core/v1.TopologySpreadConstraint", "nodeAffinityPolicy", "1.25"},
	{"core/v1.TopologySpreadConstraint", "nodeTaintsPolicy", "1.25"},
	{"core/v1.TopologySpreadConstraint", "matchLabelKeys", "1.25"},
	{"core/v1.VolumeMount", "recursiveReadOnly", "1.30"},
	{"core/v1.VolumeMount", "bindMountOptions", ""},
	{"core/v1.VolumeProjection", "clusterTrustBundle", "1.29"},
	{"core/v1.VolumeProjection", "podCertificate", ""},
	{"core/v1.VolumeSource", "ephemeral", "1.19 (alpha)"},
	{"core/v1.VolumeSource", "image", "1.31"},
	{"core/v1.WindowsSecurityContextOptions", "runAsUserName", "1.16 (alpha)"},
	{"core/v1.WindowsSecurityContextOptions", "hostProcess", "1.22"},
}

// checkedScheme knows the groups of checkedKinds. It is not client-go's
// scheme, which imports every API group (and a cold race build of make
// test would compile them for this test alone).
func checkedScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, admissionregistrationv1.AddToScheme, schedulingv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// A finding is one thing in a manifest that Arktos refuses.
type finding struct{ path, why string }

func (f finding) String() string { return f.path + ": " + f.why }

// arktosFindings decodes one YAML document strictly into this module's
// types (an unknown field is an error) and returns what Arktos would refuse.
func arktosFindings(doc []byte) ([]finding, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(arktosGroupVersions, tm.APIVersion) {
		return []finding{{tm.Kind, "apiVersion " + tm.APIVersion + " is not served by Arktos"}}, nil
	}
	if !slices.Contains(checkedKinds, tm.APIVersion+" "+tm.Kind) {
		return nil, fmt.Errorf("%s %s is not among checkedKinds: compare its types with Arktos's /openapi/v2 and add what Arktos lacks to newerThanArktos", tm.APIVersion, tm.Kind)
	}
	s, err := checkedScheme()
	if err != nil {
		return nil, err
	}
	obj, err := s.New(gv.WithKind(tm.Kind))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	var fs []finding
	walk(reflect.ValueOf(obj), tm.Kind, &fs)
	fs = append(fs, arktosRules(obj)...)
	return fs, nil
}

// walk reports every field that is set and listed in newerThanArktos.
func walk(v reflect.Value, path string, fs *[]finding) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem(), path, fs)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i), fs)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			walk(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k), fs)
		}
	case reflect.Struct:
		t := v.Type()
		typ := strings.TrimPrefix(strings.TrimPrefix(t.PkgPath(), "k8s.io/api/"), "k8s.io/apimachinery/pkg/apis/") + "." + t.Name()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || v.Field(i).IsZero() {
				continue
			}
			p := path
			if opts != "inline" && !(name == "" && f.Anonymous) {
				p = path + "." + name
				for _, n := range newerThanArktos {
					if n.typ == typ && n.field == name {
						why := "not in Arktos's API"
						if n.since != "" {
							why += " (Kubernetes " + n.since + ")"
						}
						*fs = append(*fs, finding{p, why})
					}
				}
			}
			walk(v.Field(i), p, fs)
		}
	}
}

// arktosRules are what Arktos's validation refuses in fields it does know.
func arktosRules(obj runtime.Object) []finding {
	var fs []finding
	if vwc, ok := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
		for i, w := range vwc.Webhooks {
			// Arktos validates as Kubernetes 1.16 did: the list must
			// contain a version a 1.15 server knows.
			if !slices.Contains(w.AdmissionReviewVersions, "v1beta1") {
				fs = append(fs, finding{fmt.Sprintf("ValidatingWebhookConfiguration.webhooks[%d].admissionReviewVersions", i), "Arktos requires v1beta1 in the list"})
			}
		}
	}
	return fs
}

// documents splits a YAML file into its documents.
func documents(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// manifests are deploy/*/*.yaml but the kustomizations: every base, and
// what is applied with -f (partition-dns's rbac-per-tp.yaml). The overlays
// in deploy/overlays are for newer clusters and are not checked here.
func manifests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../deploy/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	if len(files) < 8 {
		t.Fatalf("found only %v", files)
	}
	return files
}

// TestManifestsFitArktos: no manifest under deploy/ uses an apiVersion, a
// field or a value that Arktos's API refuses.
func TestManifestsFitArktos(t *testing.T) {
	for _, f := range manifests(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(b) {
			fs, err := arktosFindings(doc)
			if err != nil {
				t.Errorf("%s document %d: %v", f, i+1, err)
			}
			for _, x := range fs {
				t.Errorf("%s document %d: %s", f, i+1, x)
			}
		}
	}
}

// TestArktosFindings: the check finds what a real Arktos TP refuses and
// passes what it accepts (every case without an error was tried with kubectl
// apply --dry-run=server against a TP of hack/arktos-lab.sh), and it
// refuses what it cannot judge.
func TestArktosFindings(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata:\n      labels: {a: b}\n" +
			"      annotations: {seccomp.security.alpha.kubernetes.io/pod: runtime/default}\n    spec:\n" + spec
	}
	webhook := func(versions string) string {
		return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: x}\nwebhooks:\n" +
			"  - name: x.example.com\n    admissionReviewVersions: " + versions + "\n    sideEffects: None\n    clientConfig: {url: https://x.example.com}\n"
	}
	for _, c := range []struct {
		name, doc string
		want      []string // finding paths
		err       string
	}{
		{"a plain Deployment", pod("      securityContext: {runAsNonRoot: true}\n      containers: [{name: c, image: i, livenessProbe: {httpGet: {port: 80}}}]\n"), nil, ""},
		{"seccompProfile on the pod", pod("      securityContext: {seccompProfile: {type: RuntimeDefault}}\n      containers: [{name: c, image: i}]\n"),
			[]string{"Deployment.spec.template.spec.securityContext.seccompProfile"}, ""},
		{"seccompProfile on a container", pod("      containers: [{name: c, image: i, securityContext: {seccompProfile: {type: RuntimeDefault}}}]\n"),
			[]string{"Deployment.spec.template.spec.containers[0].securityContext.seccompProfile"}, ""},
		{"startupProbe", pod("      containers: [{name: c, image: i, startupProbe: {httpGet: {port: 80}}}]\n"),
			[]string{"Deployment.spec.template.spec.containers[0].startupProbe"}, ""},
		{"grpc probe", pod("      containers: [{name: c, image: i, livenessProbe: {grpc: {port: 80}}}]\n"),
			[]string{"Deployment.spec.template.spec.containers[0].livenessProbe.grpc"}, ""},
		{"topologySpreadConstraints, 1.18's part", pod("      topologySpreadConstraints: [{maxSkew: 1, topologyKey: k, whenUnsatisfiable: DoNotSchedule}]\n      containers: [{name: c, image: i}]\n"), nil, ""},
		{"topologySpreadConstraints minDomains", pod("      topologySpreadConstraints: [{maxSkew: 1, minDomains: 2, topologyKey: k, whenUnsatisfiable: DoNotSchedule}]\n      containers: [{name: c, image: i}]\n"),
			[]string{"Deployment.spec.template.spec.topologySpreadConstraints[0].minDomains"}, ""},
		{"pod os", pod("      os: {name: linux}\n      containers: [{name: c, image: i}]\n"), []string{"Deployment.spec.template.spec.os"}, ""},
		{"nodeSelector kubernetes.io/os", pod("      nodeSelector: {kubernetes.io/os: linux}\n      containers: [{name: c, image: i}]\n"), nil, ""},
		{"ipFamilyPolicy and appProtocol", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ipFamilyPolicy: SingleStack\n  ports: [{port: 53, appProtocol: dns}]\n",
			[]string{"Service.spec.ports[0].appProtocol", "Service.spec.ipFamilyPolicy"}, ""},
		{"DaemonSet maxSurge", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {a: b}}\n  updateStrategy: {rollingUpdate: {maxSurge: 1}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n",
			[]string{"DaemonSet.spec.updateStrategy.rollingUpdate.maxSurge"}, ""},
		{"webhook reviews v1 only", webhook("[v1]"), []string{"ValidatingWebhookConfiguration.webhooks[0].admissionReviewVersions"}, ""},
		{"webhook reviews v1 then v1beta1", webhook("[v1, v1beta1]"), nil, ""},
		{"webhook matchConditions", strings.Replace(webhook("[v1, v1beta1]"), "    sideEffects", "    matchConditions: [{name: a, expression: 'true'}]\n    sideEffects", 1),
			[]string{"ValidatingWebhookConfiguration.webhooks[0].matchConditions"}, ""},
		{"discovery.k8s.io", "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: x}\naddressType: IPv4\nendpoints: []\n", []string{"EndpointSlice"}, ""},
		{"policy/v1", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailable: 1}\n", []string{"PodDisruptionBudget"}, ""},
		{"extensions/v1beta1 Deployment, gone upstream", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: x}\n", nil, "not among checkedKinds"},
		{"a kind not compared", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n", nil, "not among checkedKinds"},
		{"a misspelt field", pod("      containers: [{name: c, image: i, livenesProbe: {}}]\n"), nil, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, err := arktosFindings([]byte(c.doc))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.path)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("findings %v, want %v", fs, c.want)
			}
		})
	}
}
