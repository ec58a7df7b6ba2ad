package realapps

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// task is something a person does in an application in a few steps.
type task struct {
	App, Name string
	Page      string // the page to open, a path on the task's origin
	Done      string // a JavaScript predicate of the page: the result is there
	Steps     []step
}

func (tk task) id() string { return strings.ReplaceAll(tk.App+"/"+tk.Name, " ", "_") }

// kinds lists the task's action kinds, each once.
func (tk task) kinds() []string {
	var out []string
	for _, s := range tk.Steps {
		if !slices.Contains(out, s.Do) {
			out = append(out, s.Do)
		}
	}
	return out
}

// locator is how the agent finds a control in what the tool shows: its
// role and exact accessible name, and which one of several alike (0 for
// the first).
type locator struct {
	Role  string // "" for any role
	Name  string // matched without regard to case: tools differ there
	Value string // broker mcp: an unnamed field, by the value it shows
	Nth   int
}

// step is one action, named as broker mcp's browser_act names its kinds
// (the kinds of issue 12 included: dblclick, hover, chord, drag, clickAt,
// select by value).
type step struct {
	Do     string
	On     locator
	To     *locator // drag onto this control
	Text   string   // fill, type, append
	Key    string   // press, chord
	Mods   []string // chord
	X, Y   int      // clickAt: a point in On's box; drag without To: the offset
	Option string   // select by label
	Value  string   // select by value
	PW     *locator // @playwright/mcp's way to On, where it differs
}

func (s step) String() string {
	out := fmt.Sprintf("%s %s %q", s.Do, s.On.Role, s.On.Name)
	if s.On.Nth > 0 {
		out += fmt.Sprintf(" #%d", s.On.Nth+1)
	}
	switch {
	case s.Text != "":
		out += fmt.Sprintf(" %q", s.Text)
	case s.Key != "":
		out += " " + strings.Join(append(slices.Clone(s.Mods), s.Key), "+")
	case s.To != nil:
		out += fmt.Sprintf(" onto %s %q", s.To.Role, s.To.Name)
	case s.Do == "clickAt" || s.Do == "drag":
		out += fmt.Sprintf(" (%d, %d)", s.X, s.Y)
	case s.Option != "" || s.Value != "":
		out += " " + s.Option + s.Value
	}
	return out
}

// Shorthands for the task table.
func on(role, name string) locator { return locator{Role: role, Name: name} }

func nth(role, name string, n int) locator { return locator{Role: role, Name: name, Nth: n} }

func click(role, name string) step { return step{Do: "click", On: on(role, name)} }

func fill(l locator, text string) step { return step{Do: "fill", On: l, Text: text} }

func typ(l locator, text string) step { return step{Do: "type", On: l, Text: text} }

func press(l locator, key string) step { return step{Do: "press", On: l, Key: key} }

func chord(l locator, key string, mods ...string) step {
	return step{Do: "chord", On: l, Key: key, Mods: mods}
}

// pw gives @playwright/mcp's way to the same control where its snapshot
// shows it otherwise than broker mcp's outline.
func (s step) pw(l locator) step { s.PW = &l; return s }

// TodoMVC: the same application in five frameworks, as the todomvc
// package ships them. React's and AngularJS's routers add "#/" to the
// URL as they start (browser_navigate answers once the page is loaded,
// wherever its router took it).
func todoPage(framework string) string {
	return "/node_modules/todomvc/examples/" + framework + "/"
}

var newTodo = on("textbox", "What needs to be done?")

// addTodo adds a todo as a person does: type it, press Enter.
func addTodo(title string) []step {
	return []step{fill(newTodo, title), press(newTodo, "Enter")}
}

func todoTitles(titles ...string) string {
	q := make([]string, len(titles))
	for i, t := range titles {
		q[i] = fmt.Sprintf("%q", t)
	}
	return "JSON.stringify([...document.querySelectorAll('#todo-list li label')].map((l) => l.textContent.trim())) === JSON.stringify([" + strings.Join(q, ",") + "])"
}

func steps(groups ...[]step) []step { return slices.Concat(groups...) }

