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
// # Files
//
// A journal is three files in one private directory, each mode 0600: the
// database (STATE/journal.db, bbolt), its key ([KeyPath], journal.key) and
// its write-ahead log ([WALPath], journal.wal). [Open] takes the path of
// the database.
//
// The database's bucket "records" maps
//
//	key   = HMAC-SHA256(secret, "key" NUL scope NUL requestID)   32 raw bytes
//	value = MAC || JSON
//	MAC   = HMAC-SHA256(secret, "record" NUL key NUL JSON)         32 raw bytes
//
// where secret is the journal's key and JSON is canonical (field order
// fixed, nothing else accepted):
//
//	{"v":1,"hash":"…","kind":"click","state":"reserved","dispatch":"unknown","reservedAt":1767225600000000000}
//	{"v":1,"hash":"…","kind":"click","state":"settled","dispatch":"observed","outcome":"succeeded","reservedAt":…,"settledAt":…}
//
// Times are Unix nanoseconds. "hash" is the hex of the caller's payload hash
// XOR HMAC-SHA256(secret, "hash" NUL key): the files hold no digest of a
// payload that could be checked against guesses without the secret. Bucket
// "meta" holds "format" = "dsh-journal/2", "check" =
// HMAC-SHA256(secret, "check" NUL format), which tells a changed key from a
// tampered record, "wal" (the log's current generation and size, sealed
// with a MAC) and, for a while after a migration, "legacy" (below). No
// scope, session or request ID, URL, typed value or payload is ever
// written, to any of the files. A request ID must not contain NUL, which
// keeps the key's MAC input unambiguous.
//
// # Keys and migration
//
// The key is 32 random bytes in its own file beside the database, made
// with the journal and checked as the database is (below). It lives with
// the journal so that nothing outside the state directory is needed to
// verify it: a new runtime directory or auth token (a reboot, a logout,
// a second broker on the same state directory) changes nothing. A new
// journal is made in an order a crash cannot break: the key, then the
// log, each written under a temporary name, synced, linked into place and
// its directory synced, and only then the database, built the same way.
// A crash part way leaves a key or a log without a database, which the
// next Open uses; never a database without its key. A database whose key
// file is missing, foreign or different is refused (JOURNAL_UNAVAILABLE),
// never replaced.
//
// The first format ("dsh-journal/1") was keyed by the broker's auth
// token, which lives in the runtime directory and is gone after a reboot.
// Open handles such a file by what it can verify:
//
//   - If it verifies under [Options.LegacySecret] (the broker passes its
//     current token), it is migrated in one bbolt transaction, after the
//     key and the log are durable: every record is resealed under the
//     key, and "legacy" records the token's check value and the time. A
//     record's database key is a MAC of its action's identity under the
//     token and cannot be recomputed without it, so those records keep
//     their database keys and are found (Lookup, Reserve) only while the
//     broker runs with that token, and are compacted after Retention like
//     any other; "legacy" goes with them. No fence is lost by the
//     migration itself.
//   - If that secret is not the one it was written with (or there is
//     none), its records cannot be verified and are never trusted: the file
//     is moved aside to journal.db.legacy-<time> (kept, not deleted), a
//     new journal is started, and the Notice of [Status] and the log say
//     so. Retries of actions recorded only there are no longer recognized
//     (after a reboot or a logout, the clients that could send them are
//     gone too).
//   - A file of the first format that fails its checks under its own
//     token is damaged, and refused as below.
//
// # Durability
//
// Reserve returns nil only once the reservation is on disk; Settle once
// the outcome is written (in the page cache, where a SIGKILL cannot lose
// it), without waiting for a sync. A power failure can therefore lose the
// outcomes written since the last sync, which leaves those records
// reserved: "it may have been dispatched", still true. Nothing can lose a
// reservation Reserve acknowledged, so nothing ever reports "not
// dispatched" for an action that was.
//
// Writes go to the write-ahead log first, as a group commit that keeps
// writes and syncs apart. A write appends one frame to the log (one
// pwrite, under a lock) and never waits for a sync; a reservation then
// waits until a sync that started after its write has finished: the one
// in progress, if it started in time, or the next, which it starts itself
// unless another waiter already has. One sync covers every frame written
// before it started, so concurrent reservations share syncs, with no
// timer and no delay for a lone writer, and an outcome costs a write only.
// A durable action costs one fdatasync on its critical path, its
// reservation's; its outcome rides on the next sync. Frames are only
// appended, so a frame written while a sync is in progress cannot disturb
// the frames that sync covers. The log is zero-filled to its fixed size
// (1 MiB) when it is made, so a frame's fdatasync writes data only, never
// the file's size or blocks. A frame is
//
//	"DJW1" | generation | sequence | last synced sequence | count | length | entries | MAC | zero padding
//
// with the MAC (HMAC-SHA256 under the key) over all but the padding, and
// the padding up to a 512-byte sector; an entry is a record's database
// key and value as above. Lookup reads an index of every record that the
// journal keeps in memory (10,000 records at most) and never touches the
// disk.
//
// When the log is full, on Compact, on Close and at Open, a checkpoint
// writes every record the log holds to the database in one bbolt
// transaction (bbolt's commit: pages, fdatasync, meta page, fdatasync;
// NoSync and NoFreelistSync stay off), and in the same transaction
// advances the log's generation, which makes its frames obsolete: a crash
// before the commit replays the log as it was, after it ignores it. Open
// replays the frames of the current generation in order, then
// checkpoints. The only frames a crash can leave torn are those written
// after the last sync, whose reservations were never acknowledged: replay
// stops at the first frame that does not verify, and drops the rest.
//
// The database is locked (flock) for as long as a Journal has it open;
// the key and the log are used only under that lock. A second broker on
// the same files waits 1 s, then reports that another broker holds the
// journal.
//
// # Retention and compaction
//
// A record is kept for at least Retention (24 h by default) after its last
// change: a settled record counts from its outcome, a reserved one from its
// reservation, so an uncertain action keeps its fence for the whole window
// too. Compaction deletes older records. It runs when the journal is
// opened, every [CompactInterval] (an hour) in [Journal.Run], and before
// Reserve returns JOURNAL_FULL, and returns once the deletion is
// committed. A record is removed only by compaction, so a fence inside its
// retention window is never removed, and a request ID becomes reusable
// only once its record has been compacted.
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
// writable by others) and each of the three files (a regular file, not a
// symlink, opened without following one, owned by the user, no group or
// other permission bits, exactly one link; the key exactly 32 bytes; the
// log the size the database recorded), then verifies the database in one
// read transaction: its size against bbolt's high-water mark, its
// buckets, the key, every record's MAC, shape and state, and bbolt's own
// consistency check; then replays the log, where every entry must verify
// and continue the records legally (a reservation of a new action, an
// outcome of a reserved one). A frame that fails to verify though a later
// frame says it had been synced is damage, not a torn tail. Any problem
// leaves the Journal unavailable: [Journal.Err] returns a [*Problem] saying
// what is wrong and what to run ("broker journal reset", which calls
// [Reset] and moves all three files aside), and Lookup, Reserve and Settle
// fail with JOURNAL_UNAVAILABLE. The broker keeps serving reads; only
// actions are refused.
//
// Damage to the log's last synced frames, with nothing written after
// them, looks like a torn tail and cannot be told from one; nor can a
// whole journal replaced by an older copy of itself. Someone who can
// write the user's files can do worse, and the key is readable to them
// too: the MACs protect against mistakes and other users' files, not
// against the user's own account.
//
// A failed write or sync (an fsync error, a full disk, a closed file)
// poisons the journal the same way, until the broker is restarted and the
// files verified again: after a failed fsync nothing on disk can be
// trusted. bbolt reads through a memory map, where a damaged file faults
// instead of returning an error; the journal turns such faults into a
// Problem too.
//
// # Locking
//
// One mutex serializes the writes to the files (appending a frame, a
// checkpoint, closing); another guards the sync state, and a sync runs
// under neither. The mutex guarding the index and the Journal's state is a
// leaf: no I/O and no other lock is taken while it is held. The lock order
// is: write mutex, sync mutex, state mutex. Reserve checks for a duplicate
// and inserts its record into the index in one step under the state
// mutex, so of two concurrent reservations of one action exactly one is
// recorded; a Lookup sees a reservation from then on, before it is
// synced, which says "it may have been dispatched", as it must. The
// journal never calls out, so callers may hold their own locks, but
// Reserve, Settle and Compact wait for the disk.
package journal
