package termtest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cvt "github.com/charmbracelet/x/vt"
	"github.com/creack/pty"

	"github.com/dsh-browser/broker/term"
	"github.com/dsh-browser/broker/term/agentsock"
	"github.com/dsh-browser/broker/term/session"
)

// OwnerConfig configures [StartOwner].
type OwnerConfig struct {
	Rows, Cols int // the person's window; default 24×80
	Session    session.Config
	Server     *agentsock.Server // the session is attached to it when set
}

// Owner is the owner's terminal (term.Run) on a real PTY. The test holds
// the PTY's master side as the person's terminal emulator would: what the
// owner sees is the master's output run through an independent emulator,
// whose answers to queries go back as a terminal's would, and typing is
// writing to the master.
type Owner struct {
	t       testing.TB
	master  *os.File
	slave   *os.File
	resized chan struct{}
	done    chan struct{}
	code    int
	err     error

	mu      sync.Mutex
	emu     *cvt.Emulator
	chunks  chan struct{} // signalled on every chunk of output
	sess    *session.Session
	ready   chan struct{}
	written int
	log     []byte // everything the person's terminal received
}

// Shell returns a bash configured the same way everywhere: no rc files,
// prompt "$ ", a private HOME.
func Shell(t testing.TB) session.Config {
	home := t.TempDir()
	return session.Config{
		Command: []string{"bash", "--norc", "--noprofile", "-i"},
		Env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color",
			"PS1=$ ", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "INPUTRC=" + filepath.Join(home, "inputrc")},
		Dir: home,
	}
}

// StartOwner runs the owner's terminal and waits for its session.
func StartOwner(t testing.TB, cfg OwnerConfig) *Owner {
	t.Helper()
	if cfg.Rows == 0 {
		cfg.Rows, cfg.Cols = 24, 80
	}
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: uint16(cfg.Rows), Cols: uint16(cfg.Cols)}); err != nil {
		t.Fatal(err)
	}
	o := &Owner{
		t: t, master: master, slave: slave,
		resized: make(chan struct{}, 1), done: make(chan struct{}),
		emu: cvt.NewEmulator(cfg.Cols, cfg.Rows), chunks: make(chan struct{}, 1),
		ready: make(chan struct{}),
	}
	go o.readMaster()
	go o.answerQueries()
	ctx, cancel := context.WithCancel(context.Background())
	rc := term.Config{
		Session: cfg.Session,
		Resized: o.resized,
		Attach: func(s *session.Session) (func(), error) {
			o.mu.Lock()
			o.sess = s
			o.mu.Unlock()
			close(o.ready)
			if cfg.Server == nil {
				return func() {}, nil
			}
			if err := cfg.Server.Attach(s); err != nil {
				return nil, err
			}
			return func() {}, nil
		},
	}
	go func() {
		o.code, o.err = term.Run(ctx, slave, rc)
		close(o.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-o.done:
		case <-time.After(Timeout):
			t.Error("the owner's terminal did not stop")
		}
		slave.Close()
		master.Close()
		// Ends answerQueries; the emulator's own Close races with its Read.
		o.emu.InputPipe().(*io.PipeWriter).Close()
	})
	select {
	case <-o.ready:
	case <-o.done:
		t.Fatalf("the owner's terminal ended at once: %v", o.err)
	case <-time.After(Timeout):
		t.Fatal("the owner's terminal did not start")
	}
	return o
}

// Session returns the owner's session.
func (o *Owner) Session() *session.Session {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sess
}

func (o *Owner) readMaster() {
	buf := make([]byte, 32<<10)
	for {
		n, err := o.master.Read(buf)
		if n > 0 {
			o.mu.Lock()
			o.emu.Write(buf[:n])
			o.written += n
			o.log = append(o.log, buf[:n]...)
			o.mu.Unlock()
			select {
			case o.chunks <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// answerQueries sends the emulator's answers (to device attribute and
// cursor queries, say) back as the person's terminal would.
func (o *Owner) answerQueries() {
	buf := make([]byte, 1024)
	for {
		n, err := o.emu.Read(buf)
		if n > 0 {
			o.master.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Type writes what the person types.
func (o *Owner) Type(s string) {
	o.t.Helper()
	if _, err := o.master.Write([]byte(s)); err != nil {
		o.t.Fatalf("type: %v", err)
	}
}

// Action presses the prefix key (Ctrl-]) and then key.
func (o *Owner) Action(key byte) {
	o.t.Helper()
	o.Type(string([]byte{term.DefaultPrefix, key}))
}

// Screen returns every row the person sees, trailing blanks trimmed.
func (o *Owner) Screen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	rows := o.emu.Height()
	out := make([]string, rows)
	for y := range rows {
		var b strings.Builder
		for x := range o.emu.Width() {
			if c := o.emu.CellAt(x, y); c != nil {
				b.WriteString(c.Content)
			}
		}
		out[y] = strings.TrimRight(b.String(), " ")
	}
	return out
}

// Cursor returns the person's cursor position and whether it is shown.
func (o *Owner) Cursor() (row, col int, visible bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.emu.CursorPosition()
	return p.Y, p.X, !o.emu.CursorHidden()
}

// AltScreen reports whether the person's terminal shows its alternate
// screen.
func (o *Owner) AltScreen() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.emu.IsAltScreen()
}

// Bar returns the last row: the owner bar.
func (o *Owner) Bar() string {
	s := o.Screen()
	return s[len(s)-1]
}

// WaitScreen waits until cond holds for the screen and returns it.
func (o *Owner) WaitScreen(what string, cond func(rows []string) bool) []string {
	o.t.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		s := o.Screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			o.t.Fatalf("waiting for %s; the screen is:\n%s", what, strings.Join(s, "\n"))
		}
		select {
		case <-o.chunks:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitText waits until the screen shows text.
func (o *Owner) WaitText(text string) []string {
	o.t.Helper()
	return o.WaitScreen(text, func(rows []string) bool { return strings.Contains(strings.Join(rows, "\n"), text) })
}

// WaitBar waits until the owner bar shows text.
func (o *Owner) WaitBar(text string) string {
	o.t.Helper()
	s := o.WaitScreen("the bar to show "+text, func(rows []string) bool { return strings.Contains(rows[len(rows)-1], text) })
	return s[len(s)-1]
}

// Received returns everything the person's terminal received so far.
func (o *Owner) Received() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]byte(nil), o.log...)
}

// Chunks is signalled (without queueing) when output reaches the person.
func (o *Owner) Chunks() <-chan struct{} { return o.chunks }

// Resize changes the person's window, as dragging its corner does.
func (o *Owner) Resize(rows, cols int) {
	o.t.Helper()
	o.mu.Lock()
	o.emu.Resize(cols, rows)
	o.mu.Unlock()
	if err := pty.Setsize(o.master, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		o.t.Fatal(err)
	}
	o.resized <- struct{}{}
}

// Wait waits for the owner's terminal to end and returns the exit code.
func (o *Owner) Wait() int {
	o.t.Helper()
	select {
	case <-o.done:
	case <-time.After(Timeout):
		o.t.Fatal("the owner's terminal did not end")
	}
	if o.err != nil {
		o.t.Fatalf("term.Run: %v", o.err)
	}
	return o.code
}
