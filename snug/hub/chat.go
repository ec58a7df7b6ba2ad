package hub

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/dsh-browser/broker/snug/agent"
	"github.com/dsh-browser/broker/snug/appchat"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/frame"
	"github.com/dsh-browser/broker/snug/userdb"
)

// The chat panel beside an app (Snug Part IV §19): each message is
// classified by the user's agent and handled by its lane (package
// snug/appchat). The data lane reads on a throwaway copy of the app's
// tables; it writes only what the user approved, on live data whose rows
// are still those of the preview. The feature lane saves a new version at
// once, said so, with revert one click away.

const (
	// chatTimeout bounds the handling of one chat operation, agent calls
	// included.
	chatTimeout = 5 * time.Minute
	// chatQueue bounds the operations waiting for a runner's chat; past
	// it the panel is told to wait.
	chatQueue = 16
	// proposalTTL is how long a proposed data change can be approved.
	proposalTTL = 15 * time.Minute
	// maxProposals bounds the open proposals of one runner; the oldest
	// goes first.
	maxProposals = 8
	// maxSchemaObjects bounds the DDL a prompt carries.
	maxSchemaObjects = 200
	// maxLiteralChars bounds one value of a previewed row as shown.
	maxLiteralChars = 200
)

// sqlTimeout bounds the run of the agent's SQL: a query, a preview, an
// approved change (which holds the app's storage meanwhile). (A variable:
// a test lowers it.)
var sqlTimeout = 10 * time.Second

// chatSession is one runner's chat: operations are applied one at a time,
// in the order the panel sent them.
type chatSession struct {
	r   *runner
	ops chan apps.ChatParams

	// Only the session's goroutine touches these.
	history   []appchat.Exchange
	proposals map[string]*proposal
	order     []string // proposal ids, oldest first
}

// proposal is a data change shown to the user and not yet decided.
type proposal struct {
	statements []string
	changes    []userdb.Change // as computed on the copy: what approval covers
	expires    time.Time
	message    string // what the user asked
}

func newChatSession(r *runner) *chatSession {
	return &chatSession{r: r, ops: make(chan apps.ChatParams, chatQueue), proposals: map[string]*proposal{}}
}

// post queues an operation from the panel; a full queue is told so.
func (s *chatSession) post(op apps.ChatParams) {
	select {
	case s.ops <- op:
	default:
		s.show(apps.ChatItem{ReplyTo: op.ID, Kind: apps.ItemError, Text: "Still working on earlier messages; send this again in a moment."})
	}
}

// run applies operations until the runner ends.
func (s *chatSession) run() {
	for {
		select {
		case <-s.r.ctx.Done():
			return
		case op := <-s.ops:
			ctx, cancel := context.WithTimeout(s.r.ctx, chatTimeout)
			s.apply(ctx, op)
			cancel()
		}
	}
}

func (s *chatSession) apply(ctx context.Context, op apps.ChatParams) {
	switch op.Op {
	case apps.ChatSend:
		s.send(ctx, op)
	case apps.ChatApprove:
		s.approve(ctx, op.Proposal)
	case apps.ChatDecline:
		if s.take(op.Proposal) == nil {
			s.show(apps.ChatItem{Kind: apps.ItemError, Proposal: &apps.ChatProposal{ID: op.Proposal}, Text: "This change is no longer open (it expired or was decided). Nothing was changed."})
			return
		}
		s.show(apps.ChatItem{Kind: apps.ItemDeclined, Proposal: &apps.ChatProposal{ID: op.Proposal}, Text: "Declined. Nothing was changed."})
	case apps.ChatRevert:
		s.revert(ctx, op.Version)
	}
}

// show sends an item to the panel.
func (s *chatSession) show(it apps.ChatItem) {
	data, err := json.Marshal(it)
	if err != nil {
		s.r.h.log.Error("a chat item cannot be encoded", "err", err)
		return
	}
	s.r.link.enqueue(s.r, apps.PieceChat, data)
}

