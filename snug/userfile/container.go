package userfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
)

// The SNUGENC1 container (spec §11). Integers are big-endian.
//
//	0   9  magic "SNUGENC1\n"
//	9   1  version 0x01
//	10  2  KDF id 0x0001 (PBKDF2-HMAC-SHA256)
//	12  4  iterations
//	16  16 salt
//	32  2  slot count (1–8)
//	34  4  FNV-1a/32 of the header (through the slot table) with this field zeroed
//	38     slot table: per slot kind (1) + IV (12) + 48 reserved zero bytes
//	       then the wrapped file keys, 48 bytes per slot (AES-256-GCM of 32 bytes)
//	       then the payload IV (12) and the AES-256-GCM ciphertext of the SQLite bytes
//
// The AAD of every unwrap and of the payload is the whole header, slot
// table included, so a changed KDF parameter, salt or slot IV fails them.
const (
	Magic             = "SNUGENC1\n"
	ContainerVersion  = 1
	KDFPBKDF2SHA256   = 0x0001
	DefaultIterations = 600_000 // the reference's; stored, so it can be raised
	// MaxIterations bounds the count a file may ask for: a header is
	// untrusted, and a huge count would keep a CPU busy for hours before
	// "locked" could be said.
	MaxIterations = 10_000_000

	SlotPassphrase  = 0x01
	SlotRecoveryKey = 0x02
	MaxSlots        = 8

	saltSize    = 16
	ivSize      = 12
	keySize     = 32
	tagSize     = 16
	wrappedSize = keySize + tagSize // 48
	headerFixed = 38
	slotSize    = 1 + ivSize + wrappedSize // 61
	offVersion  = 9
	offKDF      = 10
	offIter     = 12
	offSalt     = 16
	offSlots    = 32
	offChecksum = 34
)

// Recovery keys: RecoverySymbols symbols of an alphabet without the
// glyphs people confuse (0 O 1 l I): 27 × log2(30) ≈ 132.5 bits, over the
// 128 the spec asks (26 would be 127.6). Grouped by 5 with dashes for
// writing down; typing them back, case, spaces and dashes do not matter.
const (
	RecoveryAlphabet = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
	RecoverySymbols  = 27
)

// Secrets are what may open a container: its passphrase, or its recovery
// key. Each opens only its own kind of slot.
type Secrets struct {
	Passphrase  string
	RecoveryKey string
}

// ErrLocked: the container is sound but no supplied secret opens it (a
// wrong or missing passphrase). The file is fine; ask again.
var ErrLocked = errors.New("userfile: the passphrase or recovery key does not open this file")

// ErrCorrupt: the bytes are not a sound container (malformed, truncated, a
// failed checksum, or contents that fail their integrity check after the
// key opened). No secret can help.
var ErrCorrupt = errors.New("userfile: the protected file is damaged")

// CorruptError says why a container is corrupt; it matches [ErrCorrupt].
type CorruptError struct{ Reason string }

func (e *CorruptError) Error() string { return "userfile: the protected file is damaged: " + e.Reason }
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// NewRecoveryKey returns a fresh recovery key (see RecoverySymbols).
func NewRecoveryKey() string {
	limit := byte(256 - 256%len(RecoveryAlphabet)) // rejection sampling keeps it uniform
	var b strings.Builder
	buf := make([]byte, 64)
	for n := 0; n < RecoverySymbols; {
		rand.Read(buf)
		for _, c := range buf {
			if c >= limit || n == RecoverySymbols {
				continue
			}
			if n > 0 && n%5 == 0 {
				b.WriteByte('-')
			}
			b.WriteByte(RecoveryAlphabet[int(c)%len(RecoveryAlphabet)])
			n++
		}
	}
	return b.String()
}

