package iptables

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tpkit-dev/tpkit/pkg/kubeproxy"
)

// Chain names. Each is at most 28 characters, iptables' limit.
const (
	// ServicesChain dispatches cluster IPs, in the nat and filter tables.
	ServicesChain = "TPKIT-SERVICES"
	// ServiceChainPrefix starts the per-service-port chains.
	ServiceChainPrefix = "TPKIT-SVC-"
	// EndpointChainPrefix starts the per-endpoint chains.
	EndpointChainPrefix = "TPKIT-SEP-"
)

// ServiceChain is the chain of one service port: TPKIT-SVC- and 16
// characters of the base32 SHA-256 of the port's name string and its
// protocol in lower case, as Arktos's servicePortChainName does with
// KUBE-SVC-. The name string carries the TP
// ("system_0/kube-system/kube-dns:dns"), so the hash is the one an Arktos
// kube-proxy gives the same port: TPKIT-SVC-X here is KUBE-SVC-X there.
func ServiceChain(n kubeproxy.ServicePortName, protocol string) string {
	return ServiceChainPrefix + hashName(n.String()+strings.ToLower(protocol))
}

// EndpointChain is the chain of one endpoint of one service port, hashed as
// Arktos's servicePortEndpointChainName hashes KUBE-SEP-: the port's name
// string, the protocol in lower case and the endpoint's "ip:port".
func EndpointChain(n kubeproxy.ServicePortName, protocol string, ep netip.AddrPort) string {
	return EndpointChainPrefix + hashName(n.String()+strings.ToLower(protocol)+ep.String())
}

func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	// The first 16 base32 characters encode exactly the first 10 bytes.
	var enc [16]byte
	base32.StdEncoding.Encode(enc[:], sum[:10])
	return string(enc[:])
}

// Result says what one sync wrote.
type Result struct {
	// Full is true for a sync that rewrote everything.
	Full bool
	// Services is how many services' chains were rewritten or deleted.
	Services int
	// Chains is how many chains were declared (created or flushed) and
	// written; ChainsDeleted how many were deleted.
	Chains, ChainsDeleted int
	// Rules is how many rules were added; RulesDeleted how many were
	// deleted one by one from TPKIT-SERVICES.
	Rules, RulesDeleted int
	// Bytes is the size of the iptables-restore input.
	Bytes int
}

// installedPort is what the dataplane holds for one service port.
type installedPort struct {
	svcChain  string
	sepChains []string
	dispatch  []string // nat TPKIT-SERVICES rule specs, without "-A CHAIN "
	reject    []string // filter TPKIT-SERVICES rule specs
}

// state is what the dataplane holds, per service.
type state map[kubeproxy.ServiceName][]installedPort

// Renderer turns snapshots into iptables-restore input. It remembers what
// it rendered last (after Commit) so that partial renders can delete what a
// service no longer needs. It is not safe for concurrent use.
type Renderer struct {
	// Family selects the cluster IPs and endpoints rendered: IPv4 (the
	// default) or IPv6 for ip6tables.
	Family Family

	installed state
}

// Plan is one rendered sync: the iptables-restore input and the state the
// dataplane will hold once it is applied.
type Plan struct {
	Input  []byte
	Result Result
	next   map[kubeproxy.ServiceName][]installedPort // entries to set; nil value deletes
	full   bool
}

// Commit records that p was applied.
func (r *Renderer) Commit(p *Plan) {
	if p.full || r.installed == nil {
		r.installed = state{}
	}
	for k, v := range p.next {
		if v == nil {
			delete(r.installed, k)
		} else {
			r.installed[k] = v
		}
	}
}

// Installed is the number of services the renderer believes installed.
func (r *Renderer) Installed() int { return len(r.installed) }

