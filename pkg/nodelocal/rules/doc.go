// Package rules is the iptables rule set of the NodeLocal DNS cache, and the
// manager that keeps it in place through github.com/coreos/go-iptables.
//
// For each local IP, for TCP and UDP, the set holds:
//
//	raw    PREROUTING -d IP --dport 53 -j NOTRACK   (queries skip conntrack, so kube-proxy's DNAT is not applied)
//	filter INPUT      -d IP --dport 53 -j ACCEPT    (untracked queries are not dropped)
//	raw    OUTPUT     -s IP --sport 53 -j NOTRACK   (answers skip conntrack)
//	filter OUTPUT     -s IP --sport 53 -j ACCEPT
//	raw    OUTPUT     -d IP --dport 53 -j NOTRACK   (queries from host-network processes)
//
// and, for TCP only, raw OUTPUT NOTRACK rules to and from the health port.
//
// Invariants:
//   - Every rule carries a comment that starts with CommentPrefix and is unique
//     in the set; the comment is how the manager recognises its own rules.
//     Rules without the prefix are never touched.
//   - Sync leaves exactly one copy of each wanted rule and no other rule with
//     the prefix: it inserts what is missing, deletes duplicates and deletes
//     owned rules that are no longer wanted. Running it again changes nothing.
//   - Each iptables call waits for the xtables lock (iptables --wait), so
//     kube-proxy and the manager never corrupt each other's updates.
//   - The "switch" rules are the NOTRACK rules for non-link-local IPs (the
//     kube-dns service IP): without them, packets to the service IP are
//     tracked and kube-proxy's DNAT sends them to the kube-dns endpoints.
package rules
