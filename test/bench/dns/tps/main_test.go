package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// The query mix of make bench-dns is only meaningful if its hits name
// services the seeded TPs have (in the right tenant, and headless ones with
// Endpoints) and its misses do not: check every line against the stores.
func TestQueriesMatchTheSeed(t *testing.T) {
	const tpsN, services, pods, queries = 2, 60, 60, 400
	c := faketp.StartT(t, faketp.Options{Partitions: tpsN, Plugins: []faketp.Plugin{}})
	for i, tp := range c.TPs() {
		if err := seed(tp, i, services, pods, 0); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "queries.txt")
	if err := writeQueries(path, tpsN, services, queries); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// has reports whether any TP holds resource tenant/ns/name.
	has := func(resource, tenant, ns, name string) bool {
		for _, tp := range c.TPs() {
			if _, ok := tp.Store().Get(store.Key{Resource: resource, Tenant: tenant, Namespace: ns, Name: name}); ok {
				return true
			}
		}
		return false
	}
	lines, kinds := 0, map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			t.Fatalf("line %d: %q", lines, sc.Text())
		}
		labels := strings.Split(strings.TrimPrefix(fields[0], "_http._tcp."), ".")
		name, ns, tenant := labels[0], labels[1], "system"
		if labels[2] != "svc" { // <svc>.<ns>.<tenant>.svc.cluster.local
			tenant = labels[2]
		}
		want := !strings.HasPrefix(name, "missing")
		kinds[fields[1]+map[bool]string{true: " hit", false: " miss"}[want]]++
		if got := has("services", tenant, ns, name); got != want {
			t.Errorf("line %d %q: service %s/%s/%s exists %v, want %v", lines, sc.Text(), tenant, ns, name, got, want)
		}
	}
	if lines != queries {
		t.Fatalf("%d lines, want %d", lines, queries)
	}
	for _, k := range []string{"A hit", "A miss", "SRV hit"} {
		if kinds[k] == 0 {
			t.Errorf("the mix has no %s: %v", k, kinds)
		}
	}
	// Every headless service has its Endpoints.
	for i := 1; i < services; i += 2 {
		for tp := range tpsN {
			if tenant := tenantOf(tp, i); !has("endpoints", tenant, "ns"+strconv.Itoa(i%namespaces), "svc"+strconv.Itoa(i)) {
				t.Errorf("headless svc%d of %s has no Endpoints", i, tenant)
			}
		}
	}
}

// With --endpoint-addresses every service has Endpoints of that many
// pod addresses.
func TestEndpointAddressesForEveryService(t *testing.T) {
	const services, pods, addrs = 10, 40, 3
	c := faketp.StartT(t, faketp.Options{Partitions: 1, Plugins: []faketp.Plugin{}})
	tp := c.TPs()[0]
	if err := seed(tp, 0, services, pods, addrs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < services; i++ {
		o, ok := tp.Store().Get(store.Key{Resource: "endpoints", Tenant: tenantOf(0, i), Namespace: "ns" + strconv.Itoa(i%namespaces), Name: "svc" + strconv.Itoa(i)})
		if !ok {
			t.Fatalf("svc%d has no Endpoints", i)
		}
		if n := strings.Count(string(o.Data), `"ip":`); n != addrs {
			t.Errorf("svc%d's Endpoints have %d addresses, want %d", i, n, addrs)
		}
	}
}

// Pods past 65,536 a TP keep distinct addresses.
func TestPodAddressesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, i := range []int{0, 1, 65535, 65536, 65537, 131072, 327679} {
		ip := podIP(0, i)
		if seen[ip] {
			t.Errorf("pod%d's address %s repeats", i, ip)
		}
		seen[ip] = true
	}
}
