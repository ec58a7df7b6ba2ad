package frame_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/dsh-browser/broker/snug/frame"
)

// An app iframe's life on the host's side: load, an announce, one
// app-message answered, then a malformed request, which is answered on the
// wire because its requestId could be recovered.
func ExampleInstance() {
	instanceID := regexp.MustCompile(`ins-[0-9a-f]{32}`)
	show := func(b []byte) { fmt.Println(instanceID.ReplaceAllString(string(b), "ins-…")) } // it is random
	in, _ := frame.NewInstance(frame.HostReady{Capabilities: frame.Capabilities{Streaming: true}, Theme: frame.ThemeLight}, show)
	in.Load()
	id := in.ID()

	in.Receive(context.Background(), []byte(`{"v":1,"type":"snug:app-announce","appId":"notes","displayName":"Notes"}`))
	got, _ := in.Receive(context.Background(), []byte(`{"v":1,"type":"snug:app-message","requestId":"r1","instanceId":"`+id+`","appId":"notes","action":"hello"}`))
	got.Request.Stream("Hel")
	got.Request.Respond(&frame.AppResponse{OK: true, Data: json.RawMessage(`{"message":"Hello"}`)})

	_, err := in.Receive(context.Background(), []byte(`{"v":1,"type":"snug:app-message","requestId":"r2","instanceId":"`+id+`"}`))
	fmt.Println(err)
	// Output:
	// {"v":1,"type":"snug:host-ready","instanceId":"ins-…","protocolVersions":[1],"capabilities":{"streaming":true,"db":false,"auth":false},"theme":"light"}
	// {"v":1,"type":"snug:host-ready","instanceId":"ins-…","protocolVersions":[1],"capabilities":{"streaming":true,"db":false,"auth":false},"theme":"light"}
	// {"v":1,"type":"snug:app-response","requestId":"r1","ok":true,"streaming":true,"text":"Hel","seq":0}
	// {"v":1,"type":"snug:app-response","requestId":"r1","ok":true,"streaming":false,"data":{"message":"Hello"}}
	// {"v":1,"type":"snug:app-response","requestId":"r2","ok":false,"error":{"code":"MALFORMED","message":"appId is required","retryable":false}}
	// snug frame snug:app-message: MALFORMED: appId is required
}
