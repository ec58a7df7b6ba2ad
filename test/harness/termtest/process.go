package termtest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Process is a program (`broker term`) running in a real PTY whose other
// end the test holds as the person's terminal.
type Process struct {
	*Terminal
	Cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// StartProcess runs bin with args on tm, as the session leader with tm as
// its controlling terminal (as a shell in a terminal emulator would run
// it), with env and dir. It is killed when the test ends.
func StartProcess(t testing.TB, tm *Terminal, bin string, env []string, dir string, args ...string) *Process {
	t.Helper()
	p := &Process{Terminal: tm, exited: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env, p.Cmd.Dir = env, dir
	p.Cmd.Stdin, p.Cmd.Stdout, p.Cmd.Stderr = p.Slave, p.Slave, p.Slave
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// Wait waits for the program to exit and returns its exit code.
func (p *Process) Wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(Timeout):
		p.t.Fatalf("the program did not exit; the screen is:\n%v", p.Screen())
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatalf("wait: %v", p.err)
	}
	return 0
}
