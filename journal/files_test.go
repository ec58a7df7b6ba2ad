package journal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dsh-browser/broker/journal"
)

// TestFilesCreated: a new journal is three private files, and its key is
// 32 bytes that stay the same from one open to the next.
func TestFilesCreated(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	key := bytes.Clone(j.Key())
	mustReserve(t, j, "r", "p")
	j.Close()
	for name, size := range map[string]int64{journal.KeyPath(path): 32, journal.WALPath(path): journal.DefaultWALSize, path: -1} {
		fi, err := os.Lstat(name)
		must(t, err)
		if fi.Mode() != 0o600 || size >= 0 && fi.Size() != size {
			t.Errorf("%s: mode %v, %d bytes; want 0600, %d bytes", name, fi.Mode(), fi.Size(), size)
		}
	}
	if filepath.Base(journal.KeyPath("/s/journal.db")) != "journal.key" || filepath.Base(journal.WALPath("/s/journal.db")) != "journal.wal" {
		t.Error("the key and log are not journal.key and journal.wal beside journal.db")
	}
	j = MustOpen(t, path, journal.Options{})
	if !bytes.Equal(j.Key(), key) || mustLookup(t, j, "r") == nil {
		t.Fatal("the reopened journal has another key or lost its record")
	}
}

// TestNewTokenChangesNothing: the journal's key lives with it, so a new
// auth token (a reboot made the runtime directory anew) changes nothing.
func TestNewTokenChangesNothing(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{LegacySecret: []byte("token one")})
	mustReserve(t, j, "done", "p")
	mustSettle(t, j, "done", journal.OutcomeSucceeded, journal.DispatchObserved)
	mustReserve(t, j, "uncertain", "p")
	j.Close()

	j = MustOpen(t, path, journal.Options{LegacySecret: []byte("token two")})
	if rec := mustLookup(t, j, "done"); rec == nil || rec.State != journal.StateSettled {
		t.Fatalf("settled record after a token change: %+v", rec)
	}
	if rec := mustLookup(t, j, "uncertain"); rec == nil || rec.State != journal.StateReserved {
		t.Fatalf("reserved record after a token change: %+v", rec)
	}
	if st := j.Status(); st.Notice != "" {
		t.Fatalf("notice %q", st.Notice)
	}
	mustReserve(t, j, "after", "p")
}

// TestKeyBeforeJournal: a crash after the key (and the log) were made but
// before the journal was linked into place leaves them behind; the next
// open makes the journal with that key. Frames a deleted journal left in
// the log are not replayed into the new one.
func TestKeyBeforeJournal(t *testing.T) {
	path := journalPath(t)
	j := MustOpen(t, path, journal.Options{})
	key := bytes.Clone(j.Key())
	mustReserve(t, j, "old", "p")
	journal.Abandon(j) // the log holds the reservation
	must(t, os.Remove(path))

	j = MustOpen(t, path, journal.Options{})
	if !bytes.Equal(j.Key(), key) {
		t.Fatal("the key was made anew")
	}
	if mustLookup(t, j, "old") != nil || j.Status().Entries != 0 {
		t.Fatal("a frame of a deleted journal was replayed into a new one")
	}
}

// TestKeyRefused: the key file gets the journal file's checks, and a
// missing key is never replaced while its journal exists.
func TestKeyRefused(t *testing.T) {
	for _, tc := range []struct {
		name, reason, fix string
		break_            func(t *testing.T, key string)
	}{
		{"missing", "is missing", "broker journal reset", func(t *testing.T, key string) { must(t, os.Remove(key)) }},
		{"symlink", "symbolic link", "broker journal reset", func(t *testing.T, key string) {
			must(t, os.Rename(key, key+".real"))
			must(t, os.Symlink(key+".real", key))
		}},
		{"mode 0640", "has mode 0640", "chmod 600", func(t *testing.T, key string) { must(t, os.Chmod(key, 0o640)) }},
		{"hard link", "2 hard links", "broker journal reset", func(t *testing.T, key string) { must(t, os.Link(key, key+".other")) }},
		{"wrong size", "has 31 bytes", "broker journal reset", func(t *testing.T, key string) { must(t, os.Truncate(key, 31)) }},
		{"directory", "not a regular file", "broker journal reset", func(t *testing.T, key string) {
			must(t, os.Remove(key))
			must(t, os.Mkdir(key, 0o700))
		}},
		{"foreign owner", "owned by uid 4242", "broker journal reset", func(t *testing.T, key string) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			must(t, os.Chown(key, 4242, 4242))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := journalPath(t)
			makeJournal(t, path)
			tc.break_(t, journal.KeyPath(path))
			j := journal.Open(path, journal.Options{})
			defer j.Close()
			assertUnavailable(t, j, tc.reason, tc.fix)
			if !strings.Contains(j.Err().Reason, "the journal's key") {
				t.Errorf("reason %q does not name the key", j.Err().Reason)
			}
		})
	}
}

