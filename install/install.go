package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dsh-browser/broker/internal/paths"
)

// Browsers Install knows, and the user data directory each uses under the
// config home when started without --user-data-dir.
var browserDirs = map[string]string{
	"chromium": "chromium",
	"chrome":   "google-chrome",
}

// AllBrowsers selects every browser in [Options.Browsers].
const AllBrowsers = "all"

// Options says what to install where. The zero value installs for every
// browser, with the pinned extension ID, default paths and no systemd units
// (set Systemctl to "systemctl" to use systemd when it is running).
type Options struct {
	// Browsers selects the manifest directories: "chromium", "chrome" or
	// "all". Empty means all.
	Browsers []string
	// ManifestDir, if set, replaces every browser's manifest directory: the
	// single manifest goes there (for example <user-data-dir>/NativeMessagingHosts).
	ManifestDir string
	// NoService skips the systemd units.
	NoService bool
	// ExtensionIDs are the extension IDs allowed to start the native host.
	// Empty means [PinnedExtensionID].
	ExtensionIDs []string
	// NativeHostPath is the absolute path of the nativehost binary. Empty
	// means "nativehost" next to the running executable.
	NativeHostPath string
	// BrokerPath is the absolute path of the broker binary the service
	// unit runs. Empty means the running executable.
	BrokerPath string
	// RuntimeDir is the broker's runtime directory. Empty means
	// paths.RuntimeDir("").
	RuntimeDir string
	// ConfigDir holds the host config and launcher. Empty means
	// paths.ConfigDir() (or <config home>/dsh when Home is set).
	ConfigDir string
	// Home is the user's home directory. Empty means os.UserHomeDir().
	Home string
	// Systemctl is the systemctl command. Empty means systemd is treated
	// as absent.
	Systemctl string
	// ExtensionDir is the unpacked extension directory named in the
	// printed instructions. Empty means "the extension/ directory of the
	// broker source tree".
	ExtensionDir string
	// ServeArgs are extra `broker serve` flags for the service unit, such as
	// "--access-mode=personal" or "--admission=prompt".
	ServeArgs []string
}

// layout is Options resolved to absolute paths.
type layout struct {
	configDir    string
	hostConfig   string
	launcher     string
	manifestDirs []string
	unitDir      string
	runtimeDir   string
	// runtimeDefault: runtimeDir is $XDG_RUNTIME_DIR/dsh, which systemd
	// spells %t/dsh.
	runtimeDefault bool
	nativeHost     string
	broker         string
	origins        []string
	systemctl      string
	extensionDir   string
	serveArgs      []string
}

