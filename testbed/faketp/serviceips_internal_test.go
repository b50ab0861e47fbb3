package faketp

import (
	"encoding/json"
	"net/netip"
	"testing"
)

// The allocator of one TP's service range: in order from the 11th
// address, never an address in use (stored or reserved), deleted ones back
// once a pass finds none free, full only when stored services fill it.
func TestServiceIPsAllocate(t *testing.T) {
	type op struct {
		reserve string   // reserve this address, else allocate
		stored  []string // what the store holds from now on
		forget  bool     // the store was reopened
		want    string   // the address allocated, or the error's text
	}
	for _, tc := range []struct {
		name  string
		cidr  string
		start []string // stored at the start
		ops   []op
	}{
		{name: "in order from the 11th address", cidr: "10.96.0.0/16",
			ops: []op{{want: "10.96.0.11"}, {want: "10.96.0.12"}, {want: "10.96.0.13"}}},
		{name: "another TP's range", cidr: "10.97.0.0/16", ops: []op{{want: "10.97.0.11"}}},
		{name: "a /12 spans the third octet", cidr: "10.112.0.0/12", start: []string{"10.112.0.11"},
			ops: []op{{want: "10.112.0.12"}}},
		{name: "stored and fixed addresses are skipped", cidr: "10.96.0.0/16", start: []string{"10.96.0.10", "10.96.0.11", "10.96.0.13", "None", "", "10.97.0.12"},
			ops: []op{{want: "10.96.0.12"}, {want: "10.96.0.14"}}},
		{name: "a reserved address is skipped before it is stored", cidr: "10.96.0.0/16",
			ops: []op{{reserve: "10.96.0.11"}, {reserve: "10.96.0.12"}, {want: "10.96.0.13"}}},
		{name: "reservations outside the range are ignored", cidr: "10.96.0.0/16",
			ops: []op{{reserve: "10.97.0.11"}, {reserve: "None"}, {reserve: "fd00::b"}, {want: "10.96.0.11"}}},
		{name: "a /28 holds four and is then full", cidr: "10.0.0.0/28",
			ops: []op{{want: "10.0.0.11"}, {want: "10.0.0.12"}, {want: "10.0.0.13"}, {want: "10.0.0.14"},
				{stored: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"}, want: "the service range 10.0.0.0/28 is full"}}},
		{name: "a deleted service's address comes back when the range wraps", cidr: "10.0.0.0/28",
			ops: []op{{want: "10.0.0.11"}, {want: "10.0.0.12"}, {want: "10.0.0.13"}, {want: "10.0.0.14"},
				{stored: []string{"10.0.0.11", "10.0.0.13", "10.0.0.14"}, want: "10.0.0.12"},
				{stored: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"}, want: "the service range 10.0.0.0/28 is full"}}},
		{name: "allocations not yet stored survive a reading of the store", cidr: "10.0.0.0/28",
			ops: []op{{want: "10.0.0.11"}, {want: "10.0.0.12"}, {want: "10.0.0.13"},
				{stored: []string{"10.0.0.11"}, want: "10.0.0.14"}, // 12 and 13 were handed out, not stored yet
				{want: "10.0.0.12"}}}, // the second reading trusts the store alone
		{name: "a reopened store is read again", cidr: "10.96.0.0/16",
			ops: []op{{want: "10.96.0.11"}, {forget: true, stored: []string{"10.96.0.11", "10.96.0.12"}, want: "10.96.0.13"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := tc.start
			inUse := func() []string { return stored }
			a := newServiceIPs(netip.MustParsePrefix(tc.cidr))
			for i, o := range tc.ops {
				if o.stored != nil {
					stored = o.stored
				}
				if o.forget {
					a.forget()
				}
				if o.reserve != "" {
					a.reserve(o.reserve, inUse)
					continue
				}
				got, err := a.allocate(inUse)
				if err != nil {
					got = err.Error()
				}
				if got != o.want {
					t.Fatalf("op %d: %q, want %q", i, got, o.want)
				}
			}
		})
	}
}

// SetDefaults_Service of Arktos (Kubernetes 1.18), and what Arktos's types
// lack. The first two cases are capture.sh's bodies of samples 30 and 31
// and the spec Arktos answered, without the cluster IP (allocated apart).
func TestServiceDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"sample 30", `{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":80}]}`,
			`{"ports":[{"name":"http","port":80,"protocol":"TCP","targetPort":80}],"selector":{"app":"web"},"sessionAffinity":"None","type":"ClusterIP"}`},
		{"sample 31", `{"clusterIP":"10.0.0.10","selector":{"k8s-app":"kube-dns"},"ports":[{"name":"dns","port":53,"protocol":"UDP"},{"name":"dns-tcp","port":53,"protocol":"TCP"}]}`,
			`{"clusterIP":"10.0.0.10","ports":[{"name":"dns","port":53,"protocol":"UDP","targetPort":53},{"name":"dns-tcp","port":53,"protocol":"TCP","targetPort":53}],"selector":{"k8s-app":"kube-dns"},"sessionAffinity":"None","type":"ClusterIP"}`},
		{"kubectl create service clusterip web --tcp=80:8080", `{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080}],"selector":{"app":"web"},"type":"ClusterIP"}`,
			`{"ports":[{"name":"80-8080","port":80,"protocol":"TCP","targetPort":8080}],"selector":{"app":"web"},"sessionAffinity":"None","type":"ClusterIP"}`},
		{"a target port of 0 or \"\" is the port", `{"ports":[{"port":80,"targetPort":0},{"port":81,"targetPort":""},{"port":82,"targetPort":"http"}]}`,
			`{"ports":[{"port":80,"protocol":"TCP","targetPort":80},{"port":81,"protocol":"TCP","targetPort":81},{"port":82,"protocol":"TCP","targetPort":"http"}],"sessionAffinity":"None","type":"ClusterIP"}`},
		{"affinity None has no config", `{"sessionAffinity":"None","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":5}}}`,
			`{"sessionAffinity":"None","type":"ClusterIP"}`},
		{"affinity ClientIP gets a timeout", `{"sessionAffinity":"ClientIP"}`,
			`{"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":10800}},"type":"ClusterIP"}`},
		{"affinity ClientIP keeps its timeout", `{"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":60}}}`,
			`{"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":60}},"type":"ClusterIP"}`},
		{"NodePort: external traffic policy Cluster", `{"type":"NodePort"}`,
			`{"externalTrafficPolicy":"Cluster","sessionAffinity":"None","type":"NodePort"}`},
		{"LoadBalancer keeps its policy", `{"type":"LoadBalancer","externalTrafficPolicy":"Local"}`,
			`{"externalTrafficPolicy":"Local","sessionAffinity":"None","type":"LoadBalancer"}`},
		{"ExternalName", `{"type":"ExternalName","externalName":"db.example.com"}`,
			`{"externalName":"db.example.com","sessionAffinity":"None","type":"ExternalName"}`},
		{"dual-stack fields Arktos lacks are dropped", `{"clusterIP":"10.0.0.5","clusterIPs":["10.0.0.5"],"ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack"}`,
			`{"clusterIP":"10.0.0.5","sessionAffinity":"None","type":"ClusterIP"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := decodeObject([]byte(`{"spec":` + tc.spec + `}`))
			if err != nil {
				t.Fatal(err)
			}
			r := lookupStoreName("services")
			dropNewerFields(r, o)
			applyDefaults(r, o)
			got, _ := json.Marshal(o["spec"])
			if string(got) != tc.want {
				t.Fatalf("\n got  %s\n want %s", got, tc.want)
			}
			// Defaults are stable: a second write (an update) keeps them.
			applyDefaults(r, o)
			if again, _ := json.Marshal(o["spec"]); string(again) != string(got) {
				t.Fatalf("defaulting twice: %s, then %s", got, again)
			}
		})
	}
}
