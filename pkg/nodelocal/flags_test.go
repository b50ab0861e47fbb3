package nodelocal

import (
	"errors"
	"flag"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseIPList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "169.254.20.10", want: []string{"169.254.20.10"}},
		{in: " 169.254.20.10 , 10.0.0.10,", want: []string{"169.254.20.10", "10.0.0.10"}},
		{in: "fd00::a,::ffff:10.0.0.10", want: []string{"fd00::a", "10.0.0.10"}},
		{in: "", err: true},
		{in: ",", err: true},
		{in: "10.0.0.10,10.0.0.10", err: true},
		{in: "0.0.0.0", err: true},
		{in: "fe80::1%eth0", err: true},
		{in: "224.0.0.1", err: true},
		{in: "255.255.255.255", err: true},
		{in: "::", err: true},
		{in: "ff02::1", err: true},
		{in: "10.0.0.300", err: true},
		{in: "10.0.0.0/24", err: true},
	} {
		got, err := ParseIPList(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		var s []string
		for _, ip := range got {
			s = append(s, ip.String())
		}
		if !tc.err && !reflect.DeepEqual(s, tc.want) {
			t.Errorf("%q = %v, want %v", tc.in, s, tc.want)
		}
	}
}

func FuzzParseIPList(f *testing.F) {
	f.Add("169.254.20.10,10.0.0.10")
	f.Add("fd00::1, ::ffff:1.2.3.4,,")
	f.Fuzz(func(t *testing.T, s string) {
		ips, err := ParseIPList(s)
		if err != nil {
			return
		}
		seen := map[netip.Addr]bool{}
		for _, ip := range ips {
			if !ip.IsValid() || ip.IsUnspecified() || seen[ip] || ip.Is4In6() {
				t.Fatalf("%q gave %v", s, ips)
			}
			seen[ip] = true
		}
	})
}

func FuzzParseServerList(f *testing.F) {
	f.Add("10.0.0.1,[fd00::1]:5353,192.0.2.1:53")
	f.Fuzz(func(t *testing.T, s string) {
		out, err := ParseServerList(s)
		if err != nil {
			return
		}
		for _, sv := range out {
			if _, err := netip.ParseAddrPort(sv); err != nil {
				t.Fatalf("%q gave %q: %v", s, sv, err)
			}
		}
	})
}