// TestWALRefused: the log gets the same checks, and its size is the one
// the journal recorded.
func TestWALRefused(t *testing.T) {
	for _, tc := range []struct {
		name, reason, fix string
		break_            func(t *testing.T, wal string)
	}{
		{"missing", "is missing", "broker journal reset", func(t *testing.T, wal string) { must(t, os.Remove(wal)) }},
		{"symlink", "symbolic link", "broker journal reset", func(t *testing.T, wal string) {
			must(t, os.Rename(wal, wal+".real"))
			must(t, os.Symlink(wal+".real", wal))
		}},
		{"mode 0604", "has mode 0604", "chmod 600", func(t *testing.T, wal string) { must(t, os.Chmod(wal, 0o604)) }},
		{"hard link", "2 hard links", "broker journal reset", func(t *testing.T, wal string) { must(t, os.Link(wal, wal+".other")) }},
		{"truncated", "has 524288 bytes, where the journal recorded 1048576", "broker journal reset", func(t *testing.T, wal string) {
			must(t, os.Truncate(wal, journal.DefaultWALSize/2))
		}},
		{"not whole sectors", "it is not a journal log", "broker journal reset", func(t *testing.T, wal string) {
			must(t, os.Truncate(wal, journal.DefaultWALSize-1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := journalPath(t)
			makeJournal(t, path)
			tc.break_(t, journal.WALPath(path))
			j := journal.Open(path, journal.Options{})
			defer j.Close()
			assertUnavailable(t, j, tc.reason, tc.fix)
			if !strings.Contains(j.Err().Reason, "write-ahead log") {
				t.Errorf("reason %q does not name the log", j.Err().Reason)
			}
		})
	}
}

// legacyRecord is a record for writeLegacy.
type legacyRecord struct {
	id, state string
	at        time.Time
}

// writeLegacy writes a journal of the first format at path, keyed by
// token, as the broker wrote it before journals had their own key.
func writeLegacy(t *testing.T, path string, token []byte, recs ...legacyRecord) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucket([]byte("records"))
		meta, _ := tx.CreateBucket([]byte("meta"))
		meta.Put([]byte("format"), []byte(journal.LegacyFormat))
		meta.Put([]byte("check"), journal.CheckValue(token, journal.LegacyFormat))
		for _, r := range recs {
			k := journal.DBKey(token, key(r.id))
			rec := journal.Record{Hash: hashOf(r.id), Kind: "click", State: journal.StateReserved, Dispatch: journal.DispatchUnknown, ReservedAt: r.at}
			if r.state == journal.StateSettled {
				rec.State, rec.Dispatch, rec.Outcome, rec.SettledAt = r.state, journal.DispatchObserved, journal.OutcomeSucceeded, r.at.Add(time.Second)
			}
			v, err := journal.EncodeValue(token, k, &rec)
			if err != nil {
				return err
			}
			if err := b.Put(k, v); err != nil {
				return err
			}
		}
		return nil
	}))
	must(t, db.Close())
}

// fileFormat reads the format a closed journal file says it has.
func fileFormat(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	must(t, err)
	defer db.Close()
	var f string
	db.View(func(tx *bolt.Tx) error { f = string(tx.Bucket([]byte("meta")).Get([]byte("format"))); return nil })
	return f
}

