package server

import (
	"net"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"
)

// tcpServer is the miekg/dns server of l's TCP socket: bounded reads, writes
// and idle keep-alive, and an accept loop that backs off.
func tcpServer(l *Listener, h dns.Handler) *dns.Server {
	return &dns.Server{Listener: acceptBackoff{Listener: l.tcp, sleep: time.Sleep}, Handler: h,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second },
		DecorateReader: func(r dns.Reader) dns.Reader { return strictReader{r} }}
}

// strictReader hands miekg/dns's TCP server the messages validateMessage
// accepts; one it refuses becomes its header with no records, which the
// server answers with FORMERR, as it does any query without a question.
type strictReader struct{ dns.Reader }

// ReadTCP reads one message from conn.
func (r strictReader) ReadTCP(conn net.Conn, timeout time.Duration) ([]byte, error) {
	b, err := r.Reader.ReadTCP(conn, timeout)
	if err != nil || validateMessage(b) == nil {
		return b, err
	}
	if len(b) < headerLen {
		return nil, errNoHeader // nothing to answer: the connection ends
	}
	h := append([]byte(nil), b[:headerLen]...)
	clear(h[4:headerLen]) // no question, no records
	return h, nil
}

// Accept's back-off after a temporary error: from the first delay,
// doubling, to the last, as net/http's server does.
const (
	firstAcceptDelay = 5 * time.Millisecond
	lastAcceptDelay  = time.Second
)

// acceptBackoff is a listener whose Accept waits before retrying a
// temporary error (EMFILE when the process is out of file descriptors).
// miekg/dns retries such an error at once, and so would spin a core for as
// long as the descriptors stay exhausted. It logs the first error of a run
// of failures and the recovery, not every attempt.
type acceptBackoff struct {
	net.Listener
	sleep func(time.Duration)
}

// Accept returns the next connection, or an error that is not temporary.
func (l acceptBackoff) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if delay > 0 {
				klog.InfoS("Accepting DNS TCP connections again", "address", l.Addr().String())
			}
			return c, nil
		}
		if t, ok := err.(interface{ Temporary() bool }); !ok || !t.Temporary() {
			return nil, err
		}
		if delay == 0 {
			delay = firstAcceptDelay
			klog.ErrorS(err, "Accepting a DNS TCP connection failed; retrying with back-off", "address", l.Addr().String())
		} else if delay *= 2; delay > lastAcceptDelay {
			delay = lastAcceptDelay
		}
		l.sleep(delay)
	}
}
