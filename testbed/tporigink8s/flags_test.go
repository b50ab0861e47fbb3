package tporigink8s_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
	tporigink8s "github.com/tpkit-dev/tpkit/testbed/tporigink8s"
)

func TestFlags(t *testing.T) {
	var o tporigin.Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	tporigink8s.AddFlags(fs, &o)
	if o.BatchDelay != tporigin.DefaultBatchDelay || !o.Rebuild {
		t.Fatalf("defaults: batch delay %v, rebuild %v", o.BatchDelay, o.Rebuild)
	}
	if err := fs.Parse([]string{"--tporigin-db=/var/lib/tpkit/origins.db", "--tporigin-rebuild=false", "--tporigin-static-tenants=a=tp1, b=tp2", "--tporigin-batch-delay=20ms"}); err != nil {
		t.Fatal(err)
	}
	if o.Path != "/var/lib/tpkit/origins.db" || o.Rebuild || o.BatchDelay != 20*time.Millisecond || o.StaticTenants["a"] != "tp1" || o.StaticTenants["b"] != "tp2" {
		t.Fatalf("parsed %+v", o)
	}
	if got := fs.Lookup("tporigin-static-tenants").Value.String(); got != "a=tp1,b=tp2" {
		t.Fatalf("static tenants flag prints %q", got)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a", "a=", "=tp1", "a=tp1,a=tp2"} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		var o tporigin.Options
		tporigink8s.AddFlags(fs, &o)
		if err := fs.Parse([]string{"--tporigin-static-tenants=" + bad}); err == nil {
			t.Errorf("--tporigin-static-tenants=%s accepted", bad)
		}
	}
}