// TestMigrate: a journal keyed by the auth token, opened with that token,
// is rewritten under its own key and keeps every fence; its old records
// are found for as long as the token stays and are compacted after the
// retention like any other.
func TestMigrate(t *testing.T) {
	clk := newClock()
	path := journalPath(t)
	token := []byte("the old auth token")
	writeLegacy(t, path, token,
		legacyRecord{"done", journal.StateSettled, clk.Now()},
		legacyRecord{"uncertain", journal.StateReserved, clk.Now()})
	opts := journal.Options{LegacySecret: token, Now: clk.Now, Retention: time.Hour}

	j := MustOpen(t, path, opts)
	if st := j.Status(); st.Entries != 2 || st.Reserved != 1 || st.Notice != "" {
		t.Fatalf("status after migration: %+v", st)
	}
	check := func(j *journal.Journal) {
		t.Helper()
		if rec := mustLookup(t, j, "done"); rec == nil || rec.State != journal.StateSettled || rec.Outcome != journal.OutcomeSucceeded {
			t.Fatalf("migrated settled record: %+v", rec)
		}
		if rec := mustLookup(t, j, "uncertain"); rec == nil || rec.State != journal.StateReserved {
			t.Fatalf("migrated reserved record: %+v", rec)
		}
		if _, ok := errors.AsType[*journal.DuplicateError](j.Reserve(key("uncertain"), hashOf("uncertain"), "click")); !ok {
			t.Fatal("a retry of a migrated reservation is not a duplicate")
		}
	}
	check(j)
	mustReserve(t, j, "new", "p")
	j.Close()
	if f := fileFormat(t, path); f != "dsh-journal/2" {
		t.Fatalf("format after migration: %q", f)
	}
	j = MustOpen(t, path, opts)
	check(j)
	j.Close()

	// Once the token is gone the migrated records can no longer be found,
	// but the journal is available and keeps the rest.
	opts.LegacySecret = []byte("a new token")
	j = MustOpen(t, path, opts)
	if mustLookup(t, j, "done") != nil || mustLookup(t, j, "new") == nil || j.Status().Entries != 3 {
		t.Fatalf("after the token changed: %+v", j.Status())
	}
	j.Close()

	// After the retention they are compacted, with the migration's trace.
	clk.Advance(2 * time.Hour)
	j = MustOpen(t, path, opts)
	if st := j.Status(); st.Entries != 0 {
		t.Fatalf("after retention: %+v", st)
	}
}

// TestLegacySetAside: a journal keyed by a token the broker no longer has
// cannot be verified: it is moved aside, never trusted, and the broker
// says so; a new journal starts.
func TestLegacySetAside(t *testing.T) {
	for name, secret := range map[string][]byte{"another token": []byte("the new token"), "no token": nil} {
		t.Run(name, func(t *testing.T) {
			path := journalPath(t)
			writeLegacy(t, path, []byte("the old token"), legacyRecord{"uncertain", journal.StateReserved, time.Now()})
			before, _ := os.ReadFile(path)

			j := MustOpen(t, path, journal.Options{LegacySecret: secret})
			st := j.Status()
			moved, _ := filepath.Glob(path + ".legacy-*")
			if len(moved) != 1 {
				t.Fatalf("moved aside: %v", moved)
			}
			if after, _ := os.ReadFile(moved[0]); !bytes.Equal(before, after) {
				t.Fatal("the file set aside was changed")
			}
			if !strings.Contains(st.Notice, "cannot be verified") || !strings.Contains(st.Notice, moved[0]) {
				t.Fatalf("notice %q does not say what happened", st.Notice)
			}
			if mustLookup(t, j, "uncertain") != nil || st.Entries != 0 {
				t.Fatal("a record of the unverifiable journal was trusted")
			}
			mustReserve(t, j, "uncertain", "p")
		})
	}
}

// TestLegacyDamaged: a journal of the first format that does not verify
// under its own token is refused as any damaged journal is, not migrated.
func TestLegacyDamaged(t *testing.T) {
	path := journalPath(t)
	token := []byte("the token")
	writeLegacy(t, path, token, legacyRecord{"r", journal.StateReserved, time.Now()})
	data, _ := os.ReadFile(path)
	i := bytes.Index(data, []byte(`"kind":"click"`))
	data[i+9] = 'X'
	must(t, os.WriteFile(path, data, 0o600))

	j := journal.Open(path, journal.Options{LegacySecret: token})
	defer j.Close()
	assertUnavailable(t, j, "failed its integrity check", "broker journal reset")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Fatal("the damaged journal was changed")
	}
}

// TestMigrateAfterCrash: a crash during a migration leaves the key (made
// first) beside the old journal; the next open migrates with that key.
func TestMigrateAfterCrash(t *testing.T) {
	path := journalPath(t)
	token := []byte("the token")
	writeLegacy(t, path, token, legacyRecord{"r", journal.StateReserved, time.Now()})
	key := bytes.Repeat([]byte{0x42}, 32)
	must(t, os.WriteFile(journal.KeyPath(path), key, 0o600))

	j := MustOpen(t, path, journal.Options{LegacySecret: token})
	if !bytes.Equal(j.Key(), key) || mustLookup(t, j, "r") == nil {
		t.Fatal("the migration did not use the key it had made")
	}
}
