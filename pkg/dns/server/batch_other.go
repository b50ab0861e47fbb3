//go:build !linux

package server

import (
	"errors"
	"net"
)

// batchSupported is false: recvmmsg and sendmmsg are Linux's, and the
// ordinary fast path serves elsewhere.
const batchSupported = false

func (h *Handler) serveUDPBatch(*net.UDPConn, int) error {
	return errors.New("batched UDP is Linux only")
}
