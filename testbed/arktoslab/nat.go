package arktoslab

import (
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// NATTable is the nat table as iptables-save prints it, a rule a line.
type NATTable []string

// NATRules reads the nat table of the caller's network namespace.
func NATRules() (NATTable, error) {
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save: %v", err)
	}
	return strings.Split(string(out), "\n"), nil
}

// DNAT follows kube-proxy's KUBE-SERVICES rule for ip:port/proto to its
// KUBE-SVC chain and returns the sorted DNAT destinations of that chain's
// KUBE-SEP chains; nil when no rule matches.
func (n NATTable) DNAT(ip, proto string, port int) []string {
	svc := ""
	for _, r := range n {
		if strings.HasPrefix(r, "-A KUBE-SERVICES ") && strings.Contains(r, "-d "+ip+"/32 ") && strings.Contains(r, "-p "+proto+" ") &&
			strings.Contains(r, "--dport "+strconv.Itoa(port)+" ") && strings.Contains(r, "-j KUBE-SVC-") {
			svc = r[strings.Index(r, "-j KUBE-SVC-")+3:]
		}
	}
	if svc == "" {
		return nil
	}
	var out []string
	for _, r := range n {
		if !strings.HasPrefix(r, "-A "+svc+" ") || !strings.Contains(r, "-j KUBE-SEP-") {
			continue
		}
		sep := r[strings.Index(r, "-j KUBE-SEP-")+3:]
		for _, s := range n {
			if strings.HasPrefix(s, "-A "+sep+" ") && strings.Contains(s, "--to-destination ") {
				out = append(out, strings.Fields(s[strings.Index(s, "--to-destination ")+len("--to-destination "):])[0])
			}
		}
	}
	sort.Strings(out)
	return out
}
