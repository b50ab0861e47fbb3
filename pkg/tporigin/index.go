/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package tporigin

import (
	"encoding/binary"
	"unsafe"
)

// index maps UIDs to entries. API servers generate UIDs as canonical,
// lowercase UUIDs; those are kept as 16 bytes in a uuidTable whose slots
// hold key and value inline, which saves both memory (no string per entry)
// and a pointer chase per lookup. Any other UID string lives in a map.
type index struct {
	uuids *uuidTable
	other map[string]entry
}

// uuidKey is a UUID's 16 bytes as two little-endian words: lo holds bytes
// 0-7, hi bytes 8-15.
type uuidKey struct{ lo, hi uint64 }

func keyFromBytes(b [16]byte) uuidKey {
	return uuidKey{lo: binary.LittleEndian.Uint64(b[0:8]), hi: binary.LittleEndian.Uint64(b[8:16])}
}

func (k uuidKey) bytes() (b [16]byte) {
	binary.LittleEndian.PutUint64(b[0:8], k.lo)
	binary.LittleEndian.PutUint64(b[8:16], k.hi)
	return b
}

func newIndex() index {
	return index{uuids: &uuidTable{}, other: make(map[string]entry)}
}

func (x *index) len() int { return x.uuids.len() + len(x.other) }

func (x *index) get(uid string) (entry, bool) {
	if k, ok := parseUUIDString(uid); ok {
		return x.uuids.get(k)
	}
	e, ok := x.other[uid]
	return e, ok
}

func (x *index) set(uid string, e entry) {
	if k, ok := parseUUIDString(uid); ok {
		x.uuids.set(k, e)
		return
	}
	x.other[uid] = e
}

// setBytes is set for a key read from the file: only non-UUID keys are
// copied to a string.
func (x *index) setBytes(uid []byte, e entry) {
	// parseUUID keeps nothing of its argument, so the bytes are read as a
	// string in place rather than copied for every record of the file.
	if k, ok := parseUUID(*(*string)(unsafe.Pointer(&uid))); ok {
		x.uuids.set(k, e)
		return
	}
	x.other[string(uid)] = e
}

func (x *index) del(uid string) {
	if k, ok := parseUUID(uid); ok {
		x.uuids.del(k)
		return
	}
	delete(x.other, uid)
}

// each calls fn for every entry; UUID keys are formatted back to the exact
// string they were parsed from.
func (x *index) each(fn func(uid string, e entry)) {
	x.uuids.each(func(k uuidKey, e entry) { fn(k.String(), e) })
	for uid, e := range x.other {
		fn(uid, e)
	}
}

