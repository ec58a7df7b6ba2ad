package journal

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// The write-ahead log: a file of fixed size, zero-filled when it is made,
// into which frames are appended from the start. See "Durability" in the
// package doc for the protocol; this file has the frame format.
//
//	header   40 bytes: "DJW1" | gen uint64 | seq uint64 | synced uint64 | count uint32 | plen uint32 | 4 zero bytes
//	payload  plen bytes: count × (key [32] | vlen uint16 | value [vlen])
//	mac      32 bytes: HMAC-SHA256(key, "wal" NUL header NUL payload)
//	padding  zeros up to a multiple of frameAlign
//
// Integers are big-endian. A frame belongs to one generation of the log
// (the journal database says which is current); its sequence number is
// one more than the previous frame's; synced is the sequence number of
// the last frame known to be on disk when it was written.
const (
	walMagic    = "DJW1"
	frameHeader = 40
	frameAlign  = 512 // a sector: frames start on sector boundaries

	// DefaultWALSize is the size of a new write-ahead log. An action takes
	// two frames of 512 bytes at one client, so the log holds about a
	// thousand actions between checkpoints, and an open replays at most
	// that much.
	DefaultWALSize = 1 << 20
	minWALSize     = 16 * frameAlign
	maxWALSize     = 64 << 20
)

// walEntry is one record write: the record's database key and its value.
type walEntry struct{ key, val []byte }

// frameLen is the padded length of a frame holding entries.
func frameLen(entries []walEntry) int {
	n := frameHeader + macSize
	for _, e := range entries {
		n += keySize + 2 + len(e.val)
	}
	return (n + frameAlign - 1) / frameAlign * frameAlign
}

// appendFrame appends the frame of entries to buf.
func appendFrame(buf []byte, secret *macKey, gen, seq, synced uint64, entries []walEntry) []byte {
	start := len(buf)
	buf = append(buf, walMagic...)
	buf = binary.BigEndian.AppendUint64(buf, gen)
	buf = binary.BigEndian.AppendUint64(buf, seq)
	buf = binary.BigEndian.AppendUint64(buf, synced)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(entries)))
	buf = binary.BigEndian.AppendUint32(buf, 0) // plen, set below
	buf = append(buf, 0, 0, 0, 0)
	for _, e := range entries {
		buf = append(buf, e.key...)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(e.val)))
		buf = append(buf, e.val...)
	}
	plen := len(buf) - start - frameHeader
	binary.BigEndian.PutUint32(buf[start+32:], uint32(plen))
	buf = frameMAC(buf, secret, buf[start:start+frameHeader], buf[start+frameHeader:])
	for (len(buf)-start)%frameAlign != 0 {
		buf = append(buf, 0)
	}
	return buf
}

// frameMAC appends the MAC of a frame's header and payload to dst.
func frameMAC(dst []byte, secret *macKey, header, payload []byte) []byte {
	return secret.sum(dst, []byte("wal"), header, payload)
}

// frame is a parsed, verified frame.
type frame struct {
	seq, synced uint64
	entries     []walEntry
	len         int // padded
}

// parseFrame reads the frame at the start of data. It returns false unless
// a whole frame of generation gen is there and its MAC verifies; it does
// not check the sequence number. The entries alias data.
func parseFrame(data []byte, secret *macKey, gen uint64) (frame, bool) {
	if len(data) < frameHeader+macSize || string(data[:4]) != walMagic ||
		binary.BigEndian.Uint64(data[4:]) != gen {
		return frame{}, false
	}
	count := binary.BigEndian.Uint32(data[28:])
	plen := int(binary.BigEndian.Uint32(data[32:]))
	if plen > len(data)-frameHeader-macSize || !bytes.Equal(data[36:40], []byte{0, 0, 0, 0}) {
		return frame{}, false
	}
	header, payload := data[:frameHeader], data[frameHeader:frameHeader+plen]
	var m [macSize]byte
	if !hmac.Equal(data[frameHeader+plen:frameHeader+plen+macSize], frameMAC(m[:0], secret, header, payload)) {
		return frame{}, false
	}
	f := frame{seq: binary.BigEndian.Uint64(data[12:]), synced: binary.BigEndian.Uint64(data[20:])}
	for p := payload; len(p) > 0; {
		if len(p) < keySize+2 {
			return frame{}, false
		}
		n := int(binary.BigEndian.Uint16(p[keySize:]))
		if len(p) < keySize+2+n {
			return frame{}, false
		}
		f.entries = append(f.entries, walEntry{key: p[:keySize], val: p[keySize+2 : keySize+2+n]})
		p = p[keySize+2+n:]
	}
	if len(f.entries) != int(count) {
		return frame{}, false
	}
	f.len = (frameHeader + plen + macSize + frameAlign - 1) / frameAlign * frameAlign
	// A frame is written whole, with its padding, which must be zeros: so
	// a frame has one encoding, and no byte of it goes unchecked.
	if f.len > len(data) || slices.ContainsFunc(data[frameHeader+plen+macSize:f.len], func(b byte) bool { return b != 0 }) {
		return frame{}, false
	}
	return f, true
}

