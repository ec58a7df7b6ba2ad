package runtime

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dsh-browser/broker/journal"
	"github.com/dsh-browser/broker/wire"
)

// TestRecoveredIsTheReferences: recovery.recordedAt is a number of ms and
// recovery.dispatch is notDispatched or dispatched, the reference's types
// and values, whatever the journal recorded.
func TestRecoveredIsTheReferences(t *testing.T) {
	reserved, settled := time.UnixMilli(1_767_225_600_123), time.UnixMilli(1_767_225_601_456)
	for _, tc := range []struct {
		rec                    journal.Record
		dispatch, prior, state string
		at                     int64
	}{
		{journal.Record{State: journal.StateReserved, Dispatch: journal.DispatchUnknown, ReservedAt: reserved}, "dispatched", "", "reserved", reserved.UnixMilli()},
		{journal.Record{State: journal.StateSettled, Dispatch: "observed", Outcome: "succeeded", ReservedAt: reserved, SettledAt: settled}, "dispatched", "succeeded", "settled", settled.UnixMilli()},
		{journal.Record{State: journal.StateSettled, Dispatch: "dispatched", Outcome: "unknown", ReservedAt: reserved, SettledAt: settled}, "dispatched", "unknown", "settled", settled.UnixMilli()},
		{journal.Record{State: journal.StateSettled, Dispatch: "notDispatched", Outcome: "failed", ReservedAt: reserved, SettledAt: settled}, "notDispatched", "failed", "settled", settled.UnixMilli()},
	} {
		res := recovered("r1", &tc.rec)
		rv := res.Recovery
		if res.Code != wire.CodeRecoveryRequired || res.Outcome != "unknown" || res.Postcondition != "unverified" || res.Dispatch != tc.dispatch ||
			rv.State != tc.state || rv.Dispatch != tc.dispatch || rv.PriorOutcome != tc.prior || rv.RecordedAt != tc.at {
			t.Errorf("%+v: %+v %+v", tc.rec, res, rv)
		}
		raw, _ := json.Marshal(rv)
		var wire map[string]any
		json.Unmarshal(raw, &wire)
		if _, ok := wire["recordedAt"].(float64); !ok {
			t.Errorf("recordedAt is %T on the wire: %s", wire["recordedAt"], raw)
		}
	}
}
