package conn_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-browser/broker/snug/conn"
)

var signingKeys = []string{"api_key", "api_secret", "passphrase"}

func TestLintAccepts(t *testing.T) {
	tmpl := map[string]string{
		"CB-ACCESS-KEY":        "{{api_key}}",
		"CB-ACCESS-TIMESTAMP":  "{{timestamp()}}",
		"CB-ACCESS-PASSPHRASE": "{{ passphrase }}",
		"CB-ACCESS-SIGN":       "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}",
		"X-Sig":                "{{hmac_sha256(api_secret, request.body)}}",
		"X-B64":                "{{base64('literal, with comma')}}",
		"X-Url":                "{{request.url}}",
	}
	if issues := conn.Lint(tmpl, signingKeys); len(issues) != 0 {
		t.Fatalf("%+v", issues)
	}
}

func TestLintRefuses(t *testing.T) {
	for _, c := range []struct {
		expr string
		keys []string
	}{
		{"{{hmac_sha256(api_secrt, request.body)}}", signingKeys},
		{"{{request.headers}}", signingKeys},
		{"{{hmac_sha256(api_secret, request.headers)}}", signingKeys},
		{"{{client_secret}}", signingKeys},
		{"{{api_key}}", nil},
		{"{{unix_ms()}}", signingKeys}, {"{{hmac_sha512(api_secret, request.body)}}", signingKeys},
		{"{{sha256(api_key)}}", signingKeys}, {"{{md5(api_key)}}", signingKeys}, {"{{eval(api_key)}}", signingKeys},
		{"{{constructor(api_key)}}", signingKeys}, {"{{__proto__(api_key)}}", signingKeys},
		{"{{base64(hmac_sha256(api_secret, request.body))}}", signingKeys},
		{"{{timestamp(api_key)}}", signingKeys}, {"{{base64()}}", signingKeys},
		{"{{hmac_sha256_b64(api_secret, a, b, c, d, e, f)}}", signingKeys},
		{"{{cdp_jwt(api_key)}}", signingKeys},
		{"{{cdp_jwt(api_key, api_secret, passphrase)}}", signingKeys},
		{"{{cdp_jwt('api_key', api_secret)}}", signingKeys},
		{"{{cdp_jwt(api_key, request.body)}}", signingKeys},
	} {
		if issues := conn.Lint(map[string]string{"X": c.expr}, c.keys); len(issues) == 0 {
			t.Errorf("%s accepted", c.expr)
		}
	}
	if issues := conn.Lint(map[string]string{"X": "{{cdp_jwt(api_key, api_secret)}}"}, signingKeys); len(issues) != 0 {
		t.Errorf("cdp_jwt of two fields refused: %v", issues)
	}
}

func fixed() time.Time { return time.Unix(1_700_000_000, 0) }