// errWALDamaged is a log whose frames stop verifying at a frame that a
// later one says was on disk: not a torn tail but damage.
var errWALDamaged = errors.New("write-ahead log damaged before its end")

// readWAL reads the frames of generation gen from the start of the log,
// calling apply for each entry in order, and returns where the next frame
// goes and the last sequence number. It stops at the first frame that is
// not the next whole, verified frame of gen. A crash leaves such a frame
// only among those written after the last sync, whose reservations were
// never acknowledged; so it is the end of the log, unless a verified
// frame further on says that frame had been synced: then the log was
// damaged (errWALDamaged).
func readWAL(f *os.File, size int64, secret *macKey, gen uint64, apply func(walEntry) error) (end int64, seq uint64, err error) {
	dropPages(f)
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil {
		return 0, 0, err
	}
	off := 0
	for off < len(data) {
		fr, ok := parseFrame(data[off:], secret, gen)
		if !ok || fr.seq != seq+1 {
			break
		}
		for _, e := range fr.entries {
			if err := apply(e); err != nil {
				return 0, 0, fmt.Errorf("frame %d: %w", fr.seq, err)
			}
		}
		seq = fr.seq
		off += fr.len
	}
	for p := off; p < len(data); p += frameAlign {
		if fr, ok := parseFrame(data[p:], secret, gen); ok && fr.synced > seq {
			return 0, 0, fmt.Errorf("%w: frame %d at byte %d says frame %d was synced, but the frames stop verifying at byte %d after frame %d",
				errWALDamaged, fr.seq, p, fr.synced, off, seq)
		}
	}
	return int64(off), seq, nil
}

// createWAL makes a new, zero-filled log of size bytes at path (see
// createFile). Writing the zeros now, rather than growing the file as
// frames come, lets a frame's fdatasync flush the data alone: the file's
// size and blocks never change afterwards.
//
// The zeros are written one page at a time. Linux caches what one large
// write wrote in large folios (up to the whole log in one), and every
// later write into a large folio walks all of its blocks: a 512-byte
// frame cost about 4 µs to write instead of 1.8, and a sync of the log
// about 5% more than the same sync of a file cached in pages (BENCHMARKS,
// "Action journal"). Writes of a page each make folios of a page each;
// so does reading the log back (dropPages).
func createWAL(path string, size int64) error {
	return createFile(path, func(f *os.File) error {
		page := make([]byte, walPage)
		for off := int64(0); off < size; off += walPage {
			if _, err := f.Write(page[:min(walPage, size-off)]); err != nil {
				return err
			}
		}
		return nil
	})
}

// walPage is the size of the writes that fill a new log: a page.
const walPage = 4096

// dropPages asks the kernel to drop the log's clean pages from its cache,
// so that reading the log back (at Open) caches it in pages: a log made
// by a broker that wrote it in one write may still be cached in large
// folios (see createWAL). Dirty pages stay, so nothing a write left is
// lost, and the advice failing costs only speed.
func dropPages(f *os.File) {
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// walMeta is the sealed metadata value naming the log's current generation
// and its size; a log of another size is refused.
func walMeta(secret []byte, gen uint64, size int64) []byte {
	data := binary.BigEndian.AppendUint64(nil, gen)
	data = binary.BigEndian.AppendUint64(data, uint64(size))
	return sealMeta(secret, metaWAL, data)
}

func parseWALMeta(secret, v []byte) (gen uint64, size int64, ok bool) {
	data, ok := openMeta(secret, metaWAL, v, 16)
	if !ok {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(data), int64(binary.BigEndian.Uint64(data[8:])), true
}
