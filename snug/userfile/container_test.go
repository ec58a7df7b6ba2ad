package userfile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/userfile"
)

// fast is an iteration count that keeps the tests quick; the count is
// stored in the header, so any count opens.
const fast = 1000

var plain = []byte("SQLite format 3\x00 and then the pages of a user database")

func seal(t testing.TB, data []byte, passphrase string) ([]byte, string) {
	t.Helper()
	rk := userfile.NewRecoveryKey()
	out, err := userfile.Seal(data, userfile.Secrets{Passphrase: passphrase, RecoveryKey: rk}, fast)
	if err != nil {
		t.Fatal(err)
	}
	return out, rk
}

func isCorrupt(err error) bool {
	_, ok := errors.AsType[*userfile.CorruptError](err)
	return ok && errors.Is(err, userfile.ErrCorrupt)
}

// fixChecksum recomputes the header checksum after a test changed the
// header, as a deliberate attacker would.
func fixChecksum(c []byte) {
	n := int(binary.BigEndian.Uint16(c[32:]))
	header := c[:38+n*61]
	binary.BigEndian.PutUint32(header[34:], 0)
	h := fnv.New32a()
	h.Write(header)
	binary.BigEndian.PutUint32(header[34:], h.Sum32())
}

func TestRoundTrip(t *testing.T) {
	for _, data := range [][]byte{plain, {}, bytes.Repeat([]byte{0xAB}, 1<<20)} {
		c, rk := seal(t, data, "correct horse")
		if userfile.Detect(c) != userfile.Protected || !userfile.IsProtected(c) {
			t.Fatal("the magic is not detected")
		}
		for _, s := range []userfile.Secrets{{Passphrase: "correct horse"}, {RecoveryKey: rk}, {RecoveryKey: strings.ToLower(strings.ReplaceAll(rk, "-", " "))}} {
			got, err := userfile.Open(c, s)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("open with %+v: %v", s, err)
			}
		}
	}
}

func TestLayout(t *testing.T) {
	c, _ := seal(t, plain, "p")
	if string(c[:9]) != "SNUGENC1\n" || c[9] != 1 || !bytes.Equal(c[10:12], []byte{0, 1}) || binary.BigEndian.Uint32(c[12:]) != fast {
		t.Fatalf("fixed header % x", c[:38])
	}
	if !bytes.Equal(c[32:34], []byte{0, 2}) {
		t.Fatalf("slot count % x", c[32:34])
	}
	for i, kind := range []byte{userfile.SlotPassphrase, userfile.SlotRecoveryKey} {
		s := c[38+i*61 : 38+(i+1)*61]
		if s[0] != kind || bytes.ContainsFunc(s[13:], func(r rune) bool { return r != 0 }) {
			t.Fatalf("slot %d: % x", i, s)
		}
	}
	// Header 160, two wrapped keys, the payload IV, the ciphertext and its tag.
	if want := 160 + 2*48 + 12 + len(plain) + 16; len(c) != want {
		t.Fatalf("%d bytes, want %d", len(c), want)
	}
	other, _ := seal(t, plain, "p")
	if bytes.Equal(c, other) {
		t.Fatal("two encryptions of the same plaintext are equal")
	}
}

