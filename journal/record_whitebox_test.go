package journal

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"testing"
)

// FuzzRecordJSON: appendRecord writes, for every valid record, exactly
// the bytes json.Marshal gives for its diskRecord, which is how the
// records already on disk were written (and what parseRecord's canonical
// check compares with).
func FuzzRecordJSON(f *testing.F) {
	f.Add("click", uint8(0), uint8(0), uint8(0), int64(1), int64(0), []byte("h"))
	f.Add("clickAt", uint8(1), uint8(2), uint8(3), int64(1767225600000000000), int64(1767225600040000000), []byte("payload"))
	f.Add("a.b_c-9", uint8(1), uint8(0), uint8(2), int64(9223372036854775807), int64(5), []byte{})
	f.Add("<&>", uint8(0), uint8(0), uint8(0), int64(1), int64(0), []byte("h"))
	states := []string{StateReserved, StateSettled}
	dispatches := []string{DispatchNotDispatched, DispatchDispatched, DispatchObserved}
	outcomes := []string{OutcomeSucceeded, OutcomeFailed, OutcomeCancelled, OutcomeUnknown}
	k := newMACKey(bytes.Repeat([]byte{7}, secretSize))
	key := dbKey(k, Key{Scope: "s", RequestID: "r"})
	f.Fuzz(func(t *testing.T, kind string, state, dispatch, outcome uint8, reservedAt, settledAt int64, hash []byte) {
		r := Record{Kind: kind, State: states[int(state)%len(states)], ReservedAt: fromUnixNano(reservedAt)}
		copy(r.Hash[:], hash)
		if r.State == StateReserved {
			r.Dispatch = DispatchUnknown
		} else {
			r.Dispatch, r.Outcome = dispatches[int(dispatch)%len(dispatches)], outcomes[int(outcome)%len(outcomes)]
			r.SettledAt = fromUnixNano(settledAt)
		}
		got, err := appendRecord(nil, k, key, &r)
		if validRecord(&r) != nil {
			if err == nil {
				t.Fatalf("invalid record %+v encoded", r)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		h := mask(k, key, r.Hash)
		want, err := json.Marshal(diskRecord{
			V: 1, Hash: hex.EncodeToString(h[:]), Kind: r.Kind, State: r.State, Dispatch: r.Dispatch,
			Outcome: r.Outcome, ReservedAt: unixNano(r.ReservedAt), SettledAt: unixNano(r.SettledAt),
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendRecord\n%s\njson.Marshal\n%s", got, want)
		}
		if back, err := parseRecord(k, key, got); err != nil || back != r {
			t.Fatalf("parse: %+v, %v; want %+v", back, err, r)
		}
	})
}

// TestMACKey: a pooled, reset HMAC gives what a fresh one does, for any
// number of uses and parts.
func TestMACKey(t *testing.T) {
	secret := bytes.Repeat([]byte{3}, secretSize)
	k := newMACKey(secret)
	for i, parts := range [][][]byte{
		{[]byte("key"), []byte("scope\x00s"), []byte("r1")},
		{[]byte("hash"), bytes.Repeat([]byte{1}, keySize)},
		{[]byte("wal"), make([]byte, frameHeader), bytes.Repeat([]byte("x"), 700)},
		{},
		{[]byte("key"), []byte("scope\x00s"), []byte("r1")},
	} {
		want := mac(secret, parts...)
		if got := k.sum(nil, parts...); !bytes.Equal(got, want) {
			t.Errorf("%d: sum %x, want %x", i, got, want)
		}
		if got := k.sum([]byte("pre"), parts...); !bytes.Equal(got[3:], want) || string(got[:3]) != "pre" {
			t.Errorf("%d: sum appended %x", i, got)
		}
	}
}
