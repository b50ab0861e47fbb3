//go:build linux

package server

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// The batched UDP path (Linux): one goroutine per SO_REUSEPORT socket reads
// up to Options.UDPBatch packets with one recvmmsg, answers the plain
// queries among them as the fast path does, and writes the answers with one
// sendmmsg. Per packet that saves a read and a write through the Go
// netpoller, which is most of what a DNS answer costs beside the lookup.

// batchSupported reports whether the batched path exists here; elsewhere
// the ordinary fast path serves.
const batchSupported = true

// batchPacketSize is the receive buffer of one batched packet: a DNS query
// is one question and an OPT record, far below it. A longer datagram is
// cut (MSG_TRUNC) and answered FORMERR.
const batchPacketSize = 4096

// batchReplySize is the room for one answer: UDP answers never exceed
// defaultEDNS plus the OPT record and its client subnet option.
const batchReplySize = defaultEDNS + 64

// serveUDPBatch answers the queries of pc, batch packets at a time, until
// pc is closed.
func (h *Handler) serveUDPBatch(pc *net.UDPConn, batch int) error {
	c, err := newMmsgConn(pc, batch)
	if err != nil {
		return err
	}
	st := &state{buf: make([]byte, 0, dns.MaxMsgSize+512)}
	var q query
	var rep reply
	for {
		n, err := c.read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue
		}
		k := 0
		for i := 0; i < n; i++ {
			pkt, from, ok := c.packet(i)
			if !ok {
				continue
			}
			if c.truncated(i) {
				// Its first bytes may well read as a whole query, but they
				// are not what was sent.
				if out := quickReply(pkt, dns.RcodeFormatError); out != nil {
					c.setReply(k, i, out)
					k++
				}
				continue
			}
			start := time.Now()
			src := from.Addr().Unmap()
			out, drop, held := h.fastPath(pkt, src, st, &q, &rep)
			switch {
			case out != nil:
				c.setReply(k, i, out)
				k++
				h.observe(&rep, time.Since(start))
			case !drop:
				h.offSlowPath(pc, pkt, from, held)
			}
		}
		c.write(k)
	}
}

// mmsgConn reads and writes batches of datagrams of one UDP socket with
// recvmmsg and sendmmsg, allocating nothing per packet. golang.org/x/net's
// ReadBatch made a net.UDPAddr for every packet: about 70 bytes of garbage
// per query, which at 80k queries a second made the collector mark the
// whole index twice a second at 600k objects. Here each packet's source
// stays as the kernel wrote it, and its answer goes to the same bytes.
type mmsgConn struct {
	rc      syscall.RawConn
	in, out msgs

	// The system calls' functions and results: method values made once,
	// so that no call allocates a closure.
	readFn, writeFn func(fd uintptr) bool
	n               int // messages read, or written from pending
	pending         []mmsghdr
	errno           syscall.Errno
}

// mmsghdr is struct mmsghdr: a msghdr and the length the call moved.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
}

// sockaddr holds a struct sockaddr_in or sockaddr_in6.
type sockaddr [unix.SizeofSockaddrInet6]byte

// msgs is a batch of messages for recvmmsg or sendmmsg, each with one
// buffer and room for its peer's sockaddr.
type msgs struct {
	hdrs  []mmsghdr
	iov   []unix.Iovec
	bufs  [][]byte // full capacity
	names []sockaddr
}

func newMsgs(batch, size int) msgs {
	m := msgs{hdrs: make([]mmsghdr, batch), iov: make([]unix.Iovec, batch), bufs: make([][]byte, batch), names: make([]sockaddr, batch)}
	for i := range batch {
		m.bufs[i] = make([]byte, size)
		m.iov[i].Base = &m.bufs[i][0]
		m.iov[i].SetLen(size)
		m.hdrs[i].hdr.Iov = &m.iov[i]
		m.hdrs[i].hdr.SetIovlen(1)
		m.hdrs[i].hdr.Name = &m.names[i][0]
	}
	return m
}

