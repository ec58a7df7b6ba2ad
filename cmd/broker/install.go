package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

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
	return func() install.Options {
		opts := install.Options{
			Browsers:       []string{*browser},
			ManifestDir:    *manifestDir,
			NoService:      *noService,
			ExtensionIDs:   ids,
			NativeHostPath: *nativehost,
			RuntimeDir:     *runtimeDir,
			ExtensionDir:   bundledExtensionDir(),
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
	if err := install.Install(opts(), stdout); err != nil {
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