// One timestamp per pass: the HMAC recomputed from the sent timestamp
// equals the sent signature.
func TestRenderSignature(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte("exchange-secret"))
	tmpl := &conn.Templates{
		Header: map[string]string{
			"CB-ACCESS-TIMESTAMP": "{{timestamp()}}",
			"CB-ACCESS-SIGN":      "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}",
		},
		Query: map[string]string{"ts": "{{request.timestamp}}"},
	}
	calls := 0
	h, q, err := conn.Render(tmpl, conn.RenderInput{
		Fields: map[string]string{"api_secret": secret}, Declared: signingKeys, Method: "POST",
		URL: "https://api.exchange.example/orders?limit=1", Body: `{"a":1}`,
		Now: func() time.Time { calls++; return fixed().Add(time.Duration(calls) * time.Second) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := h["CB-ACCESS-TIMESTAMP"]
	if ts != q["ts"] || calls != 1 {
		t.Fatalf("timestamp read %d times: header %s, query %s", calls, ts, q["ts"])
	}
	m := hmac.New(sha256.New, []byte("exchange-secret"))
	m.Write([]byte(ts + "POST" + "/orders?limit=1" + `{"a":1}`))
	if want := base64.StdEncoding.EncodeToString(m.Sum(nil)); h["CB-ACCESS-SIGN"] != want {
		t.Fatalf("signature %s, recomputed %s", h["CB-ACCESS-SIGN"], want)
	}
}

func TestRenderValues(t *testing.T) {
	fields := map[string]string{"api_key": "SUPERSECRET", "api_secret": "s3cr3t"}
	h, _, err := conn.Render(&conn.Templates{Header: map[string]string{
		"A": "Token {{api_key}}",
		"B": "{{base64('api_key')}}",
		"C": "{{hmac_sha256(api_secret, request.body)}}",
		"D": "{{passphrase}}",
		"E": "{{base64(api_key)}}",
	}}, conn.RenderInput{Fields: fields, Declared: signingKeys, Method: "GET", URL: "https://a.example/", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, []byte("s3cr3t"))
	m.Write([]byte("x"))
	want := map[string]string{
		"A": "Token SUPERSECRET",
		"B": base64.StdEncoding.EncodeToString([]byte("api_key")), // a quoted literal is never looked up
		"C": hex.EncodeToString(m.Sum(nil)),
		"D": "", // declared, left blank
		"E": base64.StdEncoding.EncodeToString([]byte("SUPERSECRET")),
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s = %q, want %q", k, h[k], v)
		}
	}
	if _, _, err := conn.Render(&conn.Templates{Header: map[string]string{"X": "{{api_secrt}}"}},
		conn.RenderInput{Fields: fields, Declared: signingKeys}); !errors.Is(err, conn.ErrTemplate) || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("unlinted render: %v", err)
	}
	if _, _, err := conn.Render(&conn.Templates{Header: map[string]string{"X": "{{hmac_sha256_b64(api_secret, request.body)}}"}},
		conn.RenderInput{Fields: map[string]string{"api_secret": "not base64!"}, Declared: signingKeys}); !errors.Is(err, conn.ErrTemplate) {
		t.Fatalf("a bad hmac key: %v", err)
	}
}

func TestCDPJWT(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	key := ed25519.NewKeyFromSeed(seed)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	for name, secret := range map[string]string{
		"pem":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"seed":   base64.StdEncoding.EncodeToString(seed),
		"64byte": base64.StdEncoding.EncodeToString(key),
	} {
		h, _, err := conn.Render(&conn.Templates{Header: map[string]string{"Authorization": "Bearer {{cdp_jwt(key_name, key_secret)}}"}},
			conn.RenderInput{Fields: map[string]string{"key_name": "organizations/o/apiKeys/k", "key_secret": secret},
				Declared: []string{"key_name", "key_secret"}, Method: "GET", URL: "https://api.cdp.example/v1/accounts?x=1", Now: fixed})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		parts := strings.Split(strings.TrimPrefix(h["Authorization"], "Bearer "), ".")
		if len(parts) != 3 {
			t.Fatalf("%s: %q", name, h["Authorization"])
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		if !ed25519.Verify(key.Public().(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig) {
			t.Fatalf("%s: the signature does not verify", name)
		}
		var claims map[string]any
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		json.Unmarshal(raw, &claims)
		if claims["uri"] != "GET api.cdp.example/v1/accounts" || claims["nbf"] != float64(1_700_000_000) || claims["exp"] != float64(1_700_000_120) ||
			claims["sub"] != "organizations/o/apiKeys/k" || claims["iss"] != "cdp" {
			t.Fatalf("%s: claims %v", name, claims)
		}
	}
}

// FuzzTemplate: any template value either fails the lint or renders; a
// rendered value never holds a field's value unless the template names
// that field (a quoted literal is never resolved).
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"{{api_key}}", "Bearer {{api_key}}", "{{hmac_sha256(api_secret, request.body)}}", "{{timestamp()}}",
		"{{base64('api_key')}}", "{{hmac_sha256_b64(api_secret, request.method, request.pathAndQuery, request.timestamp)}}",
		"{{ api_key }}", "{{", "}}", "{{{{api_key}}}}", "{{base64(hmac_sha256(api_secret, x))}}", "a{{api_key}}b{{passphrase}}c"} {
		f.Add(s)
	}
	fields := map[string]string{"api_key": "VALUE-OF-KEY", "api_secret": base64.StdEncoding.EncodeToString([]byte("s3cret")), "passphrase": "VALUE-OF-PASS"}
	f.Fuzz(func(t *testing.T, tmpl string) {
		tm := &conn.Templates{Header: map[string]string{"X-A": tmpl}}
		h, _, err := conn.Render(tm, conn.RenderInput{Fields: fields, Declared: signingKeys, Method: "GET",
			URL: "https://api.example/x?y=1", Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
		if err != nil {
			if !errors.Is(err, conn.ErrTemplate) {
				t.Fatalf("error %v does not match ErrTemplate", err)
			}
			return
		}
		for _, k := range []string{"api_key", "passphrase"} {
			if strings.Contains(h["X-A"], fields[k]) && !strings.Contains(tmpl, k) && !strings.Contains(tmpl, fields[k]) {
				t.Fatalf("%q rendered %q: the value of %s without naming it", tmpl, h["X-A"], k)
			}
		}
	})
}
