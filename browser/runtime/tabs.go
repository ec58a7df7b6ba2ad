package runtime

import (
	"context"
	"encoding/json"

	"github.com/dsh-browser/broker/browser"
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
	return r.listTabs(ctx, in.InstanceID)
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
		origin, ok := httpOrigin(tab.URL)
		if !ok || !r.allowedOrigin(origin) {
			continue
		}
		out = append(out, tab)
	}
	return out, nil
}
