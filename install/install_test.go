package install_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-browser/broker/install"
	"github.com/dsh-browser/broker/internal/paths"
)

const pinnedOrigin = "chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"

// testEnv is a private HOME with XDG directories, a runtime dir and the two
// binaries Install points at.
type testEnv struct {
	root, home, configHome, runtime string
	nativeHost, broker              string
}

func (e *testEnv) configDir() string  { return filepath.Join(e.configHome, "dsh") }
func (e *testEnv) hostConfig() string { return filepath.Join(e.configDir(), "native-host.json") }
func (e *testEnv) launcher() string   { return filepath.Join(e.configDir(), "nativehost-launcher") }
func (e *testEnv) unitDir() string    { return filepath.Join(e.configHome, "systemd", "user") }
func (e *testEnv) chromiumDir() string {
	return filepath.Join(e.configHome, "chromium", "NativeMessagingHosts")
}
func (e *testEnv) chromeDir() string {
	return filepath.Join(e.configHome, "google-chrome", "NativeMessagingHosts")
}
func (e *testEnv) manifest(d string) string { return filepath.Join(d, "dev.dsh.broker.json") }

func mustEnv(t testing.TB) *testEnv {
	t.Helper()
	root := t.TempDir()
	e := &testEnv{
		root:       root,
		home:       filepath.Join(root, "home"),
		configHome: filepath.Join(root, "home", ".config"),
		runtime:    filepath.Join(root, "run", "dsh"),
	}
	for _, d := range []string{e.home, filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", e.home)
	t.Setenv("XDG_CONFIG_HOME", e.configHome)
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(root, "run"))
	t.Setenv("DSH_RUNTIME_DIR", "")
	t.Setenv("DSH_SOCKET", "")
	t.Setenv("CHROME_CONFIG_HOME", "")
	// Durability is exercised by TestInstallTwiceIsUnchanged; elsewhere
	// fsync on a shared, busy disk would only make the tests slow.
	t.Cleanup(install.SetFsync(false))
	e.nativeHost = mustScript(t, filepath.Join(root, "bin", "nativehost"), "exit 0")
	e.broker = mustScript(t, filepath.Join(root, "bin", "broker"), "exit 0")
	return e
}

func (e *testEnv) opts() install.Options {
	return install.Options{Home: e.home, NativeHostPath: e.nativeHost, BrokerPath: e.broker}
}

func mustScript(t testing.TB, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustInstall(t testing.TB, opts install.Options) string {
	t.Helper()
	var out bytes.Buffer
	if err := install.Install(opts, &out); err != nil {
		t.Fatalf("Install: %v\noutput:\n%s", err, out.String())
	}
	return out.String()
}

func mustUninstall(t testing.TB, opts install.Options) string {
	t.Helper()
	var out bytes.Buffer
	if err := install.Uninstall(opts, &out); err != nil {
		t.Fatalf("Uninstall: %v\noutput:\n%s", err, out.String())
	}
	return out.String()
}

func mustRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantMode(t testing.TB, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

func wantAbsent(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (err %v), want absent", p, err)
		}
	}
}

