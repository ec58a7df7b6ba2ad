package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/dsh-browser/broker/admission"
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
	AdmissionWait = admission.Wait
	// admissionAskTimeout bounds one admission.request to a provider; the
	// extension answers within 60 s (its window's own timeout).
	admissionAskTimeout = 90 * time.Second
)

// awaitAdmission lets a request of an admitted connection through (see
// package admission). A pending connection with no question under way (the
// last one could not be put or was not answered) asks the owner again.
func (p *peer) awaitAdmission(ctx context.Context, w *welcomed, m route) error {
	a := w.adm
	if a == nil {
		return nil
	}
	if a.StartAsking() {
		go p.s.askOwner(p, a)
	}
	switch err := a.Await(ctx, m.Discovery); {
	case errors.Is(err, admission.ErrPending):
		return p.admissionCode(wire.CodeAdmissionPending)
	case errors.Is(err, admission.ErrDenied):
		return p.admissionCode(wire.CodeAdmissionDenied)
	default:
		return err
	}
}

// admissionCode returns an admission code for a client that knows it (it
// listed broker.admission.v1 in its hello), and the nearest code of the
// reference's registry, POLICY_DENIED, for one that does not.
func (p *peer) admissionCode(code wire.Code) error {
	if p.Capable(wire.CapAdmission) {
		return wire.Err(code)
	}
	return wire.Err(wire.CodePolicyDenied)
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
func (s *Server) askOwner(p *peer, a *admission.Ticket) {
	answered := false
	defer func() {
		if !answered {
			a.Unanswered()
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

	prov := s.waitOwnerSurface(ctx, AdmissionWait)
	if prov == nil {
		p.log.Info("admission: no owner surface (the owner's browser) is connected to ask; the connection stays pending", "client", p.label)
		return
	}
	cctx, ccancel := context.WithTimeout(ctx, admissionAskTimeout)
	defer ccancel()
	req := AdmissionRequest{Connection: AdmissionConnection{ID: strconv.FormatUint(p.id, 10), Label: p.label}}
	raw, err := prov.Call(cctx, admission.ProviderMethod, req)
	if err != nil {
		p.log.Info("admission: the owner was not asked or did not answer; the connection stays pending",
			"client", p.label, "instance", prov.InstanceID(), "code", rpc.CodeOf(err))
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
	if !a.Decide(*v.Allowed) {
		return
	}
	if *v.Allowed {
		p.admitted.Store(time.Now().UnixNano())
	}
	s.ownerChanged(topicClients)
	state := admission.Denied
	if *v.Allowed {
		state = admission.Granted
	}
	p.log.Info("admission: the owner answered", "client", p.label, "state", state)
	p.Notify("broker.admission", map[string]admission.State{"state": state})
}

// waitOwnerSurface returns the first ready provider that may put questions
// to the owner, waiting up to d for one to register.
func (s *Server) waitOwnerSurface(ctx context.Context, d time.Duration) *peer {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		for _, p := range s.providers {
			if p.ready && p.state.Load().ownerSurface {
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
		w := p.state.Load()
		if w == nil || w.adm == nil {
			continue
		}
		if state, asking := w.adm.State(); state == admission.Pending {
			out = append(out, StatusConnection{ID: p.id, Label: p.label, Since: w.adm.Since().UTC().Truncate(time.Second), Asking: asking})
		}
	}
	slices.SortFunc(out, func(a, b StatusConnection) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
