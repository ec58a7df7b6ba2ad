package activity

// This file opens backdoors needed only by tests.

// HoldSync makes the log look busy syncing until release is closed: the
// Begins meanwhile wait, and the first of them to go on then syncs for all.
func HoldSync(l *Log) (release chan struct{}) {
	release = make(chan struct{})
	l.smu.Lock()
	l.syncing = true
	l.smu.Unlock()
	go func() {
		<-release
		l.smu.Lock()
		l.syncing = false
		l.scond.Broadcast()
		l.smu.Unlock()
	}()
	return release
}

// Syncs is how many times the log's file was synced, and Written how many
// records were appended to it.
func Syncs(l *Log) (syncs int, written uint64) {
	l.smu.Lock()
	defer l.smu.Unlock()
	return l.syncs, l.written
}
