// Command check is make soak's final check: every cluster name of the TPs'
// services, asked of partition-dns over UDP, must be answered exactly as
// the TPs' objects say, and every name churn deleted must be NXDOMAIN.
//
// It lists every tenant's services and core/v1 Endpoints in each TP (in
// partition-dns's order, through pkg/informer's all-tenants paths) and
// expects, for each service's name (the tenant form
// <svc>.<ns>.<tenant>.svc.<zone>, the upstream form <svc>.<ns>.svc.<zone>
// for the system tenant, answered by the first TP that has the service, as
// for a querier that is no pod): a ClusterIP service's cluster IP, a
// headless service's distinct ready endpoint addresses, NXDOMAIN for a
// headless service without any. ExternalName services and addresses other
// than IPv4 are not checked (make soak's TPs have none).
//
// With --count it only prints how many objects the TPs hold.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/pkg/informer"
	"github.com/tpkit-dev/tpkit/pkg/partition"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

func main() {
	kubeconfigs := flag.String("kubeconfigs", "", "Comma-separated TP kubeconfigs, in partition-dns's order.")
	server := flag.String("dns", "127.0.0.1:53", "partition-dns's address.")
	zone := flag.String("zone", "cluster.local", "The cluster zone.")
	deletedFile := flag.String("deleted", "", "Names that must be NXDOMAIN unless a TP holds them again, one per line (churn --deleted).")
	count := flag.Bool("count", false, "Print the TPs' object counts and exit.")
	workers := flag.Int("workers", 16, "Queries in flight.")
	flag.Parse()
	ctx := context.Background()
	// The TPs as partition-dns reads them: in order, through the
	// tenancy transport.
	set, err := partition.New(partition.Options{KubeconfigPaths: strings.Split(*kubeconfigs, ",")})
	if err != nil {
		fail(err)
	}
	var tps []*informer.Clients
	for _, p := range set.Partitions() {
		tps = append(tps, p.Client)
	}
	if *count {
		n := map[string]int{}
		for _, c := range tps {
			for _, r := range []informer.Resource{informer.Services, informer.Endpoints, informer.Pods, informer.Namespaces} {
				items, err := list(ctx, c, r)
				if err != nil {
					fail(err)
				}
				n[r.Name] += len(items)
			}
		}
		fmt.Printf("%d objects in %d TPs: %d services, %d endpoints, %d pods (and %d namespaces)\n",
			n["services"]+n["endpoints"]+n["pods"], len(tps), n["services"], n["endpoints"], n["pods"], n["namespaces"])
		return
	}
	want, skipped, err := expected(ctx, tps, *zone)
	if err != nil {
		fail(err)
	}
	cluster := len(want)
	deleted := 0
	if *deletedFile != "" {
		f, err := os.Open(*deletedFile)
		if err != nil {
			fail(err)
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if q := dns.Fqdn(s.Text()); want[q] == nil {
				want[q], deleted = &answer{rcode: dns.RcodeNameError}, deleted+1
			}
		}
		if err := s.Err(); err != nil {
			fail(err)
		}
		f.Close()
	}
	wrong := ask(*server, want, *workers)
	fmt.Printf("checked %d names: %d cluster names, %d deleted names (%d services not checked); %d wrong\n",
		len(want), cluster, deleted, skipped, len(wrong))
	sort.Strings(wrong)
	for i, w := range wrong {
		if i == 20 {
			fmt.Printf("... and %d more\n", len(wrong)-i)
			break
		}
		fmt.Println("wrong:", w)
	}
	if len(wrong) > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "check:", err)
	os.Exit(1)
}

// answer is what a name must get: an rcode and, for NOERROR, exactly these
// A records (sorted).
type answer struct {
	rcode int
	ips   []string
}

func (a *answer) String() string {
	if a.rcode != dns.RcodeSuccess {
		return dns.RcodeToString[a.rcode]
	}
	return "NOERROR " + strings.Join(a.ips, ",")
}

