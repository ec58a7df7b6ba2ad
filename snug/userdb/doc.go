// Package userdb is the Snug hub's user database: one SQLite file per user
// (STATE/user.snug, spec Part II §8–§10) holding the user's apps and their
// versions, each app's own tables, and the hub's settings and secrets.
//
// # The file
//
// [Open] checks the file rules (a private regular file in a private
// directory, locked while open), tells the format by the leading bytes,
// refuses newer files untouched, migrates older ones forward in one
// transaction, heals missing hub tables, and quarantines bytes that are not
// a database. Every write is one transaction held to the 64 MiB cap
// ([ErrTooLarge]: rolled back whole). The file is in SQLite's rollback
// journal mode with synchronous=FULL, so a crash at any point leaves the
// last committed state. secure_delete is on, so removed secrets and app
// rows leave no bytes behind in free pages.
//
// # Apps and versions
//
// [DB.Install] stores an app with its HTML as version 1, pinned. [DB.Update]
// adds a version; [DB.Revert] and [DB.FactoryReset] copy an older version
// forward as a new one. At least [VersionsRetained] unpinned versions are
// kept, pinned ones always. [DB.Remove] deletes an app and everything of
// it.
//
// # Per-app data
//
// An app's tables live at rest as app_<token>__<name> ([AppDataToken],
// [RestTableName]), and its schema in a registry of its DDL, verbatim. Its
// SQL never runs on the user file: [DB.Materialise] builds a [Runtime], a
// database of its own holding only its objects under their natural names,
// where [Runtime.Exec] runs the app's statements under a policy (no ATTACH,
// no VACUUM, no writing PRAGMAs, no extensions), and [Runtime.WriteBack]
// stores the result in one transaction, refusing any object whose name
// breaks the rule ([ValidObjectName]) with the app's previous state kept.
// Package appdb serves the db-request frame on top of it.
//
// # The chat's data lane
//
// [DB.Scratch] is a throwaway copy of one app's tables, never written
// back: reads of model-written SQL run there ([Runtime.Read]), and writes
// are previewed there. [Runtime.Apply] runs statements in one transaction,
// recording every row they change, and keeps them only if the caller
// accepts the changes: on live data, only if they are exactly the
// previewed ones ([Same]).
//
// # Settings and secrets
//
// [DB.Setting] and [DB.SetSettings] keep JSON values in snug_settings;
// [DB.Secret] and [DB.SetSecret] keep opaque strings in snug_secrets.
//
// # Connections
//
// snug_connections holds each app's connection requirements and the
// user's grants (spec Part III §12). Outside an import (below), exactly
// five writers change it:
// [DB.PutDeclaredConnection] (proposals, declared rows only, within the
// 8-slot cap), [DB.StagePendingRequirement] (a change to an approved row,
// waiting), [DB.ApproveConnection] (freezes the ceiling, stores the
// credentials the user typed), [DB.ReapproveConnection] (the only path
// that widens a ceiling) and [DB.RevokeConnection] (a tombstone; the
// slot's secrets deleted). Credentials live only in snug_secrets under
// auth:<appId>:<slot>:<field> (package snug/conn names the keys).
//
// # The user's file, moved
//
// [DB.Export] makes the canonical .snug of the whole database without a
// file on disk: secrets deleted and the copy VACUUMed unless the user asked
// for them (spec §9). [DB.Import] replaces the whole database with such a
// file in one transaction, treating it as untrusted: contracts not already
// held are dropped (§18.2), connections are reconciled against the local
// grants (§12.4), apps' tables are rebuilt from their registries. Package
// snug/userfile holds the file format around it (SNUGENC1).
//
// # Not done here
//
// SNUGENC1 protected files are recognised and left alone ([ErrProtected])
// but not opened as the live database; legacy user.sqlite adoption
// belongs to later work.
package userdb
