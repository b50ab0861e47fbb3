// Command tp-admission-webhook serves tpkit's admission plugins (DaemonSets
// only in the system tenant; tenant names) as a ValidatingAdmissionWebhook for
// an Arktos or Kubernetes API server, over HTTPS.
//
// Endpoints, all on --listen: POST /validate (admission.k8s.io/v1
// AdmissionReview), /healthz, /livez, /readyz and /metrics.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/klog/v2"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
	"github.com/tpkit-dev/tpkit/pkg/admission/tenantname"
	"github.com/tpkit-dev/tpkit/pkg/admission/webhook"
	"github.com/tpkit-dev/tpkit/pkg/ops"
)

// ValidatePath is where the API server posts reviews.
const ValidatePath = "/validate"

const defaultSelfSignedHosts = "localhost,127.0.0.1,::1,tp-admission-webhook,tp-admission-webhook.kube-system," +
	"tp-admission-webhook.kube-system.svc,tp-admission-webhook.kube-system.svc.cluster.local"

type options struct {
	listen          string
	certFile        string
	keyFile         string
	selfSignedDir   string
	selfSignedHosts string
	adminOnly       bool
	adminGroups     string
	tenantNames     bool
	shutdownDelay   time.Duration
	idleTimeout     time.Duration
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stdout)
	switch {
	case errors.Is(err, flag.ErrHelp), errors.Is(err, cliflag.ErrVersion):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "tp-admission-webhook:", err)
		os.Exit(2)
	}
	ctx, cancel := ops.SignalContext(context.Background())
	defer cancel()
	if err := serve(ctx, o, nil); err != nil {
		klog.ErrorS(err, "tp-admission-webhook failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// parseFlags parses the command line; klog's flags are parsed too. --help
// and --version write to out.
func parseFlags(args []string, out io.Writer) (options, error) {
	cmd := cliflag.NewCommand("tp-admission-webhook", "tp-admission-webhook is a validating admission webhook for Arktos tenant partitions: only the system tenant may have DaemonSets, and tenant names are DNS-1123 labels other than \"all\".", out)
	fs := cmd.Flags
	var o options
	fs.StringVar(&o.listen, "listen", ":8443", "HTTPS address for /validate, /healthz, /readyz and /metrics.")
	fs.StringVar(&o.certFile, "tls-cert-file", "", "PEM serving certificate (with intermediates). Reloaded when the file changes.")
	fs.StringVar(&o.keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file.")
	fs.StringVar(&o.selfSignedDir, "self-signed-dir", "", "Development mode: write (or reuse) a CA bundle "+webhook.CAFileName+
		" and a serving certificate "+webhook.CertFileName+"/"+webhook.KeyFileName+" in this directory and serve with them. Excludes --tls-cert-file.")
	fs.StringVar(&o.selfSignedHosts, "self-signed-hosts", defaultSelfSignedHosts, "Comma-separated DNS names and IPs of the --self-signed-dir serving certificate.")
	fs.BoolVar(&o.adminOnly, "admin-only", false, "Let only cluster admins (--admin-groups, or users of the system tenant) create, update or delete DaemonSets.")
	fs.StringVar(&o.adminGroups, "admin-groups", daemonset.DefaultAdminGroup, "Comma-separated groups whose members are cluster admins for --admin-only.")
	fs.BoolVar(&o.tenantNames, "tenant-name-admission", true, "Also check tenant creation and deletion (DNS-1123 names, not all; system is permanent).")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 0, "After SIGTERM, fail /readyz but keep serving this long before shutting down, "+
		"so that API servers stop sending reviews to this replica first (failurePolicy Fail turns a refused connection into a refused write).")
	fs.DurationVar(&o.idleTimeout, "http-idle-timeout", ops.DefaultTimeouts.Idle, "Close a keep-alive connection that sends no request for this long, "+
		"so that idle clients cannot hold every file descriptor.")
	klog.InitFlags(cmd.Logging)
	if err := cmd.Parse(args); err != nil {
		return o, err
	}
	if len(cmd.Args()) > 0 {
		return o, fmt.Errorf("unexpected arguments %q", cmd.Args())
	}
	if err := cliflag.ValidateListenAddress(o.listen); err != nil {
		return o, fmt.Errorf("--listen %q: %v", o.listen, err)
	}
	if o.shutdownDelay < 0 {
		return o, fmt.Errorf("--shutdown-delay %v: must not be negative", o.shutdownDelay)
	}
	if o.idleTimeout <= 0 {
		return o, fmt.Errorf("--http-idle-timeout must be positive, not %v", o.idleTimeout)
	}
	return o, nil
}

// serve runs the webhook until ctx ends.
func serve(ctx context.Context, o options, listening func(net.Addr)) error {
	keyPair, err := loadCerts(o)
	if err != nil {
		return err
	}
	chain := admission.Chain{daemonset.New(daemonset.Config{AdminOnly: o.adminOnly, AdminGroups: cliflag.SplitList(o.adminGroups)})}
	if o.tenantNames {
		chain = append(chain, tenantname.New())
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := webhook.NewMetrics(reg)
	if err != nil {
		return err
	}
	logger := klog.Background().WithName("tp-admission-webhook")
	srv := ops.New(reg)
	srv.Timeouts.Idle = o.idleTimeout
	srv.Handle(ValidatePath, webhook.NewHandler(chain, metrics, logger))
	srv.AddReadyz("serving-certificate", func() error {
		_, err := keyPair.GetCertificate(nil)
		return err
	})

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.listen, err)
	}
	logger.Info("Serving admission webhook", "address", ln.Addr().String(), "path", ValidatePath,
		"adminOnly", o.adminOnly, "adminGroups", o.adminGroups, "tenantNameAdmission", o.tenantNames)
	if listening != nil {
		listening(ln.Addr())
	}

	// Serving ends shutdownDelay after ctx does; readiness fails at once.
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	var draining atomic.Bool
	srv.AddReadyz("shutdown", func() error {
		if draining.Load() {
			return errors.New("shutting down")
		}
		return nil
	})
	go func() {
		select {
		case <-ctx.Done():
		case <-serveCtx.Done():
			return
		}
		draining.Store(true)
		if o.shutdownDelay > 0 {
			logger.Info("Draining before shutdown", "delay", o.shutdownDelay.String())
			t := time.NewTimer(o.shutdownDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-serveCtx.Done():
			}
		}
		stopServing()
	}()
	start := time.Now()
	err = srv.ServeListener(serveCtx, tls.NewListener(ln, keyPair.TLSConfig()))
	logger.Info("Stopped", "servedFor", time.Since(start).Round(time.Millisecond).String())
	return err
}

// loadCerts picks the serving certificate: from files, or a self-signed one.
func loadCerts(o options) (*webhook.KeyPair, error) {
	switch {
	case o.selfSignedDir != "" && (o.certFile != "" || o.keyFile != ""):
		return nil, errors.New("--self-signed-dir excludes --tls-cert-file and --tls-private-key-file")
	case o.selfSignedDir != "":
		f, err := webhook.SelfSigned(o.selfSignedDir, cliflag.SplitList(o.selfSignedHosts), time.Now())
		if err != nil {
			return nil, err
		}
		klog.InfoS("Using self-signed serving certificate", "caBundle", f.CAFile, "cert", f.CertFile)
		return webhook.LoadKeyPair(f.CertFile, f.KeyFile)
	case o.certFile == "" || o.keyFile == "":
		return nil, errors.New("a serving certificate is required: set --tls-cert-file and --tls-private-key-file, or --self-signed-dir for development")
	default:
		return webhook.LoadKeyPair(o.certFile, o.keyFile)
	}
}
