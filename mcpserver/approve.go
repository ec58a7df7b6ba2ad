package mcpserver

import (
	"context"
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The answer the user gives to a batch step question.
const (
	answerYes = "yes"
	answerNo  = "no"
)

// deniedNoElicitation is told to the model when its host cannot ask the
// user, so every batch step is refused.
const deniedNoElicitation = "POLICY_DENIED: this MCP host cannot ask the user to approve batch steps (it does not support elicitation), so batches are refused. Use browser_act for each step instead."

// approveStep asks the user whether step index of a batch may run. Only an
// explicit accept with "yes" allows it; a host without elicitation, a
// decline, a cancel, an error or a timeout refuses it.
func (s *Server) approveStep(ctx context.Context, a *approval, index int) bool {
	ss := a.sess.ss
	if !canElicit(ss) {
		a.mu.Lock()
		a.denied = deniedNoElicitation
		a.mu.Unlock()
		s.log.Info("batch step refused: the MCP host does not support elicitation", "index", index)
		return false
	}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Message: stepQuestion(a, index),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"answer": map[string]any{
					"type":        "string",
					"title":       "Run this step?",
					"description": "yes runs this one step; no stops the batch",
					"enum":        []string{answerYes, answerNo},
				},
			},
			"required": []string{"answer"},
		},
	})
	if err != nil {
		s.log.Warn("batch step question failed", "index", index, "err", err)
		return false
	}
	allowed := res.Action == "accept" && res.Content["answer"] == answerYes
	s.log.Info("batch step answered", "index", index, "action", res.Action, "allowed", allowed)
	return allowed
}

// canElicit reports whether the MCP host declared the elicitation
// capability (form mode, or the pre-2025-11-25 empty object).
func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// stepQuestion is the short question shown to the user for one step, e.g.
// `Allow the agent to run batch step 1 of 2 (index 0): click button "Add
// one" on 127.0.0.1:8080 ("Counter")?`.
func stepQuestion(a *approval, index int) string {
	what := "an action"
	var labels map[string]string
	pi := a.sess.page(a.leaseID)
	if pi != nil {
		labels = pi.labels
	}
	if index >= 0 && index < len(a.steps) {
		what = describeAction(&a.steps[index].Action, labels)
	}
	where := ""
	if pi != nil {
		host := pi.url
		if u, err := url.Parse(pi.url); err == nil && u.Host != "" {
			host = u.Host
		}
		where = fmt.Sprintf(" on %s (%q)", host, clip(pi.title, 60))
	}
	return fmt.Sprintf("Allow the agent to run batch step %d of %d (index %d): %s%s?", index+1, len(a.steps), index, what, where)
}
