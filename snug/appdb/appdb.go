// Package appdb serves the snug:db-request frame: an app's five storage
// operations (exec, export, import, kvGet, kvSet) on its own isolated
// database, kept by [userdb].
//
// An [Instance] stands for one runner instance of one app (the app id is
// host-assigned, never taken from the frame). Each request materialises
// the app's database, runs the operation there and writes the changes back
// to the user file before it answers, so an ok answer means the change is
// on disk:
//
//	in := appdb.NewInstance(db, appID)
//	resp := in.Handle(ctx, req) // req parsed by the frame layer
//
// Limits: 8 requests in flight per instance (the 9th is refused at once
// with a retryable HOST_ERROR), a requestId already in flight is refused
// (HOST_ERROR, not retryable), responses stay within the 8 MiB db frame
// class, and export and import within the 5 MiB artifact cap.
package appdb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/dsh-browser/broker/snug/userdb"
)

// Limits and names from the spec (Appendix B, Part I R6) and the reference
// host.
const (
	// MaxInFlight is the reference's per-instance cap on db requests.
	MaxInFlight = 8
	// MaxDBFrameBytes is MAX_DB_FRAME_BYTES, the db-request/db-response size
	// class.
	MaxDBFrameBytes = 8_388_608
	// MaxArtifactBytes caps an export or import image (5 MiB).
	MaxArtifactBytes = 5_242_880
	// RequestTimeout bounds one request, waiting for the app's previous
	// request included. The spec leaves it to the host; a query that runs
	// longer is interrupted and answered HOST_ERROR (retryable).
	RequestTimeout = 30 * time.Second

	RequestType  = "snug:db-request"
	ResponseType = "snug:db-response"
)

// Error codes beyond userdb's (which pass through as they are).
const (
	CodeHostError = "HOST_ERROR"   // the wire's generic code (limits, malformed, internal)
	CodeTooLarge  = "DB_TOO_LARGE" // a result, export or import over its size class
)

// Request is a snug:db-request as the frame layer parsed it (field names as
// in db-request.json). Which fields matter depends on Op.
type Request struct {
	V           int               `json:"v"`
	Type        string            `json:"type"`
	RequestID   string            `json:"requestId"`
	InstanceID  string            `json:"instanceId"`
	Op          string            `json:"op"`                    // exec, export, import, kvGet or kvSet
	SQL         string            `json:"sql,omitempty"`         // exec
	Params      []json.RawMessage `json:"params,omitempty"`      // exec: positional
	BytesBase64 string            `json:"bytesBase64,omitempty"` // import
	Key         string            `json:"key,omitempty"`         // kvGet, kvSet
	Value       json.RawMessage   `json:"value,omitempty"`       // kvSet
}

// Response is a snug:db-response (field names as in db-response.json). On
// success only the fields of the operation are set: exec sets Columns and
// Rows (empty, not absent, for a statement without rows), export sets
// BytesBase64, kvGet sets Value when the key exists.
type Response struct {
	V           int             `json:"v"`
	Type        string          `json:"type"`
	RequestID   string          `json:"requestId"`
	OK          bool            `json:"ok"`
	Columns     []string        `json:"columns,omitzero"`
	Rows        [][]any         `json:"rows,omitzero"`
	Value       json.RawMessage `json:"value,omitempty"`
	BytesBase64 string          `json:"bytesBase64,omitempty"`
	Error       *Error          `json:"error,omitempty"`
}

// Error is the error object of a failed response.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Instance serves the db-requests of one runner instance of one app. Handle
// may be called concurrently.
type Instance struct {
	db    *userdb.DB
	appID string

	mu       sync.Mutex
	inFlight map[string]bool // requestIds being handled
}

// NewInstance returns the db seat of a new runner instance of app appID.
func NewInstance(db *userdb.DB, appID string) *Instance {
	return &Instance{db: db, appID: appID, inFlight: map[string]bool{}}
}