// list lists every tenant's objects of r in one TP.
func list(ctx context.Context, c *informer.Clients, r informer.Resource) ([]metav1.Object, error) {
	lw, err := informer.NewListWatch(c, r, informer.Scope{})
	if err != nil {
		return nil, err
	}
	obj, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(items))
	for i, item := range items {
		if out[i], err = meta.Accessor(item); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expected reads the TPs' services and endpoints and returns the answer
// each cluster name must get, and how many services it could not judge.
func expected(ctx context.Context, tps []*informer.Clients, zone string) (map[string]*answer, int, error) {
	want := map[string]*answer{}
	skipped := 0
	for _, c := range tps {
		services, err := list(ctx, c, informer.Services)
		if err != nil {
			return nil, 0, err
		}
		endpoints, err := list(ctx, c, informer.Endpoints)
		if err != nil {
			return nil, 0, err
		}
		ready := map[string][]string{} // tenant/ns/name -> addresses
		for _, o := range endpoints {
			k := tenancy.TenantOf(o) + "/" + o.GetNamespace() + "/" + o.GetName()
			for _, s := range o.(*corev1.Endpoints).Subsets {
				for _, a := range s.Addresses {
					ready[k] = append(ready[k], a.IP)
				}
			}
		}
		for _, o := range services {
			s := o.(*corev1.Service)
			tenant := tenancy.TenantOf(s)
			q := fmt.Sprintf("%s.%s.%s.svc.%s.", s.Name, s.Namespace, tenant, zone)
			if tenancy.IsSystem(tenant) {
				q = fmt.Sprintf("%s.%s.svc.%s.", s.Name, s.Namespace, zone)
			}
			if want[q] != nil { // an earlier TP answers it
				continue
			}
			var ips []string
			switch {
			case s.Spec.Type == corev1.ServiceTypeExternalName:
				skipped++
				continue
			case s.Spec.ClusterIP == corev1.ClusterIPNone:
				ips = ready[tenant+"/"+s.Namespace+"/"+s.Name]
			default:
				ips = []string{s.Spec.ClusterIP}
			}
			a := &answer{rcode: dns.RcodeNameError}
			seen := map[string]bool{}
			for _, ip := range ips {
				if p := net.ParseIP(ip); p == nil || p.To4() == nil {
					continue
				}
				if !seen[ip] {
					seen[ip] = true
					a.rcode, a.ips = dns.RcodeSuccess, append(a.ips, ip)
				}
			}
			if a.rcode != dns.RcodeSuccess && len(ips) > 0 { // not IPv4
				skipped++
				continue
			}
			sort.Strings(a.ips)
			want[q] = a
		}
	}
	return want, skipped, nil
}

// ask asks server for every name's A record over UDP, workers at a time,
// and returns a line for each answer that differs from want.
func ask(server string, want map[string]*answer, workers int) []string {
	names := make(chan string)
	var (
		mu    sync.Mutex
		wrong []string
		wg    sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "udp", Timeout: time.Second}
			for q := range names {
				got, err := query(c, server, q)
				if err == nil && got.String() == want[q].String() {
					continue
				}
				line := fmt.Sprintf("%s: want %s, got %v", q, want[q], got)
				if err != nil {
					line = fmt.Sprintf("%s: want %s, got no answer: %v", q, want[q], err)
				}
				mu.Lock()
				wrong = append(wrong, line)
				mu.Unlock()
			}
		}()
	}
	for q := range want {
		names <- q
	}
	close(names)
	wg.Wait()
	return wrong
}

// query asks for q's A record, up to three times when no answer comes (a
// datagram lost on a busy machine is not a wrong answer).
func query(c *dns.Client, server, q string) (*answer, error) {
	m := new(dns.Msg)
	m.SetQuestion(q, dns.TypeA)
	var err error
	for try := 0; try < 3; try++ {
		var r *dns.Msg
		if r, _, err = c.Exchange(m, server); err != nil {
			continue
		}
		a := &answer{rcode: r.Rcode}
		for _, rr := range r.Answer {
			if rec, ok := rr.(*dns.A); ok {
				a.ips = append(a.ips, rec.A.String())
			} else {
				a.ips = append(a.ips, rr.String())
			}
		}
		sort.Strings(a.ips)
		return a, nil
	}
	return nil, err
}
