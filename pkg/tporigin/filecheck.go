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
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"unsafe"
)

// bbolt's on-disk layout (stable since bbolt's fork from Bolt): every page
// starts with a 16-byte header; pages 0 and 1 are meta pages, and the meta
// follows the header. Only what checkFile needs is named here.
const (
	boltPageHeaderSize = 16
	boltMagic          = 0xED0CDAED
	boltVersion        = 2
	boltMetaSize       = 64 // magic..checksum
	boltChecksummed    = 56 // the meta bytes the FNV-64a checksum covers
	boltNoFreelist     = ^uint64(0)
	boltBranchPage     = 0x01
	boltLeafPage       = 0x02
	boltFreelistPage   = 0x10
	boltMinPageSize    = 512 // bbolt refuses smaller; larger than any header
	boltMaxPageSize    = 1 << 30
)

// boltMeta is the part of a meta page checkFile reads.
type boltMeta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64
	pages    uint64 // high-water mark: the file holds pages [0, pages)
	txid     uint64
}

// checkFile looks at a bbolt file before bbolt maps it. bbolt maps the
// pages its meta page names without comparing them to the file's size, so
// a file cut short (a full disk, a copy that stopped) makes the first read
// of a missing page a SIGBUS, which no recover catches: the process dies
// in bbolt.Open. A file whose meta page in use describes more pages than
// it holds, or whose root or freelist page is not one, is a *CorruptError. A file without a valid meta page is
// left to bbolt, which refuses it with an error.
func checkFile(path string) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tporigin: opening database file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("tporigin: opening database file: %w", err)
	}
	size := fi.Size()
	if size == 0 {
		return nil // new: bbolt initialises it
	}
	m0, ok0 := readBoltMeta(f, 0)
	var m1 boltMeta
	ok1 := false
	if ok0 {
		m1, ok1 = readBoltMeta(f, int64(m0.pageSize))
	} else {
		// Meta 0 damaged: meta 1 sits one page in, at a page size we
		// must guess; bbolt writes the OS page size, usually 4 KiB.
		for ps := int64(boltMinPageSize); ps <= 64<<10 && !ok1; ps *= 2 {
			m1, ok1 = readBoltMeta(f, ps)
			ok1 = ok1 && int64(m1.pageSize) == ps
		}
	}
	if !ok0 && !ok1 {
		return nil // not a bbolt file: bbolt says so
	}
	// bbolt reads through the valid meta with the higher transaction ID,
	// falling back to the other only when that one is invalid, so only the
	// chosen one must hold. The other may name pages that a commit cut
	// short by a crash has since reused: that file is sound.
	m := m0
	if !ok0 || (ok1 && m1.txid > m0.txid) {
		m = m1
	}
	if err := m.fits(size); err != nil {
		return &CorruptError{Path: path, Reason: err.Error()}
	}
	if err := m.pagesRead(f); err != nil {
		return &CorruptError{Path: path, Reason: err.Error()}
	}
	return nil
}

// fits reports whether the pages m names lie inside a file of size bytes.
func (m boltMeta) fits(size int64) error {
	ps := uint64(m.pageSize)
	if m.pages < 2 || m.pages > uint64(size)/ps {
		return fmt.Errorf("it is truncated or damaged: %d bytes, but its meta page (transaction %d) describes %d pages of %d bytes", size, m.txid, m.pages, ps)
	}
	if m.root < 2 || m.root >= m.pages {
		return fmt.Errorf("its meta page (transaction %d) puts the root at page %d of %d", m.txid, m.root, m.pages)
	}
	if m.freelist != boltNoFreelist && (m.freelist < 2 || m.freelist >= m.pages) {
		return fmt.Errorf("its meta page (transaction %d) puts the freelist at page %d of %d", m.txid, m.freelist, m.pages)
	}
	return nil
}