// tasks is the suite: what a person does in each application, in a few
// steps.
var tasks = []task{
	{App: "TodoMVC vanillajs", Name: "add a todo", Page: todoPage("vanillajs"), Done: todoTitles("Buy milk"),
		Steps: addTodo("Buy milk")},
	{App: "TodoMVC vanillajs", Name: "complete a todo", Page: todoPage("vanillajs"),
		Done:  "document.querySelector('#todo-list li.completed label').textContent === 'Buy milk'",
		Steps: steps(addTodo("Buy milk"), []step{click("checkbox", "")})},
	{App: "TodoMVC react", Name: "add two todos", Page: todoPage("react"), Done: todoTitles("Buy milk", "Walk the dog"),
		Steps: steps(addTodo("Buy milk"), addTodo("Walk the dog"))},
	{App: "TodoMVC react", Name: "complete a todo", Page: todoPage("react"),
		Done:  "document.querySelector('#todo-list li.completed label').textContent === 'Buy milk'",
		Steps: steps(addTodo("Buy milk"), []step{click("checkbox", "")})},
	{App: "TodoMVC backbone", Name: "show the completed todos", Page: todoPage("backbone"),
		Done: "location.hash === '#/completed' && " + "[...document.querySelectorAll('#todo-list li')].filter((li) => li.offsetParent).map((li) => li.textContent.trim()).join() === 'Buy milk'",
		Steps: steps(addTodo("Buy milk"), addTodo("Walk the dog"), []step{
			// The first box without a name is "Mark all as complete", whose
			// label the stylesheet hides; @playwright/mcp names it anyway.
			{Do: "click", On: nth("checkbox", "", 1), PW: &locator{Role: "checkbox"}},
			click("link", "Completed"),
		})},
	{App: "TodoMVC vue", Name: "rename a todo", Page: todoPage("vue"), Done: todoTitles("Buy oat milk"),
		Steps: steps(addTodo("Buy milk"), []step{
			{Do: "dblclick", On: on("", "Buy milk")},
			fill(on("textbox", ""), "Buy oat milk"),
			press(on("textbox", ""), "Enter"),
		})},
	{App: "TodoMVC angularjs", Name: "rename a todo", Page: todoPage("angularjs"), Done: todoTitles("Buy oat milk"),
		Steps: steps(addTodo("Buy milk"), []step{
			{Do: "dblclick", On: on("", "Buy milk")},
			fill(on("textbox", ""), "Buy oat milk"),
			press(on("textbox", ""), "Enter"),
		})},
	{App: "TodoMVC angularjs", Name: "delete a todo", Page: todoPage("angularjs"), Done: todoTitles("Walk the dog"),
		Steps: steps(addTodo("Buy milk"), addTodo("Walk the dog"), []step{
			// Its row shows the delete button under the pointer: hover its
			// box (the second without a name, as for backbone).
			{Do: "hover", On: nth("checkbox", "", 1), PW: &locator{Role: "checkbox"}},
			click("button", "✖"),
		})},

	{App: "Swagger UI", Name: "expand an operation", Page: "/pages/swagger.html",
		Done:  "document.querySelector('#operations-pets-listPets.is-open .opblock-body')",
		Steps: []step{click("button", "GET /pets List all pets")}},
	{App: "Swagger UI", Name: "try an operation", Page: "/pages/swagger.html",
		Done:  "[...document.querySelectorAll('#operations-pets-listPets .live-responses-table .response-col_status')].some((c) => c.textContent.trim() === '200')",
		Steps: []step{click("button", "GET /pets List all pets"), click("button", "Try it out"), click("button", "Execute")}},
	{App: "Swagger UI", Name: "authorize with an API key", Page: "/pages/swagger.html",
		Done: "[...document.querySelectorAll('.auth-container button')].some((b) => b.textContent.trim() === 'Logout')",
		Steps: []step{click("button", "Authorize"), fill(on("textbox", "Value:"), "secret-key"),
			{Do: "click", On: nth("button", "Apply credentials", 0)}}},
	{App: "Swagger UI", Name: "choose a server", Page: "/pages/swagger.html",
		Done:  "ui.oas3Selectors.selectedServer() === '/sandbox'",
		Steps: []step{{Do: "select", On: on("combobox", ""), Option: "/sandbox - Sandbox"}}},
	{App: "Swagger UI", Name: "show a schema", Page: "/pages/swagger.html",
		Done:  "document.querySelector('#model-Pet .model-box .model .inner-object')",
		Steps: []step{click("button", "Pet")}},

	{App: "Quill", Name: "write a note", Page: "/pages/quill.html", Done: "quill.getText().trim() === 'Remember the milk'",
		Steps: []step{fill(on("generic", ""), "Remember the milk").pw(on("paragraph", ""))}},
	{App: "Quill", Name: "make text bold", Page: "/pages/quill.html",
		Done: "document.querySelector('.ql-editor strong').textContent === 'Important'",
		Steps: []step{
			fill(on("generic", ""), "Important").pw(on("paragraph", "")),
			chord(on("generic", ""), "a", "Control").pw(on("paragraph", "")),
			click("button", "bold"),
		}},
	{App: "Quill", Name: "make a heading", Page: "/pages/quill.html",
		Done: "document.querySelector('.ql-editor h1').textContent === 'Shopping list'",
		Steps: []step{
			fill(on("generic", ""), "Shopping list").pw(on("paragraph", "")),
			click("button", "Normal"),
			click("button", "Heading 1"),
		}},

	{App: "CodeMirror 5", Name: "type code", Page: "/pages/codemirror.html", Done: "cm.getValue().startsWith('// checked')",
		Steps: []step{typ(on("textbox", "Code editor"), "// checked")}},
	{App: "CodeMirror 5", Name: "search", Page: "/pages/codemirror.html", Done: "cm.getSelection() === 'total' && cm.getCursor().line === 4",
		Steps: []step{
			typ(on("textbox", "Code editor"), " "),
			chord(on("textbox", "Code editor"), "f", "Control"),
			fill(on("textbox", "Search:"), "total"),
			press(on("textbox", "Search:"), "Enter"),
		}},
	{App: "CodeMirror 5", Name: "jump to a line", Page: "/pages/codemirror.html", Done: "cm.getCursor().line === 4",
		Steps: []step{
			typ(on("textbox", "Code editor"), " "),
			chord(on("textbox", "Code editor"), "g", "Alt"),
			fill(on("textbox", ""), "5"),
			press(on("textbox", ""), "Enter"),
		}},

	{App: "Ace", Name: "type", Page: "/pages/ace.html", Done: "editor.getValue().startsWith('# edited')",
		Steps: []step{typ(on("textbox", "Cursor at row 1"), "# edited")}},
	{App: "Ace", Name: "find", Page: "/pages/ace.html", Done: "editor.getSelectedText() === 'level' && editor.getCursorPosition().row === 5",
		Steps: []step{
			typ(on("textbox", "Cursor at row 1"), " "),
			chord(on("textbox", "Cursor at row 1"), "f", "Control"),
			fill(on("textbox", "Search for"), "level"),
			press(on("textbox", "Search for"), "Enter"),
		}},
	{App: "Ace", Name: "fold a section", Page: "/pages/ace.html", Done: "editor.session.getAllFolds().length === 1",
		// The fold widget's aria-label names it in broker mcp's outline;
		// @playwright/mcp shows it without a name.
		Steps: []step{click("button", "Toggle code folding, rows 1 through 3").pw(on("button", ""))}},

	{App: "JSONEditor", Name: "expand a field", Page: "/pages/jsoneditor.html",
		Done:  "[...document.querySelectorAll('.jsoneditor-field')].some((f) => f.textContent === 'observe')",
		Steps: []step{{Do: "click", On: nth("button", "Click to expand/collapse this field (Ctrl+E). Ctrl+Click to expand/collapse including all childs.", 1)}}},
	{App: "JSONEditor", Name: "edit a value", Page: "/pages/jsoneditor.html", Done: "editor.get().name === 'gateway'",
		Steps: []step{fill(locator{Role: "generic", Value: "broker"}, "gateway").pw(on("cell", "broker"))}},
	{App: "JSONEditor", Name: "switch to code", Page: "/pages/jsoneditor.html", Done: "editor.getMode() === 'code'",
		Steps: []step{click("button", "Tree ▾"), click("button", "Code")}},
	{App: "JSONEditor", Name: "search", Page: "/pages/jsoneditor.html",
		Done:  "document.querySelector('.jsoneditor-highlight-active').textContent === 'grace'",
		Steps: []step{fill(on("textbox", ""), "grace")}},

	{App: "reveal.js", Name: "next slide", Page: "/pages/reveal.html", Done: "Reveal.getIndices().h === 1",
		Steps: []step{click("button", "next slide")}},
	{App: "reveal.js", Name: "overview", Page: "/pages/reveal.html", Done: "Reveal.isOverview()",
		Steps: []step{chord(on("button", "next slide"), "o")}},
	{App: "reveal.js", Name: "last slide", Page: "/pages/reveal.html", Done: "Reveal.getIndices().h === 2",
		Steps: []step{press(on("button", "next slide"), "End")}},

	{App: "docsify", Name: "open a page", Page: "/pages/docsify.html",
		Done:  "location.hash === '#/feeding' && document.querySelector('.markdown-section h1').textContent.includes('Feeding guide')",
		Steps: []step{click("link", "Feeding guide")}},
	{App: "docsify", Name: "search", Page: "/pages/docsify.html",
		Done:  "[...document.querySelectorAll('.results-panel .matching-post')].some((p) => p.textContent.includes('sunflower'))",
		Steps: []step{fill(on("searchbox", "Search the handbook"), "sunflower")}},

	{App: "UIkit", Name: "open a modal", Page: "/pages/uikit.html", Done: "document.querySelector('#invite.uk-open')",
		Steps: []step{click("button", "Invite a member")}},
	{App: "UIkit", Name: "dropdown on hover", Page: "/pages/uikit.html", Done: "document.querySelector('#options.uk-open')",
		Steps: []step{{Do: "hover", On: on("button", "Options")}}},
	{App: "UIkit", Name: "switch tab", Page: "/pages/uikit.html", Done: "document.querySelector('#panels > li:nth-child(2).uk-active')",
		Steps: []step{click("tab", "Closed")}},
	{App: "UIkit", Name: "accordion", Page: "/pages/uikit.html", Done: "document.querySelector('[uk-accordion] > li.uk-open')",
		Steps: []step{click("button", "Who can see this board?")}},
	{App: "UIkit", Name: "reorder by dragging", Page: "/pages/uikit.html",
		Done:  "document.querySelector('#priorities li').textContent === 'Ship the release'",
		Steps: []step{{Do: "drag", On: on("listitem", "Ship the release"), To: &locator{Role: "listitem", Name: "Fix the login"}}}},

	{App: "GrapesJS", Name: "open the layer manager", Page: "/pages/grapesjs.html",
		Done:  "document.querySelector('.gjs-pn-btn.gjs-pn-active[title=\"Open Layer Manager\"]')",
		Steps: []step{click("", "Open Layer Manager")}},
	{App: "GrapesJS", Name: "select a component", Page: "/pages/grapesjs.html",
		Done:  "editor.getSelected() && editor.getSelected().get('tagName') === 'h1'",
		Steps: []step{click("heading", "Summer sale")}},
	{App: "GrapesJS", Name: "preview on a tablet", Page: "/pages/grapesjs.html",
		Done:  "editor.Devices.getSelected().get('id') === 'tablet'",
		Steps: []step{{Do: "select", On: on("combobox", ""), Value: "tablet"}}},
	{App: "GrapesJS", Name: "edit a heading", Page: "/pages/grapesjs.html",
		Done: "document.querySelector('.gjs-frame').contentDocument.querySelector('h1').textContent.includes('Winter')",
		Steps: []step{
			{Do: "dblclick", On: on("heading", "Summer sale")},
			// Being edited, the heading shows its text as its value in
			// broker mcp's outline.
			typ(locator{Role: "heading", Value: "Summer sale"}, "Winter").pw(on("heading", "Summer sale")),
		}},

	{App: "Chart.js", Name: "hide a series from the legend", Page: "/pages/chart.html", Done: "!chart.isDatasetVisible(0)",
		Steps: []step{{Do: "clickAt", On: on("", "Sales chart"), X: 300, Y: 16}}},

	{App: "TinyMCE", Name: "turn on bold", Page: "/pages/tinymce.html",
		Done:  "document.querySelector('button[aria-label=\"Bold\"]').getAttribute('aria-pressed') === 'true'",
		Steps: []step{click("button", "Bold")}},
	{App: "TinyMCE", Name: "write a letter", Page: "/pages/tinymce.html", Done: "tinymce.activeEditor.getContent({format: 'text'}).trim() === 'Dear Ada,'",
		Steps: []step{typ(on("generic", "Rich Text Area"), "Dear Ada,")}},
	{App: "TinyMCE", Name: "numbered list", Page: "/pages/tinymce.html",
		Done:  "tinymce.activeEditor.getContent().includes('<ol>') && tinymce.activeEditor.getContent().includes('Eggs')",
		Steps: []step{typ(on("generic", "Rich Text Area"), "Eggs"), click("button", "Numbered list")}},
}

// gaps names the tasks that cannot pass through broker mcp yet and why
// (besides those whose action kinds browser_act does not list yet, which
// gapOf finds by itself). A listed task that passes fails the test, so
// that this list stays true.
var gaps = map[string]string{}

// TestTaskTable checks the table itself: ids are unique, every gap names
// a task, every task has steps and a check.
func TestTaskTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tk := range tasks {
		if seen[tk.id()] {
			t.Errorf("two tasks are %s", tk.id())
		}
		seen[tk.id()] = true
		if len(tk.Steps) == 0 || tk.Done == "" || tk.Page == "" {
			t.Errorf("%s: no steps, check or page", tk.id())
		}
	}
	for id := range gaps {
		if !seen[id] {
			t.Errorf("gaps names %s, which is no task", id)
		}
	}
	apps := map[string]bool{}
	for _, tk := range tasks {
		apps[strings.Fields(tk.App)[0]] = true
	}
	if len(tasks) < 30 || len(apps) < 10 {
		t.Errorf("%d tasks in %d applications; the suite has at least 30 in 10", len(tasks), len(apps))
	}
}