// Handle serves one request and returns its response; it never fails
// otherwise. A request over the in-flight cap or with a requestId already
// in flight is answered at once without touching storage.
func (in *Instance) Handle(ctx context.Context, req Request) Response {
	in.mu.Lock()
	switch {
	case in.inFlight[req.RequestID]:
		in.mu.Unlock()
		return failure(req.RequestID, CodeHostError, "requestId "+req.RequestID+" is already in flight", false)
	case len(in.inFlight) >= MaxInFlight:
		in.mu.Unlock()
		return failure(req.RequestID, CodeHostError, fmt.Sprintf("too many concurrent db requests (max %d)", MaxInFlight), true)
	}
	in.inFlight[req.RequestID] = true
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.inFlight, req.RequestID)
		in.mu.Unlock()
	}()

	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	resp, err := in.serve(ctx, req)
	if err != nil {
		return fromError(req.RequestID, err)
	}
	resp.V, resp.Type, resp.RequestID, resp.OK = 1, ResponseType, req.RequestID, true
	if size, err := frameSize(resp); err != nil || size > MaxDBFrameBytes {
		return failure(req.RequestID, CodeTooLarge, fmt.Sprintf("the result is %d bytes, over the %d-byte db frame class: select less data", size, MaxDBFrameBytes), false)
	}
	return resp
}

// InFlight returns how many requests are being handled now.
func (in *Instance) InFlight() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.inFlight)
}

func (in *Instance) serve(ctx context.Context, req Request) (Response, error) {
	if err := check(req); err != nil {
		return Response{}, err
	}
	var image []byte
	if req.Op == "import" {
		var err error
		if image, err = decodeImage(req.BytesBase64); err != nil {
			return Response{}, err
		}
	}
	rt, err := in.db.Materialise(ctx, in.appID)
	if err != nil {
		return Response{}, err
	}
	defer rt.Close()
	var resp Response
	switch req.Op {
	case "exec":
		params, err := bindParams(req.Params)
		if err != nil {
			return Response{}, err
		}
		cols, rows, err := rt.Exec(ctx, req.SQL, params)
		if err != nil {
			return Response{}, err
		}
		resp.Columns, resp.Rows = cols, jsonRows(rows)
	case "kvGet":
		v, ok, err := rt.KVGet(ctx, req.Key)
		if err != nil {
			return Response{}, err
		}
		if ok {
			resp.Value = v
		}
		return resp, nil
	case "kvSet":
		if err := rt.KVSet(ctx, req.Key, req.Value); err != nil {
			return Response{}, err
		}
	case "export":
		b, err := rt.Export(ctx)
		if err != nil {
			return Response{}, err
		}
		if len(b) > MaxArtifactBytes {
			return Response{}, &wireError{CodeTooLarge, fmt.Sprintf("the database is %d bytes; the export cap is %d", len(b), MaxArtifactBytes), false}
		}
		resp.BytesBase64 = base64.StdEncoding.EncodeToString(b)
		return resp, nil
	case "import":
		if err := rt.Import(ctx, image); err != nil {
			return Response{}, err
		}
	}
	return resp, rt.WriteBack(ctx)
}

// check re-checks what the operation needs; the frame layer has validated
// the frame against db-request.json already.
func check(req Request) error {
	bad := func(why string) error { return &wireError{CodeHostError, "malformed db-request: " + why, false} }
	switch {
	case req.Op == "exec" && req.SQL == "":
		return bad("exec needs sql")
	case (req.Op == "kvGet" || req.Op == "kvSet") && (req.Key == "" || len([]rune(req.Key)) > 256):
		return bad("a key is 1–256 characters")
	case req.Op == "import" && req.BytesBase64 == "":
		return bad("import needs bytesBase64")
	case req.Op != "exec" && req.Op != "export" && req.Op != "import" && req.Op != "kvGet" && req.Op != "kvSet":
		return bad(fmt.Sprintf("unknown op %q", req.Op))
	}
	return nil
}

