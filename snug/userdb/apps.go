package userdb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// Caps on app metadata: the announce frame's (spec Appendix B), counted in
// UTF-16 code units as JavaScript counts them.
const (
	maxDisplayName = 80
	maxDescription = 400
	maxIconEmoji   = 8
	maxIconColor   = 32
)

// AppMeta is an app's display metadata. Only DisplayName is required.
type AppMeta struct {
	DisplayName string
	Description string
	IconEmoji   string
	IconColor   string
	// InstallSource is the identity of a starter install (for example
	// "starter:<folder>"); at most one app may carry a given one. Empty for
	// apps built or installed from a file.
	InstallSource string
}

// App is an installed app. ID is its host-assigned identity and the
// namespace of its data (see [AppDataToken]).
type App struct {
	ID string
	AppMeta
	UsesDB         bool // true once the app has data at rest
	CurrentVersion int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Version describes one stored version of an app.
type Version struct {
	Version   int
	Note      string
	Pinned    bool // never pruned: v1 and pinned updates (a starter's factory versions)
	CreatedAt time.Time
	HTMLBytes int
}

// NewVersion is what [DB.Update] stores.
type NewVersion struct {
	HTML string
	Note string
	// RuntimeContract is the version's runtime contract JSON (Part IV),
	// stored verbatim. Checking it is the caller's job. Empty: [DB.Update]
	// copies the current version's contract forward (spec §18.2), unless
	// DropContract says the version has none.
	RuntimeContract string
	DropContract    bool
	// Pinned keeps the version forever (a starter update); ordinary
	// edits are unpinned.
	Pinned bool
}

// Doc is one page of an app's markdown wiki (snug_app_docs). The spec's
// advisory slugs are vision, requirements, plan, lessons, memory and
// next-tasks.
type Doc struct {
	Slug    string
	Title   string
	Content string
}

func (m AppMeta) check() error {
	n := func(s string) int { return len(utf16.Encode([]rune(s))) }
	switch {
	case strings.TrimSpace(m.DisplayName) == "":
		return errorf(ErrInvalid, "an app needs a display name")
	case n(m.DisplayName) > maxDisplayName:
		return errorf(ErrInvalid, "display name longer than %d", maxDisplayName)
	case n(m.Description) > maxDescription:
		return errorf(ErrInvalid, "description longer than %d", maxDescription)
	case n(m.IconEmoji) > maxIconEmoji:
		return errorf(ErrInvalid, "icon emoji longer than %d", maxIconEmoji)
	case n(m.IconColor) > maxIconColor:
		return errorf(ErrInvalid, "icon color longer than %d", maxIconColor)
	}
	return nil
}

// nullable maps "" to NULL for the optional text columns.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Install stores a new app with html as its version 1, pinned (the factory
// version), and returns it. The app's ID is a new random UUID, which is
// also its data namespace. A second app with the same non-empty
// InstallSource fails with [ErrInvalid].
func (db *DB) Install(ctx context.Context, meta AppMeta, html string) (App, error) {
	return db.InstallVersion(ctx, meta, NewVersion{HTML: html})
}

// InstallVersion is [DB.Install] with a version of its own: its HTML and
// runtime contract (its note defaults to "installed"). Version 1 is always
// pinned.
func (db *DB) InstallVersion(ctx context.Context, meta AppMeta, v NewVersion) (App, error) {
	html := v.HTML
	if v.Note == "" {
		v.Note = "installed"
	}
	if err := meta.check(); err != nil {
		return App{}, err
	}
	if html == "" {
		return App{}, errorf(ErrInvalid, "empty HTML")
	}
	id := newUUID()
	now := timestamp(db.opts.Now())
	err := db.write(ctx, func(c *sql.Conn) error {
		if meta.InstallSource != "" {
			var n int
			if err := c.QueryRowContext(ctx, `SELECT count(*) FROM snug_apps WHERE install_source = ?`, meta.InstallSource).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return errorf(ErrInvalid, "an app from %q is already installed", meta.InstallSource)
			}
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO snug_apps (app_id, display_name, description, icon_emoji, icon_color, uses_db, current_version, created_at, updated_at, install_source)
			VALUES (?, ?, ?, ?, ?, 0, 1, ?, ?, ?)`,
			id, meta.DisplayName, nullable(meta.Description), nullable(meta.IconEmoji), nullable(meta.IconColor), now, now, nullable(meta.InstallSource)); err != nil {
			return err
		}
		_, err := c.ExecContext(ctx, `INSERT INTO snug_app_versions (app_id, version, html, note, created_at, pinned, runtime_contract_json) VALUES (?, 1, ?, ?, ?, 1, ?)`,
			id, html, v.Note, now, nullable(v.RuntimeContract))
		return err
	})
	if err != nil {
		return App{}, err
	}
	app, _, err := db.OpenApp(ctx, id)
	return app, err
}

const appColumns = `app_id, display_name, description, icon_emoji, icon_color, uses_db, current_version, created_at, updated_at, install_source`

func scanApp(row interface{ Scan(...any) error }) (App, error) {
	var a App
	var desc, emoji, color, source sql.NullString
	var created, updated string
	err := row.Scan(&a.ID, &a.DisplayName, &desc, &emoji, &color, &a.UsesDB, &a.CurrentVersion, &created, &updated, &source)
	a.Description, a.IconEmoji, a.IconColor, a.InstallSource = desc.String, emoji.String, color.String, source.String
	a.CreatedAt, a.UpdatedAt = parseTimestamp(created), parseTimestamp(updated)
	return a, err
}

// Apps lists the installed apps, oldest first.
func (db *DB) Apps(ctx context.Context) ([]App, error) {
	var apps []App
	err := db.with(func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `SELECT `+appColumns+` FROM snug_apps ORDER BY created_at, app_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanApp(rows)
			if err != nil {
				return err
			}
			apps = append(apps, a)
		}
		return rows.Err()
	})
	return apps, err
}