// remember keeps an exchange for the next prompts.
func (s *chatSession) remember(user, host string) {
	s.history = append(s.history, appchat.Exchange{User: user, Host: host})
	if len(s.history) > appchat.MaxHistory {
		s.history = s.history[len(s.history)-appchat.MaxHistory:]
	}
}

// send classifies a message and hands it to its lane.
func (s *chatSession) send(ctx context.Context, op apps.ChatParams) {
	reply := func(it apps.ChatItem) {
		it.ReplyTo = op.ID
		s.show(it)
	}
	text := strings.TrimSpace(op.Text)
	if text == "" || utf16Len(text) > apps.MaxChatChars {
		reply(apps.ChatItem{Kind: apps.ItemError, Text: fmt.Sprintf("A message has 1 to %d characters.", apps.MaxChatChars)})
		return
	}
	h := s.r.h
	ag, err := h.agent(ctx)
	if err != nil {
		reply(apps.ChatItem{Kind: apps.ItemRefused, Text: noAgentText(err)})
		return
	}
	scratch, err := h.db.Scratch(ctx, s.r.appID, true)
	if err != nil {
		reply(apps.ChatItem{Kind: apps.ItemError, Text: "The app's data cannot be read: " + err.Error()})
		return
	}
	defer scratch.Close()
	facts, err := s.facts(ctx, scratch)
	if err != nil {
		reply(apps.ChatItem{Kind: apps.ItemError, Text: "The app cannot be read: " + err.Error()})
		return
	}
	answer, err := ag.Answer(ctx, appchat.ClassifierTurn(facts, s.history, text), nil)
	if err != nil {
		reply(agentFailed(err))
		return
	}
	intent, err := appchat.ParseClassification(answer)
	if err != nil {
		h.log.Info("chat message not routed", "app", s.r.appID, "why", err)
		reply(apps.ChatItem{Kind: apps.ItemClarify, Text: appchat.Clarify})
		return
	}
	lane, _ := appchat.LaneOf(intent) // ParseClassification returns intents that have one
	h.log.Info("chat message routed", "app", s.r.appID, "intent", intent, "lane", lane)
	var it apps.ChatItem
	switch lane {
	case appchat.LaneData:
		if intent == appchat.DataRead {
			it = s.read(ctx, ag, scratch, facts, text)
		} else {
			it = s.propose(ctx, ag, facts, text)
		}
	case appchat.LaneFeature:
		it = s.feature(ctx, ag, facts, text)
	case appchat.LaneProvider:
		it = s.provider(facts)
	case appchat.LaneAnswer:
		it = s.answer(ctx, ag, facts, text)
	default: // a lane without a handler is the router failing: clarify
		it = apps.ChatItem{Kind: apps.ItemClarify, Text: appchat.Clarify}
	}
	it.Intent, it.Lane = string(intent), string(lane)
	if it.Kind != apps.ItemClarify && it.Kind != apps.ItemError {
		s.remember(text, it.Text)
	}
	reply(it)
}

// facts reads what the prompts say of the app: its name, its schema (from
// the read-only copy) and its approved connections.
func (s *chatSession) facts(ctx context.Context, scratch *userdb.Runtime) (appchat.Facts, error) {
	db := s.r.h.db
	a, _, err := db.OpenApp(ctx, s.r.appID)
	if err != nil {
		return appchat.Facts{}, err
	}
	f := appchat.Facts{Name: a.DisplayName, Description: a.Description, Version: a.CurrentVersion}
	_, rows, _, err := scratch.Read(ctx, `SELECT type, name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid`, maxSchemaObjects)
	if err != nil {
		return appchat.Facts{}, err
	}
	for _, r := range rows {
		typ, _ := r[0].(string)
		name, _ := r[1].(string)
		ddl, _ := r[2].(string)
		f.Schema = append(f.Schema, ddl)
		if typ == "table" {
			f.Tables = append(f.Tables, name)
		}
	}
	if f.Connections, err = db.ApprovedConnections(ctx, s.r.appID); err != nil {
		return appchat.Facts{}, err
	}
	return f, nil
}