func inode(t testing.TB, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestInstallTwiceIsUnchanged(t *testing.T) {
	e := mustEnv(t)
	t.Cleanup(install.SetFsync(true))
	out := mustInstall(t, e.opts())
	for _, p := range []string{e.hostConfig(), e.launcher(), e.manifest(e.chromiumDir()), e.manifest(e.chromeDir())} {
		if !strings.Contains(out, "wrote "+p+"\n") {
			t.Errorf("first install output lacks %q:\n%s", "wrote "+p, out)
		}
	}
	if !strings.Contains(out, "skipped systemd units: no systemctl command configured\n") {
		t.Errorf("output does not say systemd was skipped:\n%s", out)
	}
	for _, want := range []string{"chrome://extensions", "Load unpacked", "gocinifmbcgfcfejlknabffipmookipn", "broker serve"} {
		if !strings.Contains(out, want) {
			t.Errorf("next steps lack %q:\n%s", want, out)
		}
	}
	wantMode(t, e.hostConfig(), 0o600)
	wantMode(t, e.launcher(), 0o700)
	wantMode(t, e.manifest(e.chromiumDir()), 0o644)
	wantMode(t, e.manifest(e.chromeDir()), 0o644)
	wantAbsent(t, e.unitDir())

	before := map[string]uint64{}
	contents := map[string]string{}
	for _, p := range []string{e.hostConfig(), e.launcher(), e.manifest(e.chromiumDir()), e.manifest(e.chromeDir())} {
		before[p] = inode(t, p)
		contents[p] = mustRead(t, p)
	}
	out = mustInstall(t, e.opts())
	if strings.Contains(out, "wrote ") {
		t.Errorf("second install wrote something:\n%s", out)
	}
	for p, ino := range before {
		if !strings.Contains(out, "unchanged "+p+"\n") {
			t.Errorf("second install output lacks %q:\n%s", "unchanged "+p, out)
		}
		if inode(t, p) != ino || mustRead(t, p) != contents[p] {
			t.Errorf("%s was replaced by an identical install", p)
		}
	}
	// No temporary files are left behind.
	for _, d := range []string{e.configDir(), e.chromiumDir(), e.chromeDir()} {
		ents, _ := os.ReadDir(d)
		for _, ent := range ents {
			if strings.Contains(ent.Name(), ".tmp-") {
				t.Errorf("temporary file left: %s", filepath.Join(d, ent.Name()))
			}
		}
	}
}

func TestInstallRewritesChangedFile(t *testing.T) {
	e := mustEnv(t)
	mustInstall(t, e.opts())
	if err := os.Chmod(e.launcher(), 0o755); err != nil {
		t.Fatal(err)
	}
	out := mustInstall(t, e.opts())
	if !strings.Contains(out, "wrote "+e.launcher()+"\n") {
		t.Errorf("a launcher with the wrong mode was not rewritten:\n%s", out)
	}
	wantMode(t, e.launcher(), 0o700)
}

func TestFileContents(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.ExtensionIDs = []string{"pppppppppppppppppppppppppppppppp", "gocinifmbcgfcfejlknabffipmookipn", "pppppppppppppppppppppppppppppppp"}
	mustInstall(t, opts)

	wantManifest := `{
  "name": "dev.dsh.broker",
  "description": "DSH browser broker native host",
  "path": "` + e.launcher() + `",
  "type": "stdio",
  "allowed_origins": [
    "chrome-extension://gocinifmbcgfcfejlknabffipmookipn/",
    "chrome-extension://pppppppppppppppppppppppppppppppp/"
  ]
}
`
	for _, d := range []string{e.chromiumDir(), e.chromeDir()} {
		if got := mustRead(t, e.manifest(d)); got != wantManifest {
			t.Errorf("%s:\n%s\nwant:\n%s", e.manifest(d), got, wantManifest)
		}
	}
	wantConfig := `{
  "allowedOrigins": [
    "chrome-extension://gocinifmbcgfcfejlknabffipmookipn/",
    "chrome-extension://pppppppppppppppppppppppppppppppp/"
  ],
  "runtimeDir": "` + e.runtime + `"
}
`
	if got := mustRead(t, e.hostConfig()); got != wantConfig {
		t.Errorf("host config:\n%s\nwant:\n%s", got, wantConfig)
	}
	c, err := install.LoadHostConfig(e.hostConfig())
	if err != nil {
		t.Fatalf("LoadHostConfig of an installed config: %v", err)
	}
	if !c.Allows(pinnedOrigin) || c.Allows("chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/") || c.RuntimeDir != e.runtime {
		t.Errorf("loaded config %+v", c)
	}
	wantLauncher := "#!/bin/sh\n" +
		"# dev.dsh.broker native-messaging launcher, written by `broker install`; `broker uninstall` removes it.\n" +
		"# Chrome runs it with the caller origin as the first argument; nativehost checks it against the config.\n" +
		"exec '" + e.nativeHost + "' --config='" + e.hostConfig() + "' \"$@\"\n"
	if got := mustRead(t, e.launcher()); got != wantLauncher {
		t.Errorf("launcher:\n%s\nwant:\n%s", got, wantLauncher)
	}
}

// TestLauncherQuoting runs the installed launcher with /bin/sh: paths with
// a single quote, spaces and shell metacharacters must reach nativehost as
// one argument each, followed by Chrome's arguments unchanged.
func TestLauncherQuoting(t *testing.T) {
	e := mustEnv(t)
	odd := filepath.Join(e.root, "it's a $(dir) `x` \"q\"")
	nh := mustScript(t, filepath.Join(odd, "native host"), `for a in "$0" "$@"; do printf '%s\n' "$a"; done`)
	opts := e.opts()
	opts.NativeHostPath = nh
	opts.ConfigDir = filepath.Join(odd, "con'fig dir")
	mustInstall(t, opts)

	launcher := filepath.Join(opts.ConfigDir, "nativehost-launcher")
	out, err := exec.Command(launcher, pinnedOrigin, "--parent-window=0").Output()
	if err != nil {
		t.Fatalf("running the launcher: %v", err)
	}
	want := strings.Join([]string{nh, "--config=" + filepath.Join(opts.ConfigDir, "native-host.json"), pinnedOrigin, "--parent-window=0"}, "\n") + "\n"
	if string(out) != want {
		t.Errorf("launcher passed:\n%s\nwant:\n%s", out, want)
	}
}

func TestManifestDir(t *testing.T) {
	e := mustEnv(t)
	dir := filepath.Join(e.root, "udd", "NativeMessagingHosts")
	opts := e.opts()
	opts.ManifestDir = dir
	opts.Browsers = []string{"chrome"} // ignored: ManifestDir replaces every browser dir
	out := mustInstall(t, opts)
	if !strings.Contains(out, "wrote "+e.manifest(dir)+"\n") {
		t.Errorf("output:\n%s", out)
	}
	wantMode(t, e.manifest(dir), 0o644)
	wantAbsent(t, e.chromiumDir(), e.chromeDir())
	mustUninstall(t, opts)
	wantAbsent(t, e.manifest(dir))
}

func TestBrowsers(t *testing.T) {
	tests := []struct {
		name     string
		browsers []string
		chromium bool
		chrome   bool
	}{
		{"default", nil, true, true},
		{"all", []string{"all"}, true, true},
		{"chromium", []string{"chromium"}, true, false},
		{"chrome", []string{"chrome"}, false, true},
		{"both listed", []string{"chrome", "chromium", "chrome"}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			opts := e.opts()
			opts.Browsers = tc.browsers
			mustInstall(t, opts)
			for _, c := range []struct {
				dir  string
				want bool
			}{{e.chromiumDir(), tc.chromium}, {e.chromeDir(), tc.chrome}} {
				_, err := os.Stat(e.manifest(c.dir))
				if got := err == nil; got != c.want {
					t.Errorf("%s present = %v, want %v", c.dir, got, c.want)
				}
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		e := mustEnv(t)
		opts := e.opts()
		opts.Browsers = []string{"firefox"}
		if err := install.Install(opts, new(bytes.Buffer)); !errors.Is(err, install.ErrInvalidOptions) {
			t.Fatalf("err = %v, want ErrInvalidOptions", err)
		}
	})
}

func TestChromeConfigHome(t *testing.T) {
	e := mustEnv(t)
	cch := filepath.Join(e.root, "cch")
	t.Setenv("CHROME_CONFIG_HOME", cch)
	mustInstall(t, e.opts())
	if _, err := os.Stat(filepath.Join(cch, "google-chrome", "NativeMessagingHosts", "dev.dsh.broker.json")); err != nil {
		t.Error(err)
	}
	wantAbsent(t, e.chromeDir())
}

func TestDefaultConfigDirIsPathsConfigDir(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.Home = ""
	mustInstall(t, opts)
	if _, err := os.Stat(filepath.Join(paths.ConfigDir(), "native-host.json")); err != nil {
		t.Error(err)
	}
}

func TestRefusals(t *testing.T) {
	const foreign = `{"name":"org.example.other","path":"/x","type":"stdio","allowed_origins":[]}`
	tests := []struct {
		name  string
		setup func(t *testing.T, e *testEnv, o *install.Options)
		want  error
		keep  string // a file the refusal must leave byte-identical
	}{
		{"manifest dir is a symlink", func(t *testing.T, e *testEnv, o *install.Options) {
			mustMkdir(t, filepath.Join(e.root, "elsewhere"))
			mustMkdir(t, filepath.Dir(e.chromiumDir()))
			mustSymlink(t, filepath.Join(e.root, "elsewhere"), e.chromiumDir())
		}, install.ErrUnsafePath, ""},
		{"config dir is a symlink", func(t *testing.T, e *testEnv, o *install.Options) {
			mustMkdir(t, filepath.Join(e.root, "elsewhere"))
			mustMkdir(t, e.configHome)
			mustSymlink(t, filepath.Join(e.root, "elsewhere"), e.configDir())
		}, install.ErrUnsafePath, ""},
		{"manifest dir group-writable", func(t *testing.T, e *testEnv, o *install.Options) {
			mustMkdir(t, e.chromeDir())
			mustChmod(t, e.chromeDir(), 0o775)
		}, install.ErrUnsafePath, ""},
		{"config dir other-writable", func(t *testing.T, e *testEnv, o *install.Options) {
			mustMkdir(t, e.configDir())
			mustChmod(t, e.configDir(), 0o707)
		}, install.ErrUnsafePath, ""},
		{"manifest dir owned by another user", func(t *testing.T, e *testEnv, o *install.Options) {
			mustMkdir(t, e.chromeDir())
			mustChownOther(t, e.chromeDir())
		}, install.ErrUnsafePath, ""},
		{"manifest is a symlink", func(t *testing.T, e *testEnv, o *install.Options) {
			mustWrite(t, filepath.Join(e.root, "target.json"), `{"name":"dev.dsh.broker"}`)
			mustMkdir(t, e.chromeDir())
			mustSymlink(t, filepath.Join(e.root, "target.json"), e.manifest(e.chromeDir()))
		}, install.ErrUnsafePath, "target.json"},
		{"manifest owned by another user", func(t *testing.T, e *testEnv, o *install.Options) {
			mustWrite(t, e.manifest(e.chromeDir()), `{"name":"dev.dsh.broker"}`)
			mustChownOther(t, e.manifest(e.chromeDir()))
		}, install.ErrUnsafePath, "chrome manifest"},
		{"foreign manifest", func(t *testing.T, e *testEnv, o *install.Options) {
			mustWrite(t, e.manifest(e.chromeDir()), foreign)
		}, install.ErrForeignFile, "chrome manifest"},
		{"malformed manifest", func(t *testing.T, e *testEnv, o *install.Options) {
			mustWrite(t, e.manifest(e.chromeDir()), `{"name":"dev.dsh.broker"`)
		}, install.ErrForeignFile, "chrome manifest"},
		{"foreign launcher", func(t *testing.T, e *testEnv, o *install.Options) {
			mustWrite(t, e.launcher(), "#!/bin/sh\nexec something-else\n")
		}, install.ErrForeignFile, ""},
		{"malformed host config", func(t *testing.T, e *testEnv, o *install.Options) {
			mustWrite(t, e.hostConfig(), `{"allowedOrigins":[],"runtimeDir":"/x","extra":1}`)
		}, install.ErrForeignFile, ""},
		{"bad extension ID", func(t *testing.T, e *testEnv, o *install.Options) {
			o.ExtensionIDs = []string{"not-an-id"}
		}, install.ErrInvalidOptions, ""},
		{"missing nativehost", func(t *testing.T, e *testEnv, o *install.Options) {
			o.NativeHostPath = filepath.Join(e.root, "bin", "missing")
		}, install.ErrInvalidOptions, ""},
		{"relative manifest dir", func(t *testing.T, e *testEnv, o *install.Options) {
			o.ManifestDir = "relative/dir"
		}, install.ErrInvalidOptions, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEnv(t)
			opts := e.opts()
			tc.setup(t, e, &opts)
			var keep, keepPath string
			switch tc.keep {
			case "chrome manifest":
				keepPath = e.manifest(e.chromeDir())
			case "":
			default:
				keepPath = filepath.Join(e.root, tc.keep)
			}
			if keepPath != "" {
				keep = mustRead(t, keepPath)
			}
			var out bytes.Buffer
			err := install.Install(opts, &out)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			t.Logf("refused: %v", err)
			if out.Len() != 0 {
				t.Errorf("a refused install printed:\n%s", out.String())
			}
			wantAbsent(t, e.manifest(e.chromiumDir()), filepath.Join(e.root, "elsewhere", "dev.dsh.broker.json"),
				filepath.Join(e.root, "elsewhere", "native-host.json"))
			if tc.name != "foreign launcher" {
				wantAbsent(t, e.launcher())
			}
			if tc.name != "malformed host config" {
				wantAbsent(t, e.hostConfig())
			}
			if keepPath != "" && mustRead(t, keepPath) != keep {
				t.Errorf("%s was modified by a refused install", keepPath)
			}
		})
	}
}

func TestUninstall(t *testing.T) {
	e := mustEnv(t)
	mustInstall(t, e.opts())
	// State Uninstall must never touch.
	token := filepath.Join(e.runtime, "auth-token")
	journal := filepath.Join(e.root, "state", "journal.db")
	mustWrite(t, token, strings.Repeat("a", 64))
	mustWrite(t, journal, "journal")
	// A foreign manifest with our file name in a dir we would uninstall from.
	other := filepath.Join(e.root, "other", "NativeMessagingHosts")
	mustWrite(t, e.manifest(other), `{"name":"org.example.other"}`)

	out := mustUninstall(t, e.opts())
	for _, p := range []string{e.hostConfig(), e.launcher(), e.manifest(e.chromiumDir()), e.manifest(e.chromeDir())} {
		if !strings.Contains(out, "removed "+p+"\n") {
			t.Errorf("uninstall output lacks %q:\n%s", "removed "+p, out)
		}
	}
	wantAbsent(t, e.hostConfig(), e.launcher(), e.manifest(e.chromiumDir()), e.manifest(e.chromeDir()))
	for _, p := range []string{token, journal, e.runtime, e.configDir(), e.chromiumDir()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("uninstall removed %s: %v", p, err)
		}
	}

	out = mustUninstall(t, e.opts())
	if strings.Contains(out, "removed ") || !strings.Contains(out, "absent "+e.hostConfig()+"\n") {
		t.Errorf("second uninstall:\n%s", out)
	}

	opts := e.opts()
	opts.ManifestDir = other
	out = mustUninstall(t, opts)
	if !strings.Contains(out, "kept "+e.manifest(other)) {
		t.Errorf("uninstall of a foreign manifest:\n%s", out)
	}
	if _, err := os.Stat(e.manifest(other)); err != nil {
		t.Errorf("uninstall removed a foreign manifest: %v", err)
	}
}

