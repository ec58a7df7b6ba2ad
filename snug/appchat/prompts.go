package appchat

import (
	"fmt"
	"strings"

	"github.com/dsh-browser/broker/snug/agent"
	"github.com/dsh-browser/broker/snug/frame"
)

// Facts are what the surface knows of the app a chat sits beside.
type Facts struct {
	Name        string
	Description string
	Version     int
	// Schema is the app's DDL, verbatim (table, index, view and trigger
	// statements), and Tables its table names.
	Schema []string
	Tables []string
	// Connections are the app's approved connections as "slot (provider
	// name)": never a host, never a credential.
	Connections []string
}

// Exchange is one earlier message and the host's answer to it.
type Exchange struct {
	User, Host string
}

// Bounds on what earlier exchanges bring to a prompt.
const (
	MaxHistory          = 6
	maxHistoryItemChars = 600
	// maxCodeChars bounds the app code an answer-lane prompt carries; the
	// feature lane carries it whole (apps.MaxHTMLBytes).
	maxCodeChars = 64 << 10
)

// ClassifierTurn asks the agent for the intent of message. The classifier
// sees the app's name, its table names and its approved connections, and
// the user's earlier messages: no rows, no code, no earlier answers.
func ClassifierTurn(f Facts, history []Exchange, message string) agent.Turn {
	var u strings.Builder
	u.WriteString(Untrusted("app facts", facts(f, false)))
	if earlier := userMessages(history); earlier != "" {
		u.WriteString("\n\nThe user's earlier messages, oldest first:\n")
		u.WriteString(Untrusted("earlier messages", earlier))
	}
	u.WriteString("\n\nThe message to classify:\n")
	u.WriteString(UserMessage(message))
	return agent.Turn{System: classifierRules + "\n" + untrustedRules, User: u.String(), MaxTokens: 256}
}

const classifierRules = `You route one message that a user typed into the chat beside a small app they run. Classify it into exactly one intent:
- data_read: a question answered by reading the app's stored data ("how many…", "which…", "list…")
- data_write: add, change or delete the app's stored data ("mark…", "delete…", "add…")
- schema_change: change what the app stores (a new table, a new field)
- app_change: change the app's code: its layout, features or behaviour
- provider_read: get information from a third-party service the app is connected to
- provider_write: send or change something at a connected third-party service
- app_question: a question about the app itself: what it does, how to use it
- other: anything else
Reply with ONLY a JSON object, no other text: {"intent": "<one of the eight>", "confidence": <a number from 0 to 1>}.`

// QueryTurn asks the agent for one query that answers a data_read message.
func QueryTurn(f Facts, history []Exchange, message string) agent.Turn {
	return agent.Turn{System: queryRules + "\n" + untrustedRules, User: dataContext(f, history, message)}
}

const queryRules = `You write one SQLite query that answers the user's question from the database of a small app they run. The database holds only the objects of the schema below. Reply with ONLY a JSON object, no other text: {"sql": "SELECT …"}. One statement, SELECT or WITH, nothing that writes.`

// WriteTurn asks the agent for the statements a data_write message asks
// for. The user sees them verbatim, and the rows they change, before
// anything runs.
func WriteTurn(f Facts, history []Exchange, message string) agent.Turn {
	return agent.Turn{System: writeRules + "\n" + untrustedRules, User: dataContext(f, history, message)}
}

const writeRules = `You write the SQLite statements that make the change the user asks for in the database of a small app they run. The database holds only the objects of the schema below. The user sees each statement verbatim and every row it changes before anything runs, and decides. Reply with ONLY a JSON object, no other text: {"statements": ["UPDATE …"], "summary": "what they do, in one sentence"}. 1 to 16 statements, each INSERT, UPDATE or DELETE: no schema change, no PRAGMA, no transaction statements, no INSERT OR REPLACE.`

func dataContext(f Facts, history []Exchange, message string) string {
	var u strings.Builder
	u.WriteString("The app's schema:\n")
	u.WriteString(Untrusted("the app's schema", strings.Join(f.Schema, ";\n")))
	writeHistory(&u, history)
	u.WriteString("\n\n")
	u.WriteString(UserMessage(message))
	return u.String()
}