// OpenApp returns the app and the HTML of its current version, read in one
// consistent snapshot. An unknown id gives [ErrNotFound].
func (db *DB) OpenApp(ctx context.Context, id string) (App, string, error) {
	var app App
	var html string
	err := db.with(func(c *sql.Conn) error {
		var err error
		app, err = scanApp(c.QueryRowContext(ctx, `SELECT `+appColumns+` FROM snug_apps WHERE app_id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return errorf(ErrNotFound, "no app %q", id)
		}
		if err != nil {
			return err
		}
		return c.QueryRowContext(ctx, `SELECT html FROM snug_app_versions WHERE app_id = ? AND version = ?`, id, app.CurrentVersion).Scan(&html)
	})
	return app, html, err
}

// Versions lists the app's stored versions, newest first.
func (db *DB) Versions(ctx context.Context, id string) ([]Version, error) {
	var vs []Version
	err := db.with(func(c *sql.Conn) error {
		if err := appExists(ctx, c, id); err != nil {
			return err
		}
		rows, err := c.QueryContext(ctx, `SELECT version, coalesce(note, ''), pinned, created_at, length(CAST(html AS BLOB)) FROM snug_app_versions WHERE app_id = ? ORDER BY version DESC`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v Version
			var created string
			if err := rows.Scan(&v.Version, &v.Note, &v.Pinned, &created, &v.HTMLBytes); err != nil {
				return err
			}
			v.CreatedAt = parseTimestamp(created)
			vs = append(vs, v)
		}
		return rows.Err()
	})
	return vs, err
}

// Update stores v as the app's new current version (numbered one past the
// newest) and prunes the oldest unpinned versions beyond [VersionsRetained].
// The runtime contract is custody of the host (spec §18.2): without one of
// its own (and without DropContract) the new version gets the current
// version's, copied in the same transaction.
func (db *DB) Update(ctx context.Context, id string, v NewVersion) (Version, error) {
	if v.HTML == "" {
		return Version{}, errorf(ErrInvalid, "empty HTML")
	}
	return db.addVersion(ctx, id, func(ctx context.Context, c *sql.Conn) (NewVersion, error) {
		if v.RuntimeContract != "" || v.DropContract {
			return v, nil
		}
		err := c.QueryRowContext(ctx, `SELECT coalesce(v.runtime_contract_json, '') FROM snug_app_versions v
			JOIN snug_apps a ON a.app_id = v.app_id AND a.current_version = v.version WHERE a.app_id = ?`, id).Scan(&v.RuntimeContract)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil // no current version row: nothing to copy
		}
		return v, err
	})
}

// Revert makes a copy of version n (its HTML and runtime contract, or its
// lack of one: reverted code runs under the contract it shipped with) the
// app's new current version: with v1..v3, Revert(2) creates v4 holding
// v2's HTML, and the history stays v4, v3, v2, v1. The copy is unpinned.
func (db *DB) Revert(ctx context.Context, id string, n int) (Version, error) {
	return db.addVersion(ctx, id, func(ctx context.Context, c *sql.Conn) (NewVersion, error) {
		return copyOf(ctx, c, `SELECT html, coalesce(runtime_contract_json, ''), version FROM snug_app_versions WHERE app_id = ? AND version = ?`, id, n)
	})
}

// FactoryReset copies the factory version (the newest pinned one) forward
// as the app's new current version, like [DB.Revert].
func (db *DB) FactoryReset(ctx context.Context, id string) (Version, error) {
	return db.addVersion(ctx, id, func(ctx context.Context, c *sql.Conn) (NewVersion, error) {
		return copyOf(ctx, c, `SELECT html, coalesce(runtime_contract_json, ''), version FROM snug_app_versions WHERE app_id = ? AND pinned = 1 ORDER BY version DESC LIMIT 1`, id)
	})
}

func copyOf(ctx context.Context, c *sql.Conn, query string, args ...any) (NewVersion, error) {
	var v NewVersion
	var from int
	err := c.QueryRowContext(ctx, query, args...).Scan(&v.HTML, &v.RuntimeContract, &from)
	if errors.Is(err, sql.ErrNoRows) {
		return v, errorf(ErrNotFound, "no such version of app %q", args[0])
	}
	v.Note = "copy of v" + strconv.Itoa(from)
	v.DropContract = v.RuntimeContract == ""
	return v, err
}

// addVersion inserts the version made by get as the new current one and
// prunes, in one transaction.
func (db *DB) addVersion(ctx context.Context, id string, get func(context.Context, *sql.Conn) (NewVersion, error)) (Version, error) {
	var out Version
	now := db.opts.Now()
	err := db.write(ctx, func(c *sql.Conn) error {
		if err := appExists(ctx, c, id); err != nil {
			return err
		}
		v, err := get(ctx, c)
		if err != nil {
			return err
		}
		var next int
		if err := c.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) + 1 FROM snug_app_versions WHERE app_id = ?`, id).Scan(&next); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO snug_app_versions (app_id, version, html, note, created_at, pinned, runtime_contract_json) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, next, v.HTML, nullable(v.Note), timestamp(now), v.Pinned, nullable(v.RuntimeContract)); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `UPDATE snug_apps SET current_version = ?, updated_at = ? WHERE app_id = ?`, next, timestamp(now), id); err != nil {
			return err
		}
		// Keep the newest VersionsRetained unpinned versions; pinned ones
		// are never pruned.
		if _, err := c.ExecContext(ctx, `DELETE FROM snug_app_versions WHERE app_id = ?1 AND pinned = 0 AND version NOT IN
			(SELECT version FROM snug_app_versions WHERE app_id = ?1 AND pinned = 0 ORDER BY version DESC LIMIT ?2)`, id, VersionsRetained); err != nil {
			return err
		}
		out = Version{Version: next, Note: v.Note, Pinned: v.Pinned, CreatedAt: parseTimestamp(timestamp(now)), HTMLBytes: len(v.HTML)}
		return nil
	})
	return out, err
}

