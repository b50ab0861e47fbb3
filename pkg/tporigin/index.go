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

type uuidKey [16]byte

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
	if k, ok := parseUUID(uid); ok {
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
func parseUUIDString(s string) (k uuidKey, ok bool) {
	if len(s) != 36 {
		return k, false
	}
	// Read-only view of the string's bytes; nothing writes through it.
	b := unsafe.Slice(unsafe.StringData(s), 36)
	if b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
		return k, false
	}
	le := binary.LittleEndian
	w := [4]uint64{
		le.Uint64(b[0:8]),
		uint64(le.Uint32(b[9:13])) | uint64(le.Uint32(b[14:18]))<<32,
		uint64(le.Uint32(b[19:23])) | uint64(le.Uint32(b[24:28]))<<32,
		le.Uint64(b[28:36]),
	}
	// Eight hex digits per word (SWAR), written out here rather than in a
	// function the compiler would not inline. For a byte x < 0x80, x >= lo
	// shows in the top bit of x+(0x80-lo), and x > hi in that of
	// x+(0x7f-hi); no lane carries into the next.
	var bad uint64
	for i, x := range w {
		bad |= x & lanes80
		digit := (x + lanes01*(0x80-'0')) &^ (x + lanes01*(0x7f-'9')) & lanes80
		lower := (x + lanes01*(0x80-'a')) &^ (x + lanes01*(0x7f-'f')) & lanes80
		bad |= (digit | lower) ^ lanes80
		v := x&(lanes01*0x0f) + (lower>>7)*9 // each byte is its digit's value
		t := (v&0x00ff00ff00ff00ff)<<4 | (v>>8)&0x00ff00ff00ff00ff
		t = (t | t>>8) & 0x0000ffff0000ffff
		t = (t | t>>16) & 0x00000000ffffffff
		le.PutUint32(k[4*i:4*i+4], uint32(t))
	}
	return k, bad == 0
}

const (
	lanes01 = 0x0101010101010101
	lanes80 = 0x8080808080808080
)

// parseUUID accepts only the canonical lowercase form, so that String gives
// back the same string.
func parseUUID[S ~string | ~[]byte](s S) (k uuidKey, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return k, false
	}
	for i, p := range uuidPairs {
		hi, lo := unhex[s[p]], unhex[s[p+1]]
		if hi > 15 || lo > 15 {
			return k, false
		}
		k[i] = hi<<4 | lo
	}
	return k, true
}

func (k uuidKey) String() string {
	const digits = "0123456789abcdef"
	var b [36]byte
	for i, p := range uuidPairs {
		b[p] = digits[k[i]>>4]
		b[p+1] = digits[k[i]&0xf]
	}
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}
