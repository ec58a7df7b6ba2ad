// Package journal is the broker's durable action journal. It keeps one
// fence per browser action so that an action is never dispatched twice by
// accident, and so that after any crash the broker can tell the truth about
// what may have happened.
//
// The runtime calls it for each action: [Journal.Lookup] first (an existing
// record means a retry), then [Journal.Reserve] before the provider is asked
// to dispatch (if it fails, nothing is dispatched), then [Journal.Settle]
// with the outcome (if it fails, the outcome is reported as unknown). A
// record left reserved by a crash means "it may have been dispatched"; the
// journal never replays anything.
//
// # What is stored
//
// One bbolt file, mode 0600, in a private directory. Bucket "records" maps
//
//	key   = HMAC-SHA256(secret, "key" NUL scope NUL requestID)   32 raw bytes
//	value = MAC || JSON
//	MAC   = HMAC-SHA256(secret, "record" NUL key NUL JSON)         32 raw bytes
//
// where JSON is canonical (field order fixed, nothing else accepted):
//
//	{"v":1,"hash":"…","kind":"click","state":"reserved","dispatch":"unknown","reservedAt":1767225600000000000}
//	{"v":1,"hash":"…","kind":"click","state":"settled","dispatch":"observed","outcome":"succeeded","reservedAt":…,"settledAt":…}
//
// Times are Unix nanoseconds. "hash" is the hex of the caller's payload hash
// XOR HMAC-SHA256(secret, "hash" NUL key): the file holds no digest of a
// payload that could be checked against guesses without the secret. Bucket
// "meta" holds "format" = "dsh-journal/1" and "check" =
// HMAC-SHA256(secret, "check" NUL format), which tells a changed secret
// from a tampered record. No scope, session or request ID, URL, typed value
// or payload is ever written. A request ID must not contain NUL, which keeps
// the key's MAC input unambiguous.
//
// # Durability
//
// Reserve and Settle return nil only after bbolt's commit returned nil. A
// commit writes the changed pages, fdatasyncs, writes the meta page and
// fdatasyncs again; the journal never sets NoSync or NoFreelistSync. A new
// journal is built under a temporary name, linked into place and its
// directory fsynced, so a crash never leaves a half-made journal under the
// real name. The file is locked (flock) for as long as a Journal has it
// open; a second broker on the same file waits 1 s, then reports that
// another broker holds the journal.
//
// # Retention and compaction
//
// A record is kept for at least Retention (24 h by default) after its last
// change: a settled record counts from its outcome, a reserved one from its
// reservation, so an uncertain action keeps its fence for the whole window
// too. Compaction deletes older records. It runs when the journal is
// opened, every [CompactInterval] (an hour) in [Journal.Run], and before
// Reserve returns JOURNAL_FULL. A record is removed only by compaction, so
// a fence inside its retention window is never removed, and a request ID
// becomes reusable only once its record has been compacted.
//
// # Capacity
//
// Reserve refuses with JOURNAL_FULL when, after compaction, the journal
// holds MaxEntries records (10,000) or a new record would take the records'
// bytes (keys plus values) past MaxBytes (20 MiB). Nothing live is evicted.
//
// The byte budget counts records, not the file size, on purpose. bbolt
// never shrinks its file: deleted records' pages go on its freelist and are
// reused by later writes, so the file grows to its peak of live data and
// stays there. A budget on the file size would stay "full" forever after
// one burst, and shrinking the file would need bbolt's Compact into a copy
// plus a rename, a second crash-consistency protocol for no benefit: a
// record takes 230 to 300 bytes, so the entry cap binds first (10,000
// records are under 3 MB), and the file stays within a small multiple of
// that (8 MiB for 10,000 records in the tests).
//
// # Failing closed
//
// Open checks the directory (a real directory, owned by the user, not
// writable by others) and the file (a regular file, not a symlink, owned by
// the user, no group or other permission bits, exactly one link), then
// verifies the whole file in one read transaction: its size against
// bbolt's high-water mark, its buckets, the secret, every record's MAC,
// shape and state, and bbolt's own consistency check. Any problem leaves
// the Journal unavailable: [Journal.Err] returns a [*Problem] saying what
// is wrong and what to run ("broker journal reset", which calls [Reset]),
// and Lookup, Reserve and Settle fail with JOURNAL_UNAVAILABLE. The broker
// keeps serving reads; only actions are refused.
//
// A failed read or write (an fsync error, a full disk, a closed file)
// poisons the journal the same way, until the broker is restarted and the
// file verified again: after a failed fsync nothing on disk can be trusted.
// bbolt reads through a memory map, where a damaged file faults instead of
// returning an error; the journal turns such faults into a Problem too.
//
// # Locking
//
// Writers (Reserve, Settle, Compact, Close) are serialized by a writer
// mutex held across the bbolt transaction; Lookup runs concurrently with
// them. The mutex guarding the Journal's state is a leaf: no I/O and no
// other lock is taken while it is held. The lock order is: writer mutex,
// bbolt's locks, state mutex. The journal never calls out, so callers may
// hold their own locks, but Reserve, Settle and Compact wait for the disk.
package journal
