package install

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{"sh": shellQuote}).ParseFS(templateFS, "templates/*.tmpl"))

// Markers: the first line(s) of every script and unit this package writes.
// A file at a target path without its marker was not written by broker
// install and is never overwritten or removed.
const (
	launcherMarker = "#!/bin/sh\n# dev.dsh.broker native-messaging launcher, written by `broker install`"
	unitMarker     = "# dev.dsh.broker systemd unit, written by `broker install`"
)

// Unit names, as `systemctl --user` knows them.
const (
	SocketUnit  = "broker.socket"
	ServiceUnit = "broker.service"
)

func render(name string, data any) []byte {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		panic("install: template " + name + ": " + err.Error()) // the templates are embedded and tested
	}
	return b.Bytes()
}

// shellQuote quotes s as one /bin/sh word: inside single quotes nothing is
// special except the quote itself, which becomes '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// unitEscape escapes s for use inside a double-quoted word of a systemd
// command line (systemd.syntax(7), systemd.service(7) "Command lines"):
// backslash and double quote are C-escaped, % starts a specifier and $ an
// environment variable, so both are doubled.
func unitEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `%`, `%%`, `$`, `$$`).Replace(s)
}

// launcher returns the launcher script that execs nativeHost with the host
// config at hostConfig and forwards Chrome's arguments.
func launcher(nativeHost, hostConfig string) []byte {
	return render("nativehost-launcher.tmpl", struct{ NativeHost, HostConfig string }{nativeHost, hostConfig})
}

// nativeManifest is the native-messaging host manifest Chrome reads.
type nativeManifest struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	Path           string   `json:"path"`
	Type           string   `json:"type"`
	AllowedOrigins []string `json:"allowed_origins"`
}

func manifest(launcherPath string, origins []string) []byte {
	return encodeJSON(nativeManifest{
		Name:           HostName,
		Description:    "DSH browser broker native host",
		Path:           launcherPath,
		Type:           "stdio",
		AllowedOrigins: origins,
	})
}

// checkManifest accepts an existing manifest only if it is a JSON object
// whose name is ours.
func checkManifest(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return fmt.Errorf("not a JSON object")
	}
	var name string
	if err := json.Unmarshal(m["name"], &name); err != nil || name != HostName {
		return fmt.Errorf("its name is %s, not %q", m["name"], HostName)
	}
	return nil
}

func checkLauncher(data []byte) error {
	if !bytes.HasPrefix(data, []byte(launcherMarker)) {
		return fmt.Errorf("it does not start with the broker install marker")
	}
	return nil
}

func checkUnit(data []byte) error {
	if !bytes.HasPrefix(data, []byte(unitMarker)) {
		return fmt.Errorf("it does not start with the broker install marker")
	}
	return nil
}

func checkHostConfig(data []byte) error {
	if _, err := parseHostConfig(data); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "install: "))
	}
	return nil
}

// socketUnit returns broker.socket listening on socketPath, a path that may
// use systemd specifiers (%t) and has its own % already escaped.
func socketUnit(listenStream string) []byte {
	return render("broker.socket.tmpl", struct{ ListenStream string }{listenStream})
}

// serviceUnit returns broker.service running `broker serve --runtime-dir=…`
// with the extra serve flags. runtimeDirWord is the already-escaped runtime
// dir (or "%t/dsh").
func serviceUnit(broker, runtimeDirWord string, serveArgs []string) []byte {
	exec := `"` + unitEscape(broker) + `" serve "--runtime-dir=` + runtimeDirWord + `"`
	for _, a := range serveArgs {
		exec += ` "` + unitEscape(a) + `"`
	}
	return render("broker.service.tmpl", struct{ ExecStart string }{exec})
}
