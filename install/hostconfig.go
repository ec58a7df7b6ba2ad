package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Names shared by the installer, the native host and the extension.
const (
	// HostName is the native-messaging host name the extension connects to.
	HostName = "dev.dsh.broker"
	// ManifestName is the file name of the native-messaging manifest.
	ManifestName = HostName + ".json"
	// HostConfigName is the file name of [HostConfig] in the config directory.
	HostConfigName = "native-host.json"
	// LauncherName is the file name of the launcher script in the config directory.
	LauncherName = "nativehost-launcher"
	// PinnedExtensionID is the ID of the extension in extension/, pinned by
	// the key in its manifest.json.
	PinnedExtensionID = "gocinifmbcgfcfejlknabffipmookipn"
	// MaxOrigins bounds the allowlist.
	MaxOrigins = 64
)

var (
	extensionIDPattern = regexp.MustCompile(`^[a-p]{32}$`)
	originPattern      = regexp.MustCompile(`^chrome-extension://[a-p]{32}/$`)
)

// ExtensionOrigin returns the caller origin Chrome passes to a native host
// started by the extension with the given ID.
func ExtensionOrigin(id string) string { return "chrome-extension://" + id + "/" }

// HostConfig is the native host's configuration, CONFIG/native-host.json:
//
//	{
//	  "allowedOrigins": ["chrome-extension://gocinifmbcgfcfejlknabffipmookipn/"],
//	  "runtimeDir": "/run/user/1000/dsh"
//	}
//
// Both fields are required and no other field is allowed. AllowedOrigins
// holds 1–64 unique chrome-extension origins (sorted when Install writes
// them); RuntimeDir is the absolute runtime directory whose broker.sock and
// auth-token the native host uses.
type HostConfig struct {
	AllowedOrigins []string `json:"allowedOrigins"`
	RuntimeDir     string   `json:"runtimeDir"`
}

// Allows reports whether origin is exactly one of the allowed origins.
func (c *HostConfig) Allows(origin string) bool {
	return slices.Contains(c.AllowedOrigins, origin)
}

// LoadHostConfig reads and validates the host config at path. The file must
// be a regular file (not a symlink) of at most 64 KiB, owned by the current
// user and not writable by group or others, because it decides which
// extensions receive the broker token. Errors wrap [ErrUnsafePath] or
// [ErrInvalidHostConfig] (or an fs error such as fs.ErrNotExist).
func LoadHostConfig(path string) (*HostConfig, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := checkFile(path, fi); err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("%w: %s is writable by group or others (mode %04o)", ErrUnsafePath, path, perm)
	}
	data, err := readSame(path, fi)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%w: %v", ErrInvalidHostConfig, err)
	}
	if err != nil {
		return nil, err
	}
	c, err := parseHostConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// parseHostConfig decodes data strictly: one JSON object, known fields
// only, both present and valid.
func parseHostConfig(data []byte) (*HostConfig, error) {
	var raw struct {
		AllowedOrigins *[]string `json:"allowedOrigins"`
		RuntimeDir     *string   `json:"runtimeDir"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidHostConfig, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidHostConfig)
	}
	if raw.AllowedOrigins == nil {
		return nil, fmt.Errorf("%w: allowedOrigins is required", ErrInvalidHostConfig)
	}
	if raw.RuntimeDir == nil {
		return nil, fmt.Errorf("%w: runtimeDir is required", ErrInvalidHostConfig)
	}
	c := &HostConfig{AllowedOrigins: *raw.AllowedOrigins, RuntimeDir: *raw.RuntimeDir}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *HostConfig) validate() error {
	if n := len(c.AllowedOrigins); n == 0 || n > MaxOrigins {
		return fmt.Errorf("%w: allowedOrigins must hold 1 to %d origins, not %d", ErrInvalidHostConfig, MaxOrigins, n)
	}
	seen := make(map[string]bool, len(c.AllowedOrigins))
	for _, o := range c.AllowedOrigins {
		if !originPattern.MatchString(o) {
			return fmt.Errorf("%w: allowedOrigins entry %q is not chrome-extension://<32 letters a-p>/", ErrInvalidHostConfig, o)
		}
		if seen[o] {
			return fmt.Errorf("%w: allowedOrigins repeats %q", ErrInvalidHostConfig, o)
		}
		seen[o] = true
	}
	if !filepath.IsAbs(c.RuntimeDir) || hasControl(c.RuntimeDir) {
		return fmt.Errorf("%w: runtimeDir %q must be an absolute path", ErrInvalidHostConfig, c.RuntimeDir)
	}
	return nil
}

// encodeJSON renders v the way every JSON file here is written: 2-space
// indentation, a final newline, and no HTML escaping of paths.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic("install: encoding " + fmt.Sprintf("%T", v) + ": " + err.Error()) // only plain structs are encoded
	}
	return b.Bytes()
}

// hasControl reports whether s contains an ASCII control character, which
// no path written into a script, unit or manifest may carry.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