func TestDefaultIterationsAreStored(t *testing.T) {
	c, err := userfile.Seal(plain, userfile.Secrets{Passphrase: "p", RecoveryKey: userfile.NewRecoveryKey()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint32(c[12:]); userfile.DefaultIterations != 600_000 || n != userfile.DefaultIterations {
		t.Fatalf("%d iterations", n)
	}
	if got, err := userfile.Open(c, userfile.Secrets{Passphrase: "p"}); err != nil || !bytes.Equal(got, plain) {
		t.Fatal(err)
	}
}

func TestLockedIsNotCorrupt(t *testing.T) {
	c, rk := seal(t, plain, "right")
	for name, s := range map[string]userfile.Secrets{
		"wrong passphrase":              {Passphrase: "wrong"},
		"empty passphrase":              {},
		"recovery key as passphrase":    {Passphrase: rk},
		"passphrase as recovery key":    {RecoveryKey: "right"},
		"another recovery key":          {RecoveryKey: userfile.NewRecoveryKey()},
		"passphrase in the wrong place": {RecoveryKey: "RIGHT"},
	} {
		if got, err := userfile.Open(c, s); !errors.Is(err, userfile.ErrLocked) || got != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDamageIsCorruptNeverLocked(t *testing.T) {
	c, _ := seal(t, plain, "right")
	flip := func(off int) []byte {
		d := bytes.Clone(c)
		d[off] ^= 0x01
		return d
	}
	for name, data := range map[string][]byte{
		"flipped ciphertext byte": flip(len(c) - 20),
		"flipped tag byte":        flip(len(c) - 1),
		"flipped payload IV":      flip(160 + 96 + 3),
		"flipped iteration byte":  flip(13),
		"flipped salt byte":       flip(20),
		"flipped slot IV":         flip(38 + 5),
		"flipped slot kind":       flip(38),
		"flipped version":         flip(9),
		"flipped KDF id":          flip(11),
		"flipped checksum":        flip(35),
		"reserved byte set":       flip(38 + 20),
		"truncated by 8":          c[:len(c)-8],
		"truncated to 12":         c[:12],
		"magic only":              c[:9],
		"shorter than the magic":  c[:5],
		"empty":                   nil,
		"plain SQLite":            plain,
		"text":                    []byte("hello"),
	} {
		got, err := userfile.Open(data, userfile.Secrets{Passphrase: "right"})
		if !isCorrupt(err) || got != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTamperingIsRefused(t *testing.T) {
	c, rk := seal(t, plain, "right")
	// A header changed and its checksum fixed, as an attacker would: the
	// AAD refuses it.
	d := bytes.Clone(c)
	d[20] ^= 0xFF
	fixChecksum(d)
	if _, err := userfile.Open(d, userfile.Secrets{Passphrase: "right", RecoveryKey: rk}); err == nil {
		t.Fatal("a tampered header opened")
	}
	// Another file's payload spliced under this header.
	other, _ := seal(t, []byte("another database entirely, same length as the first"), "right")
	spliced := append(bytes.Clone(c[:160+96]), other[160+96:]...)
	if _, err := userfile.Open(spliced, userfile.Secrets{Passphrase: "right"}); !isCorrupt(err) {
		t.Fatalf("a spliced payload: %v", err)
	}
}

func TestSlotCountAndIterationBounds(t *testing.T) {
	c, _ := seal(t, plain, "p")
	withSlots := func(n uint16) []byte {
		d := bytes.Clone(c)
		binary.BigEndian.PutUint16(d[32:], n)
		if n <= 8 {
			fixChecksum(d)
		}
		return d
	}
	for _, n := range []uint16{0, 9, 0xFFFF} {
		if _, err := userfile.Open(withSlots(n), userfile.Secrets{}); !isCorrupt(err) {
			t.Errorf("%d slots: %v", n, err)
		}
	}
	// One slot: a sound structure (never written, but read), locked
	// without a secret.
	if _, err := userfile.Open(withSlots(1), userfile.Secrets{}); !errors.Is(err, userfile.ErrLocked) {
		t.Errorf("1 slot: %v", err)
	}
	withIterations := func(n uint32) []byte {
		d := bytes.Clone(c)
		binary.BigEndian.PutUint32(d[12:], n)
		fixChecksum(d)
		return d
	}
	if _, err := userfile.Open(withIterations(userfile.MaxIterations), userfile.Secrets{}); !errors.Is(err, userfile.ErrLocked) {
		t.Errorf("at the iteration bound: %v", err)
	}
	for _, n := range []uint32{userfile.MaxIterations + 1, math.MaxUint32, 0} {
		if _, err := userfile.Open(withIterations(n), userfile.Secrets{Passphrase: "p"}); !isCorrupt(err) {
			t.Errorf("%d iterations: %v", n, err)
		}
	}
	if _, err := userfile.Seal(plain, userfile.Secrets{Passphrase: "p", RecoveryKey: "K"}, userfile.MaxIterations+1); err == nil {
		t.Error("sealed past the iteration bound")
	}
}

func TestNoPassphraseOnlyContainer(t *testing.T) {
	if _, err := userfile.Seal(plain, userfile.Secrets{Passphrase: "p"}, fast); err == nil {
		t.Fatal("sealed without a recovery key")
	}
	if _, err := userfile.Seal(plain, userfile.Secrets{RecoveryKey: userfile.NewRecoveryKey()}, fast); err == nil {
		t.Fatal("sealed without a passphrase")
	}
}

func TestChangePassphrase(t *testing.T) {
	c, rk := seal(t, plain, "old")
	d, err := userfile.ChangePassphrase(c, "old", "new")
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != len(c) || !bytes.Equal(d[len(d)-64:], c[len(c)-64:]) || !bytes.Equal(d[:160], c[:160]) {
		t.Fatal("a passphrase change touched more than its slot")
	}
	if _, err := userfile.Open(d, userfile.Secrets{Passphrase: "old"}); !errors.Is(err, userfile.ErrLocked) {
		t.Fatalf("the old passphrase: %v", err)
	}
	for _, s := range []userfile.Secrets{{Passphrase: "new"}, {RecoveryKey: rk}} {
		if got, err := userfile.Open(d, s); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("after the change, %+v: %v", s, err)
		}
	}
	if _, err := userfile.ChangePassphrase(c, "wrong", "new"); !errors.Is(err, userfile.ErrLocked) {
		t.Fatalf("a change with the wrong passphrase: %v", err)
	}
}

func TestRecoveryKeyEntropy(t *testing.T) {
	seen := map[rune]bool{}
	for range 200 {
		k := userfile.NewRecoveryKey()
		symbols := strings.ReplaceAll(k, "-", "")
		if len(symbols) != userfile.RecoverySymbols || strings.Count(k, "-") != 5 {
			t.Fatalf("key %q", k)
		}
		for _, r := range symbols {
			if !strings.ContainsRune(userfile.RecoveryAlphabet, r) {
				t.Fatalf("%q outside the alphabet", r)
			}
			seen[r] = true
		}
	}
	if strings.ContainsAny(userfile.RecoveryAlphabet, "0O1lI") {
		t.Fatal("the alphabet holds a confusable glyph")
	}
	if bits := float64(userfile.RecoverySymbols) * math.Log2(float64(len(seen))); len(seen) != 30 || bits < 128 {
		t.Fatalf("%d symbols seen: %.1f bits", len(seen), bits)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		head []byte
		want userfile.Format
	}{
		{[]byte("SQLite format 3\x00rest"), userfile.Plain},
		{[]byte("SNUGENC1\n\x01"), userfile.Protected},
		{[]byte("SNUGENC1"), userfile.Unknown},
		{[]byte("SQLite format 3"), userfile.Unknown},
		{nil, userfile.Unknown},
		{[]byte("PK\x03\x04"), userfile.Unknown},
	} {
		if got := userfile.Detect(tc.head); got != tc.want {
			t.Errorf("Detect(%q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}

// FuzzOpen: any bytes give plaintext, ErrLocked or a CorruptError, never a
// panic; a secret is tried only on a structure that parsed (cheap counts
// only, so one input cannot spin the fuzzer).
func FuzzOpen(f *testing.F) {
	c, _ := seal(f, plain, "p")
	f.Add(c)
	f.Add(c[:160])
	f.Add([]byte("SNUGENC1\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := userfile.Secrets{}
		if len(data) >= 16 && binary.BigEndian.Uint32(data[12:]) <= 2*fast {
			s.Passphrase = "p"
		}
		got, err := userfile.Open(data, s)
		switch {
		case err == nil:
			if !bytes.Equal(got, plain) { // only a file sealed here opens
				t.Fatalf("opened something else: %q", got)
			}
		case errors.Is(err, userfile.ErrLocked), isCorrupt(err):
		default:
			t.Fatalf("error %v is neither locked nor corrupt", err)
		}
	})
}