func TestUninstallRefusesUnsafeDir(t *testing.T) {
	e := mustEnv(t)
	mustInstall(t, e.opts())
	mustChmod(t, e.chromeDir(), 0o777)
	err := install.Uninstall(e.opts(), new(bytes.Buffer))
	if !errors.Is(err, install.ErrUnsafePath) {
		t.Fatalf("err = %v, want ErrUnsafePath", err)
	}
	if _, err := os.Stat(e.hostConfig()); err != nil {
		t.Errorf("a refused uninstall removed the host config: %v", err)
	}
}

// fakeSystemctl writes a fake systemctl: a shell script that appends its
// arguments to a log and exits 0, or fails for the arguments in failOn. A
// fake is used because a running user systemd instance cannot exist in the
// test sandbox; the real commands are exactly the logged ones.
func fakeSystemctl(t *testing.T, e *testEnv, failOn string) (cmd, log string) {
	t.Helper()
	log = filepath.Join(e.root, "systemctl.log")
	body := `printf '%s\n' "$*" >> '` + log + `'`
	if failOn != "" {
		body += "\n" + `if [ "$*" = '` + failOn + `' ]; then echo "Failed to connect to bus: No medium found" >&2; exit 1; fi`
	}
	return mustScript(t, filepath.Join(e.root, "bin", "systemctl"), body), log
}