func decodeImage(b64 string) ([]byte, error) {
	if len(b64) > base64.StdEncoding.EncodedLen(MaxArtifactBytes) {
		return nil, &wireError{CodeTooLarge, fmt.Sprintf("the import is over the %d-byte cap", MaxArtifactBytes), false}
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, &wireError{userdb.CodeBadImport, "bytesBase64 is not valid base64", false}
	}
	if len(b) > MaxArtifactBytes {
		return nil, &wireError{CodeTooLarge, fmt.Sprintf("the import is %d bytes, over the %d-byte cap", len(b), MaxArtifactBytes), false}
	}
	return b, nil
}

// bindParams turns JSON parameters into SQLite values: null, booleans (1 or
// 0), integers, other numbers (REAL), strings, and arrays of byte values
// (BLOB, the form blobs come back in). Objects are refused.
func bindParams(raw []json.RawMessage) ([]any, error) {
	out := make([]any, len(raw))
	for i, r := range raw {
		var v any
		d := json.NewDecoder(strings.NewReader(string(r)))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return nil, &wireError{userdb.CodeSQL, fmt.Sprintf("parameter %d is not JSON", i+1), false}
		}
		switch x := v.(type) {
		case nil, string:
			out[i] = x
		case bool:
			out[i] = int64(0)
			if x {
				out[i] = int64(1)
			}
		case json.Number:
			if n, err := x.Int64(); err == nil {
				out[i] = n
			} else if f, err := x.Float64(); err == nil {
				out[i] = f
			} else {
				return nil, &wireError{userdb.CodeSQL, fmt.Sprintf("parameter %d is out of range", i+1), false}
			}
		case []any:
			b := make([]byte, len(x))
			for j, e := range x {
				n, ok := e.(json.Number)
				k, err := n.Int64()
				if !ok || err != nil || k < 0 || k > 255 {
					return nil, &wireError{userdb.CodeSQL, fmt.Sprintf("parameter %d: an array binds as a blob of byte values 0–255", i+1), false}
				}
				b[j] = byte(k)
			}
			out[i] = b
		default:
			return nil, &wireError{userdb.CodeSQL, fmt.Sprintf("parameter %d: objects cannot be bound", i+1), false}
		}
	}
	return out, nil
}

// jsonRows makes cells JSON-ready: a blob becomes an array of byte values
// (as the reference host returns them) and a non-finite REAL null.
func jsonRows(rows [][]any) [][]any {
	for _, row := range rows {
		for i, c := range row {
			switch x := c.(type) {
			case []byte:
				a := make([]int, len(x))
				for j, b := range x {
					a[j] = int(b)
				}
				row[i] = a
			case float64:
				if math.IsInf(x, 0) || math.IsNaN(x) {
					row[i] = nil
				}
			}
		}
	}
	return rows
}

func frameSize(r Response) (int, error) {
	b, err := json.Marshal(r)
	return len(b), err
}

// wireError is a failure this package decides the code of.
type wireError struct {
	code      string
	msg       string
	retryable bool
}

func (e *wireError) Error() string { return e.msg }

// maxMessage keeps an error frame well inside any size class.
const maxMessage = 1000

func failure(id, code, msg string, retryable bool) Response {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	return Response{V: 1, Type: ResponseType, RequestID: id, Error: &Error{Code: code, Message: msg, Retryable: retryable}}
}

// fromError answers err: this package's and userdb's codes are not
// retryable (the same request fails the same way); anything else (I/O, a
// timeout) is HOST_ERROR and retryable.
func fromError(id string, err error) Response {
	if we, ok := errors.AsType[*wireError](err); ok {
		return failure(id, we.code, we.msg, we.retryable)
	}
	if code := userdb.Code(err); code != "" {
		return failure(id, code, err.Error(), false)
	}
	return failure(id, CodeHostError, err.Error(), true)
}
