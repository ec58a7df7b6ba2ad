package journal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"
	"time"
)

// Record states.
const (
	StateReserved = "reserved" // intent is durable; the outcome is not known
	StateSettled  = "settled"  // the outcome is recorded
)

// Dispatch values: what is known of the input reaching the page.
const (
	DispatchUnknown       = "unknown" // reserved: it may or may not have been sent
	DispatchNotDispatched = "notDispatched"
	DispatchDispatched    = "dispatched"
	DispatchObserved      = "observed"
)

// Outcomes of a settled record.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	OutcomeUnknown   = "unknown"
)

// MaxKind is the longest action kind the journal stores.
const MaxKind = 32

// Key identifies an action: Scope is the client's journalKey, NUL, and the
// session ID (the runtime builds it); RequestID is the client's request ID.
// Neither is stored: the journal keeps only a keyed hash of the pair.
type Key struct {
	Scope     string
	RequestID string
}

// Record is what the journal knows of one action.
type Record struct {
	Hash       [32]byte  // the payload hash the action was reserved with
	Kind       string    // the action kind ("click", "fill", …)
	State      string    // StateReserved or StateSettled
	Dispatch   string    // DispatchUnknown while reserved; then notDispatched, dispatched or observed
	Outcome    string    // settled only: succeeded, failed, cancelled or unknown
	ReservedAt time.Time // UTC, nanosecond precision
	SettledAt  time.Time // settled only
}

// The on-disk format. Names are part of the format: never rename one.
const (
	format       = "dsh-journal/2" // keyed by the key file; has a write-ahead log
	legacyFormat = "dsh-journal/1" // keyed by the broker's auth token; no log
	macSize      = sha256.Size
	keySize      = sha256.Size
	maxValueLen  = 1024 // a record is ~250 bytes; anything longer is not ours
)

var (
	bucketRecords = []byte("records")
	bucketMeta    = []byte("meta")
	metaFormat    = []byte("format")
	metaCheck     = []byte("check")
	metaWAL       = []byte("wal")    // sealed: the log's generation and size
	metaLegacy    = []byte("legacy") // sealed, optional: what a migration kept
)

// diskRecord is the JSON of a record, as parseRecord decodes it. Field
// order is the canonical order, which appendRecord writes: a stored record
// must re-encode to exactly its bytes.
type diskRecord struct {
	V          int    `json:"v"`
	Hash       string `json:"hash"` // hex(payload hash XOR pad(key)), see mask
	Kind       string `json:"kind"`
	State      string `json:"state"`
	Dispatch   string `json:"dispatch"`
	Outcome    string `json:"outcome,omitempty"`
	ReservedAt int64  `json:"reservedAt"`          // Unix nanoseconds
	SettledAt  int64  `json:"settledAt,omitempty"` // Unix nanoseconds
}

// mac is HMAC-SHA256(secret, parts joined by NUL), for what is computed
// once in a while (metadata); a record's MACs use a [macKey].
func mac(secret []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	for i, p := range parts {
		if i > 0 {
			m.Write([]byte{0})
		}
		m.Write(p)
	}
	return m.Sum(nil)
}

// macKey computes HMAC-SHA256 under one secret, for the MACs every action
// takes (four per record written). hmac.New hashes the secret into the
// inner and outer pads each time, and allocates; a keyed HMAC taken from
// the pool is Reset instead, which restores the two pads' hash states.
type macKey struct {
	secret []byte
	pool   sync.Pool // of *macState
}

// macState is a keyed HMAC and buffers for its input and its sum.
type macState struct {
	h       hash.Hash
	in, out []byte
}

func newMACKey(secret []byte) *macKey {
	k := &macKey{secret: secret}
	k.pool.New = func() any { return &macState{h: hmac.New(sha256.New, secret)} }
	return k
}