// normalizeRecoveryKey drops what people add when they type a key back.
func normalizeRecoveryKey(k string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(k) {
		if 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// IsProtected reports whether data starts with the container's magic; it
// never fails, whatever the length.
func IsProtected(data []byte) bool { return bytes.HasPrefix(data, []byte(Magic)) }

// Seal encrypts plain into a new container with two slots, the passphrase
// and the recovery key (a passphrase-only container is never written: it
// has no way back). iterations 0 means [DefaultIterations]. Every IV and
// the salt and file key are fresh random bytes.
func Seal(plain []byte, s Secrets, iterations int) ([]byte, error) {
	rk := normalizeRecoveryKey(s.RecoveryKey)
	switch {
	case s.Passphrase == "":
		return nil, errors.New("userfile: a passphrase is required to protect a file")
	case rk == "":
		return nil, errors.New("userfile: a recovery key is required: a passphrase-only file has no way back")
	case iterations == 0:
		iterations = DefaultIterations
	case iterations < 1 || iterations > MaxIterations:
		return nil, fmt.Errorf("userfile: %d iterations, want 1 to %d", iterations, MaxIterations)
	}
	salt, fileKey, payloadIV := random(saltSize), random(keySize), random(ivSize)
	slots := []struct {
		kind   byte
		iv     []byte
		secret string
	}{{SlotPassphrase, random(ivSize), s.Passphrase}, {SlotRecoveryKey, random(ivSize), rk}}

	header := make([]byte, headerFixed+len(slots)*slotSize)
	copy(header, Magic)
	header[offVersion] = ContainerVersion
	binary.BigEndian.PutUint16(header[offKDF:], KDFPBKDF2SHA256)
	binary.BigEndian.PutUint32(header[offIter:], uint32(iterations))
	copy(header[offSalt:], salt)
	binary.BigEndian.PutUint16(header[offSlots:], uint16(len(slots)))
	for i, sl := range slots {
		at := headerFixed + i*slotSize
		header[at] = sl.kind
		copy(header[at+1:], sl.iv)
	}
	binary.BigEndian.PutUint32(header[offChecksum:], checksum(header))

	out := bytes.Clone(header)
	for _, sl := range slots {
		kek, err := deriveKey(sl.secret, salt, iterations)
		if err != nil {
			return nil, err
		}
		out = kek.Seal(out, sl.iv, fileKey, header)
	}
	content, err := gcm(fileKey)
	if err != nil {
		return nil, err
	}
	out = append(out, payloadIV...)
	return content.Seal(out, payloadIV, plain, header), nil
}

// Open decrypts a container with whichever supplied secret opens its slot.
// Errors: a [*CorruptError] for bytes that are not a sound container
// (checked before any secret is tried) or contents that fail their
// integrity check; [ErrLocked] when the container is sound and no secret
// opens it.
func Open(data []byte, s Secrets) ([]byte, error) {
	c, err := parse(data)
	if err != nil {
		return nil, err
	}
	fileKey, err := c.unwrap(s)
	if err != nil {
		return nil, err
	}
	content, err := gcm(fileKey)
	if err != nil {
		return nil, err
	}
	plain, err := content.Open(nil, c.payloadIV, c.payload, c.header)
	if err != nil {
		// The key opened, so the secret was right: the contents are damaged.
		return nil, corrupt("the protected contents failed their integrity check")
	}
	return plain, nil
}

// ChangePassphrase rewraps the passphrase slot under next, leaving the
// header, the payload and the other slots as they are: the recovery key
// keeps working, and the file keeps its length. The slot's IV is reused,
// which is safe because the key wrapping it is new.
func ChangePassphrase(data []byte, current, next string) ([]byte, error) {
	if next == "" {
		return nil, errors.New("userfile: the new passphrase must not be empty")
	}
	c, err := parse(data)
	if err != nil {
		return nil, err
	}
	fileKey, err := c.unwrap(Secrets{Passphrase: current})
	if err != nil {
		return nil, err
	}
	for _, sl := range c.slots {
		if sl.kind != SlotPassphrase {
			continue
		}
		kek, err := deriveKey(next, c.salt, c.iterations)
		if err != nil {
			return nil, err
		}
		out := bytes.Clone(data)
		kek.Seal(out[sl.wrappedAt:sl.wrappedAt], sl.iv, fileKey, c.header)
		return out, nil
	}
	return nil, corrupt("no passphrase slot")
}

type slot struct {
	kind      byte
	iv        []byte
	wrapped   []byte
	wrappedAt int
}

type container struct {
	header     []byte
	salt       []byte
	iterations int
	slots      []slot
	payloadIV  []byte
	payload    []byte
}

// parse checks the structure; every failure is corrupt, never locked: no
// secret has been tried yet.
func parse(data []byte) (*container, error) {
	if !IsProtected(data) {
		return nil, corrupt("not a SNUGENC1 file")
	}
	if len(data) < headerFixed {
		return nil, corrupt("the header is truncated")
	}
	if data[offVersion] != ContainerVersion {
		return nil, corrupt("container version %d is not supported", data[offVersion])
	}
	if kdf := binary.BigEndian.Uint16(data[offKDF:]); kdf != KDFPBKDF2SHA256 {
		return nil, corrupt("key derivation %#04x is not supported", kdf)
	}
	n := int(binary.BigEndian.Uint16(data[offSlots:]))
	if n < 1 || n > MaxSlots {
		return nil, corrupt("%d slots", n)
	}
	headerLen := headerFixed + n*slotSize
	payloadAt := headerLen + n*wrappedSize + ivSize
	if len(data) < payloadAt+tagSize {
		return nil, corrupt("the file is truncated")
	}
	c := &container{header: data[:headerLen], salt: data[offSalt : offSalt+saltSize], payloadIV: data[payloadAt-ivSize : payloadAt], payload: data[payloadAt:]}
	if binary.BigEndian.Uint32(data[offChecksum:]) != checksum(c.header) {
		return nil, corrupt("the header failed its checksum")
	}
	iter := binary.BigEndian.Uint32(data[offIter:])
	if iter < 1 || iter > MaxIterations {
		return nil, corrupt("%d key-derivation iterations", iter)
	}
	c.iterations = int(iter)
	for i := range n {
		at := headerFixed + i*slotSize
		if !allZero(data[at+1+ivSize : at+slotSize]) {
			return nil, corrupt("slot %d's reserved bytes are not zero", i)
		}
		w := headerLen + i*wrappedSize
		c.slots = append(c.slots, slot{kind: data[at], iv: data[at+1 : at+1+ivSize], wrapped: data[w : w+wrappedSize], wrappedAt: w})
	}
	return c, nil
}

// unwrap returns the file key from the first slot a supplied secret of its
// kind opens, or ErrLocked.
func (c *container) unwrap(s Secrets) ([]byte, error) {
	for _, sl := range c.slots {
		var secret string
		switch sl.kind {
		case SlotPassphrase:
			secret = s.Passphrase
		case SlotRecoveryKey:
			secret = normalizeRecoveryKey(s.RecoveryKey)
		}
		if secret == "" {
			continue
		}
		kek, err := deriveKey(secret, c.salt, c.iterations)
		if err != nil {
			return nil, err
		}
		if key, err := kek.Open(nil, sl.iv, sl.wrapped, c.header); err == nil {
			return key, nil
		}
	}
	return nil, ErrLocked
}

func deriveKey(secret string, salt []byte, iterations int) (cipher.AEAD, error) {
	k, err := pbkdf2.Key(sha256.New, secret, salt, iterations, keySize)
	if err != nil {
		return nil, err
	}
	return gcm(k)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// checksum is FNV-1a/32 over the header with the checksum field zeroed.
func checksum(header []byte) uint32 {
	h := fnv.New32a()
	h.Write(header[:offChecksum])
	h.Write([]byte{0, 0, 0, 0})
	h.Write(header[offChecksum+4:])
	return h.Sum32()
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
