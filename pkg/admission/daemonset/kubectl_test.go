package daemonset_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
	"github.com/tpkit-dev/tpkit/pkg/admission/tenantname"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// kubectl runs the real kubectl against kubeconfig and returns its combined
// output and whether it succeeded.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func needKubectl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const dsManifest = `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"node-agent","namespace":"kube-system"},
"spec":{"selector":{"matchLabels":{"app":"node-agent"}},"template":{"metadata":{"labels":{"app":"node-agent"}},
"spec":{"containers":[{"name":"agent","image":"registry.k8s.io/pause:3.10"}]}}}}`

// seedTenantT1 gives the TP tenant t1 with a kube-system namespace: as in
// Arktos, nothing can be created in a tenant or namespace that does not
// exist.
func seedTenantT1(t *testing.T, c *faketp.Cluster) {
	t.Helper()
	err := c.TPs()[0].Seed(
		map[string]any{"apiVersion": "v1", "kind": "Tenant", "metadata": map[string]any{"name": "t1"}, "spec": map[string]any{"storageClusterId": "0"}},
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system", "tenant": "t1"}},
	)
	if err != nil {
		t.Fatal(err)
	}
}

// tenantJSON is a Tenant as Arktos takes it: with a storage cluster.
func tenantJSON(name string) string {
	return `{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"` + name + `"},"spec":{"storageClusterId":"0"}}`
}

// TestKubectlAgainstFakeTP is the end-to-end check of the DaemonSet admission (plugin, webhook and fake-tp chain): the real
// kubectl, talking to fake-tp over HTTP, meets the plugins in fake-tp's
// default admission chain.
func TestKubectlAgainstFakeTP(t *testing.T) {
	needKubectl(t)
	c := faketp.StartT(t, faketp.Options{})
	seedTenantT1(t, c)
	kc := c.KubeconfigPaths()[0]
	ds := writeFile(t, "ds.json", dsManifest)

	t.Run("daemonset in tenant t1 is refused with Arktos's message", func(t *testing.T) {
		out, ok := kubectl(t, kc, "create", "--raw", "/apis/apps/v1/tenants/t1/namespaces/kube-system/daemonsets", "-f", ds)
		if ok || !strings.Contains(out, daemonset.Message) {
			t.Fatalf("kubectl succeeded=%v, output %q; want a failure with %q", ok, out, daemonset.Message)
		}
		if _, found := kubectl(t, kc, "get", "--raw", "/apis/apps/v1/tenants/t1/namespaces/kube-system/daemonsets/node-agent"); found {
			t.Fatal("the refused DaemonSet was stored")
		}
	})
	t.Run("daemonset in tenant system is created", func(t *testing.T) {
		out, ok := kubectl(t, kc, "create", "--raw", "/apis/apps/v1/tenants/system/namespaces/kube-system/daemonsets", "-f", ds)
		if !ok {
			t.Fatalf("kubectl failed: %s", out)
		}
		out, ok = kubectl(t, kc, "get", "daemonsets", "-n", "kube-system", "node-agent", "-o", "name")
		if !ok || strings.TrimSpace(out) != "daemonset.apps/node-agent" {
			t.Fatalf("kubectl get: %v %q", ok, out)
		}
	})
	for name, reason := range map[string]string{"all": `"all" is reserved`, "Bad_Name": "not a DNS-1123 label"} {
		t.Run("tenant "+name+" is refused", func(t *testing.T) {
			f := writeFile(t, "tenant.json", tenantJSON(name))
			out, ok := kubectl(t, kc, "create", "--raw", "/api/v1/tenants", "-f", f)
			if ok || !strings.Contains(out, `Tenant "`+name+`" is invalid`) || !strings.Contains(out, reason) {
				t.Fatalf("kubectl succeeded=%v, output %q; want Tenant %q is invalid: %s", ok, out, name, reason)
			}
		})
	}
	t.Run("tenant system is not created again", func(t *testing.T) {
		f := writeFile(t, "tenant.json", tenantJSON("system"))
		out, ok := kubectl(t, kc, "create", "--raw", "/api/v1/tenants", "-f", f)
		if ok || !strings.Contains(out, `tenants "system" is forbidden`) || !strings.Contains(out, "cannot be created") {
			t.Fatalf("creating system: succeeded=%v, %q", ok, out)
		}
	})
	t.Run("tenant t2 is created and system is not deleted", func(t *testing.T) {
		f := writeFile(t, "tenant.json", tenantJSON("t2"))
		if out, ok := kubectl(t, kc, "create", "--raw", "/api/v1/tenants", "-f", f); !ok {
			t.Fatalf("creating tenant t2: %s", out)
		}
		out, ok := kubectl(t, kc, "delete", "--raw", "/api/v1/tenants/system")
		if ok || !strings.Contains(out, `tenants "system" is forbidden`) {
			t.Fatalf("deleting system: succeeded=%v, %q", ok, out)
		}
	})
}

// TestKubectlPluginsCanBeDisabled shows that the refusals above come from the
// plugins (--disable-admission-plugins): with them off, a DaemonSet in t1 is
// stored, and creating tenant system meets only the store's AlreadyExists.
func TestKubectlPluginsCanBeDisabled(t *testing.T) {
	needKubectl(t)
	c := faketp.StartT(t, faketp.Options{DisablePlugins: []string{daemonset.PluginName, tenantname.PluginName}})
	seedTenantT1(t, c)
	kc := c.KubeconfigPaths()[0]
	ds := writeFile(t, "ds.json", dsManifest)
	if out, ok := kubectl(t, kc, "create", "--raw", "/apis/apps/v1/tenants/t1/namespaces/kube-system/daemonsets", "-f", ds); !ok {
		t.Fatalf("with the plugin disabled, kubectl failed: %s", out)
	}
	f := writeFile(t, "tenant.json", tenantJSON("system"))
	if out, _ := kubectl(t, kc, "create", "--raw", "/api/v1/tenants", "-f", f); strings.Contains(out, "cannot be created") {
		t.Fatalf("tenant-name plugin still ran: %s", out)
	}
}

// TestKubectlAdminOnly runs fake-tp with the admin-only mode on and real
// kubectl users: only admins and system-tenant users manage DaemonSets.
// kubectl sends no bearer token over plain HTTP, so the users are made by
// impersonation (kubeconfig as, as-groups, as-user-extra), which carries the
// user's tenant in the extra "tenant" just as an authenticator would.
func TestKubectlAdminOnly(t *testing.T) {
	needKubectl(t)
	c := faketp.StartT(t, faketp.Options{Plugins: []faketp.Plugin{
		{Name: daemonset.PluginName, Plugin: daemonset.New(daemonset.Config{AdminOnly: true})},
	}})
	url := c.TPs()[0].URL()
	kubeconfigAs := func(user, tenant string) string {
		return writeFile(t, user+".kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: tp, cluster: {server: "`+url+`"}}]
users: [{name: u, user: {as: `+user+`, as-groups: [system:authenticated], as-user-extra: {tenant: [`+tenant+`]}}}]
contexts: [{name: c, context: {cluster: tp, user: u}}]
current-context: c
`)
	}
	alice, sam, admin := kubeconfigAs("alice", "t1"), kubeconfigAs("sam", "system"), c.KubeconfigPaths()[0]
	ds := writeFile(t, "ds.json", dsManifest)
	// The system tenant's path: a short path would be alice's own tenant.
	const path = "/apis/apps/v1/tenants/system/namespaces/kube-system/daemonsets"

	out, ok := kubectl(t, alice, "create", "--raw", path, "-f", ds)
	if ok || !strings.Contains(out, `user "alice" (tenant t1) may not create DaemonSets`) {
		t.Fatalf("alice: succeeded=%v %q", ok, out)
	}
	if out, ok := kubectl(t, sam, "create", "--raw", path, "-f", ds); !ok {
		t.Fatalf("sam (system tenant): %s", out)
	}
	out, ok = kubectl(t, alice, "delete", "--raw", path+"/node-agent")
	if ok || !strings.Contains(out, `user "alice" (tenant t1) may not delete DaemonSets`) {
		t.Fatalf("alice delete: succeeded=%v %q", ok, out)
	}
	if out, ok := kubectl(t, admin, "delete", "daemonset", "-n", "kube-system", "node-agent"); !ok {
		t.Fatalf("admin delete: %s", out)
	}
}