// ResultTurn asks the agent to answer a data_read message from the result
// of the query it wrote.
func ResultTurn(history []Exchange, message, sql string, r Result) agent.Turn {
	var u strings.Builder
	writeHistory(&u, history)
	u.WriteString("\n\nThe question:\n")
	u.WriteString(UserMessage(message))
	u.WriteString("\n\nThe query that ran on a copy of the app's data:\n")
	u.WriteString(Untrusted("the query", sql))
	fmt.Fprintf(&u, "\n\nIts result (%d rows shown: a line of column names, then one JSON array per row):\n", len(r.Rows))
	u.WriteString(Untrusted("query result", r.Text))
	if r.Truncated != "" {
		u.WriteString("\n\nNote from the host: ")
		u.WriteString(r.Truncated)
	}
	return agent.Turn{System: resultRules + "\n" + untrustedRules, User: strings.TrimLeft(u.String(), "\n")}
}

const resultRules = `You answer the user's question about the data of a small app they run, from the result of a query the host ran. Be brief and exact; when the result was truncated, say that the answer covers only the rows shown. Reply in plain text.`

// FeatureTurn asks the agent for a new version of the app's code.
func FeatureTurn(f Facts, html string, history []Exchange, message string) agent.Turn {
	var u strings.Builder
	u.WriteString(Untrusted("app facts", facts(f, true)))
	u.WriteString("\n\nThe app's current code:\n")
	u.WriteString(Untrusted("the app's code", html))
	writeHistory(&u, history)
	u.WriteString("\n\nThe change to make:\n")
	u.WriteString(UserMessage(message))
	return agent.Turn{System: featureRules + "\n" + untrustedRules, User: u.String()}
}

const featureRules = `You change a small app the user runs: one self-contained HTML file (a Snug micro-app) that keeps its data in its own SQLite tables through its host. Make the change the user asks for and keep everything else as it is. Reply with ONLY a JSON object, no other text: {"html": "<the whole new HTML file>", "note": "what changed, in one line"}.`

// AnswerTurn asks the agent to answer a question about the app.
func AnswerTurn(f Facts, html string, history []Exchange, message string) agent.Turn {
	var u strings.Builder
	u.WriteString(Untrusted("app facts", facts(f, true)))
	u.WriteString("\n\nThe app's code:\n")
	u.WriteString(Untrusted("the app's code", frame.Clip(html, maxCodeChars)))
	writeHistory(&u, history)
	u.WriteString("\n\n")
	u.WriteString(UserMessage(message))
	return agent.Turn{System: answerRules + "\n" + untrustedRules, User: u.String()}
}

const answerRules = `You answer the user's question about a small app they run: what it does and how to use it. You change nothing from here. Reply in plain text, briefly.`

// facts renders f; withSchema adds the DDL (the classifier gets table
// names only).
func facts(f Facts, withSchema bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", f.Name)
	if f.Description != "" {
		fmt.Fprintf(&b, "description: %s\n", f.Description)
	}
	if f.Version > 0 {
		fmt.Fprintf(&b, "version: %d\n", f.Version)
	}
	tables := "none"
	if len(f.Tables) > 0 {
		tables = strings.Join(f.Tables, ", ")
	}
	fmt.Fprintf(&b, "tables: %s\n", tables)
	conns := "none"
	if len(f.Connections) > 0 {
		conns = strings.Join(f.Connections, ", ")
	}
	fmt.Fprintf(&b, "approved connections: %s", conns)
	if withSchema && len(f.Schema) > 0 {
		b.WriteString("\nschema:\n")
		b.WriteString(strings.Join(f.Schema, ";\n"))
	}
	return b.String()
}

// recent returns the last MaxHistory exchanges.
func recent(history []Exchange) []Exchange {
	if len(history) > MaxHistory {
		history = history[len(history)-MaxHistory:]
	}
	return history
}

func userMessages(history []Exchange) string {
	var lines []string
	for _, x := range recent(history) {
		lines = append(lines, "- "+frame.Clip(x.User, maxHistoryItemChars))
	}
	return strings.Join(lines, "\n")
}

// writeHistory adds the earlier exchanges, answers included (they may
// carry stored data), as one untrusted block.
func writeHistory(u *strings.Builder, history []Exchange) {
	if len(history) == 0 {
		return
	}
	var b strings.Builder
	for _, x := range recent(history) {
		fmt.Fprintf(&b, "user: %s\nhost: %s\n", frame.Clip(x.User, maxHistoryItemChars), frame.Clip(x.Host, maxHistoryItemChars))
	}
	u.WriteString("\n\nThe conversation so far, oldest first:\n")
	u.WriteString(Untrusted("earlier conversation", strings.TrimSuffix(b.String(), "\n")))
}