// RenderFull renders everything in s. stale lists chains present in the
// kernel; those with tpkit's prefixes that s does not need are deleted.
func (r *Renderer) RenderFull(s *kubeproxy.Snapshot, stale []string) *Plan {
	p := &Plan{full: true, next: make(map[kubeproxy.ServiceName][]installedPort, s.Services())}
	p.Result.Full = true
	var natChains, natRules, filterRules bytes.Buffer
	natRules.Grow(s.Len() * 600)
	natChains.Grow(s.Len() * 100)
	want := map[string]bool{}
	for key := range s.ServiceNames() {
		ports := r.build(s.Service(key))
		p.next[key] = ports
		p.Result.Services++
		for i := range ports {
			ip := &ports[i]
			r.writePortChains(&natChains, &natRules, s.Service(key)[i], ip, &p.Result)
			for _, d := range ip.dispatch {
				writeRule(&natRules, "-A", ServicesChain, d)
				p.Result.Rules++
			}
			for _, d := range ip.reject {
				writeRule(&filterRules, "-A", ServicesChain, d)
				p.Result.Rules++
			}
			if ip.svcChain != "" {
				want[ip.svcChain] = true
			}
			for _, c := range ip.sepChains {
				want[c] = true
			}
		}
	}
	var del []string
	for _, c := range stale {
		if (strings.HasPrefix(c, ServiceChainPrefix) || strings.HasPrefix(c, EndpointChainPrefix)) && !want[c] {
			declare(&natChains, c)
			del = append(del, c)
		}
	}
	var b bytes.Buffer
	b.Grow(natChains.Len() + natRules.Len() + filterRules.Len() + len(del)*32 + 128)
	b.WriteString("*filter\n")
	declare(&b, ServicesChain)
	b.Write(filterRules.Bytes())
	b.WriteString("COMMIT\n*nat\n")
	declare(&b, ServicesChain)
	b.Write(natChains.Bytes())
	b.Write(natRules.Bytes())
	for _, c := range del {
		b.WriteString("-X ")
		b.WriteString(c)
		b.WriteByte('\n')
	}
	b.WriteString("COMMIT\n")
	p.Result.Chains += 2
	p.Result.ChainsDeleted = len(del)
	p.Input = b.Bytes()
	p.Result.Bytes = b.Len()
	return p
}

// RenderPartial renders the services in changed, as s has them now, against
// what was committed last: their chains are rewritten, their rules in
// TPKIT-SERVICES added or deleted one by one, and chains they no longer need
// deleted. Other services are not touched.
func (r *Renderer) RenderPartial(s *kubeproxy.Snapshot, changed []kubeproxy.ServiceName) *Plan {
	w := &partialWriter{p: &Plan{next: make(map[kubeproxy.ServiceName][]installedPort, len(changed))}}
	for _, key := range changed {
		if _, seen := w.p.next[key]; seen {
			continue
		}
		w.service(r, s, key)
	}
	if w.p.Result.Services == 0 {
		return w.p
	}
	w.p.Input = w.input()
	w.p.Result.Bytes = len(w.p.Input)
	return w.p
}

// partialWriter collects what RenderPartial writes, by table and by the
// order iptables-restore needs.
type partialWriter struct {
	p                                                   *Plan
	natChains, natRules, natDel, filterRules, filterDel bytes.Buffer
	drop                                                bytes.Buffer // chains to delete (-X)
}

