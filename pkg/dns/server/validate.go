package server

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errNoHeader marks a packet too short to hold a DNS header: nothing can be
// answered to it, so it is dropped.
var errNoHeader = errors.New("shorter than a DNS header")

// validateMessage checks a request's wire form more strictly than
// miekg/dns's Unpack, which accepts what a conforming server must refuse
// with FORMERR (RFC 1035 4.1.4, RFC 6891 6.1.1): a compression pointer that
// does not point back to an earlier name (into the header, at itself, or
// forward), more than one OPT record, an OPT record outside the additional
// section or not owned by the root, and bytes after the last record.
func validateMessage(b []byte) error {
	if len(b) < headerLen {
		return errNoHeader
	}
	counts := [4]int{
		int(binary.BigEndian.Uint16(b[4:])), int(binary.BigEndian.Uint16(b[6:])),
		int(binary.BigEndian.Uint16(b[8:])), int(binary.BigEndian.Uint16(b[10:])),
	}
	off := headerLen
	var err error
	for i := 0; i < counts[0]; i++ {
		if off, err = skipName(b, off); err != nil {
			return fmt.Errorf("question %d: %w", i+1, err)
		}
		if off += 4; off > len(b) {
			return errors.New("question ends early")
		}
	}
	opts := 0
	for section := 1; section < 4; section++ {
		for i := 0; i < counts[section]; i++ {
			owner := off
			if off, err = skipName(b, off); err != nil {
				return fmt.Errorf("record %d of section %d: %w", i+1, section, err)
			}
			if off+10 > len(b) {
				return errors.New("record header ends early")
			}
			rtype := binary.BigEndian.Uint16(b[off:])
			rdlen := int(binary.BigEndian.Uint16(b[off+8:]))
			if off += 10 + rdlen; off > len(b) {
				return errors.New("record data ends early")
			}
			if rtype == typeOPT {
				switch {
				case section != 3:
					return errors.New("OPT record outside the additional section")
				case b[owner] != 0:
					return errors.New("OPT record not owned by the root")
				}
				if opts++; opts > 1 {
					return errors.New("more than one OPT record")
				}
			}
		}
	}
	if off != len(b) {
		return fmt.Errorf("%d bytes after the last record", len(b)-off)
	}
	return nil
}

// skipName returns the offset after the name at off. A compression pointer
// must point back, to an earlier offset after the header, and names may
// not be longer than 255 bytes or loop.
func skipName(b []byte, off int) (int, error) {
	end, wire, jumps := -1, 0, 0
	for {
		if off >= len(b) {
			return 0, errors.New("name runs past the message")
		}
		l := int(b[off])
		switch l & 0xC0 {
		case 0x00:
			if wire += l + 1; wire > 255 {
				return 0, errors.New("name longer than 255 bytes")
			}
			if l == 0 {
				if end < 0 {
					end = off + 1
				}
				return end, nil
			}
			off += 1 + l
		case 0xC0:
			if off+1 >= len(b) {
				return 0, errors.New("compression pointer runs past the message")
			}
			to := int(binary.BigEndian.Uint16(b[off:]) & 0x3FFF)
			if to < headerLen || to >= off {
				return 0, fmt.Errorf("compression pointer to offset %d from %d", to, off)
			}
			if end < 0 {
				end = off + 2
			}
			if jumps++; jumps > 127 {
				return 0, errors.New("compression pointers loop")
			}
			off = to
		default:
			return 0, fmt.Errorf("label type %#x", l&0xC0)
		}
	}
}
