// Package term is the owner's terminal, `broker term`: it runs a shell (or
// a command) in a PTY inside the terminal the person is using, as a
// [session.Session] the person may share with agents.
//
// Input and output pass through unchanged, with two exceptions that keep
// the last row for the owner bar: the program gets one row less, and a
// scroll region it sets is clamped to its rows (see outFilter). The bar is
// drawn only between whole sequences of the program's output, and
// everything the program relies on (cursor, pending wrap, pen, character
// sets, modes) is put back after it, so the program's screen is never
// corrupted. Window resizes are followed; after one the program's grid is
// repainted from the session's screen, since terminals move text
// differently on a resize.
//
// # Owner actions
//
// The prefix key (Ctrl-] unless configured) opens the owner's actions; the
// next key chooses: s share / stop sharing, y yes and n no to the question
// the bar shows (admit or deny a program asking to use the broker or an
// agent, let it participate, grant or refuse control, accept or reject a proposal, approve or reject a command,
// run or cancel a scheduled Enter, acknowledge attention), m switch
// co-pilot / autopilot, t take control back, the prefix key again sends it
// to the program. Any other key closes the menu. Typing anything else
// takes control back from an agent.
package term

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-browser/broker/term/session"
	"github.com/dsh-browser/broker/term/vt"
)

// DefaultPrefix is Ctrl-].
const DefaultPrefix = 0x1d

// Config configures [Run].
type Config struct {
	// Session configures the session; its Rows, Cols and Output are set by
	// Run. ID defaults to "t1".
	Session session.Config
	// Attach registers the session with the agent socket (nil: the
	// session stays local). The returned function detaches it.
	Attach func(*session.Session) (detach func(), err error)
	// Prefix is the key that opens the owner's actions; 0 for Ctrl-].
	Prefix byte
	// Resized signals a window size change; nil to listen for SIGWINCH.
	Resized <-chan struct{}
	Logger  *slog.Logger
}

// ErrNotTerminal is returned when Run is given something that is not a
// terminal.
var ErrNotTerminal = errors.New("term: not a terminal")

// runner is one running owner's terminal.
type runner struct {
	tty    *os.File
	sess   *session.Session
	prefix byte
	log    *slog.Logger

	mu    sync.Mutex // guards the owner's terminal's output and the fields below
	tap   barTap     // also guarded by the session's output lock
	rows  int
	cols  int
	barOn bool // the last row is the owner bar
	menu  bool // the prefix key was pressed
	dirty bool // the bar must be drawn when the output is next between sequences
	buf   []byte
}

// Run runs the owner's terminal on tty until the program exits or ctx is
// done, and returns the program's exit status. tty is left as it was
// found.
func Run(ctx context.Context, tty *os.File, cfg Config) (int, error) {
	// The descriptor is reached through SyscallConn: tty.Fd would put it
	// back in blocking mode, and reads could no longer be interrupted.
	raw, err := tty.SyscallConn()
	if err != nil {
		return 1, fmt.Errorf("%w: %v", ErrNotTerminal, err)
	}
	ioctl := func(f func(fd int) error) error {
		var ferr error
		if err := raw.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
			return err
		}
		return ferr
	}
	var saved *unix.Termios
	var ws *unix.Winsize
	if err := ioctl(func(fd int) (err error) {
		if saved, err = unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			return err
		}
		ws, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		return err
	}); err != nil {
		return 1, fmt.Errorf("%w: %v", ErrNotTerminal, err)
	}
	if err := ioctl(func(fd int) error { return makeRaw(fd, saved) }); err != nil {
		return 1, err
	}
	defer ioctl(func(fd int) error { return unix.IoctlSetTermios(fd, unix.TCSETS, saved) })

	r := &runner{tty: tty, prefix: cfg.Prefix, log: cfg.Logger}
	if r.prefix == 0 {
		r.prefix = DefaultPrefix
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.setSize(int(ws.Row), int(ws.Col))

	sc := cfg.Session
	if sc.ID == "" {
		sc.ID = "t1"
	}
	sc.Rows, sc.Cols = r.innerRows(), r.cols
	sc.Output = r.output
	sc.Tap = &r.tap
	if sc.Logger == nil {
		sc.Logger = r.log
	}
	// Push what the terminal showed into its scrollback and start blank:
	// the program's grid starts blank too.
	r.write(fmt.Appendf(nil, "\x1b[%d;1H%s\x1b[H\x1b[2J", r.rows, strings.Repeat("\n", r.rows)))
	r.mu.Lock()
	r.tap.region, r.dirty = true, true
	r.mu.Unlock()

	sess, err := session.Start(sc)
	if err != nil {
		r.restore()
		return 1, err
	}
	r.mu.Lock()
	r.sess = sess
	r.mu.Unlock()
	r.drawBar()
	if cfg.Attach != nil {
		detach, err := cfg.Attach(sess)
		if err != nil {
			sess.Close()
			r.restore()
			return 1, err
		}
		defer detach()
	}

	resized := cfg.Resized
	if resized == nil {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGWINCH)
		defer signal.Stop(sig)
		ch := make(chan struct{}, 1)
		go func() {
			for range sig {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}()
		resized = ch
	}
	inputDone := make(chan struct{})
	go r.inputLoop(inputDone)

	for done := false; !done; {
		select {
		case <-sess.Done():
			done = true
		case <-ctx.Done():
			sess.Close()
			done = true
		case <-sess.Changed():
			r.drawBar()
		case <-resized:
			var ws *unix.Winsize
			if ioctl(func(fd int) (err error) { ws, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); return err }) == nil {
				r.resize(int(ws.Row), int(ws.Col))
			}
		}
	}
	sess.Close()
	tty.SetReadDeadline(time.Now()) // stop the input loop (where the tty supports it)
	select {
	case <-inputDone:
	case <-time.After(100 * time.Millisecond):
	}
	r.restore()
	return sess.ExitCode(), nil
}

