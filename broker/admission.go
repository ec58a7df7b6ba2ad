package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-browser/broker/rpc"
	"github.com/dsh-browser/broker/wire"
)

// Admission modes (--admission).
const (
	// AdmissionOpen admits every client whose hello succeeds (its token is
	// its authority). The default.
	AdmissionOpen = "open"
	// AdmissionPrompt keeps each new client connection pending until the
	// owner allows it in the extension.
	AdmissionPrompt = "prompt"
)

const (
	// AdmissionWait bounds how long a pending connection's non-discovery
	// request waits for the owner's answer, and how long a question waits
	// for a browser to connect when none is.
	AdmissionWait = 25 * time.Second
	// admissionAskTimeout bounds one admission.request to a provider; the
	// extension answers within 60 s (its window's own timeout).
	admissionAskTimeout = 90 * time.Second
)

// Admission states of a client connection, as broker.status and the
// broker.admission event name them.
const (
	admissionPending = "pending"
	admissionGranted = "granted"
	admissionDenied  = "denied"
)

// discovery names the client methods a pending connection is answered at
// once (ADMISSION_PENDING) instead of waiting for the owner.
var discovery = map[string]bool{
	"broker.status":     true,
	"browser.instances": true,
	"browser.tabs":      true,
}

// admission is one client connection's standing with the owner. It exists
// only under --admission=prompt; the answer is final for the connection and
// belongs to it alone (never to its label).
type admission struct {
	since time.Time

	mu      sync.Mutex
	state   string        // pending, granted or denied
	asking  bool          // a question is with a provider (or waiting for one)
	decided chan struct{} // closed when the owner answers
}

func newAdmission() *admission {
	return &admission{since: time.Now(), state: admissionPending, decided: make(chan struct{})}
}

// current returns the state and whether the owner is being asked.
func (a *admission) current() (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state, a.asking
}

// decide records the owner's answer once; it reports whether it did.
func (a *admission) decide(allowed bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asking = false
	if a.state != admissionPending {
		return false
	}
	a.state = admissionDenied
	if allowed {
		a.state = admissionGranted
	}
	close(a.decided)
	return true
}

// awaitAdmission lets a request of an admitted connection through. A denied
// connection gets ADMISSION_DENIED. A pending one gets ADMISSION_PENDING at
// once for discovery; any other request waits up to [AdmissionWait] for the
// owner's answer. A pending connection with no question under way (the last
// one could not be put or was not answered) asks the owner again.
func (p *peer) awaitAdmission(ctx context.Context, method string) error {
	a := p.adm
	if a == nil {
		return nil
	}
	a.mu.Lock()
	state := a.state
	if state == admissionPending && !a.asking {
		a.asking = true
		go p.s.askOwner(p)
	}
	a.mu.Unlock()
	switch state {
	case admissionGranted:
		return nil
	case admissionDenied:
		return wire.Err(wire.CodeAdmissionDenied)
	}
	if discovery[method] {
		return wire.Err(wire.CodeAdmissionPending)
	}
	t := time.NewTimer(AdmissionWait)
	defer t.Stop()
	select {
	case <-a.decided:
		if s, _ := a.current(); s == admissionGranted {
			return nil
		}
		return wire.Err(wire.CodeAdmissionDenied)
	case <-t.C:
		return wire.Err(wire.CodeAdmissionPending)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// denied reports whether the owner refused this connection.
func (p *peer) denied() bool {
	if p.adm == nil {
		return false
	}
	s, _ := p.adm.current()
	return s == admissionDenied
}

// AdmissionRequest is the params of the provider method admission.request.
type AdmissionRequest struct {
	Connection AdmissionConnection `json:"connection"`
}

// AdmissionConnection names the connection the owner is asked about. ID is
// the broker's connection number (unique in this broker run); Label is what
// the user is shown and never a permission.
type AdmissionConnection struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// askOwner puts one question about p to the owner through a connected
// provider, waiting up to [AdmissionWait] for one to connect. An answer is
// recorded and sent to the client as a broker.admission event; a question
// that could not be put or was not answered (no provider, a provider without
// admission.request, a provider gone, a malformed answer) leaves the
// connection pending, and its next request asks again.
func (s *Server) askOwner(p *peer) {
	a := p.adm
	answered := false
	defer func() {
		if !answered {
			a.mu.Lock()
			a.asking = false
			a.mu.Unlock()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.conn.Closed(): // the client left: withdraw the question
			cancel()
		case <-ctx.Done():
		}
	}()

	prov := s.waitProvider(ctx, AdmissionWait)
	if prov == nil {
		p.log.Info("admission: no browser connected to ask the owner; the connection stays pending", "client", p.label)
		return
	}
	cctx, ccancel := context.WithTimeout(ctx, admissionAskTimeout)
	defer ccancel()
	req := AdmissionRequest{Connection: AdmissionConnection{ID: strconv.FormatUint(p.id, 10), Label: p.label}}
	raw, err := prov.Call(cctx, "admission.request", req)
	if err != nil {
		p.log.Info("admission: the owner was not asked or did not answer; the connection stays pending",
			"client", p.label, "instance", prov.hello.Instance.ID, "code", rpc.CodeOf(err))
		return
	}
	var v struct {
		Allowed *bool `json:"allowed"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Allowed == nil {
		p.log.Warn("admission: the browser answered admission.request without a boolean allowed; the connection stays pending", "client", p.label)
		return
	}
	answered = true
	if !a.decide(*v.Allowed) {
		return
	}
	state := admissionDenied
	if *v.Allowed {
		state = admissionGranted
	}
	p.log.Info("admission: the owner answered", "client", p.label, "state", state)
	p.Notify("broker.admission", map[string]string{"state": state})
}

// waitProvider returns the first registered provider, waiting up to d for
// one to register.
func (s *Server) waitProvider(ctx context.Context, d time.Duration) *peer {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		for _, p := range s.providers {
			if p.ready {
				s.mu.Unlock()
				return p
			}
		}
		joined := s.providerJoined
		s.mu.Unlock()
		select {
		case <-joined:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// StatusConnection is a client connection waiting for the owner, as
// broker.status reports it.
type StatusConnection struct {
	ID     uint64    `json:"id"`
	Label  string    `json:"label"`
	Since  time.Time `json:"since"`
	Asking bool      `json:"asking"` // the owner is being asked now
}

func (s *Server) pendingList() []StatusConnection {
	s.mu.Lock()
	peers := make([]*peer, 0, len(s.peers))
	for p := range s.peers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	out := []StatusConnection{}
	for _, p := range peers {
		if p.role() != wire.RoleClient || p.adm == nil {
			continue
		}
		if state, asking := p.adm.current(); state == admissionPending {
			out = append(out, StatusConnection{ID: p.id, Label: p.label, Since: p.adm.since.UTC().Truncate(time.Second), Asking: asking})
		}
	}
	slices.SortFunc(out, func(a, b StatusConnection) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
