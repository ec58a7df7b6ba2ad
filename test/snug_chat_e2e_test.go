package test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-browser/broker/snug/agent/agenttest"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/test/harness/chromium"
	"github.com/dsh-browser/broker/test/harness/stack"
)

// booksApp keeps a table of books, seeded on first load, and shows them;
// window.books.state holds what it last read.
const booksApp = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Books</title></head>
<body><h1>Books</h1><ul id="list"></ul>
<script>
(function () {
  'use strict';
  const state = { instanceId: null, books: [] };
  window.books = { state };
  const pending = new Map();
  let seq = 0;
  function exec(sql) {
    const requestId = 'b' + (++seq);
    return new Promise((resolve, reject) => {
      pending.set(requestId, { resolve, reject });
      parent.postMessage({ v: 1, type: 'snug:db-request', requestId, instanceId: state.instanceId, op: 'exec', sql }, '*');
    });
  }
  addEventListener('message', (e) => {
    if (e.source !== parent || !e.data || e.data.v !== 1) return;
    const f = e.data;
    if (f.type === 'snug:host-ready') {
      state.instanceId = f.instanceId;
      load();
      return;
    }
    const p = pending.get(f.requestId);
    if (!p) return;
    pending.delete(f.requestId);
    f.ok ? p.resolve(f) : p.reject(f.error);
  });
  async function load() {
    await exec("CREATE TABLE IF NOT EXISTS books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, finished TEXT, read INTEGER NOT NULL DEFAULT 0)");
    const n = await exec('SELECT count(*) FROM books');
    if (n.rows[0][0] === 0) {
      await exec("INSERT INTO books (title, finished) VALUES ('Dune', '2026-05-03'), ('Emma', '2026-05-20'), ('Ulysses', NULL), ('Middlemarch', '2026-04-11')");
    }
    const r = await exec('SELECT title, finished, read FROM books ORDER BY id');
    state.books = r.rows.map(([title, finished, read]) => ({ title, finished, read }));
    document.getElementById('list').replaceChildren(...state.books.map((b) => {
      const li = document.createElement('li');
      li.textContent = b.title + (b.read ? ' (read)' : '');
      return li;
    }));
    document.body.dataset.ready = state.instanceId;
  }
})();
</script></body></html>`

// TestSnugChatDataWrite is the done-when, in a real browser: the
// user asks an app's chat how many books they finished in May, then to
// mark them all as read; they see the exact statement and the rows it
// changes before anything changes, and one click on Approve changes those
// rows.
func TestSnugChatDataWrite(t *testing.T) {
	s := stack.Start(t)
	stub := agenttest.New(
		agenttest.Reply{Text: `{"intent":"data_read","confidence":0.95}`},
		agenttest.Reply{Text: `{"sql":"SELECT count(*) AS books FROM books WHERE finished LIKE '2026-05-%'"}`},
		agenttest.Reply{Text: "You finished 2 books in May."},
		agenttest.Reply{Text: `{"intent":"data_write","confidence":0.9}`},
		agenttest.Reply{Text: `{"statements":["UPDATE books SET read = 1 WHERE finished LIKE '2026-05-%'"],"summary":"Marks the books you finished in May as read."}`},
	)
	t.Cleanup(stub.Close)
	id := snugCall[apps.Saved](t, s, apps.MethodInstall, apps.InstallParams{HTML: booksApp}).App.ID
	if out, errOut, code := app(t, s.B, "", "agent", "--endpoint", stub.BaseURL(), "--model", "stub"); code != 0 {
		t.Fatalf("agent (exit %d): %s%s", code, out, errOut)
	}
	bt := s.OpenApp(t, id, "document.body.dataset.ready")
	books := func() string {
		raw := chromium.Eval[string](t, s.Browser, bt.Frame, `JSON.stringify(window.books.state.books)`)
		var list []struct {
			Title string
			Read  int
		}
		if err := json.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatalf("books %s: %v", raw, err)
		}
		var out []string
		for _, b := range list {
			out = append(out, b.Title+":"+map[int]string{0: "unread", 1: "read"}[b.Read])
		}
		return strings.Join(out, ", ")
	}
	if got := books(); got != "Dune:unread, Emma:unread, Ulysses:unread, Middlemarch:unread" {
		t.Fatalf("seeded: %s", got)
	}

	s.Browser.Click(t, bt.Runner, "#chat-button")
	if d := s.Browser.Text(t, bt.Runner, "#chat-disclosure"); !strings.Contains(d, "wait for your approval") || !strings.Contains(d, "saved at once, without asking") {
		t.Fatalf("the panel's disclosure: %q", d)
	}
	say := func(text string) {
		chromium.Eval[any](t, s.Browser, bt.Runner, `document.getElementById('chat-input').value = `+jsString(text))
		s.Browser.Click(t, bt.Runner, "#chat-send")
	}

	say("how many books did I finish in May?")
	waitEval(t, s, bt.Runner, `document.querySelectorAll('#chat-log li.answer').length === 1`, "the answer")
	answer := s.Browser.Text(t, bt.Runner, "#chat-log li.answer")
	if !strings.Contains(answer, "You finished 2 books in May.") || !strings.Contains(answer, "SELECT count(*) AS books FROM books WHERE finished LIKE '2026-05-%'") {
		t.Fatalf("the answer shows %q", answer)
	}

	say("mark them all as read")
	waitEval(t, s, bt.Runner, `document.querySelectorAll('#chat-log li.proposal button.approve').length === 1`, "the proposal")
	proposal := s.Browser.Text(t, bt.Runner, "#chat-log li.proposal")
	for _, want := range []string{"UPDATE books SET read = 1 WHERE finished LIKE '2026-05-%'", "It changes 2 rows", "Nothing changes until you approve",
		"'Dune'", "'Emma'", "before", "after"} {
		if !strings.Contains(proposal, want) {
			t.Errorf("the proposal does not show %q:\n%s", want, proposal)
		}
	}
	if strings.Contains(proposal, "Ulysses") || strings.Contains(proposal, "Middlemarch") {
		t.Errorf("the proposal shows rows it does not change:\n%s", proposal)
	}
	// "them" came from the conversation: the statements' prompt carried it.
	if reqs := stub.Requests(); len(reqs) != 5 || !strings.Contains(reqs[4].User, "how many books did I finish in May?") {
		t.Fatalf("%d agent requests; the write prompt:\n%s", len(reqs), reqs[len(reqs)-1].User)
	}
	// Nothing changed yet.
	if got := books(); strings.Contains(got, ":read") {
		t.Fatalf("before approval: %s", got)
	}

	s.Browser.Click(t, bt.Runner, "#chat-log li.proposal button.approve")
	waitEval(t, s, bt.Runner, `document.querySelectorAll('#chat-log li.executed').length === 1`, "the execution")
	if done := s.Browser.Text(t, bt.Runner, "#chat-log li.executed"); !strings.Contains(done, "Done: 2 rows changed.") {
		t.Fatalf("after approval the chat shows %q", done)
	}
	if n := chromium.Eval[int](t, s.Browser, bt.Runner, `document.querySelectorAll('#chat-log li.proposal button').length`); n != 0 {
		t.Fatalf("%d decision buttons remain", n)
	}
	// The app reloaded in place and shows the change.
	bt.WaitFrame(t, s, "document.body.dataset.ready", bt.Ready)
	if got := books(); got != "Dune:read, Emma:read, Ulysses:unread, Middlemarch:unread" {
		t.Fatalf("after approval: %s", got)
	}
}