// pagesRead checks the pages bbolt reads first: the freelist, loaded inside
// bbolt.Open, and the root bucket's page. bbolt panics on a page whose ID
// or type is wrong, and a panic inside bbolt.Open leaves its mapping of the
// file, and so its lock, in the process. Deeper pages are read after
// bbolt.Open returns, where a panic is recovered and the database closed.
func (m boltMeta) pagesRead(r io.ReaderAt) error {
	root, err := readPageHeader(r, m, m.root)
	if err != nil {
		return err
	}
	if root.flags != boltBranchPage && root.flags != boltLeafPage {
		return fmt.Errorf("its root page %d has page type %#x, not a branch or leaf page", m.root, root.flags)
	}
	if m.freelist == boltNoFreelist {
		return nil
	}
	fl, err := readPageHeader(r, m, m.freelist)
	if err != nil {
		return err
	}
	if fl.flags != boltFreelistPage {
		return fmt.Errorf("its freelist page %d has page type %#x, not a freelist page", m.freelist, fl.flags)
	}
	// The freelist's page IDs follow the header; a count of 0xFFFF means
	// the real count is the first of them.
	n := uint64(fl.count)
	extra := uint64(0)
	if fl.count == 0xFFFF {
		var b [8]byte
		if _, err := r.ReadAt(b[:], int64(m.freelist*uint64(m.pageSize))+boltPageHeaderSize); err != nil {
			return fmt.Errorf("reading its freelist page %d: %v", m.freelist, err)
		}
		n, extra = nativeOrder().Uint64(b[:]), 1
	}
	room := (uint64(fl.overflow) + 1) * uint64(m.pageSize)
	if n > room/8 || (n+extra)*8+boltPageHeaderSize > room {
		return fmt.Errorf("its freelist page %d lists %d pages, more than its %d bytes hold", m.freelist, n, room)
	}
	// A free page beyond the file would be allocated and written there:
	// a write error on every commit, or a file grown to its offset.
	ids := make([]byte, n*8)
	if _, err := r.ReadAt(ids, int64(m.freelist*uint64(m.pageSize))+boltPageHeaderSize+int64(extra*8)); err != nil {
		return fmt.Errorf("reading its freelist page %d: %v", m.freelist, err)
	}
	order := nativeOrder()
	for i := 0; i < len(ids); i += 8 {
		if id := order.Uint64(ids[i:]); id < 2 || id >= m.pages {
			return fmt.Errorf("its freelist page %d lists page %d, outside its pages 2 to %d", m.freelist, id, m.pages-1)
		}
	}
	return nil
}

// boltPageHeader is the start of every page.
type boltPageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

// readPageHeader reads page id's header; the page and its overflow pages
// must lie within the pages m names.
func readPageHeader(r io.ReaderAt, m boltMeta, id uint64) (boltPageHeader, error) {
	var b [boltPageHeaderSize]byte
	if _, err := r.ReadAt(b[:], int64(id*uint64(m.pageSize))); err != nil {
		return boltPageHeader{}, fmt.Errorf("reading its page %d: %v", id, err)
	}
	order := nativeOrder()
	h := boltPageHeader{id: order.Uint64(b[0:]), flags: order.Uint16(b[8:]), count: order.Uint16(b[10:]), overflow: order.Uint32(b[12:])}
	if h.id != id {
		return h, fmt.Errorf("its page %d says it is page %d", id, h.id)
	}
	if id+uint64(h.overflow) >= m.pages {
		return h, fmt.Errorf("its page %d runs %d pages past its last page %d", id, h.overflow, m.pages-1)
	}
	return h, nil
}

// readBoltMeta reads the meta page at off and reports whether it is one:
// magic, version, a sane page size and its checksum, as bbolt checks them
// (bbolt v1.3.x, as Arktos pins it, also takes a zero checksum; such a
// file is left to bbolt).
func readBoltMeta(r io.ReaderAt, off int64) (boltMeta, bool) {
	var b [boltPageHeaderSize + boltMetaSize]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return boltMeta{}, false
	}
	order := nativeOrder()
	p := b[boltPageHeaderSize:]
	if order.Uint32(p[0:]) != boltMagic || order.Uint32(p[4:]) != boltVersion {
		return boltMeta{}, false
	}
	m := boltMeta{
		pageSize: order.Uint32(p[8:]),
		root:     order.Uint64(p[16:]),
		freelist: order.Uint64(p[32:]),
		pages:    order.Uint64(p[40:]),
		txid:     order.Uint64(p[48:]),
	}
	if m.pageSize < boltMinPageSize || m.pageSize > boltMaxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(p[:boltChecksummed])
	if order.Uint64(p[boltChecksummed:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return m, true
}

// nativeOrder is the machine's byte order: bbolt writes its pages in it.
func nativeOrder() binary.ByteOrder {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}