func resolve(opts Options) (*layout, error) {
	l := &layout{systemctl: opts.Systemctl, extensionDir: opts.ExtensionDir, serveArgs: opts.ServeArgs}

	home := opts.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("%w: cannot find the home directory: %v", ErrInvalidOptions, err)
		}
		home = h
	}
	if err := checkAbs("home directory", home); err != nil {
		return nil, err
	}
	// XDG base directories: a relative value is invalid and ignored.
	configHome := filepath.Join(home, ".config")
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		configHome = d
	}
	// Chrome and Chromium take CHROME_CONFIG_HOME before XDG_CONFIG_HOME
	// for their default user data directory, where they look for
	// NativeMessagingHosts.
	browserHome := configHome
	if d := os.Getenv("CHROME_CONFIG_HOME"); filepath.IsAbs(d) {
		browserHome = d
	}

	switch {
	case opts.ConfigDir != "":
		l.configDir = opts.ConfigDir
	case opts.Home != "":
		l.configDir = filepath.Join(configHome, "dsh")
	default:
		l.configDir = paths.ConfigDir()
	}
	if err := checkAbs("config directory", l.configDir); err != nil {
		return nil, err
	}
	l.configDir = filepath.Clean(l.configDir)
	l.hostConfig = filepath.Join(l.configDir, HostConfigName)
	l.launcher = filepath.Join(l.configDir, LauncherName)
	l.unitDir = filepath.Join(configHome, "systemd", "user")

	if opts.ManifestDir != "" {
		if err := checkAbs("manifest directory", opts.ManifestDir); err != nil {
			return nil, err
		}
		l.manifestDirs = []string{filepath.Clean(opts.ManifestDir)}
	} else {
		browsers := opts.Browsers
		if len(browsers) == 0 {
			browsers = []string{AllBrowsers}
		}
		for _, b := range browsers {
			var names []string
			switch {
			case b == AllBrowsers:
				names = []string{"chromium", "chrome"}
			case browserDirs[b] != "":
				names = []string{b}
			default:
				return nil, fmt.Errorf("%w: unknown browser %q (want chromium, chrome or all)", ErrInvalidOptions, b)
			}
			for _, n := range names {
				d := filepath.Join(browserHome, browserDirs[n], "NativeMessagingHosts")
				if !slices.Contains(l.manifestDirs, d) {
					l.manifestDirs = append(l.manifestDirs, d)
				}
			}
		}
	}

	rt, err := filepath.Abs(paths.RuntimeDir(opts.RuntimeDir))
	if err != nil {
		return nil, fmt.Errorf("%w: runtime directory: %v", ErrInvalidOptions, err)
	}
	if err := checkAbs("runtime directory", rt); err != nil {
		return nil, err
	}
	l.runtimeDir = rt
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) && filepath.Join(x, "dsh") == rt {
		l.runtimeDefault = true
	}

	ids := opts.ExtensionIDs
	if len(ids) == 0 {
		ids = []string{PinnedExtensionID}
	}
	for _, id := range ids {
		if !extensionIDPattern.MatchString(id) {
			return nil, fmt.Errorf("%w: extension ID %q is not 32 letters a-p", ErrInvalidOptions, id)
		}
		l.origins = append(l.origins, ExtensionOrigin(id))
	}
	slices.Sort(l.origins)
	l.origins = slices.Compact(l.origins)
	if len(l.origins) > MaxOrigins {
		return nil, fmt.Errorf("%w: %d extension IDs; at most %d are allowed", ErrInvalidOptions, len(l.origins), MaxOrigins)
	}

	l.nativeHost = opts.NativeHostPath
	l.broker = opts.BrokerPath
	if l.nativeHost == "" || l.broker == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%w: cannot find the running executable: %v", ErrInvalidOptions, err)
		}
		if l.nativeHost == "" {
			l.nativeHost = filepath.Join(filepath.Dir(exe), "nativehost")
		}
		if l.broker == "" {
			l.broker = exe
		}
	}
	if err := checkAbs("nativehost path", l.nativeHost); err != nil {
		return nil, err
	}
	if err := checkAbs("broker path", l.broker); err != nil {
		return nil, err
	}
	return l, nil
}

func checkAbs(what, p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%w: %s %q is not an absolute path", ErrInvalidOptions, what, p)
	}
	if hasControl(p) {
		return fmt.Errorf("%w: %s %q contains a control character", ErrInvalidOptions, what, p)
	}
	return nil
}

// checkExecutable requires p to name an executable regular file.
func checkExecutable(what, p, hint string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s binary %s does not exist; %s", ErrInvalidOptions, what, p, hint)
	}
	if err != nil {
		return fmt.Errorf("%w: %s binary: %v", ErrInvalidOptions, what, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s %s is not an executable file; %s", ErrInvalidOptions, what, p, hint)
	}
	return nil
}

// file is one file Install owns.
type file struct {
	path  string
	mode  fs.FileMode
	data  []byte             // what Install writes
	ours  func([]byte) error // nil if existing content was written by us
	unit  bool
	label string

	// snapshot of what is on disk, from preflight
	old      []byte
	oldMode  fs.FileMode
	exists   bool
	tooLarge bool
}

func (l *layout) files(units bool) []*file {
	cfg := encodeJSON(HostConfig{AllowedOrigins: l.origins, RuntimeDir: l.runtimeDir})
	files := []*file{
		{path: l.hostConfig, mode: 0o600, data: cfg, ours: checkHostConfig, label: "host config"},
		{path: l.launcher, mode: 0o700, data: launcher(l.nativeHost, l.hostConfig), ours: checkLauncher, label: "launcher"},
	}
	// 0644, not the reference's 0600: Chrome runs as the same user and
	// could read either, but the manifest holds nothing secret (a path and
	// an extension ID), 0644 is what Chrome's documentation and packaged
	// hosts use, and it keeps a manifest readable if a browser is ever run
	// under another account, e.g. a system-wide copy of the file.
	m := manifest(l.launcher, l.origins)
	for _, d := range l.manifestDirs {
		files = append(files, &file{path: filepath.Join(d, ManifestName), mode: 0o644, data: m, ours: checkManifest, label: "manifest"})
	}
	if units {
		listen, rtWord := "%t/dsh/"+paths.SocketName, "%t/dsh"
		if !l.runtimeDefault {
			listen = strings.ReplaceAll(filepath.Join(l.runtimeDir, paths.SocketName), "%", "%%")
			rtWord = unitEscape(l.runtimeDir)
		}
		files = append(files,
			&file{path: filepath.Join(l.unitDir, SocketUnit), mode: 0o644, data: socketUnit(listen), ours: checkUnit, unit: true, label: "unit"},
			&file{path: filepath.Join(l.unitDir, ServiceUnit), mode: 0o644, data: serviceUnit(l.broker, rtWord, l.serveArgs), ours: checkUnit, unit: true, label: "unit"},
		)
	}
	return files
}