func newMmsgConn(pc *net.UDPConn, batch int) (*mmsgConn, error) {
	rc, err := pc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &mmsgConn{rc: rc, in: newMsgs(batch, batchPacketSize), out: newMsgs(batch, batchReplySize)}
	c.readFn, c.writeFn = c.recvmmsg, c.sendmmsg
	return c, nil
}

// read waits for packets and reads as many as are queued, up to the batch.
func (c *mmsgConn) read() (int, error) {
	for i := range c.in.hdrs {
		c.in.hdrs[i].hdr.Namelen = uint32(len(sockaddr{}))
		c.in.hdrs[i].hdr.Flags = 0
	}
	if err := c.rc.Read(c.readFn); err != nil {
		return 0, err // the socket is closed
	}
	if c.errno != 0 {
		return 0, c.errno
	}
	return c.n, nil
}

func (c *mmsgConn) recvmmsg(fd uintptr) bool { return c.mmsg(unix.SYS_RECVMMSG, fd, c.in.hdrs) }

func (c *mmsgConn) sendmmsg(fd uintptr) bool { return c.mmsg(unix.SYS_SENDMMSG, fd, c.pending) }

// mmsg makes one recvmmsg or sendmmsg (trap) over msgs, again when a signal
// interrupts it, and keeps its result in c.n and c.errno. It returns false
// when the socket is not ready, for the RawConn to wait and call again.
func (c *mmsgConn) mmsg(trap, fd uintptr, msgs []mmsghdr) bool {
	for {
		r, _, e := unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		c.n, c.errno = int(r), e
		return true
	}
}

// packet returns the i-th packet read and its source; false for a source
// that is not IPv4 or IPv6.
func (c *mmsgConn) packet(i int) ([]byte, netip.AddrPort, bool) {
	m := &c.in.hdrs[i]
	from, ok := c.in.names[i].addrPort(m.hdr.Namelen)
	// The kernel reports what it copied, never more than the buffer.
	return c.in.bufs[i][:min(int(m.len), len(c.in.bufs[i]))], from, ok
}

// truncated reports whether the i-th packet was longer than its buffer.
func (c *mmsgConn) truncated(i int) bool { return c.in.hdrs[i].hdr.Flags&unix.MSG_TRUNC != 0 }

// setReply makes answer k of the batch b, to the source of packet i.
func (c *mmsgConn) setReply(k, i int, b []byte) {
	out := &c.out
	if len(b) > len(out.bufs[k]) { // not for UDP answers (batchReplySize)
		out.bufs[k] = make([]byte, len(b))
		out.iov[k].Base = &out.bufs[k][0]
	}
	n := copy(out.bufs[k], b)
	out.iov[k].SetLen(n)
	out.names[k] = c.in.names[i]
	out.hdrs[k].hdr.Namelen = c.in.hdrs[i].hdr.Namelen
}

// write sends answers [0, k). An answer the kernel refuses (its address,
// say) is dropped alone, not with the rest of the batch.
func (c *mmsgConn) write(k int) {
	for sent := 0; sent < k; {
		c.pending = c.out.hdrs[sent:k]
		if err := c.rc.Write(c.writeFn); err != nil {
			return // the socket is closed
		}
		if c.errno != 0 || c.n == 0 {
			sent++
			continue
		}
		sent += c.n
	}
}

// addrPort reads the address and port of a sockaddr of length n.
func (s *sockaddr) addrPort(n uint32) (netip.AddrPort, bool) {
	if n < 2 {
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16(s[2:4])
	switch binary.NativeEndian.Uint16(s[0:2]) {
	case unix.AF_INET:
		if n < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(s[4:8])), port), true
	case unix.AF_INET6:
		if n < unix.SizeofSockaddrInet6 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(s[8:24])), port), true
	}
	return netip.AddrPort{}, false
}
