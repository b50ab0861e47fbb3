package k8s

import (
	"fmt"
	"strings"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/kubeletdns"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// ParseNameserverOverride parses the flag form
// "<tenant>[/<namespace>]=<ip>[,<ip>...]" (the list split as every tpkit
// comma-list flag is, cliflag.SplitList) and validates it as New will.
// Errors quote at most 80 characters of s.
func ParseNameserverOverride(s string) (kubeletdns.NameserverOverride, error) {
	who, ips, ok := strings.Cut(s, "=")
	if !ok {
		return kubeletdns.NameserverOverride{}, fmt.Errorf("nameserver override %.80q: want <tenant>[/<namespace>]=<ip>[,<ip>...]", s)
	}
	ov := kubeletdns.NameserverOverride{Nameservers: cliflag.SplitList(ips)}
	var namespaceGiven bool
	ov.Tenant, ov.Namespace, namespaceGiven = strings.Cut(who, "/")
	err := ov.Validate()
	if err == nil && namespaceGiven && ov.Namespace == "" {
		// "<tenant>/=" names an empty namespace, not the whole tenant.
		err = tenancy.ValidateLabel("namespace", ov.Namespace)
	}
	if err != nil {
		return kubeletdns.NameserverOverride{}, fmt.Errorf("nameserver override %.80q: %w", s, err)
	}
	return ov, nil
}