// read answers a data_read message: the agent writes one query, which runs
// on the read-only copy; the bounded result goes back to the agent inside
// an untrusted block, and the answer comes with the query and the rows.
func (s *chatSession) read(ctx context.Context, ag agent.Agent, scratch *userdb.Runtime, facts appchat.Facts, text string) apps.ChatItem {
	answer, err := ag.Answer(ctx, appchat.QueryTurn(facts, s.history, text), nil)
	if err != nil {
		return agentFailed(err)
	}
	sql, err := appchat.ParseQuery(answer)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The agent did not write a usable query. Nothing ran."}
	}
	qctx, cancel := context.WithTimeout(ctx, sqlTimeout)
	columns, rows, more, err := scratch.Read(qctx, sql, appchat.MaxResultRows)
	cancel()
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, SQL: []string{sql}, Text: "The query failed on a copy of your data: " + err.Error()}
	}
	res := appchat.Bound(columns, rows, more)
	answer, err = ag.Answer(ctx, appchat.ResultTurn(s.history, text, sql, res), nil)
	if err != nil {
		return agentFailed(err)
	}
	words, err := appchat.ParseAnswer(answer)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, SQL: []string{sql}, Text: "The agent did not answer."}
	}
	return apps.ChatItem{Kind: apps.ItemAnswer, Text: words, SQL: []string{sql},
		Result: &apps.ChatResult{Columns: res.Columns, Rows: res.Rows, Truncated: res.Truncated}}
}

// propose answers a data_write message: the agent writes statements,
// which run on a writable throwaway copy to find the rows they change; the
// user sees both and decides. Nothing touches live data here.
func (s *chatSession) propose(ctx context.Context, ag agent.Agent, facts appchat.Facts, text string) apps.ChatItem {
	answer, err := ag.Answer(ctx, appchat.WriteTurn(facts, s.history, text), nil)
	if err != nil {
		return agentFailed(err)
	}
	p, err := appchat.ParseStatements(answer)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The agent did not write usable statements. Nothing was changed."}
	}
	preview, err := s.r.h.db.Scratch(ctx, s.r.appID, false)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The app's data cannot be read: " + err.Error()}
	}
	qctx, cancel := context.WithTimeout(ctx, sqlTimeout)
	changes, _, err := preview.Apply(qctx, p.Statements, nil)
	cancel()
	preview.Close()
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, SQL: p.Statements, Text: "These statements failed on a copy of your data, so nothing was proposed: " + err.Error()}
	}
	if len(changes) == 0 {
		return apps.ChatItem{Kind: apps.ItemAnswer, SQL: p.Statements, Text: "These statements would change no rows, so there is nothing to approve."}
	}
	id := rand.Text()
	s.keep(id, &proposal{statements: p.Statements, changes: changes, expires: time.Now().Add(proposalTTL), message: text})
	summary := p.Summary
	if summary == "" {
		summary = "A change to your data."
	}
	return apps.ChatItem{Kind: apps.ItemProposal, SQL: p.Statements,
		Text:     fmt.Sprintf("%s It changes %d %s. Nothing changes until you approve.", summary, len(changes), plural(len(changes), "row", "rows")),
		Proposal: &apps.ChatProposal{ID: id, Changes: shownChanges(changes), Total: len(changes)}}
}

// keep stores an open proposal, dropping the oldest past maxProposals.
func (s *chatSession) keep(id string, p *proposal) {
	s.proposals[id] = p
	s.order = append(s.order, id)
	for len(s.order) > maxProposals {
		delete(s.proposals, s.order[0])
		s.order = s.order[1:]
	}
}

