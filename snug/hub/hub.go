package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dsh-browser/broker/browser"
	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/chat"
	"github.com/dsh-browser/broker/snug/fetch"
	"github.com/dsh-browser/broker/snug/userdb"
	"github.com/dsh-browser/broker/wire"
)

// Config configures the hub.
type Config struct {
	// StateDir holds the user database (userdb.FileName). Empty: the hub
	// serves nothing and says so.
	StateDir string
	Logger   *slog.Logger
	// HTTPClient calls agent endpoints; nil uses agent.NewHTTPClient.
	HTTPClient *http.Client
	// Net are the seams of the apps' governed network (package
	// snug/fetch); the zero value is the real network. Tests inject a
	// pretend Internet there, never a weaker gate.
	Net fetch.Options
	// Requirements checks the connection requirements of an imported file
	// strictly (spec §12.5) and derives their host ceilings: the broker
	// passes conn.CheckImported. Nil keeps only the imported connections
	// that restore a local grant; the rest are dropped and the user told.
	Requirements userdb.RequirementCheck
}

// Hub is the snug kind's service. Its methods are safe for concurrent use.
type Hub struct {
	cfg  Config
	host service.Host
	log  *slog.Logger

	db    *userdb.DB // nil when dbErr is set
	dbErr error
	net   *fetch.Executor // the apps' governed network, over db

	mu       sync.Mutex
	links    map[string]*link        // by provider instance ID
	budgets  map[string]*chat.Budget // parse-failure budgets, by app ID
	samplers []sampler               // clients offering sampling, oldest first
}

// Register returns the snug kind's service for a broker. The user database
// is opened here; a database that cannot be opened does not stop the
// broker: every snug method then answers BROKER_STATE_UNSAFE and broker
// status says why.
func Register(cfg Config) service.Register {
	return func(h service.Host) (service.Service, error) {
		if cfg.Logger == nil {
			cfg.Logger = h.Logger()
		}
		hb := &Hub{cfg: cfg, host: h, log: cfg.Logger.With("kind", apps.Kind),
			links: make(map[string]*link), budgets: make(map[string]*chat.Budget)}
		hb.open()
		return hb, nil
	}
}

func (h *Hub) open() {
	if h.cfg.StateDir == "" {
		h.dbErr = errors.New("the broker runs without a state directory")
		return
	}
	if err := os.MkdirAll(h.cfg.StateDir, 0o700); err != nil {
		h.dbErr = err
		return
	}
	path := filepath.Join(h.cfg.StateDir, userdb.FileName)
	db, err := userdb.Open(path, userdb.Options{})
	if err != nil {
		h.dbErr = err
		h.log.Error("the Snug user database is unavailable: apps are refused until it is fixed", "path", path, "err", err)
		return
	}
	h.db = db
	h.net = fetch.New(db, h.cfg.Net)
}

// Close closes the user database. The broker has no hook for it: the
// file's lock and handle go with the process; tests call it.
func (h *Hub) Close() error {
	if h.db == nil {
		return nil
	}
	return h.db.Close()
}

// Kind describes snug providers: the extension's runner side, which may
// put the owner's questions (admission, the net confirm, the open-url
// confirm, the connect flow).
func (h *Hub) Kind() service.Kind {
	return service.Kind{
		Name:     apps.Kind,
		Required: []string{apps.CapRunner},
		CheckInstance: func(in wire.Instance) error {
			if in.Family != browser.Family {
				return errors.New(`a snug host's instance family must be "chromium"`)
			}
			return nil
		},
		OwnerQuestions: true,
	}
}

// Offers lists the snug capability while the database is usable.
func (h *Hub) Offers() []string {
	if h.db == nil {
		return nil
	}
	return []string{apps.CapApps}
}

// Methods is the snug.* table.
func (h *Hub) Methods() map[string]service.Method {
	t := map[string]service.Method{
		apps.MethodApps:         {Handle: h.listApps, ReadOnly: true, Discovery: true},
		apps.MethodInstall:      {Handle: h.install},
		apps.MethodUpdate:       {Handle: h.update},
		apps.MethodSource:       {Handle: h.source, ReadOnly: true},
		apps.MethodVersions:     {Handle: h.versions, ReadOnly: true},
		apps.MethodRevert:       {Handle: h.revert},
		apps.MethodReset:        {Handle: h.factoryReset},
		apps.MethodRemove:       {Handle: h.remove},
		apps.MethodOpen:         {Handle: h.openApp},
		apps.MethodAgentGet:     {Handle: h.agentGet, ReadOnly: true},
		apps.MethodAgentSet:     {Handle: h.agentSet},
		apps.MethodAgentOffer:   {Handle: h.agentOffer},
		apps.MethodAgentConfirm: {Handle: h.agentConfirm},
		apps.MethodExport:       {Handle: h.export},
		apps.MethodImport:       {Handle: h.importFile},

		apps.MethodConnections:       {Handle: h.connections, ReadOnly: true},
		apps.MethodConnectionDeclare: {Handle: h.declare},
		apps.MethodConnectionSet:     {Handle: h.setCredential},
		apps.MethodConnectionRevoke:  {Handle: h.revokeClient},
	}
	for name, m := range t {
		m.Schema = browser.ParamsSchema(apps.ParamsTypes[name])
		t[name] = m
	}
	return t
}