func readLog(t *testing.T, log string) string {
	t.Helper()
	b, err := os.ReadFile(log)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(log)
	return string(b)
}

func TestSystemdPresent(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	var log string
	opts.Systemctl, log = fakeSystemctl(t, e, "")

	out := mustInstall(t, opts)
	socket, service := filepath.Join(e.unitDir(), "broker.socket"), filepath.Join(e.unitDir(), "broker.service")
	for _, p := range []string{socket, service} {
		if !strings.Contains(out, "wrote "+p+"\n") {
			t.Errorf("output lacks %q:\n%s", "wrote "+p, out)
		}
		wantMode(t, p, 0o644)
	}
	if got, want := readLog(t, log), "--user show-environment\n--user daemon-reload\n--user enable --now broker.socket\n"; got != want {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out, "ran systemctl --user enable --now broker.socket\n") || strings.Contains(out, "skipped systemd") {
		t.Errorf("output:\n%s", out)
	}
	wantSocket := "# dev.dsh.broker systemd unit, written by `broker install`; `broker uninstall` removes it.\n" +
		"[Unit]\nDescription=DSH browser broker socket\n\n" +
		"[Socket]\nListenStream=%t/dsh/broker.sock\nSocketMode=0600\nDirectoryMode=0700\n\n" +
		"[Install]\nWantedBy=sockets.target\n"
	if got := mustRead(t, socket); got != wantSocket {
		t.Errorf("broker.socket:\n%s\nwant:\n%s", got, wantSocket)
	}
	wantService := "# dev.dsh.broker systemd unit, written by `broker install`; `broker uninstall` removes it.\n" +
		"[Unit]\nDescription=DSH browser broker\nRequires=broker.socket\nAfter=broker.socket\n\n" +
		"[Service]\nType=notify\nExecStart=\"" + e.broker + "\" serve \"--runtime-dir=%t/dsh\"\nRestart=on-failure\n\n" +
		"[Install]\nAlso=broker.socket\n"
	if got := mustRead(t, service); got != wantService {
		t.Errorf("broker.service:\n%s\nwant:\n%s", got, wantService)
	}

	// Identical reinstall: nothing written, no daemon-reload, enable again (idempotent).
	out = mustInstall(t, opts)
	if strings.Contains(out, "wrote ") {
		t.Errorf("second install wrote:\n%s", out)
	}
	if got, want := readLog(t, log), "--user show-environment\n--user enable --now broker.socket\n"; got != want {
		t.Errorf("second install systemctl calls:\n%s\nwant:\n%s", got, want)
	}

	out = mustUninstall(t, opts)
	if got, want := readLog(t, log), "--user show-environment\n--user disable --now broker.socket\n--user daemon-reload\n"; got != want {
		t.Errorf("uninstall systemctl calls:\n%s\nwant:\n%s", got, want)
	}
	wantAbsent(t, socket, service, e.hostConfig())
	if !strings.Contains(out, "removed "+socket+"\n") {
		t.Errorf("uninstall output:\n%s", out)
	}
	mustUninstall(t, opts)
	if got := readLog(t, log); got != "" {
		t.Errorf("uninstall with nothing installed ran systemctl:\n%s", got)
	}
}