// sum appends HMAC-SHA256(secret, parts joined by NUL) to dst. The parts
// and the sum are copied, so that the caller's slices do not escape
// through the hash's interface: a caller's buffer can stay on its stack.
func (k *macKey) sum(dst []byte, parts ...[]byte) []byte {
	s := k.pool.Get().(*macState)
	s.in = s.in[:0]
	for i, p := range parts {
		if i > 0 {
			s.in = append(s.in, 0)
		}
		s.in = append(s.in, p...)
	}
	s.h.Reset()
	s.h.Write(s.in)
	s.out = s.h.Sum(s.out[:0])
	dst = append(dst, s.out...)
	k.pool.Put(s)
	return dst
}

// dbKey is the bbolt key of k. It is injective because validKey forbids NUL
// in RequestID: the last NUL of the MAC input ends the scope.
func dbKey(secret *macKey, k Key) []byte {
	return secret.sum(make([]byte, 0, keySize), []byte("key"), []byte(k.Scope), []byte(k.RequestID))
}

// checkValue lets Open tell a changed secret from a tampered record. f is
// the file's format: a legacy file was checked with its own name.
func checkValue(secret []byte, f string) []byte {
	return mac(secret, []byte("check"), []byte(f))
}

// sealMeta is a metadata value: data, then its MAC under secret and name.
func sealMeta(secret, name, data []byte) []byte {
	return append(bytes.Clone(data), mac(secret, []byte("meta"), name, data)...)
}

// openMeta returns the data of a sealed metadata value of n bytes of data,
// or false if it does not verify.
func openMeta(secret, name, v []byte, n int) ([]byte, bool) {
	if len(v) != n+macSize {
		return nil, false
	}
	data := v[:n]
	return data, hmac.Equal(v[n:], mac(secret, []byte("meta"), name, data))
}

// mask hides the payload hash behind a per-key pad, so that the file holds
// no digest of a payload that could be tested against guesses (a typed
// value is often guessable) without the secret. It is its own inverse.
func mask(secret *macKey, key []byte, h [32]byte) [32]byte {
	var buf [macSize]byte
	pad := secret.sum(buf[:0], []byte("hash"), key)
	for i := range h {
		h[i] ^= pad[i]
	}
	return h
}

