package rpc_test

import (
	"strconv"
	"testing"

	"github.com/dsh-browser/broker/rpc"
)

// FuzzOrderedID: an accepted ID is exactly the decimal form of its value,
// within 1..MaxOrderedID, so two different strings never name one ID.
func FuzzOrderedID(f *testing.F) {
	for _, s := range []string{"1", "10", "0", "01", "-1", "+1", " 1", "1e3", "9007199254740991", "9007199254740992", "18446744073709551616", "", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		n, ok := rpc.OrderedID(id)
		if !ok {
			return
		}
		if n < 1 || n > rpc.MaxOrderedID || strconv.FormatUint(n, 10) != id {
			t.Fatalf("OrderedID(%q) = %d", id, n)
		}
	})
}