func TestSystemdUnitQuoting(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.Systemctl, _ = fakeSystemctl(t, e, "")
	opts.BrokerPath = mustScript(t, filepath.Join(e.root, `b "r" 100% $HOME\x`, "broker"), "exit 0")
	opts.RuntimeDir = filepath.Join(e.root, "rt 50%")
	mustInstall(t, opts)
	socket := mustRead(t, filepath.Join(e.unitDir(), "broker.socket"))
	if want := "ListenStream=" + strings.ReplaceAll(opts.RuntimeDir, "%", "%%") + "/broker.sock\n"; !strings.Contains(socket, want) {
		t.Errorf("broker.socket lacks %q:\n%s", want, socket)
	}
	service := mustRead(t, filepath.Join(e.unitDir(), "broker.service"))
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`)
	want := `ExecStart="` + esc.Replace(opts.BrokerPath) + `" serve "--runtime-dir=` + esc.Replace(opts.RuntimeDir) + `"` + "\n"
	if !strings.Contains(service, want) {
		t.Errorf("broker.service lacks %q:\n%s", want, service)
	}
	if !strings.Contains(service, `b \"r\" 100%% $$HOME\\x`) {
		t.Errorf("broker.service escaping:\n%s", service)
	}
	// The host config and nativehost see the runtime dir unescaped.
	c, err := install.LoadHostConfig(e.hostConfig())
	if err != nil || c.RuntimeDir != opts.RuntimeDir {
		t.Errorf("host config runtime dir = %+v, %v", c, err)
	}
}