// take removes and returns an open proposal; nil when there is none (never
// made, decided, dropped or expired).
func (s *chatSession) take(id string) *proposal {
	p := s.proposals[id]
	delete(s.proposals, id)
	for i, x := range s.order {
		if x == id {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	if p == nil || time.Now().After(p.expires) {
		return nil
	}
	return p
}

// approve runs a proposal on live data: the statements run again in one
// transaction and are kept only if they change exactly the rows of the
// preview, contents compared (going past the spec's count comparison).
func (s *chatSession) approve(ctx context.Context, id string) {
	ref := &apps.ChatProposal{ID: id}
	p := s.take(id)
	if p == nil {
		s.show(apps.ChatItem{Kind: apps.ItemError, Proposal: ref, Text: "This change is no longer open (it expired or was decided). Nothing was changed."})
		return
	}
	h := s.r.h
	live, err := h.db.Materialise(ctx, s.r.appID)
	if err != nil {
		s.show(apps.ChatItem{Kind: apps.ItemError, Proposal: ref, Text: "Nothing was changed: " + err.Error()})
		return
	}
	qctx, cancel := context.WithTimeout(ctx, sqlTimeout)
	changes, kept, err := live.Apply(qctx, p.statements, func(c []userdb.Change) bool { return userdb.Same(c, p.changes) })
	cancel()
	if err == nil && kept {
		err = live.WriteBack(ctx)
	}
	live.Close()
	switch {
	case err != nil:
		s.show(apps.ChatItem{Kind: apps.ItemError, Proposal: ref, SQL: p.statements, Text: "Nothing was changed: " + err.Error()})
		return
	case !kept:
		h.log.Info("an approved data change halted: its rows changed since the preview", "app", s.r.appID)
		s.show(apps.ChatItem{Kind: apps.ItemHalted, SQL: p.statements,
			Proposal: &apps.ChatProposal{ID: id, Changes: shownChanges(changes), Total: len(changes)},
			Text: fmt.Sprintf("Halted: the rows these statements change now differ from the preview you approved (%d %s then, %d now, or other contents). Nothing was changed. Ask again for a new preview.",
				len(p.changes), plural(len(p.changes), "row", "rows"), len(changes))})
		return
	}
	h.log.Info("an approved data change ran", "app", s.r.appID, "rows", len(changes))
	s.remember(p.message, fmt.Sprintf("Ran: %s", strings.Join(p.statements, "; ")))
	s.show(apps.ChatItem{Kind: apps.ItemExecuted, Proposal: ref, SQL: p.statements,
		Text: fmt.Sprintf("Done: %d %s changed.", len(changes), plural(len(changes), "row", "rows"))})
	s.reloadApp(ctx)
}

// feature answers a schema_change or app_change message: the agent writes
// the app's next version, saved at once (the runtime contract copied
// forward) and shown in place, with the asymmetry said.
func (s *chatSession) feature(ctx context.Context, ag agent.Agent, facts appchat.Facts, text string) apps.ChatItem {
	db := s.r.h.db
	src, err := db.Source(ctx, s.r.appID, 0)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The app cannot be read: " + err.Error()}
	}
	answer, err := ag.Answer(ctx, appchat.FeatureTurn(facts, src.HTML, s.history, text), nil)
	if err != nil {
		return agentFailed(err)
	}
	v, err := appchat.ParseVersion(answer, apps.MaxHTMLBytes)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The agent did not write a usable version of the app. Nothing was changed."}
	}
	note := "chat: " + v.Note
	if v.Note == "" {
		note = "chat: " + frame.Clip(text, appchat.MaxNoteChars-len("chat: "))
	}
	saved, err := db.Update(ctx, s.r.appID, userdb.NewVersion{HTML: v.HTML, Note: frame.Clip(note, apps.MaxNoteChars)})
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The new version could not be saved: " + err.Error()}
	}
	s.r.h.log.Info("the chat saved a new app version", "app", s.r.appID, "version", saved.Version)
	s.reloadApp(ctx)
	what := v.Note
	if what == "" {
		what = "the app changed"
	}
	return apps.ChatItem{Kind: apps.ItemVersion, Version: &apps.ChatVersion{Version: saved.Version, Restores: src.Version},
		Text: fmt.Sprintf("Saved as version %d: %s. Changes to the app are saved at once, without asking you first (only data changes wait for your approval). Revert restores version %d: its code and its runtime contract.",
			saved.Version, what, src.Version)}
}