// preflight checks every directory and snapshots every existing file,
// returning the first reason to refuse.
func preflight(files []*file, foreignIsError bool) error {
	var dirs []string
	for _, f := range files {
		if d := filepath.Dir(f.path); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if err := checkDir(d); err != nil {
			return err
		}
	}
	for _, f := range files {
		data, fi, err := readExisting(f.path)
		if errors.Is(err, errTooLarge) {
			if foreignIsError {
				return fmt.Errorf("%w: %v", ErrForeignFile, err)
			}
			f.exists, f.tooLarge = true, true // not ours; Uninstall keeps it
			continue
		}
		if err != nil {
			return err
		}
		if fi == nil {
			continue
		}
		f.exists, f.old, f.oldMode = true, data, fi.Mode().Perm()
		if foreignIsError {
			if err := f.ours(data); err != nil {
				return fmt.Errorf("%w: %s: %v; move it away or remove it, then install again", ErrForeignFile, f.path, err)
			}
		}
	}
	return nil
}

func (f *file) unchanged() bool {
	return f.exists && f.oldMode == f.mode && bytes.Equal(f.old, f.data)
}

// Install writes the host config, the launcher, the native-messaging
// manifests and (when systemd is present and NoService is unset) the
// systemd user units, then enables broker.socket. It prints one line per
// file to out ("wrote PATH" or "unchanged PATH"), what it did with
// systemd, and what the user does next.
//
// Install first checks every target; a refusal ([ErrUnsafePath],
// [ErrForeignFile], [ErrInvalidOptions]) writes nothing. If a write fails
// part-way, the files already written are restored to their previous
// content (directories it created are left).
func Install(opts Options, out io.Writer) error {
	l, err := resolve(opts)
	if err != nil {
		return err
	}
	if err := checkExecutable("nativehost", l.nativeHost, "build it next to broker (go build -o DIR/ ./cmd/broker ./cmd/nativehost) or pass its path"); err != nil {
		return err
	}
	units, skip := false, ""
	switch {
	case opts.NoService:
		skip = "--no-service given"
	default:
		units, skip = l.systemdPresent()
	}
	if units {
		if err := checkExecutable("broker", l.broker, "pass the path of the broker binary the service should run"); err != nil {
			return err
		}
	}

	files := l.files(units)
	if err := preflight(files, true); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return err
		}
	}
	var lines []string
	var written []*file
	unitsChanged := false
	for _, f := range files {
		if f.unchanged() {
			lines = append(lines, "unchanged "+f.path)
			continue
		}
		if err := writeAtomic(f.path, f.data, f.mode); err != nil {
			rollback(written)
			return fmt.Errorf("install: writing %s: %w (earlier files restored)", f.path, err)
		}
		written = append(written, f)
		unitsChanged = unitsChanged || f.unit
		lines = append(lines, "wrote "+f.path)
	}
	for _, line := range lines {
		fmt.Fprintln(out, line)
	}

	if units {
		if unitsChanged {
			if err := l.run(out, "daemon-reload"); err != nil {
				return err
			}
		}
		if err := l.run(out, "enable", "--now", SocketUnit); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "skipped systemd units: %s\n", skip)
	}
	l.nextSteps(out, units)
	return nil
}

// rollback restores files written so far, newest first. It is best effort:
// the error that caused it is what the caller reports.
func rollback(written []*file) {
	for i := len(written) - 1; i >= 0; i-- {
		f := written[i]
		if f.exists {
			writeAtomic(f.path, f.old, f.oldMode)
		} else if !f.exists {
			removeDurably(f.path)
		}
	}
}