func TestSystemdAbsent(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	var log string
	opts.Systemctl, log = fakeSystemctl(t, e, "--user show-environment")
	out := mustInstall(t, opts)
	if !strings.Contains(out, "skipped systemd units: no user systemd instance (systemctl --user show-environment: exit status 1: Failed to connect to bus") {
		t.Errorf("output:\n%s", out)
	}
	if got := readLog(t, log); got != "--user show-environment\n" {
		t.Errorf("systemctl calls: %q", got)
	}
	wantAbsent(t, e.unitDir())

	opts.Systemctl = filepath.Join(e.root, "bin", "no-such-systemctl")
	out = mustInstall(t, opts)
	if !strings.Contains(out, "skipped systemd units: no user systemd instance") {
		t.Errorf("output with a missing systemctl:\n%s", out)
	}
}

func TestUninstallUnitsWithoutSystemd(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.Systemctl, _ = fakeSystemctl(t, e, "")
	mustInstall(t, opts)
	var log string
	opts.Systemctl, log = fakeSystemctl(t, e, "--user show-environment")
	readLog(t, log)
	out := mustUninstall(t, opts)
	wantAbsent(t, filepath.Join(e.unitDir(), "broker.socket"), filepath.Join(e.unitDir(), "broker.service"))
	if !strings.Contains(out, "removed the unit files without disabling them: no user systemd instance") {
		t.Errorf("output:\n%s", out)
	}
	if got := readLog(t, log); got != "--user show-environment\n" {
		t.Errorf("systemctl calls: %q", got)
	}
}

