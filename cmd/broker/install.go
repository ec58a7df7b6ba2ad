package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dsh-browser/broker/broker"
	"github.com/dsh-browser/broker/browser"

	"github.com/dsh-browser/broker/install"
)

func installFlags(fs *flag.FlagSet) func() install.Options {
	browser := fs.String("browser", install.AllBrowsers, "chromium, chrome or all")
	manifestDir := fs.String("manifest-dir", "", "write the native-messaging manifest here instead of each browser's own directory")
	noService := fs.Bool("no-service", false, "do not install or touch the systemd user units")
	var ids multiFlag
	fs.Var(&ids, "extension-id", "extension ID allowed to start the native host (default the bundled extension's pinned ID); repeatable")
	nativehost := fs.String("nativehost", "", "path of the nativehost binary (default: next to this broker binary)")
	runtimeDir := fs.String("runtime-dir", "", "runtime directory the native host and service use (default as for serve)")
	access := fs.String("access-mode", "", "the service's access mode: restricted (default) or personal")
	admission := fs.String("admission", "", "the service's admission: open (default) or prompt")
	var allow multiFlag
	fs.Var(&allow, "allow-origin", "restricted mode: an exact origin the service lets claims target; repeatable")
	return func() install.Options {
		var serve []string
		if *access != "" {
			serve = append(serve, "--access-mode="+*access)
		}
		if *admission != "" {
			serve = append(serve, "--admission="+*admission)
		}
		for _, o := range allow {
			serve = append(serve, "--allow-origin="+o)
		}
		opts := install.Options{
			Browsers:       []string{*browser},
			ManifestDir:    *manifestDir,
			NoService:      *noService,
			ExtensionIDs:   ids,
			NativeHostPath: *nativehost,
			RuntimeDir:     *runtimeDir,
			ExtensionDir:   bundledExtensionDir(),
			ServeArgs:      serve,
		}
		if path, err := exec.LookPath("systemctl"); err == nil {
			opts.Systemctl = path
		}
		return opts
	}
}

// bundledExtensionDir finds extension/ in the checkout the binary was built
// into (bin/broker → ../extension), for the printed next steps.
func bundledExtensionDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := filepath.Join(filepath.Dir(exe), "..", "extension")
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		return ""
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

func runInstall(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("install", "install [flags]\n\nRegisters the native host (dev.dsh.broker) with Chromium and Chrome for the\nbundled extension, and installs the broker as a systemd user service where\nsystemd runs. Safe to repeat: unchanged files are left alone.", stderr)
	opts := installFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	o := opts()
	if err := checkServeArgs(o.ServeArgs); err != nil {
		fmt.Fprintf(stderr, "broker install: %v\n", err)
		return 2
	}
	if err := install.Install(o, stdout); err != nil {
		fmt.Fprintf(stderr, "broker install: %v\n", err)
		return 1
	}
	return 0
}

func runUninstall(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("uninstall", "uninstall [flags]\n\nRemoves what install wrote. The token, runtime directory and state\n(journal) are kept.", stderr)
	opts := installFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if err := install.Uninstall(opts(), stdout); err != nil {
		fmt.Fprintf(stderr, "broker uninstall: %v\n", err)
		return 1
	}
	return 0
}

// checkServeArgs refuses service flags that `broker serve` would refuse, so
// a typo fails now rather than when systemd starts the service.
func checkServeArgs(args []string) error {
	personal, origins := false, false
	for _, a := range args {
		name, value, _ := strings.Cut(a, "=")
		switch name {
		case "--access-mode":
			if value != browser.AccessRestricted && value != browser.AccessPersonal {
				return fmt.Errorf("--access-mode=%s: use restricted or personal", value)
			}
			personal = value == browser.AccessPersonal
		case "--admission":
			if value != broker.AdmissionOpen && value != broker.AdmissionPrompt {
				return fmt.Errorf("--admission=%s: use open or prompt", value)
			}
		case "--allow-origin":
			origins = true
		}
	}
	if personal && origins {
		return fmt.Errorf("--allow-origin applies to restricted mode only; personal mode allows every HTTP(S) tab")
	}
	return nil
}
