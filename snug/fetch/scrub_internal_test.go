package fetch

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	const secret = "sk-live/4eC3 9+Hq=é"
	s := scrubber{secret, "Bearer tok-abcdef", "abc", ""}
	for in, want := range map[string]string{
		"raw " + secret:                    "raw ***",
		"query " + url.QueryEscape(secret): "query ***",
		"path " + url.PathEscape(secret):   "path ***",
		"lower hex " + strings.NewReplacer("%2F", "%2f", "%C3%A9", "%c3%a9").Replace(url.QueryEscape(secret)): "lower hex ***",
		"over %73%6B-live/4eC3 9+Hq=é":                             "over ***",
		"reflected Bearer tok-abcdef":                              "reflected ***",
		"split scheme tok-abcdef":                                  "split scheme ***",
		"short abc stays":                                          "short abc stays",
		"b64 " + base64.StdEncoding.EncodeToString([]byte(secret)): "b64 " + base64.StdEncoding.EncodeToString([]byte(secret)), // the documented boundary
	} {
		if got := s.apply(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// A provider's error text: a named field of its envelope, scrubbed before
// and after decoding (a \u escape can rebuild a secret), at most 160
// characters, never markup.
func TestProviderError(t *testing.T) {
	s := scrubber{"client-secret-XYZ"}
	for body, want := range map[string]string{
		`{"error":"invalid_client","error_description":"bad secret client-secret-XYZ"}`: "bad secret ***",
		`{"error_description":"bad \u0063lient-secret-XYZ"}`:                            "bad ***",
		`{"error":{"message":"nope"}}`:                                                  "nope",
		`<html><body>client-secret-XYZ</body></html>`:                                   "no reason given",
		`plain   text   reason`:                                                         "plain text reason",
		`{"error":"` + strings.Repeat("x", 300) + `"}`:                                  strings.Repeat("x", 160),
	} {
		if got := providerError(body, s); got != want {
			t.Errorf("%s → %q, want %q", body, got, want)
		}
	}
}
