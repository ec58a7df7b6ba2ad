package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/wire"
)

// Tabs lists an instance's tabs through the provider's tabs.list, keeping
// only credential-free HTTP(S) tabs of that instance (and, in restricted
// mode with --allow-origin, only allowlisted origins).
func (r *Runtime) Tabs(ctx context.Context, _ Client, params json.RawMessage) (any, error) {
	var in browser.TabsParams
	if err := decodeParams(params, &in); err != nil {
		return nil, err
	}
	if !bounded(in.SessionID, 1, 256) || !bounded(in.InstanceID, 1, 256) {
		return nil, invalid()
	}
	tabs, err := r.listTabs(ctx, in.InstanceID)
	return tabList(tabs), err
}

func (r *Runtime) listTabs(ctx context.Context, instanceID string) ([]browser.TabSummary, error) {
	prov, err := r.provider(instanceID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ProviderTimeout)
	defer cancel()
	listed, err := callTabsList(ctx, prov)
	if err != nil {
		return nil, err
	}
	out := make([]browser.TabSummary, 0, len(listed))
	for _, tab := range listed {
		if tab.InstanceID != instanceID || !bounded(tab.ID, 1, 256) {
			continue
		}
		if !r.allowedURL(tab.URL) {
			continue
		}
		out = append(out, tab)
	}
	return out, nil
}

// errNotAString is a tab list member that should be a string and is not.
var errNotAString = errors.New("a tab's id, instanceId, url or title is not a string")

// decodeTabs decodes a provider's tab list as json.Unmarshal would into
// []browser.TabSummary (null as no tabs; a member missing or null as its
// zero value; other members ignored), except that the keys match exactly,
// not whatever their case. It is one pass of wire's scanner, without
// reflection: decoding the list was most of the broker's own time in a
// browser.tabs round trip.
func decodeTabs(raw json.RawMessage) ([]browser.TabSummary, error) {
	if string(bytes.Trim(raw, " \t\r\n")) == "null" { // JSON's whitespace
		return nil, nil
	}
	tabs := make([]browser.TabSummary, 0, 8)
	err := wire.Elements(raw, func(elem []byte) error {
		var t browser.TabSummary
		err := wire.Members(elem, func(key, value []byte) error {
			var field *string
			switch string(key) {
			case "id":
				field = &t.ID
			case "instanceId":
				field = &t.InstanceID
			case "url":
				field = &t.URL
			case "title":
				field = &t.Title
			default:
				return nil
			}
			if string(value) == "null" {
				*field = ""
				return nil
			}
			s, err := wire.String(value)
			if err != nil {
				return errNotAString
			}
			*field = s
			return nil
		})
		tabs = append(tabs, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return tabs, nil
}

// tabList is browser.tabs's value. Its JSON is json.Marshal's of
// []browser.TabSummary, written without reflection (rpc.JSONAppender).
type tabList []browser.TabSummary

func (l tabList) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil), nil }

func (l tabList) AppendJSON(b []byte) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = slices.Grow(b, 160*len(l)+2)
	b = append(b, '[')
	for i, t := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = wire.AppendString(b, t.ID)
		b = append(b, `,"instanceId":`...)
		b = wire.AppendString(b, t.InstanceID)
		b = append(b, `,"url":`...)
		b = wire.AppendString(b, t.URL)
		b = append(b, `,"title":`...)
		b = wire.AppendString(b, t.Title)
		b = append(b, '}')
	}
	return append(b, ']')
}