func appExists(ctx context.Context, c *sql.Conn, id string) error {
	var n int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM snug_apps WHERE app_id = ?`, id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return errorf(ErrNotFound, "no app %q", id)
	}
	return nil
}

// SeedDocs adds the docs whose slug the app does not have yet and returns
// how many it added. It never changes an existing (app, slug) row.
func (db *DB) SeedDocs(ctx context.Context, id string, docs []Doc) (int, error) {
	added := 0
	now := timestamp(db.opts.Now())
	err := db.write(ctx, func(c *sql.Conn) error {
		if err := appExists(ctx, c, id); err != nil {
			return err
		}
		for _, d := range docs {
			if d.Slug == "" {
				return errorf(ErrInvalid, "a doc needs a slug")
			}
			r, err := c.ExecContext(ctx, `INSERT OR IGNORE INTO snug_app_docs (app_id, slug, title, content, updated_at) VALUES (?, ?, ?, ?, ?)`,
				id, d.Slug, nullable(d.Title), d.Content, now)
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			added += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// Docs returns the app's docs, by slug.
func (db *DB) Docs(ctx context.Context, id string) ([]Doc, error) {
	var docs []Doc
	err := db.with(func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `SELECT slug, coalesce(title, ''), content FROM snug_app_docs WHERE app_id = ? ORDER BY slug`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d Doc
			if err := rows.Scan(&d.Slug, &d.Title, &d.Content); err != nil {
				return err
			}
			docs = append(docs, d)
		}
		return rows.Err()
	})
	return docs, err
}

// perAppSettings are the snug_settings key families that belong to one app:
// <family>:<appId> or <family>:<appId>:<more> (spec §8.1). They go with it.
var perAppSettings = []string{
	"appModel", "sharedBundle", "shareLink", "scheduleDeclined", "scheduleMuted",
	"accessLog", "accessDeclined", "accessMuted",
}

// Remove deletes the app and everything that is its: versions, data at rest
// (every app_<token>__ table) and its registry and audit, docs, chat
// threads and their messages, connections, its settings keys, and its
// secrets (auth:<appId>:… and the share:<linkId> secrets of its share
// links), in one transaction. secure_delete zeroes the freed bytes.
func (db *DB) Remove(ctx context.Context, id string) error {
	return db.write(ctx, func(c *sql.Conn) error {
		if err := appExists(ctx, c, id); err != nil {
			return err
		}
		if err := dropRestTables(ctx, c, AppDataToken(id)); err != nil {
			return err
		}
		// Share-link secrets are keyed by link id, found through the
		// app's shareLink:<appId>:<linkId> settings.
		if _, err := c.ExecContext(ctx, `DELETE FROM snug_secrets WHERE key IN
			(SELECT 'share:' || substr(key, length(?1) + 1) FROM snug_settings WHERE substr(key, 1, length(?1)) = ?1)`, "shareLink:"+id+":"); err != nil {
			return err
		}
		for _, fam := range perAppSettings {
			if _, err := c.ExecContext(ctx, `DELETE FROM snug_settings WHERE key = ?1 OR substr(key, 1, length(?2)) = ?2`, fam+":"+id, fam+":"+id+":"); err != nil {
				return err
			}
		}
		if _, err := c.ExecContext(ctx, `DELETE FROM snug_secrets WHERE substr(key, 1, length(?1)) = ?1`, "auth:"+id+":"); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM snug_chat_messages WHERE thread_id IN (SELECT thread_id FROM snug_chat_threads WHERE app_id = ?)`,
			`DELETE FROM snug_chat_threads WHERE app_id = ?`,
			`DELETE FROM snug_app_versions WHERE app_id = ?`,
			`DELETE FROM snug_app_schemas WHERE app_id = ?`,
			`DELETE FROM snug_app_migrations WHERE app_id = ?`,
			`DELETE FROM snug_app_docs WHERE app_id = ?`,
			`DELETE FROM snug_connections WHERE app_id = ?`,
			`DELETE FROM snug_apps WHERE app_id = ?`,
		} {
			if _, err := c.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropRestTables drops every at-rest table of the app with token. Names are
// matched exactly on the prefix (substr, not LIKE: "_" is a LIKE wildcard).
func dropRestTables(ctx context.Context, c *sql.Conn, token string) error {
	prefix := restPrefix(token)
	rows, err := c.QueryContext(ctx, `SELECT name FROM main.sqlite_master WHERE type = 'table' AND substr(name, 1, length(?1)) = ?1`, prefix)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := c.ExecContext(ctx, "DROP TABLE main."+quoteIdent(n)); err != nil {
			return err
		}
	}
	return nil
}
