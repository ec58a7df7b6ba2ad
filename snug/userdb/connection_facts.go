package userdb

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/dsh-browser/broker/snug/conn"
)

// ApprovedConnections returns app id's approved connections as the chat
// surface may show them to a model (spec §16): "slot (provider name)",
// never a host nor a credential. A row that arrived by import and was not
// approved again (imported = 1) is not approved for this purpose. It reads
// only the snug_connections columns §12.2 fixes.
func (db *DB) ApprovedConnections(ctx context.Context, id string) ([]string, error) {
	var out []string
	err := db.with(func(c *sql.Conn) error {
		rows, err := c.QueryContext(ctx, `SELECT slot, requirement_json FROM snug_connections
			WHERE app_id = ? AND status = 'approved' AND imported = 0 ORDER BY slot`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var slot, req string
			if err := rows.Scan(&slot, &req); err != nil {
				return err
			}
			var r struct {
				Provider struct {
					Name string `json:"name"`
				} `json:"provider"`
			}
			json.Unmarshal([]byte(req), &r) // a bad requirement names no provider
			if !conn.ValidSlot(slot) {
				continue
			}
			name := printableASCII(r.Provider.Name, 120)
			if name == "" {
				name = "unnamed provider"
			}
			out = append(out, slot+" ("+name+")")
		}
		return rows.Err()
	})
	return out, err
}

// printableASCII keeps the printable ASCII of s (the provider name's rule,
// §12.6), at most n characters of it.
func printableASCII(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		if s[i] >= 0x20 && s[i] <= 0x7e {
			b = append(b, s[i])
		}
	}
	return string(b)
}
