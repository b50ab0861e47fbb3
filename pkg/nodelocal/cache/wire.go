package cache

import (
	"math"

	"github.com/miekg/dns"

	"github.com/tpkit-dev/tpkit/pkg/dns/upstream"
)

// writeFast answers req from e's packed templates (Entry.AppendReply) in a
// pooled buffer; it returns false when they do not fit and the caller must
// build the answer.
func (h *Handler) writeFast(w dns.ResponseWriter, req *dns.Msg, e *upstream.Entry, ttl uint32, udp bool) bool {
	limit := math.MaxInt
	if udp {
		limit = dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			if s := int(opt.UDPSize()); s > limit {
				limit = min(s, 1232)
			}
		}
	}
	bp := h.bufs.Get().(*[]byte)
	buf, ok := e.AppendReply((*bp)[:0], req, ttl, limit)
	if ok {
		_, _ = w.Write(buf)
	}
	*bp = buf
	h.bufs.Put(bp)
	return ok
}
