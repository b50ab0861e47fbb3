// Command udpfloor is the floor of make bench-udp (test/bench/udp/run.sh):
// the speed limit of a UDP DNS responder on this kernel, measured in the same
// run as partition-dns's UDP path. It does no DNS work at all. Each query
// becomes its own response in place, in the buffer it was read into: the
// header gets QR and AA, the additional section (EDNS) is dropped, and a
// query of type A gets one canned answer (10.0.0.1, TTL 5 s, its name a
// compression pointer to the question); any other type gets an empty answer.
// A datagram that is itself a response, or holds no whole question, is
// dropped.
//
//	udpfloor -addr 127.0.0.1:5301 -sockets 2 -batch 32
//
// -sockets opens that many SO_REUSEPORT sockets on -addr, one goroutine
// each. With -batch above 1 a goroutine reads and writes up to that many
// datagrams per system call (recvmmsg and sendmmsg, through
// golang.org/x/net/ipv4's ReadBatch and WriteBatch); with 1, one datagram per
// read and per write. It runs until it is killed, or exits 1 when a socket
// fails.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// bufSize is the buffer of one datagram: far above any query dnsperf sends.
const bufSize = 4096

// answerA is the canned answer record: name = pointer to offset 12 (the
// question's name), type A, class IN, TTL 5, 4 bytes of data, 10.0.0.1.
var answerA = [...]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 10, 0, 0, 1}

// respond turns the query in b[:n] into its response in place and returns
// the response's length, or 0 when the datagram is to be dropped. b must
// have room beyond n for the answer (cap is not consulted: len(b) is).
func respond(b []byte, n int) int {
	const header = 12
	if n < header+5 || n > len(b) || b[2]&0x80 != 0 { // too short for a question, or a response
		return 0
	}
	if binary.BigEndian.Uint16(b[4:]) == 0 { // QDCOUNT
		return 0
	}
	// The question's name: labels up to the root label.
	i := header
	for i < n && b[i] != 0 {
		if b[i] > 63 { // a pointer or a reserved label type: not in a query's question
			return 0
		}
		i += 1 + int(b[i])
	}
	end := i + 1 + 4 // the root label, QTYPE, QCLASS
	if end > n {
		return 0
	}
	qtype := binary.BigEndian.Uint16(b[end-4:])

	b[2] = b[2]&0x79 | 0x84               // QR and AA; keep the opcode and RD, clear TC
	b[3] = 0                              // RA, Z, AD, CD off; RCODE NOERROR
	binary.BigEndian.PutUint16(b[4:], 1)  // the one question
	binary.BigEndian.PutUint16(b[8:], 0)  // NSCOUNT
	binary.BigEndian.PutUint16(b[10:], 0) // ARCOUNT: no EDNS
	if qtype != 1 || end+len(answerA) > len(b) {
		binary.BigEndian.PutUint16(b[6:], 0)
		return end
	}
	binary.BigEndian.PutUint16(b[6:], 1)
	return end + copy(b[end:], answerA[:])
}

func main() {
	addr := flag.String("addr", "127.0.0.1:5301", "the UDP address to answer on")
	sockets := flag.Int("sockets", 1, "SO_REUSEPORT sockets on -addr, one goroutine each")
	batch := flag.Int("batch", 1, "datagrams per recvmmsg and sendmmsg; 1 reads and writes one at a time")
	flag.Parse()
	if *sockets < 1 || *batch < 1 {
		fmt.Fprintln(os.Stderr, "udpfloor: -sockets and -batch must be at least 1")
		os.Exit(2)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	failed := make(chan error, *sockets)
	for range *sockets {
		pc, err := lc.ListenPacket(context.Background(), "udp4", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "udpfloor:", err)
			os.Exit(1)
		}
		conn := pc.(*net.UDPConn)
		if *batch == 1 {
			go func() { failed <- serveOne(conn) }()
		} else {
			go func() { failed <- serveBatch(conn, *batch) }()
		}
	}
	fmt.Fprintln(os.Stderr, "udpfloor: answering on", *addr)
	fmt.Fprintln(os.Stderr, "udpfloor:", <-failed)
	os.Exit(1)
}

// serveOne answers one datagram per read and write until the socket fails.
func serveOne(conn *net.UDPConn) error {
	b := make([]byte, bufSize)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(b)
		if err != nil {
			return err
		}
		if m := respond(b, n); m > 0 {
			_, _ = conn.WriteToUDPAddrPort(b[:m], from) // a lost answer is the client's timeout
		}
	}
}

// serveBatch answers up to batch datagrams per recvmmsg and sendmmsg until
// the socket fails.
func serveBatch(conn *net.UDPConn, batch int) error {
	pc := ipv4.NewPacketConn(conn)
	in := make([]ipv4.Message, batch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, bufSize)}
	}
	out := make([]ipv4.Message, batch)
	outBufs := make([][]byte, batch) // out[k].Buffers point into it
	for {
		n, err := pc.ReadBatch(in, 0)
		if err != nil {
			return err
		}
		k := 0
		for i := range in[:n] {
			b := in[i].Buffers[0]
			if m := respond(b, in[i].N); m > 0 {
				outBufs[k] = b[:m]
				out[k] = ipv4.Message{Buffers: outBufs[k : k+1], Addr: in[i].Addr}
				k++
			}
		}
		for sent := 0; sent < k; {
			w, err := pc.WriteBatch(out[sent:k], 0)
			if err != nil || w == 0 {
				break // the rest are lost, as a kernel drop would lose them
			}
			sent += w
		}
	}
}
