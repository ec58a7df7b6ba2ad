// Package activity is the owner's activity log: what every agent asked a
// browser to do, for the person who lent it their browser to read later
// (the extension's console, `broker log`).
//
// # What an entry holds
//
// One [Entry] per action an agent asked for: when, which agent (its label
// and connection), which tab and origin, the action kind, the target's
// role and accessible name (shortened to [MaxName] characters), for typed
// text only its length, for a key press the named key, then the outcome,
// the dispatch and the refusal code. It never holds page text, typed
// values, expectations or request IDs: the caller passes only these
// fields ([Action]), and control and bidirectional-formatting characters
// are replaced so that no entry can rewrite a terminal or reorder a line.
//
// # On disk
//
// One file, STATE/activity.log, of JSON lines, each one record:
//
//	{"v":1,"rec":"begin","id":7,"at":1767225600000,"agent":"python3 (pid 4242)","conn":3,"tab":"…:12","origin":"https://example.test","kind":"fill","role":"textbox","name":"Email","textLength":13}
//	{"v":1,"rec":"end","id":7,"at":1767225600040,"outcome":"succeeded","dispatch":"observed"}
//	{"v":1,"rec":"interrupted","id":8,"at":1767225700000}
//
// Times are Unix milliseconds. A begin record is written before the
// runtime records the action's intent in the journal, and synced
// (fdatasync) while the journal syncs the intent ([Log.BeginSyncing]): the
// action is dispatched only once both are on disk, so every action that
// may have happened is in the log, for one sync's time. (A crash of the
// machine between the two syncs can leave an intent the journal holds as
// reserved, never dispatched, without its begin in the log.) Concurrent
// begins share one sync, as the journal's reservations do.
// The begin of an action the journal will not hold (its fence is in memory
// only) is written without waiting for a sync ([Log.BeginUnsynced]): it
// outlives a crash of the broker, and only a crash of the machine, which
// loses the fence too, can lose it. The end record follows the journal's
// outcome and is not synced. When the log is opened, every begin without an
// end is closed with an interrupted record: the broker stopped before the
// outcome was recorded, so, as the journal says of a reserved record, the
// input may have happened ([StateInterrupted], outcome and dispatch
// "unknown"). After a crash between the journal's outcome and the end
// record, the log says "unknown" where the journal knows better: the log is
// never more certain than the journal.
//
// The file follows the journal's rules: a real directory owned by the user
// that no one else can write to; a regular file, never followed through a
// symlink (O_NOFOLLOW), owned by the user, mode 0600, exactly one link.
// A write cut short by a crash leaves at most a torn last line, which
// opening drops. A line that is not a valid record anywhere else means the
// file was changed outside the broker: opening moves the file aside
// (activity.log.broken-TIME, never deleting it) and rewrites the valid
// entries into a new one.
//
// # Bounds
//
// At most [Options.MaxEntries] entries (10,000) are kept, none older than
// [Options.MaxAge] (7 days): the oldest finished entries go first; an
// entry still running is never dropped. The file is rewritten (a temporary
// file, synced, renamed into place, its directory synced) when it holds
// four times as many lines as the bound allows entries, when it is opened
// with dropped or damaged lines, and by [Log.Run] hourly, so it stays
// within a few MiB (a record is at most [MaxLine] bytes, usually ~250).
//
// # Failing soft
//
// Unlike the journal, the log is not a fence: a log that cannot be opened
// or written does not stop actions. It becomes unavailable,
// [Log.Status] says why and what to do, and the broker keeps serving.
package activity