func TestSystemdEnableFailure(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.Systemctl, _ = fakeSystemctl(t, e, "--user enable --now broker.socket")
	err := install.Install(opts, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "enable --now broker.socket") {
		t.Fatalf("err = %v, want the failing systemctl call", err)
	}
}

func TestNoService(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	var log string
	opts.Systemctl, log = fakeSystemctl(t, e, "")
	opts.NoService = true
	out := mustInstall(t, opts)
	if !strings.Contains(out, "skipped systemd units: --no-service given\n") {
		t.Errorf("output:\n%s", out)
	}
	wantAbsent(t, e.unitDir())
	out = mustUninstall(t, opts)
	if !strings.Contains(out, "skipped systemd units: --no-service given\n") {
		t.Errorf("uninstall output:\n%s", out)
	}
	if got := readLog(t, log); got != "" {
		t.Errorf("--no-service ran systemctl:\n%s", got)
	}
}

func TestForeignUnitRefused(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.Systemctl, _ = fakeSystemctl(t, e, "")
	unit := filepath.Join(e.unitDir(), "broker.service")
	mustWrite(t, unit, "[Service]\nExecStart=/usr/bin/someone-elses-broker\n")
	if err := install.Install(opts, new(bytes.Buffer)); !errors.Is(err, install.ErrForeignFile) {
		t.Fatalf("err = %v, want ErrForeignFile", err)
	}
	wantAbsent(t, e.hostConfig(), filepath.Join(e.unitDir(), "broker.socket"))
	out := mustUninstall(t, opts)
	if !strings.Contains(out, "kept "+unit) {
		t.Errorf("uninstall output:\n%s", out)
	}
}

