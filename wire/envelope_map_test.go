package wire

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseEnvelopeAsMap holds ParseEnvelope, which reads the members into
// fixed slots, to the parser it replaced (mapEnvelope below, which decoded
// the object into a map first): the same envelopes accepted with the same
// fields, and the same error for the rest. Where several members are not
// allowed, the map's parser named any one of them (its iteration order):
// then only the reason must agree.
func FuzzParseEnvelopeAsMap(f *testing.F) {
	for _, s := range []string{
		`{"type":"request","id":"r1","method":"browser.tabs","params":{"a":[1,{"b":null}]}}`,
		`{"type":"response","id":"r1","ok":true,"value":[{"id":"x"}]}`,
		`{"type":"response","id":"r2","ok":false,"code":"STALE_TARGET"}`,
		`{"type":"event","event":"page.changed","value":null}`,
		`{"type":"cancel","id":"r2"}`,
		` {"type":"cancel","id":"r2","id":"r3"} `,
		`{"\u0074ype":"cancel","i\u0064":"\ud83d\ude00"}`,
		`{"type":"cancel","id":"\ud800"}`,
		`{"type":"cancel","id":"r","method":"m","x":1}`,
		`{"type":"request","id":"1","method":"1m","params":[]}`,
		`{"type":"response","id":"1","ok":"true","value":1}`,
		`{"type":"other"}`, `{"type":1}`, `{}`, `[]`, `{"type":"cancel",}`, `{"":1,"type":"cancel","id":"1"}`,
		"{\"type\":\"cancel\",\"id\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseEnvelope(data)
		want, wantErr := mapEnvelope(data)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: ParseEnvelope %v, the map's parser %v", data, err, wantErr)
		}
		if err == nil {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: ParseEnvelope %+v, the map's parser %+v", data, got, want)
			}
			return
		}
		if err.Error() != wantErr.Error() && !(strings.HasSuffix(err.Error(), "is not allowed") && strings.HasSuffix(wantErr.Error(), "is not allowed")) {
			t.Fatalf("%q: ParseEnvelope %v, the map's parser %v", data, err, wantErr)
		}
	})
}

// mapEnvelope is ParseEnvelope as it was before it read into slots.
func mapEnvelope(data []byte) (*Envelope, error) {
	data = bytes.Trim(data, " \t\r\n")
	if !isObject(data) {
		return nil, invalid("", "must be a JSON object")
	}
	obj, err := splitObject(data)
	if err != nil {
		return nil, invalid("", "is not valid JSON")
	}
	typ, err := stringField(obj, "type")
	if err != nil {
		return nil, err
	}
	e := &Envelope{Type: typ}
	switch typ {
	case TypeRequest:
		if err := onlyKeys(obj, "", "type", "id", "method", "params"); err != nil {
			return nil, err
		}
		if e.ID, err = idField(obj, "id"); err != nil {
			return nil, err
		}
		if e.Method, err = nameField(obj, "method"); err != nil {
			return nil, err
		}
		raw, ok := obj["params"]
		if !ok {
			return nil, missing("params")
		}
		if !isObject(raw) {
			return nil, invalid("params", "must be an object")
		}
		e.Params = raw
	case TypeResponse:
		ok, err := boolField(obj, "ok")
		if err != nil {
			return nil, err
		}
		e.OK = ok
		if ok {
			if err := onlyKeys(obj, "", "type", "id", "ok", "value"); err != nil {
				return nil, err
			}
		} else if err := onlyKeys(obj, "", "type", "id", "ok", "code"); err != nil {
			return nil, err
		}
		if e.ID, err = idField(obj, "id"); err != nil {
			return nil, err
		}
		if ok {
			v, has := obj["value"]
			if !has {
				return nil, missing("value")
			}
			e.Value = v
		} else {
			c, err := stringField(obj, "code")
			if err != nil {
				return nil, err
			}
			if !Code(c).Known() {
				return nil, invalid("code", "is not a registry error code")
			}
			e.Code = Code(c)
		}
	case TypeEvent:
		if err := onlyKeys(obj, "", "type", "event", "value"); err != nil {
			return nil, err
		}
		if e.Event, err = nameField(obj, "event"); err != nil {
			return nil, err
		}
		v, has := obj["value"]
		if !has {
			return nil, missing("value")
		}
		e.Value = v
	case TypeCancel:
		if err := onlyKeys(obj, "", "type", "id"); err != nil {
			return nil, err
		}
		if e.ID, err = idField(obj, "id"); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("type", "must be request, response, event or cancel")
	}
	return e, nil
}
