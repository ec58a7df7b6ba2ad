package hub

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/dsh-browser/broker/service"
	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/userdb"
	"github.com/dsh-browser/broker/snug/userfile"
	"github.com/dsh-browser/broker/wire"
)

// backupName is the copy of the user database kept from before the last
// import, beside it in the state directory (it holds what the file does,
// secrets included, with the same private mode).
const backupName = userdb.FileName + ".before-import"

// export writes the user's file, or one app's database, where the client
// asked. The broker writes it (the database is locked while the broker
// has it open); the path is absolute, the file private, and an existing
// one replaced only when asked.
func (h *Hub) export(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.ExportParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p.Path) || p.App != "" && (p.Secrets || p.Passphrase != "") {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	out := apps.Exported{Path: p.Path, Secrets: p.Secrets && p.App == ""}
	var data []byte
	if p.App != "" {
		a, err := h.resolve(ctx, p.App)
		if err != nil {
			return nil, err
		}
		out.App = a.ID
		if data, err = db.ExportApp(ctx, a.ID); err != nil {
			return nil, fromDB(err)
		}
	} else if data, err = db.Export(ctx, userdb.ExportOptions{Secrets: p.Secrets}); err != nil {
		return nil, fromDB(err)
	}
	if p.Passphrase != "" {
		out.RecoveryKey = userfile.NewRecoveryKey()
		out.Protected = true
		if data, err = userfile.Seal(data, userfile.Secrets{Passphrase: p.Passphrase, RecoveryKey: out.RecoveryKey}, 0); err != nil {
			return nil, err
		}
	}
	if err := userfile.WriteFile(p.Path, data, p.Overwrite); err != nil {
		h.log.Info("export refused", "path", p.Path, "err", err)
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	out.Bytes = len(data)
	h.log.Info("user file exported", "path", p.Path, "app", out.App, "secrets", out.Secrets, "protected", out.Protected)
	return out, nil
}

// importFile replaces the user's apps and data with a user file (see
// userdb.DB.Import: the file is untrusted). A refusal changes nothing and
// says why in Status. After an import, agent turns wait until the user
// confirms the agent settings that came with it, and every runner shows
// the imported version of its app (or closes, its app gone).
func (h *Hub) importFile(ctx context.Context, _ service.Client, params json.RawMessage) (any, error) {
	var p apps.ImportParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	db, err := h.store()
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p.Path) {
		return nil, wire.Err(wire.CodeInvalidRequest)
	}
	refused := func(status string, err error) (any, error) {
		h.log.Info("import refused", "path", p.Path, "status", status, "err", err)
		return apps.Imported{Status: status, Detail: err.Error(), Connections: apps.ImportedConnections{Dropped: []string{}}}, nil
	}
	data, err := userfile.ReadFile(p.Path)
	switch {
	case errors.Is(err, userfile.ErrTooLarge):
		return refused(apps.ImportTooLarge, err)
	case err != nil:
		return refused(apps.ImportUnreadable, err)
	}
	switch userfile.Detect(data) {
	case userfile.Protected:
		data, err = userfile.Open(data, userfile.Secrets{Passphrase: p.Passphrase, RecoveryKey: p.RecoveryKey})
		switch {
		case errors.Is(err, userfile.ErrLocked):
			return refused(apps.ImportLocked, err)
		case err != nil:
			return refused(apps.ImportCorrupt, err)
		}
	case userfile.Unknown:
		return refused(apps.ImportNotUserFile, errors.New("the file is neither a Snug user file (SQLite) nor a protected one (SNUGENC1)"))
	}

	// Keep what there is now, then replace it.
	backup := filepath.Join(h.cfg.StateDir, backupName)
	current, err := db.Export(ctx, userdb.ExportOptions{Secrets: true})
	if err != nil {
		return nil, fromDB(err)
	}
	if err := userfile.WriteFile(backup, current, true); err != nil {
		return nil, err
	}
	unconfirmed := json.RawMessage("true")
	rep, err := db.Import(ctx, data, userdb.ImportOptions{Requirements: h.cfg.Requirements,
		Settings: map[string]json.RawMessage{settingAgentUnconfirmed: unconfirmed}})
	switch {
	case errors.Is(err, userdb.ErrUnsupported):
		return refused(apps.ImportUnsupported, err)
	case errors.Is(err, userdb.ErrTooLarge):
		return refused(apps.ImportTooLarge, err)
	case errors.Is(err, userdb.ErrBadImport):
		return refused(apps.ImportNotUserFile, err)
	case err != nil:
		return nil, fromDB(err)
	}
	h.log.Info("user file imported", "path", p.Path, "apps", rep.Apps, "contractsDropped", rep.ContractsDropped,
		"connectionsDeclared", rep.Connections.Declared, "connectionsDropped", len(rep.Connections.Dropped))
	h.mu.Lock()
	clear(h.budgets)
	h.mu.Unlock()
	for _, r := range h.runners() {
		if _, _, err := db.OpenApp(ctx, r.appID); err != nil {
			r.link.drop(r, "This app is not in the imported file.")
			continue
		}
		r.reload(ctx)
	}
	dropped := rep.Connections.Dropped
	if dropped == nil {
		dropped = []string{}
	}
	return apps.Imported{Status: apps.ImportDone, SchemaVersion: rep.SchemaVersion, Apps: rep.Apps,
		ContractsKept: rep.ContractsKept, ContractsDropped: rep.ContractsDropped,
		Connections: apps.ImportedConnections{Restored: rep.Connections.Restored, Declared: rep.Connections.Declared,
			Revoked: rep.Connections.Revoked, Dropped: dropped},
		SecretsImported: rep.SecretsImported, Backup: backup, AgentUnconfirmed: true}, nil
}
