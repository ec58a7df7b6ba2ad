package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"time"

	"github.com/dsh-browser/broker/wire"
)

// ProviderTimeout bounds every broker-to-provider call made for a client.
const ProviderTimeout = 10 * time.Second

// TabSummary is one tab as browser.tabs reports it.
type TabSummary struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	URL        string `json:"url"`
	Title      string `json:"title"`
}

type tabsParams struct {
	SessionID  string `json:"sessionId"`
	InstanceID string `json:"instanceId"`
}

// decodeParams decodes params strictly into v: unknown fields and trailing
// data are INVALID_REQUEST.
func decodeParams(params json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

// boundedText reports whether s has 1..256 UTF-16 code units, the
// reference's default string bound.
func boundedText(s string) bool {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n >= 1 && n <= 256
}

// provider returns the registered provider for an instance ID.
func (s *Server) provider(instanceID string) *peer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.providers {
		if p.hello.Instance.ID == instanceID {
			return p
		}
	}
	return nil
}

// tabs lists an instance's tabs through the provider's tabs.list, keeping
// only well-formed HTTP(S) tabs (and, in restricted mode with an allowlist,
// only allowlisted origins).
func (s *Server) tabs(ctx context.Context, _ *peer, params json.RawMessage) (any, error) {
	var in tabsParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !boundedText(in.SessionID) || !boundedText(in.InstanceID) {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	prov := s.provider(in.InstanceID)
	if prov == nil {
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	ctx, cancel := context.WithTimeout(ctx, ProviderTimeout)
	defer cancel()
	raw, err := prov.conn.Call(ctx, "tabs.list", struct{}{})
	if err != nil {
		return nil, err
	}
	var listed []TabSummary
	if err := json.Unmarshal(raw, &listed); err != nil {
		prov.log.Warn("provider sent a malformed tab list", "err", err)
		return nil, wire.Err(wire.CodeInternalError)
	}
	out := make([]TabSummary, 0, len(listed))
	for _, tab := range listed {
		if tab.InstanceID != in.InstanceID || !boundedText(tab.ID) {
			continue
		}
		origin, ok := httpOrigin(tab.URL)
		if !ok {
			continue
		}
		if s.cfg.AccessMode == AccessRestricted && len(s.cfg.AllowOrigins) > 0 && !slices.Contains(s.cfg.AllowOrigins, origin) {
			continue
		}
		out = append(out, tab)
	}
	return out, nil
}

// httpOrigin returns the origin of an HTTP(S) URL without credentials.
func httpOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	return u.Scheme + "://" + u.Host, true
}
