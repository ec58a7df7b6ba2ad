// Package install puts the broker's files into the user's system and takes
// them out again: the native host's configuration and launcher, the Chrome
// native-messaging manifests that point at the launcher, and the systemd
// user units that start the broker on demand. `broker install` and
// `broker uninstall` are thin wrappers around [Install] and [Uninstall];
// cmd/nativehost reads the configuration back with [LoadHostConfig].
//
// # What Install writes
//
//	CONFIG/native-host.json                   0600  allowlist and runtime dir the native host enforces ([HostConfig])
//	CONFIG/nativehost-launcher                0700  /bin/sh script Chrome runs; execs nativehost --config=CONFIG/native-host.json "$@"
//	<browser dir>/NativeMessagingHosts/dev.dsh.broker.json
//	                                          0644  the native-messaging manifest Chrome reads (path = the launcher)
//	<config home>/systemd/user/broker.socket  0644  ListenStream=RUNTIME/broker.sock, SocketMode=0600, DirectoryMode=0700
//	<config home>/systemd/user/broker.service 0644  Type=notify, ExecStart=BROKER serve --runtime-dir=RUNTIME
//
// CONFIG is [Options.ConfigDir] (default $XDG_CONFIG_HOME/dsh or ~/.config/dsh),
// <config home> is $XDG_CONFIG_HOME or ~/.config, and the browser dirs are
// <config home>/chromium and <config home>/google-chrome, the user data
// directories Chromium and Chrome use when not given --user-data-dir (both
// honour XDG_CONFIG_HOME, and CHROME_CONFIG_HOME before it).
// [Options.ManifestDir] replaces all browser dirs with one directory.
//
// # Safety
//
// Every file is written atomically: a temporary file in the same directory,
// chmod, fsync, rename, fsync of the directory. Before anything is written,
// every target directory and existing file is checked: a directory or file
// that is a symlink, is owned by another user, or (for directories) is
// writable by group or others is refused with [ErrUnsafePath]; an existing
// file that broker install did not write (a manifest with another name, a
// launcher or unit without our marker, an invalid host config) is refused
// with [ErrForeignFile]. A refusal writes nothing. Uninstall leaves foreign
// files in place and never touches the auth token, the runtime directory or
// the journal and state.
//
// # Idempotence
//
// The output is a pure function of [Options]: installing twice with the same
// options leaves every file byte-for-byte and inode-for-inode unchanged and
// reports it as "unchanged". The host config's allowlist is exactly
// [Options.ExtensionIDs]; it is replaced, not merged, on every install.
//
// # systemd
//
// Units are written only when a user systemd instance answers
// `systemctl --user show-environment`; then Install runs
// `systemctl --user daemon-reload` (when a unit changed) and
// `systemctl --user enable --now broker.socket`. Otherwise, or under
// [Options.NoService], it prints why units were skipped and the user runs
// `broker serve` instead.
package install