func TestLoadHostConfig(t *testing.T) {
	const good = `{"allowedOrigins":["chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"],"runtimeDir":"/run/user/1/dsh"}`
	tests := []struct {
		name    string
		content string
		mode    fs.FileMode
		setup   func(t *testing.T, path string)
		want    error
	}{
		{"valid", good, 0o600, nil, nil},
		{"valid read-only", good, 0o400, nil, nil},
		{"unknown field", `{"allowedOrigins":["chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"],"runtimeDir":"/r","x":1}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"missing runtimeDir", `{"allowedOrigins":["chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"]}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"missing allowedOrigins", `{"runtimeDir":"/r"}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"empty allowedOrigins", `{"allowedOrigins":[],"runtimeDir":"/r"}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"bad origin", `{"allowedOrigins":["https://example.com/"],"runtimeDir":"/r"}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"duplicate origin", `{"allowedOrigins":["chrome-extension://gocinifmbcgfcfejlknabffipmookipn/","chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"],"runtimeDir":"/r"}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"relative runtimeDir", `{"allowedOrigins":["chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"],"runtimeDir":"r"}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"trailing data", good + `{}`, 0o600, nil, install.ErrInvalidHostConfig},
		{"not an object", `[]`, 0o600, nil, install.ErrInvalidHostConfig},
		{"too large", good + strings.Repeat(" ", 64<<10), 0o600, nil, install.ErrInvalidHostConfig},
		{"group-writable", good, 0o620, nil, install.ErrUnsafePath},
		{"other-writable", good, 0o602, nil, install.ErrUnsafePath},
		{"symlink", good, 0o600, func(t *testing.T, path string) {
			if err := os.Rename(path, path+".real"); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, path+".real", path)
		}, install.ErrUnsafePath},
		{"owned by another user", good, 0o600, func(t *testing.T, path string) { mustChownOther(t, path) }, install.ErrUnsafePath},
		{"missing", "", 0, func(t *testing.T, path string) { os.Remove(path) }, fs.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "native-host.json")
			mustWrite(t, path, tc.content)
			if tc.mode != 0 {
				mustChmod(t, path, tc.mode)
			}
			if tc.setup != nil {
				tc.setup(t, path)
			}
			c, err := install.LoadHostConfig(path)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !c.Allows(pinnedOrigin) || c.RuntimeDir != "/run/user/1/dsh" {
					t.Errorf("config %+v", c)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func mustMkdir(t testing.TB, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustChmod(t testing.TB, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// mustChownOther gives path to another user, which needs root.
func mustChownOther(t testing.TB, path string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

func TestServeArgsInUnit(t *testing.T) {
	e := mustEnv(t)
	opts := e.opts()
	opts.Systemctl, _ = fakeSystemctl(t, e, "")
	opts.ServeArgs = []string{"--access-mode=personal", "--admission=prompt"}
	mustInstall(t, opts)
	service := mustRead(t, filepath.Join(e.unitDir(), "broker.service"))
	if !strings.Contains(service, `serve "--runtime-dir=`) || !strings.Contains(service, `" "--access-mode=personal" "--admission=prompt"`+"\n") {
		t.Errorf("broker.service does not pass the serve flags:\n%s", service)
	}
}
