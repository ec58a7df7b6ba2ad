package termtest

import (
	"bytes"
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

// Terminal is the person's terminal emulator on the master side of a real
// PTY: what the person sees is the master's output run through an
// independent emulator (charmbracelet/x/vt), whose answers to queries go
// back as a terminal's would; typing is writing to the master.
type Terminal struct {
	t      testing.TB
	Master *os.File
	Slave  *os.File

	mu     sync.Mutex
	emu    *cvt.Emulator
	chunks chan struct{} // signalled on every chunk of output
	log    []byte        // everything the terminal received
}

// NewTerminal opens a PTY of the given size with an emulator on its master.
func NewTerminal(t testing.TB, rows, cols int) *Terminal {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		t.Fatal(err)
	}
	tm := &Terminal{t: t, Master: master, Slave: slave, emu: cvt.NewEmulator(cols, rows), chunks: make(chan struct{}, 1)}
	go tm.readMaster()
	go tm.answerQueries()
	t.Cleanup(func() {
		slave.Close()
		master.Close()
		// Ends answerQueries; the emulator's own Close races with its Read.
		tm.emu.InputPipe().(*io.PipeWriter).Close()
	})
	return tm
}

// Owner is the owner's terminal (term.Run) on a [Terminal].
type Owner struct {
	*Terminal
	resized chan struct{}
	done    chan struct{}
	code    int
	err     error

	mu    sync.Mutex
	sess  *session.Session
	ready chan struct{}
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
	o := &Owner{
		Terminal: NewTerminal(t, cfg.Rows, cfg.Cols),
		resized:  make(chan struct{}, 1), done: make(chan struct{}),
		ready: make(chan struct{}),
	}
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
		o.code, o.err = term.Run(ctx, o.Slave, rc)
		close(o.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-o.done:
		case <-time.After(Timeout):
			t.Error("the owner's terminal did not stop")
		}
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

func (o *Terminal) readMaster() {
	buf := make([]byte, 32<<10)
	for {
		n, err := o.Master.Read(buf)
		if n > 0 {
			o.mu.Lock()
			o.emu.Write(buf[:n])
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
func (o *Terminal) answerQueries() {
	buf := make([]byte, 1024)
	for {
		n, err := o.emu.Read(buf)
		if n > 0 {
			o.Master.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Type writes what the person types.
func (o *Terminal) Type(s string) {
	o.t.Helper()
	if _, err := o.Master.Write([]byte(s)); err != nil {
		o.t.Fatalf("type: %v", err)
	}
}

// Action presses the prefix key (Ctrl-]) and then key.
func (o *Terminal) Action(key byte) {
	o.t.Helper()
	o.Type(string([]byte{term.DefaultPrefix, key}))
}

// Screen returns every row the person sees, trailing blanks trimmed.
func (o *Terminal) Screen() []string {
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
func (o *Terminal) Cursor() (row, col int, visible bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.emu.CursorPosition()
	return p.Y, p.X, !o.emu.CursorHidden()
}

// AltScreen reports whether the person's terminal shows its alternate
// screen.
func (o *Terminal) AltScreen() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.emu.IsAltScreen()
}

// Bar returns the last row: the owner bar.
func (o *Terminal) Bar() string {
	s := o.Screen()
	return s[len(s)-1]
}

// WaitScreen waits until cond holds for the screen and returns it.
func (o *Terminal) WaitScreen(what string, cond func(rows []string) bool) []string {
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
func (o *Terminal) WaitText(text string) []string {
	o.t.Helper()
	return o.WaitScreen(text, func(rows []string) bool { return strings.Contains(strings.Join(rows, "\n"), text) })
}

// WaitBar waits until the owner bar shows text.
func (o *Terminal) WaitBar(text string) string {
	o.t.Helper()
	s := o.WaitScreen("the bar to show "+text, func(rows []string) bool { return strings.Contains(rows[len(rows)-1], text) })
	return s[len(s)-1]
}

// Received returns everything the person's terminal received so far.
func (o *Terminal) Received() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]byte(nil), o.log...)
}

// Len returns how many bytes the person's terminal has received.
func (o *Terminal) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.log)
}

// ReceivedSince reports whether the terminal received b after the first off bytes.
func (o *Terminal) ReceivedSince(off int, b byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return off <= len(o.log) && bytes.IndexByte(o.log[off:], b) >= 0
}

// Chunks is signalled (without queueing) when output reaches the person.
func (o *Terminal) Chunks() <-chan struct{} { return o.chunks }

// Resize changes the person's window, as dragging its corner does (the
// kernel signals the PTY's foreground process).
func (o *Terminal) Resize(rows, cols int) {
	o.t.Helper()
	o.mu.Lock()
	o.emu.Resize(cols, rows)
	o.mu.Unlock()
	if err := pty.Setsize(o.Master, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		o.t.Fatal(err)
	}
}

// Resize changes the person's window and tells the owner's terminal, which
// runs in the test process and gets no SIGWINCH.
func (o *Owner) Resize(rows, cols int) {
	o.t.Helper()
	o.Terminal.Resize(rows, cols)
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