func TestDefaultLocalIPs(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "169.254.20.10"},
		{map[string]string{"KUBE_DNS_SERVICE_HOST": "10.0.0.10"}, "169.254.20.10,10.0.0.10"},
		{map[string]string{"PARTITION_DNS_SERVICE_HOST": "10.96.0.10"}, "169.254.20.10,10.96.0.10"},
		// tpkit's cluster DNS wins over an Arktos kube-dns in the same namespace
		{map[string]string{"PARTITION_DNS_SERVICE_HOST": "10.96.0.10", "KUBE_DNS_SERVICE_HOST": "10.0.0.10"}, "169.254.20.10,10.96.0.10"},
		{map[string]string{"PARTITION_DNS_SERVICE_HOST": " ", "KUBE_DNS_SERVICE_HOST": "10.0.0.10"}, "169.254.20.10,10.0.0.10"},
	} {
		if got := DefaultLocalIPs(env(tc.env)); got != tc.want {
			t.Errorf("DefaultLocalIPs(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestParseCacheFlags(t *testing.T) {
	e := env(map[string]string{"KUBE_DNS_SERVICE_HOST": "10.0.0.10", "NODE_LOCAL_UPSTREAM_SERVICE_HOST": "10.0.0.50"})
	o, err := ParseCacheFlags([]string{"--upstream-servers=192.0.2.53"}, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.LocalIPs) != 2 || o.LocalIPs[0].String() != "169.254.20.10" || o.LocalIPs[1].String() != "10.0.0.10" {
		t.Errorf("default local IPs %v", o.LocalIPs)
	}
	if o.UpstreamSvcIP.String() != "10.0.0.50" || o.DNSPort != 53 || o.HealthPort != 8080 || !o.SetupIptables || o.SyncInterval != time.Minute {
		t.Errorf("defaults %+v", o)
	}
	c := o.Cache
	if c.SuccessCapacity != 9984 || c.SuccessTTL != 30*time.Second || c.DenialCapacity != 9984 || c.DenialTTL != 5*time.Second {
		t.Errorf("KEP cache defaults %+v", c)
	}
	if !reflect.DeepEqual(o.UpstreamServers, []string{"192.0.2.53:53"}) {
		t.Errorf("servers %v", o.UpstreamServers)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		msg  string
	}{
		{[]string{"--upstream-servers=1.1.1.1"}, map[string]string{}, "--upstream-svc-ip is required"},
		{[]string{"--upstream-svc-ip=10.0.0.10", "--local-ip=10.0.0.10"}, nil, "forward to itself"},
		{[]string{"--upstream-svc-ip=nope"}, nil, "not an IP"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--local-ip=x"}, nil, "--local-ip"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--dns-port=70000"}, nil, "not a port"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--prefetch-percentage=200"}, nil, "prefetch"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--cluster-zones=,"}, nil, "empty"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--upstream-servers=example.com"}, nil, "not an IP"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--resolv-conf=/nonexistent"}, nil, "resolv-conf"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--no-such-flag"}, nil, "not defined"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "extra"}, nil, "unexpected"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--metrics-listen-address=300.0.0.1:9253"}, nil, "--metrics-listen-address"},
		{[]string{"--upstream-svc-ip=10.0.0.50", "--cluster-zones=a..b"}, nil, "--cluster-zones"},
	} {
		_, err := ParseCacheFlags(tc.args, env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.msg)
		}
	}
	if _, err := ParseCacheFlags([]string{"-h"}, e); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	var ue *UsageError
	if _, err := ParseCacheFlags([]string{"--dns-port=x"}, e); !errors.As(err, &ue) {
		t.Errorf("bad flag: %T %v, want *UsageError", err, err)
	}
	if _, err := ParseWatchFlags([]string{"--failure-threshold=x"}, e); !errors.As(err, &ue) {
		t.Errorf("bad watch flag: %T %v, want *UsageError", err, err)
	}
	if _, err := ParseWatchFlags([]string{"--metrics-listen-address=:99999"}, e); err == nil || !strings.Contains(err.Error(), "--metrics-listen-address") {
		t.Errorf("bad watch metrics address: %v", err)
	}
}

func TestParseWatchFlags(t *testing.T) {
	o, err := ParseWatchFlags([]string{"--local-ip=10.0.0.10,169.254.20.10"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.Watch.Target != "169.254.20.10:53" || o.Watch.FailureThreshold != 3 || o.Watch.SuccessThreshold != 3 ||
		o.Watch.Interval != 400*time.Millisecond || len(o.Watch.Rules) != 24 {
		t.Errorf("watch options %+v", o.Watch)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--local-ip=10.0.0.10"}, "switched"},
		{[]string{"--local-ip=169.254.20.10,10.0.0.10", "--probe-ip=10.0.0.10"}, "switched"},
		{[]string{"--interval=100ms", "--probe-timeout=1s"}, "probe-timeout"},
		{[]string{"--failure-threshold=x"}, "invalid value"},
		{[]string{"--health-port=-1"}, "not a port"},
		{[]string{"--success-threshold=0"}, "at least 1"},
		{[]string{"--interval=0s"}, "positive"},
	} {
		_, err := ParseWatchFlags(tc.args, env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.msg)
		}
	}
}

func TestParseServerList(t *testing.T) {
	got, err := ParseServerList(" 192.0.2.53, [2001:db8::53]:5353,10.0.0.1:053,")
	if err != nil || !reflect.DeepEqual(got, []string{"192.0.2.53:53", "[2001:db8::53]:5353", "10.0.0.1:53"}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"dns.example", "10.0.0.1:+10", "10.0.0.1:0", "10.0.0.1:65536", "[fe80::1%eth0]:53", "10.0.0.1:x"} {
		if _, err := ParseServerList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
