package agentsock

// This file opens backdoors needed only by tests.

// HoldReads stops connection conn's reader before its next line until
// release is called, so that a test can put the client's close behind
// requests the server has not read yet.
func HoldReads(conn uint64) (release func()) {
	gate := make(chan struct{})
	h := func(c uint64) {
		if c == conn {
			<-gate
		}
	}
	beforeRead.Store(&h)
	return func() {
		beforeRead.Store(nil)
		close(gate)
	}
}

// QueuedAnswers returns how many answers and events wait to be written to
// connection conn.
func QueuedAnswers(s *Server, conn uint64) int {
	s.mu.Lock()
	c := s.conns[conn]
	s.mu.Unlock()
	if c == nil {
		return 0
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	return len(c.out)
}

// Connected reports whether connection conn is still open on the server.
func Connected(s *Server, conn uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[conn] != nil
}
