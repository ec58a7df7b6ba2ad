package broker

import (
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

func TestJournalKeyBits(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(7, 7))
	hexOf := func(n int) string {
		b := make([]byte, (n+1)/2)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return hex.EncodeToString(b)[:n]
	}
	// spread returns 64 characters using each of symbols 64/len times, in a
	// shuffled (aperiodic) order: entropy log2(len) bits per character.
	spread := func(symbols string) string {
		b := []byte(strings.Repeat(symbols, 64/len(symbols)))
		rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		return string(b)
	}
	for _, tc := range []struct {
		name string
		key  string
		weak bool
	}{
		{"one character", strings.Repeat("a", 64), true},
		{"two alternating", strings.Repeat("ab", 32), true},
		{"16-character block, 4 times", strings.Repeat("0123456789abcdef", 4), true},
		{"period 31", func() string { b := hexOf(31); return (b + b + b)[:64] }(), true},
		{"period 32: 128 bits, the limit", func() string { b := hexOf(32); return b + b }(), false},
		{"3 symbols: 101 bits", spread("abc") + "a", true},
		{"4 symbols: 128 bits, the limit", spread("abcd"), false},
	} {
		if got := journalKeyBits(tc.key) < MinJournalKeyBits; got != tc.weak {
			t.Errorf("%s (%s): weak = %v (%.1f bits), want %v", tc.name, tc.key, got, journalKeyBits(tc.key), tc.weak)
		}
	}
	// Random keys, as clients make them, always pass.
	for range 10_000 {
		b := make([]byte, 32)
		rand.Read(b)
		if k := hex.EncodeToString(b); journalKeyBits(k) < MinJournalKeyBits {
			t.Fatalf("a random key %s scored %.1f bits", k, journalKeyBits(k))
		}
	}
}
