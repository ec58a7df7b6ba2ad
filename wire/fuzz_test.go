package wire_test

import "testing"

// The fuzz targets check three properties on any input: the parser does not
// panic; the Go verdict equals the published schema's verdict (and non-JSON
// is always rejected); and an accepted message re-marshals to one that
// parses back to an equal value. Seeds are the golden cases.

func fuzzKind(f *testing.F, kind string) {
	mustSchemas(f)
	for _, g := range allGoldens() {
		if g.kind == kind {
			f.Add([]byte(g.json))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgreement(t, kind, data)
		checkRoundTrip(t, kind, data)
	})
}

func FuzzEnvelope(f *testing.F) { fuzzKind(f, kindEnvelope) }

func FuzzHello(f *testing.F) { fuzzKind(f, kindHello) }

func FuzzWelcome(f *testing.F) { fuzzKind(f, kindWelcome) }