func (l *layout) nextSteps(out io.Writer, units bool) {
	ext := l.extensionDir
	if ext == "" {
		ext = "the extension/ directory of the broker source tree"
	}
	ids := make([]string, len(l.origins))
	for i, o := range l.origins {
		ids[i] = strings.TrimSuffix(strings.TrimPrefix(o, "chrome-extension://"), "/")
	}
	fmt.Fprintln(out, "\nNext steps:")
	fmt.Fprintf(out, "  1. Load the extension: open chrome://extensions, turn on Developer mode, click \"Load unpacked\" and choose %s.\n", ext)
	fmt.Fprintf(out, "     Its ID must be %s (native messaging only admits the listed IDs).\n", strings.Join(ids, " or "))
	if units {
		fmt.Fprintf(out, "  2. The broker starts on demand: broker.socket is enabled and listening in %s.\n", l.runtimeDir)
		fmt.Fprintln(out, "     (Check with: systemctl --user status broker.socket; start it again with: systemctl --user start broker.socket.)")
	} else {
		fmt.Fprintln(out, "  2. Start the broker: run `broker serve` and keep it running (no systemd units were installed).")
	}
}

// Uninstall removes what [Install] wrote: every manifest named
// dev.dsh.broker in the selected directories, the launcher, the host config
// and (unless NoService) the units, after `systemctl --user disable --now
// broker.socket` when systemd is present. Files that Install did not write
// are kept and reported; the auth token, the runtime directory and the
// journal and state are never touched. Pass the same Browsers, ManifestDir,
// ConfigDir and Home as to Install. Uninstalling twice is harmless. An
// unsafe directory or file refuses the whole uninstall ([ErrUnsafePath]),
// removing nothing.
func Uninstall(opts Options, out io.Writer) error {
	l, err := resolve(opts)
	if err != nil {
		return err
	}
	files := l.files(!opts.NoService)
	if err := preflight(files, false); err != nil {
		return err
	}
	var mine, units []*file
	var lines []string
	for _, f := range files {
		switch {
		case !f.exists:
			lines = append(lines, "absent "+f.path)
		case f.tooLarge:
			lines = append(lines, "kept "+f.path+": too large to have been written by broker install")
		default:
			if err := f.ours(f.old); err != nil {
				lines = append(lines, fmt.Sprintf("kept %s: not written by broker install (%v)", f.path, err))
				continue
			}
			mine = append(mine, f)
			if f.unit {
				units = append(units, f)
			}
		}
	}

	systemd, why := false, ""
	if len(units) > 0 {
		systemd, why = l.systemdPresent()
		if systemd {
			if err := l.run(out, "disable", "--now", SocketUnit); err != nil {
				return fmt.Errorf("%w; nothing was removed", err)
			}
		}
	}
	for _, f := range mine {
		if err := removeDurably(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("install: removing %s: %w", f.path, err)
		}
		lines = append(lines, "removed "+f.path)
	}
	for _, line := range lines {
		fmt.Fprintln(out, line)
	}
	switch {
	case opts.NoService:
		fmt.Fprintln(out, "skipped systemd units: --no-service given")
	case len(units) > 0 && systemd:
		if err := l.run(out, "daemon-reload"); err != nil {
			return err
		}
	case len(units) > 0:
		fmt.Fprintf(out, "removed the unit files without disabling them: %s\n", why)
	}
	fmt.Fprintf(out, "left alone: the auth token and runtime directory %s, and the journal and state.\n", l.runtimeDir)
	fmt.Fprintln(out, "Remove the extension itself in chrome://extensions.")
	return nil
}

// systemctlTimeout bounds each systemctl call.
const systemctlTimeout = 30 * time.Second

// systemdPresent reports whether a user systemd instance answers, and why
// not. `systemctl --user show-environment` succeeds exactly when the user
// manager is reachable; is-system-running is not used because it fails for
// a running but "degraded" manager.
func (l *layout) systemdPresent() (bool, string) {
	if l.systemctl == "" {
		return false, "no systemctl command configured"
	}
	if _, err := l.systemctlOutput("show-environment"); err != nil {
		return false, fmt.Sprintf("no user systemd instance (%v)", err)
	}
	return true, ""
}

// run runs `systemctl --user args...` and reports it on out.
func (l *layout) run(out io.Writer, args ...string) error {
	if _, err := l.systemctlOutput(args...); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	fmt.Fprintf(out, "ran systemctl --user %s\n", strings.Join(args, " "))
	return nil
}

func (l *layout) systemctlOutput(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), systemctlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.systemctl, append([]string{"--user"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		if msg != "" {
			return out, fmt.Errorf("systemctl --user %s: %v: %s", strings.Join(args, " "), err, msg)
		}
		return out, fmt.Errorf("systemctl --user %s: %v", strings.Join(args, " "), err)
	}
	return out, nil
}