// service renders one changed service: its port chains, the TPKIT-SERVICES
// rules it gains and loses, and the chains it no longer needs.
func (w *partialWriter) service(r *Renderer, s *kubeproxy.Snapshot, key kubeproxy.ServiceName) {
	p := w.p
	infos := s.Service(key)
	ports := r.build(infos)
	old := r.installed[key]
	if len(ports) == 0 {
		p.next[key] = nil
	} else {
		p.next[key] = ports
	}
	p.Result.Services++
	oldDispatch, oldReject := ruleSets(old)
	keep := map[string]bool{}
	newDispatch, newReject := map[string]bool{}, map[string]bool{}
	for i := range ports {
		ip := &ports[i]
		r.writePortChains(&w.natChains, &w.natRules, infos[i], ip, &p.Result)
		if ip.svcChain != "" {
			keep[ip.svcChain] = true
		}
		for _, c := range ip.sepChains {
			keep[c] = true
		}
		w.addRules(&w.natRules, ip.dispatch, oldDispatch, newDispatch)
		w.addRules(&w.filterRules, ip.reject, oldReject, newReject)
	}
	for _, op := range old {
		w.deleteRules(&w.natDel, op.dispatch, newDispatch)
		w.deleteRules(&w.filterDel, op.reject, newReject)
		for _, c := range append([]string{op.svcChain}, op.sepChains...) {
			if c != "" && !keep[c] {
				keep[c] = true // delete once
				declare(&w.natChains, c)
				w.drop.WriteString("-X ")
				w.drop.WriteString(c)
				w.drop.WriteByte('\n')
				p.Result.ChainsDeleted++
			}
		}
	}
}

// ruleSets are the TPKIT-SERVICES rules (dispatch in nat, reject in filter)
// of installed ports.
func ruleSets(ports []installedPort) (dispatch, reject map[string]bool) {
	dispatch, reject = map[string]bool{}, map[string]bool{}
	for _, op := range ports {
		for _, d := range op.dispatch {
			dispatch[d] = true
		}
		for _, d := range op.reject {
			reject[d] = true
		}
	}
	return dispatch, reject
}

// addRules appends to TPKIT-SERVICES the rules that were not installed,
// and notes every rule in now.
func (w *partialWriter) addRules(b *bytes.Buffer, rules []string, installed, now map[string]bool) {
	for _, d := range rules {
		now[d] = true
		if !installed[d] {
			writeRule(b, "-A", ServicesChain, d)
			w.p.Result.Rules++
		}
	}
}

// deleteRules deletes from TPKIT-SERVICES the installed rules that are not
// in now.
func (w *partialWriter) deleteRules(b *bytes.Buffer, rules []string, now map[string]bool) {
	for _, d := range rules {
		if !now[d] {
			writeRule(b, "-D", ServicesChain, d)
			w.p.Result.RulesDeleted++
		}
	}
}

// input is the iptables-restore input of what was collected.
func (w *partialWriter) input() []byte {
	var b bytes.Buffer
	if w.filterRules.Len()+w.filterDel.Len() > 0 {
		b.WriteString("*filter\n")
		b.Write(w.filterDel.Bytes())
		b.Write(w.filterRules.Bytes())
		b.WriteString("COMMIT\n")
	}
	b.WriteString("*nat\n")
	b.Write(w.natChains.Bytes())
	// Deletions from TPKIT-SERVICES come before the chains they jump to are
	// deleted, and before new rules, so a changed rule is never doubled.
	b.Write(w.natDel.Bytes())
	b.Write(w.natRules.Bytes())
	b.Write(w.drop.Bytes())
	b.WriteString("COMMIT\n")
	return b.Bytes()
}

// build computes the installed form of a service's ports.
func (r *Renderer) build(infos []*kubeproxy.PortInfo) []installedPort {
	if len(infos) == 0 {
		return nil
	}
	out := make([]installedPort, len(infos))
	for i, pi := range infos {
		ip := &out[i]
		eps := r.endpoints(pi)
		if len(eps) > 0 {
			// A port without endpoints needs no chain, only a REJECT.
			ip.svcChain = ServiceChain(pi.Name, pi.Protocol)
		}
		ip.sepChains = make([]string, len(eps))
		for j, ep := range eps {
			ip.sepChains[j] = EndpointChain(pi.Name, pi.Protocol, ep.AddrPort())
		}
		comment := sanitize(pi.Name.String())
		for _, vip := range pi.ClusterIPs {
			if !r.familyOK(vip) {
				continue
			}
			match := matchVIP(vip, pi.Protocol, pi.Port)
			if len(eps) > 0 {
				ip.dispatch = append(ip.dispatch, match+` -m comment --comment "`+comment+` cluster IP" -j `+ip.svcChain)
			} else {
				ip.reject = append(ip.reject, match+` -m comment --comment "`+comment+` has no endpoints" -j REJECT`)
			}
		}
	}
	return out
}

