package tporigin

// index maps UIDs to entries. API servers generate UIDs as canonical,
// lowercase UUIDs; those are kept as 16 bytes in a map whose slots hold key
// and value inline, which saves both memory (no string per entry) and a
// pointer chase per lookup. Any other UID string lives in a second map.
type index struct {
	uuids map[uuidKey]entry
	other map[string]entry
}

type uuidKey [16]byte

func newIndex() index {
	return index{uuids: make(map[uuidKey]entry), other: make(map[string]entry)}
}

func (x *index) len() int { return len(x.uuids) + len(x.other) }

func (x *index) get(uid string) (entry, bool) {
	if k, ok := parseUUIDString(uid); ok {
		e, ok := x.uuids[k]
		return e, ok
	}
	e, ok := x.other[uid]
	return e, ok
}

func (x *index) set(uid string, e entry) {
	if k, ok := parseUUID(uid); ok {
		x.uuids[k] = e
		return
	}
	x.other[uid] = e
}

// setBytes is set for a key read from the file: only non-UUID keys are
// copied to a string.
func (x *index) setBytes(uid []byte, e entry) {
	if k, ok := parseUUID(uid); ok {
		x.uuids[k] = e
		return
	}
	x.other[string(uid)] = e
}

func (x *index) del(uid string) {
	if k, ok := parseUUID(uid); ok {
		delete(x.uuids, k)
		return
	}
	delete(x.other, uid)
}

// each calls fn for every entry; UUID keys are formatted back to the exact
// string they were parsed from.
func (x *index) each(fn func(uid string, e entry)) {
	for k, e := range x.uuids {
		fn(k.String(), e)
	}
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

// parseUUIDString is parseUUID for the lookup path, written out so that the
// compiler drops the bounds checks.
func parseUUIDString(s string) (k uuidKey, ok bool) {
	if len(s) != 36 {
		return k, false
	}
	s = s[:36]
	if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return k, false
	}
	var bad byte
	for i := 0; i < 16; i++ {
		p := int(uuidPairs[i])
		hi, lo := unhex[s[p]], unhex[s[p+1]]
		bad |= hi | lo
		k[i] = hi<<4 | lo
	}
	return k, bad < 16
}

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
