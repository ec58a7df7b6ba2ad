package hub

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"regexp"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/contract"
	"github.com/dsh-browser/broker/snug/userdb"
	"github.com/dsh-browser/broker/wire"
)

// openTabTimeout bounds the wait for the extension to open a runner tab.
const openTabTimeout = 15 * time.Second

func decode(params json.RawMessage, v any) error {
	if err := json.Unmarshal(params, v); err != nil {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

// resolve finds the app ref names: its exact id, else the one app whose
// display name it is (case-insensitive), else the one app whose id starts
// with it (at least 4 characters). Several matches are AMBIGUOUS_TARGET,
// none STALE_TARGET.
func (h *Hub) resolve(ctx context.Context, ref string) (userdb.App, error) {
	db, err := h.store()
	if err != nil {
		return userdb.App{}, err
	}
	list, err := db.Apps(ctx)
	if err != nil {
		return userdb.App{}, fromDB(err)
	}
	for _, a := range list {
		if a.ID == ref {
			return a, nil
		}
	}
	for _, match := range []func(userdb.App) bool{
		func(a userdb.App) bool { return strings.EqualFold(a.DisplayName, ref) },
		func(a userdb.App) bool { return len(ref) >= 4 && strings.HasPrefix(a.ID, strings.ToLower(ref)) },
	} {
		var found []userdb.App
		for _, a := range list {
			if match(a) {
				found = append(found, a)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 0:
			continue
		default:
			return userdb.App{}, wire.Err(wire.CodeAmbiguousTarget)
		}
	}
	return userdb.App{}, wire.Err(wire.CodeStaleTarget)
}

func (h *Hub) appInfo(a userdb.App) apps.App {
	open := 0
	for _, r := range h.runners() {
		if r.appID == a.ID {
			open++
		}
	}
	return apps.App{ID: a.ID, DisplayName: a.DisplayName, Description: a.Description, IconEmoji: a.IconEmoji,
		IconColor: a.IconColor, CurrentVersion: a.CurrentVersion, UsesDB: a.UsesDB,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, Open: open}
}

func (h *Hub) listApps(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	list, err := db.Apps(ctx)
	if err != nil {
		return nil, fromDB(err)
	}
	out := make([]apps.App, 0, len(list))
	for _, a := range list {
		out = append(out, h.appInfo(a))
	}
	return out, nil
}

// checkHTML bounds an app's HTML in bytes (the schema bounds characters).
func checkHTML(s string) error {
	if s == "" || len(s) > apps.MaxHTMLBytes {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

// checkContract refuses a runtime contract that breaks §18.1: hubs read a
// bad stored one as none, but one offered with a new version is refused
// so its author hears of it.
func checkContract(text string) error {
	if text == "" {
		return nil
	}
	if _, err := contract.Parse(text); err != nil {
		return wire.Err(wire.CodeInvalidRequest)
	}
	return nil
}

var titleTag = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// TitleOf returns the text of an HTML document's <title>, unescaped and
// with its spaces collapsed, cut to the display name's 80 UTF-16 units; ""
// when it has none.
func TitleOf(doc string) string {
	m := titleTag.FindStringSubmatch(doc)
	if m == nil {
		return ""
	}
	t := strings.Join(strings.Fields(html.UnescapeString(m[1])), " ")
	for len(utf16.Encode([]rune(t))) > 80 {
		r := []rune(t)
		t = string(r[:len(r)-1])
	}
	return t
}

func (h *Hub) install(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.InstallParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if err := checkHTML(p.HTML); err != nil {
		return nil, err
	}
	if err := checkContract(p.RuntimeContract); err != nil {
		return nil, err
	}
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	name := p.DisplayName
	if name == "" {
		name = TitleOf(p.HTML)
	}
	if name == "" {
		name = "Untitled app"
	}
	a, err := db.InstallVersion(ctx, userdb.AppMeta{DisplayName: name, Description: p.Description, IconEmoji: p.IconEmoji, IconColor: p.IconColor},
		userdb.NewVersion{HTML: p.HTML, RuntimeContract: p.RuntimeContract})
	if err != nil {
		return nil, fromDB(err)
	}
	h.log.Info("app installed", "app", a.ID, "name", a.DisplayName)
	vs, err := db.Versions(ctx, a.ID)
	if err != nil || len(vs) == 0 {
		return nil, fromDB(err)
	}
	return apps.Saved{App: h.appInfo(a), Version: versionInfo(vs[0], a.CurrentVersion)}, nil
}

func (h *Hub) update(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.UpdateParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if err := checkHTML(p.HTML); err != nil {
		return nil, err
	}
	if err := checkContract(p.RuntimeContract); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	return h.saved(ctx, a.ID, func() (userdb.Version, error) {
		// Without a contract of its own the version inherits the current
		// one (§18.2), in userdb's transaction.
		return h.db.Update(ctx, a.ID, userdb.NewVersion{HTML: p.HTML, Note: p.Note, RuntimeContract: p.RuntimeContract, DropContract: p.DropContract})
	})
}

func (h *Hub) revert(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.RevertParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	return h.saved(ctx, a.ID, func() (userdb.Version, error) { return h.db.Revert(ctx, a.ID, p.Version) })
}

func (h *Hub) factoryReset(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.AppRef
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	return h.saved(ctx, a.ID, func() (userdb.Version, error) { return h.db.FactoryReset(ctx, a.ID) })
}

// saved writes a version with write, then shows it in every runner tab of
// the app: a visible, in-place reload.
func (h *Hub) saved(ctx context.Context, id string, write func() (userdb.Version, error)) (any, error) {
	v, err := write()
	if err != nil {
		return nil, fromDB(err)
	}
	a, _, err := h.db.OpenApp(ctx, id)
	if err != nil {
		return nil, fromDB(err)
	}
	h.log.Info("app version saved", "app", id, "version", v.Version)
	reloaded := 0
	for _, r := range h.runners() {
		if r.appID == id && r.reload(ctx) == nil {
			reloaded++
		}
	}
	return apps.Saved{App: h.appInfo(a), Version: versionInfo(v, a.CurrentVersion), Reloaded: reloaded}, nil
}

func versionInfo(v userdb.Version, current int) apps.Version {
	return apps.Version{Version: v.Version, Note: v.Note, Pinned: v.Pinned, Current: v.Version == current,
		CreatedAt: v.CreatedAt, HTMLBytes: v.HTMLBytes}
}

func (h *Hub) versions(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.AppRef
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	vs, err := h.db.Versions(ctx, a.ID)
	if err != nil {
		return nil, fromDB(err)
	}
	out := make([]apps.Version, 0, len(vs))
	for _, v := range vs {
		out = append(out, versionInfo(v, a.CurrentVersion))
	}
	return out, nil
}

func (h *Hub) source(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.SourceParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	s, err := h.db.Source(ctx, a.ID, p.Version)
	if err != nil {
		return nil, fromDB(err)
	}
	return apps.Source{App: a.ID, Version: s.Version, HTML: s.HTML, RuntimeContract: s.RuntimeContract}, nil
}

func (h *Hub) remove(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.AppRef
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	for _, r := range h.runners() {
		if r.appID == a.ID {
			r.link.drop(r, "This app was removed.")
		}
	}
	if err := h.db.Remove(ctx, a.ID); err != nil {
		return nil, fromDB(err)
	}
	h.mu.Lock()
	delete(h.budgets, a.ID)
	h.mu.Unlock()
	h.log.Info("app removed", "app", a.ID)
	return map[string]string{"removed": a.ID}, nil
}

// openApp asks a snug provider the owner runs to open a runner tab for the
// app. None connected is CONNECTION_LOST: the extension is not loaded, or
// the browser is closed.
func (h *Hub) openApp(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.AppRef
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	a, err := h.resolve(ctx, p.App)
	if err != nil {
		return nil, err
	}
	var prov service.Provider
	for _, q := range h.host.Providers(apps.Kind) {
		if q.OwnerSurface() {
			prov = q
			break
		}
	}
	if prov == nil {
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	cctx, cancel := context.WithTimeout(ctx, openTabTimeout)
	defer cancel()
	raw, err := prov.Call(cctx, apps.CallOpenTab, apps.OpenTabParams{App: a.ID, Title: a.DisplayName})
	if err != nil {
		if _, ok := errors.AsType[*wire.Error](err); ok {
			return nil, err
		}
		return nil, wire.Err(wire.CodeConnectionLost)
	}
	var res apps.OpenTabResult
	if json.Unmarshal(raw, &res) != nil {
		return nil, wire.Err(wire.CodeInternalError)
	}
	return apps.Opened{App: h.appInfo(a), Tab: res.Tab}, nil
}