func (r *Renderer) familyOK(a netip.Addr) bool {
	if r.Family == IPv6 {
		return a.Is6()
	}
	return a.Is4()
}

func (r *Renderer) endpoints(pi *kubeproxy.PortInfo) []kubeproxy.EndpointAddr {
	all := true
	for _, e := range pi.Endpoints {
		if !r.familyOK(e.IP) {
			all = false
			break
		}
	}
	if all {
		return pi.Endpoints
	}
	var out []kubeproxy.EndpointAddr
	for _, e := range pi.Endpoints {
		if r.familyOK(e.IP) {
			out = append(out, e)
		}
	}
	return out
}

// writePortChains declares a port's chains and writes their rules.
func (r *Renderer) writePortChains(chains, rules *bytes.Buffer, pi *kubeproxy.PortInfo, ip *installedPort, res *Result) {
	if ip.svcChain == "" {
		return
	}
	declare(chains, ip.svcChain)
	res.Chains++
	eps := r.endpoints(pi)
	n := len(eps)
	proto := strings.ToLower(pi.Protocol)
	for j, ep := range eps {
		sep := ip.sepChains[j]
		declare(chains, sep)
		res.Chains++
		// TPKIT-SVC: pick endpoint j with probability 1/(n-j) of what is left.
		rules.WriteString("-A ")
		rules.WriteString(ip.svcChain)
		if j < n-1 {
			rules.WriteString(" -m statistic --mode random --probability ")
			rules.Write(strconv.AppendFloat(nil, 1/float64(n-j), 'f', 10, 64))
		}
		rules.WriteString(" -j ")
		rules.WriteString(sep)
		rules.WriteByte('\n')
		// TPKIT-SEP: DNAT to the endpoint.
		rules.WriteString("-A ")
		rules.WriteString(sep)
		rules.WriteString(" -p ")
		rules.WriteString(proto)
		rules.WriteString(" -m ")
		rules.WriteString(proto)
		rules.WriteString(" -j DNAT --to-destination ")
		var buf [64]byte
		rules.Write(ep.AddrPort().AppendTo(buf[:0]))
		rules.WriteByte('\n')
		res.Rules += 2
	}
}

func matchVIP(vip netip.Addr, proto string, port int32) string {
	p := strings.ToLower(proto)
	bits := "/32"
	if vip.Is6() {
		bits = "/128"
	}
	return "-d " + vip.String() + bits + " -p " + p + " -m " + p + " --dport " + strconv.Itoa(int(port))
}

func declare(b *bytes.Buffer, chain string) {
	b.WriteByte(':')
	b.WriteString(chain)
	b.WriteString(" - [0:0]\n")
}

func writeRule(b *bytes.Buffer, op, chain, spec string) {
	b.WriteString(op)
	b.WriteByte(' ')
	b.WriteString(chain)
	b.WriteByte(' ')
	b.WriteString(spec)
	b.WriteByte('\n')
}

// sanitize makes a name safe inside a quoted comment on one restore line:
// names come from TPs and are not trusted, so anything but the characters
// of Kubernetes names and keys becomes '_', and the result is cut to fit
// iptables' 256-byte comment limit with room for the suffix.
func sanitize(s string) string {
	const max = 200
	ok := len(s) <= max
	for i := 0; ok && i < len(s); i++ {
		ok = safeCommentByte(s[i])
	}
	if ok {
		return s
	}
	b := []byte(s)
	if len(b) > max {
		b = b[:max]
	}
	for i, c := range b {
		if !safeCommentByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

func safeCommentByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._:/@", c) >= 0
}