// ProviderMethods: a runner attaches to an app; its host chrome runs the
// connect flow.
func (h *Hub) ProviderMethods() map[string]service.ProviderMethod {
	return map[string]service.ProviderMethod{
		apps.ProviderAttach:      h.attach,
		apps.ProviderConnections: h.runnerConnections,
		apps.ProviderApprove:     h.approve(false),
		apps.ProviderReapprove:   h.approve(true),
		apps.ProviderRevoke:      h.runnerRevoke,
		apps.ProviderAuthorize:   h.authorize,
		apps.ProviderComplete:    h.complete,
	}
}

// Joined starts the provider's delivery queue.
func (h *Hub) Joined(p service.Provider) {
	l := newLink(h, p)
	h.mu.Lock()
	old := h.links[p.InstanceID()]
	h.links[p.InstanceID()] = l
	h.mu.Unlock()
	if old != nil {
		old.close()
	}
	go l.run()
}

// Gone closes the provider's runners: their requests in flight end
// SUPERSEDED, with nobody left to tell.
func (h *Hub) Gone(p service.Provider) {
	h.mu.Lock()
	l := h.links[p.InstanceID()]
	if l != nil && l.p == p {
		delete(h.links, p.InstanceID())
	} else {
		l = nil
	}
	h.mu.Unlock()
	if l != nil {
		l.close()
	}
}

// Event applies a provider's runner event. It runs on the provider's
// reader goroutine, so it only decodes and queues.
func (h *Hub) Event(p service.Provider, event string, value json.RawMessage) {
	l := h.link(p)
	if l == nil {
		return
	}
	switch event {
	case apps.EventFrame:
		var pc apps.Piece
		if json.Unmarshal(value, &pc) != nil {
			h.log.Debug("dropped a malformed frame piece")
			return
		}
		l.receivePiece(pc)
	case apps.EventLoad, apps.EventDetach, apps.EventResetAgent:
		var rp apps.RunnerParams
		if json.Unmarshal(value, &rp) != nil {
			return
		}
		l.runnerEvent(event, rp.Runner)
	case apps.EventChat:
		// The chat panel approves data changes: only the owner's own
		// software may speak for it.
		if !p.OwnerSurface() {
			h.log.Warn("ignored a chat event from a snug provider the owner's software does not run", "instance", p.InstanceID())
			return
		}
		var cp apps.ChatParams
		if json.Unmarshal(value, &cp) != nil {
			return
		}
		if r := l.runner(cp.Runner); r != nil {
			r.chat.post(cp)
		}
	default:
		h.log.Debug("ignored a snug provider event", "event", event)
	}
}

// ClientGone forgets a client's sampling offer.
func (h *Hub) ClientGone(conn uint64) {
	h.mu.Lock()
	h.samplers = slices.DeleteFunc(h.samplers, func(s sampler) bool { return s.conn == conn })
	h.mu.Unlock()
}

// Status reports the database, the runners and the agent (never its key).
func (h *Hub) Status() any {
	st := &apps.Status{Runners: []apps.Runner{}}
	if h.cfg.StateDir != "" {
		st.Database = filepath.Join(h.cfg.StateDir, userdb.FileName)
	}
	if h.db == nil {
		st.Problem = h.dbErr.Error()
		return st
	}
	ctx := context.Background()
	if list, err := h.db.Apps(ctx); err == nil {
		st.Apps = len(list)
	}
	for _, r := range h.runners() {
		d := r.snapshot()
		st.Runners = append(st.Runners, apps.Runner{App: d.ID, Name: d.DisplayName, Version: d.Version, Instance: r.link.p.InstanceID()})
	}
	if a, err := h.agentInfo(ctx); err == nil {
		st.Agent = &a
	}
	return st
}

func (h *Hub) link(p service.Provider) *link {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.links[p.InstanceID()]; l != nil && l.p == p {
		return l
	}
	return nil
}

// runners returns every live runner.
func (h *Hub) runners() []*runner {
	h.mu.Lock()
	links := make([]*link, 0, len(h.links))
	for _, l := range h.links {
		links = append(links, l)
	}
	h.mu.Unlock()
	var out []*runner
	for _, l := range links {
		out = append(out, l.list()...)
	}
	return out
}

// budget returns an app's parse-failure budget, keyed by the host's
// identity of the app (never the app-claimed appId).
func (h *Hub) budget(appID string) *chat.Budget {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.budgets[appID]
	if b == nil {
		b = &chat.Budget{}
		h.budgets[appID] = b
	}
	return b
}

// store returns the open database, or the error every method answers
// while it is unavailable.
func (h *Hub) store() (*userdb.DB, error) {
	if h.db == nil {
		return nil, wire.Err(wire.CodeBrokerStateUnsafe)
	}
	return h.db, nil
}

// fromDB maps a database error to the wire: unknown app or version is
// STALE_TARGET, bad input INVALID_REQUEST, a full file QUEUE_FULL; the rest
// is the broker's own failure.
func fromDB(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, userdb.ErrNotFound):
		return wire.Err(wire.CodeStaleTarget)
	case errors.Is(err, userdb.ErrInvalid):
		return wire.Err(wire.CodeInvalidRequest)
	case errors.Is(err, userdb.ErrTooLarge):
		return wire.Err(wire.CodeQueueFull)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("user database: %w", err)
}