// validKind accepts a short token of ASCII letters, digits and . _ -:
// action kinds are camel case where they join two words (clickAt).
func validKind(kind string) bool {
	if len(kind) == 0 || len(kind) > MaxKind {
		return false
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validRecord checks the state machine: a reserved record has dispatch
// unknown and no settle fields; a settled one has all of them.
func validRecord(r *Record) error {
	if !validKind(r.Kind) {
		return fmt.Errorf("kind %q is not a short token", r.Kind)
	}
	if r.ReservedAt.IsZero() || r.ReservedAt.UnixNano() <= 0 {
		return errors.New("no reservation time")
	}
	switch r.State {
	case StateReserved:
		if r.Dispatch != DispatchUnknown {
			return fmt.Errorf("reserved record with dispatch %q", r.Dispatch)
		}
		if r.Outcome != "" || !r.SettledAt.IsZero() {
			return errors.New("reserved record with settle fields")
		}
	case StateSettled:
		if !validDispatch(r.Dispatch) {
			return fmt.Errorf("settled record with dispatch %q", r.Dispatch)
		}
		if !validOutcome(r.Outcome) {
			return fmt.Errorf("settled record with outcome %q", r.Outcome)
		}
		if r.SettledAt.IsZero() || r.SettledAt.UnixNano() <= 0 {
			return errors.New("settled record without a settle time")
		}
	default:
		return fmt.Errorf("state %q", r.State)
	}
	return nil
}

func validDispatch(d string) bool {
	return d == DispatchNotDispatched || d == DispatchDispatched || d == DispatchObserved
}

func validOutcome(o string) bool {
	return o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeCancelled || o == OutcomeUnknown
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// appendRecord appends the canonical JSON of r, with its hash masked for
// key, to buf: the bytes json.Marshal gives for its diskRecord (which
// wrote the records of earlier versions; FuzzRecordJSON compares the
// two), without reflection. Every string in it is a constant or a kind,
// which validRecord limits to characters JSON never escapes.
func appendRecord(buf []byte, secret *macKey, key []byte, r *Record) ([]byte, error) {
	if err := validRecord(r); err != nil {
		return nil, err
	}
	h := mask(secret, key, r.Hash)
	buf = append(buf, `{"v":1,"hash":"`...)
	buf = hex.AppendEncode(buf, h[:])
	buf = append(buf, `","kind":"`...)
	buf = append(buf, r.Kind...)
	buf = append(buf, `","state":"`...)
	buf = append(buf, r.State...)
	buf = append(buf, `","dispatch":"`...)
	buf = append(buf, r.Dispatch...)
	buf = append(buf, '"')
	if r.Outcome != "" {
		buf = append(buf, `,"outcome":"`...)
		buf = append(buf, r.Outcome...)
		buf = append(buf, '"')
	}
	buf = append(buf, `,"reservedAt":`...)
	buf = strconv.AppendInt(buf, unixNano(r.ReservedAt), 10)
	if at := unixNano(r.SettledAt); at != 0 {
		buf = append(buf, `,"settledAt":`...)
		buf = strconv.AppendInt(buf, at, 10)
	}
	return append(buf, '}'), nil
}

// parseRecord decodes and validates canonical record JSON. It accepts only
// what appendRecord produces: re-encoding must give the same bytes.
func parseRecord(secret *macKey, key, data []byte) (Record, error) {
	var d diskRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Record{}, fmt.Errorf("record JSON: %v", err)
	}
	if dec.More() {
		return Record{}, errors.New("record JSON: trailing data")
	}
	if d.V != 1 {
		return Record{}, fmt.Errorf("record version %d", d.V)
	}
	var h [32]byte
	// The length first: hex.Decode writes half of any input into h.
	if len(d.Hash) != 2*len(h) {
		return Record{}, errors.New("record hash is not 64 hex digits")
	}
	if _, err := hex.Decode(h[:], []byte(d.Hash)); err != nil {
		return Record{}, errors.New("record hash is not 64 hex digits")
	}
	r := Record{
		Hash: mask(secret, key, h), Kind: d.Kind, State: d.State, Dispatch: d.Dispatch, Outcome: d.Outcome,
		ReservedAt: fromUnixNano(d.ReservedAt), SettledAt: fromUnixNano(d.SettledAt),
	}
	again, err := appendRecord(nil, secret, key, &r)
	if err != nil {
		return Record{}, err
	}
	if !bytes.Equal(again, data) {
		return Record{}, errors.New("record JSON is not in canonical form")
	}
	return r, nil
}

// encodeValue is the bbolt value of r under key: MAC || JSON.
func encodeValue(secret *macKey, key []byte, r *Record) ([]byte, error) {
	// One allocation: the JSON goes after room for its MAC, which is
	// computed over it and copied in front.
	v, err := appendRecord(make([]byte, macSize, macSize+300), secret, key, r) // the JSON is under 300 bytes
	if err != nil {
		return nil, err
	}
	var m [macSize]byte
	copy(v, secret.sum(m[:0], []byte("record"), key, v[macSize:]))
	return v, nil
}

func seal(secret *macKey, key, js []byte) []byte {
	v := make([]byte, 0, macSize+len(js))
	v = secret.sum(v, []byte("record"), key, js)
	return append(v, js...)
}

// decodeValue verifies and decodes a bbolt value. Any input is safe.
func decodeValue(secret *macKey, key, v []byte) (Record, error) {
	if len(v) <= macSize || len(v) > maxValueLen {
		return Record{}, fmt.Errorf("record of %d bytes", len(v))
	}
	js := v[macSize:]
	var m [macSize]byte
	if !hmac.Equal(v[:macSize], secret.sum(m[:0], []byte("record"), key, js)) {
		return Record{}, errMAC
	}
	return parseRecord(secret, key, js)
}
