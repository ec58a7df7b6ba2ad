package userdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
)

// Setting returns the JSON value stored under key in snug_settings; ok is
// false when there is none. Settings travel inside the file (spec §8.1):
// the hub's mode, provider, model and endpoints, and namespaced host keys.
func (db *DB) Setting(ctx context.Context, key string) (value json.RawMessage, ok bool, err error) {
	var text string
	err = db.with(func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, `SELECT value FROM snug_settings WHERE key = ?`, key).Scan(&text)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return json.RawMessage(text), true, nil
}

// SetSettings stores each key's JSON value in snug_settings, and removes the
// keys whose value is nil, in one transaction.
func (db *DB) SetSettings(ctx context.Context, values map[string]json.RawMessage) error {
	for _, v := range values {
		if v != nil && !json.Valid(v) {
			return errorf(ErrInvalid, "a setting's value must be JSON")
		}
	}
	return db.write(ctx, func(c *sql.Conn) error {
		for k, v := range values {
			if err := upsert(ctx, c, "snug_settings", k, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Secret returns the opaque string stored under key in snug_secrets; ok is
// false when there is none. Secrets are never part of a default export
// (spec §9), and the hub never puts one in a frame, a log line or an
// answer to a client.
func (db *DB) Secret(ctx context.Context, key string) (value string, ok bool, err error) {
	err = db.with(func(c *sql.Conn) error {
		return c.QueryRowContext(ctx, `SELECT value FROM snug_secrets WHERE key = ?`, key).Scan(&value)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// SecretKeys lists the snug_secrets keys that start with prefix, in
// order; the values stay where they are.
func (db *DB) SecretKeys(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	err := db.with(func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `SELECT key FROM snug_secrets WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key`, prefix)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return rows.Err()
	})
	return keys, err
}

// SetSecret stores value under key in snug_secrets; an empty value removes
// the key. secure_delete zeroes the bytes of a replaced or removed secret.
func (db *DB) SetSecret(ctx context.Context, key, value string) error {
	return db.write(ctx, func(c *sql.Conn) error {
		var v []byte
		if value != "" {
			v = []byte(value)
		}
		return upsert(ctx, c, "snug_secrets", key, v)
	})
}

// upsert sets or (for a nil value) deletes one row of a key/value table.
func upsert(ctx context.Context, c *sql.Conn, table, key string, value []byte) error {
	if key == "" {
		return errorf(ErrInvalid, "empty key")
	}
	if value == nil {
		_, err := c.ExecContext(ctx, `DELETE FROM `+table+` WHERE key = ?`, key)
		return err
	}
	_, err := c.ExecContext(ctx, `INSERT INTO `+table+` (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, string(value))
	return err
}

// Source is one stored version of an app: its HTML and runtime contract.
type Source struct {
	Version int
	HTML    string
	// RuntimeContract is the contract JSON stored on the version row,
	// verbatim, or "" for none. It is unchecked: a reader validates it
	// (an invalid one reads as absent, spec Part IV §18.2).
	RuntimeContract string
}

// Source returns version n of app id, or its current version when n is 0.
// An unknown app or version gives [ErrNotFound].
func (db *DB) Source(ctx context.Context, id string, n int) (Source, error) {
	var s Source
	err := db.with(func(c *sql.Conn) error {
		if err := appExists(ctx, c, id); err != nil {
			return err
		}
		if n == 0 {
			if err := c.QueryRowContext(ctx, `SELECT current_version FROM snug_apps WHERE app_id = ?`, id).Scan(&n); err != nil {
				return err
			}
		}
		s.Version = n
		err := c.QueryRowContext(ctx, `SELECT html, coalesce(runtime_contract_json, '') FROM snug_app_versions WHERE app_id = ? AND version = ?`, id, n).
			Scan(&s.HTML, &s.RuntimeContract)
		if errors.Is(err, sql.ErrNoRows) {
			return errorf(ErrNotFound, "app %q has no version %d", id, n)
		}
		return err
	})
	return s, err
}
