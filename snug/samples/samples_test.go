package samples_test

import (
	"testing"

	"github.com/dsh-browser/broker/snug/conn"
	"github.com/dsh-browser/broker/snug/samples"
)

// The tasks sample's requirement is valid, its slot is the one the app
// addresses, and it is credential-free.
func TestTasksConnection(t *testing.T) {
	r, err := conn.ParseString(samples.TasksConnection)
	if err != nil {
		t.Fatal(err)
	}
	if r.Slot != "tasks" || len(r.Ceiling()) != 1 {
		t.Fatalf("%+v", r)
	}
}