// makeRaw puts the terminal in raw mode, as cfmakeraw does: every byte the
// person types goes to the program, which has its own terminal for the
// line discipline.
func makeRaw(fd int, t *unix.Termios) error {
	raw := *t
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, &raw)
}

func (r *runner) setSize(rows, cols int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows, r.cols = max(rows, 1), max(cols, 1)
	r.barOn = r.rows >= 3
}

func (r *runner) innerRows() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.innerRowsLocked()
}

func (r *runner) innerRowsLocked() int {
	if r.barOn {
		return r.rows - 1
	}
	return r.rows
}

// write sends bytes to the owner's terminal.
func (r *runner) write(b []byte) {
	for len(b) > 0 {
		n, err := r.tty.Write(b)
		if err != nil {
			return
		}
		b = b[n:]
	}
}

// output is the session's Output: the program's output on its way to the
// owner's terminal (through the tap), with the bar drawn again when it
// needs to be and the output is between sequences.
func (r *runner) output(chunk []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tap.clobbered || r.tap.region {
		r.dirty = true
	}
	if r.dirty && r.barOn && r.sess != nil {
		if d := r.sess.DrawState(); d.Between {
			r.buf = append(append(r.buf[:0], chunk...), r.barLocked(d)...)
			r.write(r.buf)
			return
		}
	}
	r.write(chunk)
}

// barLocked returns the bar's drawing sequence and marks it drawn.
func (r *runner) barLocked(d vt.DrawState) []byte {
	seq := barSequence(d, r.rows, barText(r.sess.Bar(), r.menu, prefixName(r.prefix), r.cols), r.tap.region)
	r.dirty, r.tap.clobbered, r.tap.region = false, false, false
	return seq
}

// drawBar draws the bar now, between two chunks of output.
func (r *runner) drawBar() {
	if r.sess == nil {
		return
	}
	r.sess.Quiesce(func(d vt.DrawState) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.dirty = true
		if r.barOn && d.Between {
			r.write(r.barLocked(d))
		}
	})
}

// resize follows a change of the owner's window: the program gets the new
// size less the bar, and its grid is repainted.
func (r *runner) resize(rows, cols int) {
	r.sess.Quiesce(func(vt.DrawState) {
		r.setSize(rows, cols)
		if err := r.sess.Resize(r.innerRows(), r.cols); err != nil {
			r.log.Warn("resizing the terminal failed", "err", err)
		}
		d := r.sess.DrawState()
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.barOn {
			r.write([]byte("\x1b[r"))
			return
		}
		r.write(repaint(r.sess.Cell, d, r.rows, r.cols, barText(r.sess.Bar(), r.menu, prefixName(r.prefix), r.cols)))
		r.dirty, r.tap.clobbered, r.tap.region = false, false, false
	})
}

// restore gives the terminal back: no scroll region, no bar, the cursor
// below the program's last row.
func (r *runner) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	row := r.rows
	if r.sess != nil {
		d := r.sess.DrawState()
		row = d.Row + 1
	}
	r.write(fmt.Appendf(nil, "\x1b[0m\x1b[r\x1b[%d;1H\x1b[2K\x1b[%d;1H\r\n", r.rows, min(row, r.rows)))
}

// inputLoop reads what the person types.
func (r *runner) inputLoop(done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 4096)
	for {
		n, err := r.tty.Read(buf)
		if n > 0 {
			r.input(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// input handles the person's bytes: the prefix key and the action after
// it, everything else to the program.
func (r *runner) input(p []byte) {
	for len(p) > 0 {
		r.mu.Lock()
		menu := r.menu
		r.mu.Unlock()
		if menu {
			r.setMenu(false)
			r.action(p[0])
			p = p[1:]
			continue
		}
		i := bytes.IndexByte(p, r.prefix)
		if i < 0 {
			r.forward(p)
			return
		}
		r.forward(p[:i])
		r.setMenu(true)
		p = p[i+1:]
	}
}

func (r *runner) setMenu(on bool) {
	r.mu.Lock()
	r.menu = on
	r.mu.Unlock()
	r.drawBar()
}

func (r *runner) forward(p []byte) {
	if len(p) == 0 {
		return
	}
	var err error
	if isReport(p) {
		err = r.sess.OwnerReport(p)
	} else {
		err = r.sess.OwnerInput(p)
	}
	if err != nil {
		r.log.Debug("writing input to the program failed", "err", err)
	}
}

// action runs the owner action chosen after the prefix key.
func (r *runner) action(b byte) {
	switch b {
	case 's', 'S':
		r.sess.Share(!r.sess.Bar().Shared)
	case 'y', 'Y':
		r.sess.Answer(true)
	case 'n', 'N':
		r.sess.Answer(false)
	case 'm', 'M':
		r.sess.ToggleMode()
	case 't', 'T':
		r.sess.TakeControl()
	case r.prefix:
		r.forward([]byte{r.prefix})
	}
	r.drawBar()
}

// prefixName names the prefix key as the bar shows it.
func prefixName(b byte) string {
	if b < 0x20 {
		return "^" + string(rune(b+'@'))
	}
	return string(rune(b))
}