// revert restores an earlier version (its code and its runtime contract,
// copied forward as a new version).
func (s *chatSession) revert(ctx context.Context, version int) {
	v, err := s.r.h.db.Revert(ctx, s.r.appID, version)
	if err != nil {
		s.show(apps.ChatItem{Kind: apps.ItemError, Text: fmt.Sprintf("Version %d could not be restored: %v", version, err)})
		return
	}
	s.r.h.log.Info("app version restored from the chat", "app", s.r.appID, "from", version, "version", v.Version)
	s.show(apps.ChatItem{Kind: apps.ItemReverted, Version: &apps.ChatVersion{Version: v.Version},
		Text: fmt.Sprintf("Restored version %d (its code and its runtime contract) as version %d.", version, v.Version)})
	s.reloadApp(ctx)
}

// provider answers provider_read and provider_write: this host runs no
// request from the chat yet, so it says so, with the way to connect when
// there is none. (The executor is there, h.net; the lane still needs the
// agent's request prompt and parser and the scrub of LAN literals from
// what goes back to the model, §14.2 and §16.)
func (s *chatSession) provider(facts appchat.Facts) apps.ChatItem {
	if len(facts.Connections) == 0 {
		return apps.ChatItem{Kind: apps.ItemRefused, Text: "This app has no approved connection to another service, so there is nothing to ask. Connect one first (Connections, at the top of this tab), then ask again. Nothing was sent."}
	}
	return apps.ChatItem{Kind: apps.ItemRefused, Text: "Asking a connected service from this chat is not available in this host yet. Nothing was sent."}
}

// answer answers app_question and other in words.
func (s *chatSession) answer(ctx context.Context, ag agent.Agent, facts appchat.Facts, text string) apps.ChatItem {
	src, err := s.r.h.db.Source(ctx, s.r.appID, 0)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The app cannot be read: " + err.Error()}
	}
	answer, err := ag.Answer(ctx, appchat.AnswerTurn(facts, src.HTML, s.history, text), nil)
	if err != nil {
		return agentFailed(err)
	}
	words, err := appchat.ParseAnswer(answer)
	if err != nil {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The agent did not answer."}
	}
	return apps.ChatItem{Kind: apps.ItemAnswer, Text: words}
}

// reloadApp shows the app's current version and data in every runner tab
// of the app: a visible, in-place reload.
func (s *chatSession) reloadApp(ctx context.Context) {
	for _, r := range s.r.h.runners() {
		if r.appID == s.r.appID {
			r.reload(ctx)
		}
	}
}

// shownChanges is what the panel shows of a change list: the first
// MaxChatChanges rows, each value at most maxLiteralChars.
func shownChanges(changes []userdb.Change) []apps.ChatChange {
	out := make([]apps.ChatChange, 0, min(len(changes), apps.MaxChatChanges))
	for _, c := range changes[:min(len(changes), apps.MaxChatChanges)] {
		out = append(out, apps.ChatChange{Table: c.Table, Op: c.Op, Columns: c.Columns, Before: clipAll(c.Before), After: clipAll(c.After)})
	}
	return out
}

func clipAll(values []string) []string {
	if values == nil {
		return nil
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = v
		if c := frame.Clip(v, maxLiteralChars); c != v {
			out[i] = c + "…"
		}
	}
	return out
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// noAgentText says why no agent answers, and what to do.
func noAgentText(err error) string {
	switch {
	case errors.Is(err, errAgentUnconfirmed):
		return "The agent settings came with an imported file and wait for your confirmation: check them with `broker app agent`, then run `broker app agent --confirm`."
	case errors.Is(err, errNoAgent):
		return "No agent is configured: run `broker app agent --endpoint URL --model M`, or `broker app agent --mcp` with an MCP host that supports sampling."
	}
	return "The agent configuration cannot be read."
}

// agentFailed is the item for an agent call that failed.
func agentFailed(err error) apps.ChatItem {
	if e, ok := errors.AsType[*agent.Error](err); ok {
		return apps.ChatItem{Kind: apps.ItemError, Text: "The agent did not answer: " + e.Message + ". Nothing was changed."}
	}
	return apps.ChatItem{Kind: apps.ItemError, Text: "The agent did not answer. Nothing was changed."}
}
