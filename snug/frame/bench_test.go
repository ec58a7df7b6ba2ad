package frame_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/frame"
)

func benchParse(b *testing.B, text string, wantErr bool) {
	data := []byte(text)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := frame.Parse(data); (err != nil) != wantErr {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAppMessage(b *testing.B) { benchParse(b, appMessage.String(), false) }

func BenchmarkParseNetRequest(b *testing.B) { benchParse(b, netRequest.String(), false) }

// An 8 MiB db-request, at its class: decoded in full.
func BenchmarkParseDBImportAtClass(b *testing.B) {
	o := dbImport.set("bytesBase64", `""`)
	benchParse(b, o.set("bytesBase64", jstr(strings.Repeat("A", frame.MaxDBFrameBytes-len(o.String())))).String(), false)
}

// The same frame one byte over its class: refused after a scan, undecoded.
func BenchmarkParseDBImportPastClass(b *testing.B) {
	o := dbImport.set("bytesBase64", `""`)
	benchParse(b, o.set("bytesBase64", jstr(strings.Repeat("A", frame.MaxDBFrameBytes+1-len(o.String())))).String(), true)
}

// A net-response with a 1 MiB body, encoded and checked.
func BenchmarkEncodeNetResponse1MiB(b *testing.B) {
	r := &frame.NetResponse{RequestID: "n1", OK: true, Status: 200,
		Headers: map[string]string{"content-type": "text/plain"}, Body: strings.Repeat("b", frame.MaxNetResponseBodyBytes)}
	for b.Loop() {
		if _, err := frame.Encode(r); err != nil {
			b.Fatal(err)
		}
	}
}

// One app-message through an Instance: Receive, then the final answer.
func BenchmarkInstanceRequest(b *testing.B) {
	in, err := frame.NewInstance(testReady, func([]byte) {})
	if err != nil {
		b.Fatal(err)
	}
	data := json.RawMessage(`{"message":"done"}`)
	texts := make([][]byte, frame.RememberedRequestIDs)
	fresh := func() { // a new instance, where the requestIds may be used again
		in.Load()
		for i := range texts {
			texts[i] = []byte(msgText("r"+strconv.Itoa(i), in.ID()))
		}
	}
	fresh()
	i := 0
	for b.Loop() {
		got, err := in.Receive(context.Background(), texts[i])
		if err != nil {
			b.Fatal(err)
		}
		got.Request.Respond(&frame.AppResponse{OK: true, Data: data})
		if i++; i == len(texts) {
			b.StopTimer()
			fresh()
			i = 0
			b.StartTimer()
		}
	}
}