var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// uuidGroups are the offsets of the hex pairs in xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
var uuidPairs = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// parseUUIDString is parseUUID for the lookup path. It decodes eight hex
// digits at a time in a uint64 (SWAR), checking every byte is 0-9 or a-f;
// FuzzParseUUID checks it against parseUUID. On failure k is garbage.
func parseUUIDString(s string) (uuidKey, bool) {
	if len(s) != 36 {
		return uuidKey{}, false
	}
	b := s[:36] // lets the compiler drop the bounds checks below
	if b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
		return uuidKey{}, false
	}
	// Eight hex digits per 64-bit word (SWAR), four words written out so
	// that everything stays in registers. Per byte x < 0x80: x >= lo shows
	// in the top bit of x+(0x80-lo), x > hi in that of x+(0x7f-hi); no lane
	// carries into the next. d marks digits, l lowercase letters; then each
	// byte becomes its digit's value and pairs of nibbles are packed.
	var bad uint64
	x0 := le64(b[0:8])
	d0 := (x0 + lanes01*(0x80-'0')) &^ (x0 + lanes01*(0x7f-'9')) & lanes80
	l0 := (x0 + lanes01*(0x80-'a')) &^ (x0 + lanes01*(0x7f-'f')) & lanes80
	bad |= x0 & lanes80
	bad |= (d0 | l0) ^ lanes80
	v0 := x0&(lanes01*0x0f) + (l0>>7)*9
	t0 := (v0&0x00ff00ff00ff00ff)<<4 | (v0>>8)&0x00ff00ff00ff00ff
	t0 = (t0 | t0>>8) & 0x0000ffff0000ffff
	t0 = (t0 | t0>>16) & 0x00000000ffffffff
	x1 := uint64(le32(b[9:13])) | uint64(le32(b[14:18]))<<32
	d1 := (x1 + lanes01*(0x80-'0')) &^ (x1 + lanes01*(0x7f-'9')) & lanes80
	l1 := (x1 + lanes01*(0x80-'a')) &^ (x1 + lanes01*(0x7f-'f')) & lanes80
	bad |= x1 & lanes80
	bad |= (d1 | l1) ^ lanes80
	v1 := x1&(lanes01*0x0f) + (l1>>7)*9
	t1 := (v1&0x00ff00ff00ff00ff)<<4 | (v1>>8)&0x00ff00ff00ff00ff
	t1 = (t1 | t1>>8) & 0x0000ffff0000ffff
	t1 = (t1 | t1>>16) & 0x00000000ffffffff
	x2 := uint64(le32(b[19:23])) | uint64(le32(b[24:28]))<<32
	d2 := (x2 + lanes01*(0x80-'0')) &^ (x2 + lanes01*(0x7f-'9')) & lanes80
	l2 := (x2 + lanes01*(0x80-'a')) &^ (x2 + lanes01*(0x7f-'f')) & lanes80
	bad |= x2 & lanes80
	bad |= (d2 | l2) ^ lanes80
	v2 := x2&(lanes01*0x0f) + (l2>>7)*9
	t2 := (v2&0x00ff00ff00ff00ff)<<4 | (v2>>8)&0x00ff00ff00ff00ff
	t2 = (t2 | t2>>8) & 0x0000ffff0000ffff
	t2 = (t2 | t2>>16) & 0x00000000ffffffff
	x3 := le64(b[28:36])
	d3 := (x3 + lanes01*(0x80-'0')) &^ (x3 + lanes01*(0x7f-'9')) & lanes80
	l3 := (x3 + lanes01*(0x80-'a')) &^ (x3 + lanes01*(0x7f-'f')) & lanes80
	bad |= x3 & lanes80
	bad |= (d3 | l3) ^ lanes80
	v3 := x3&(lanes01*0x0f) + (l3>>7)*9
	t3 := (v3&0x00ff00ff00ff00ff)<<4 | (v3>>8)&0x00ff00ff00ff00ff
	t3 = (t3 | t3>>8) & 0x0000ffff0000ffff
	t3 = (t3 | t3>>16) & 0x00000000ffffffff
	return uuidKey{lo: t0 | t1<<32, hi: t2 | t3<<32}, bad == 0
}

// le64 and le32 read a string's bytes as binary.LittleEndian reads a
// slice's; the compiler merges the byte loads into one load, so the string
// needs neither a copy nor unsafe.StringData (Go 1.20; the core is Go 1.13).
func le64(b string) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func le32(b string) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// parseUUID accepts only the canonical lowercase form, so that String gives
// back the same string.
func parseUUID(s string) (uuidKey, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return uuidKey{}, false
	}
	var k [16]byte
	for i, p := range uuidPairs {
		hi, lo := unhex[s[p]], unhex[s[p+1]]
		if hi > 15 || lo > 15 {
			return uuidKey{}, false
		}
		k[i] = hi<<4 | lo
	}
	return keyFromBytes(k), true
}

func (k uuidKey) String() string {
	const digits = "0123456789abcdef"
	kb := k.bytes()
	var b [36]byte
	for i, p := range uuidPairs {
		b[p] = digits[kb[i]>>4]
		b[p+1] = digits[kb[i]&0xf]
	}
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}
