// Package apps is the public vocabulary of Snug hosting: the snug provider
// kind, the snug.* client methods with their params and results (used by
// `broker app`, `broker mcp` and scripts through `broker call`), and the
// messages between the broker's hub and the extension's runner.
//
// It holds names, types and limits only; the hub that serves them is
// package snug/hub.
package apps

import "time"

// Kind is the provider kind of a Snug host: the extension's service
// worker, through nativehost, on a native port of its own that carries its
// runner tabs.
const Kind = "snug"

// CapRunner is what a snug provider must advertise: it opens runner tabs
// and relays their app frames as this package describes.
const CapRunner = "snug.runner.v1"

// CapApps is offered to every peer in the welcome while the hub serves.
const CapApps = "snug.apps.v1"

// Client methods.
const (
	MethodApps     = "snug.apps"     // list the installed apps
	MethodInstall  = "snug.install"  // install an app from its HTML (version 1, pinned)
	MethodUpdate   = "snug.update"   // save a new version
	MethodSource   = "snug.source"   // read a version's HTML and runtime contract
	MethodVersions = "snug.versions" // list an app's versions
	MethodRevert   = "snug.revert"   // copy a version forward as the new one
	MethodReset    = "snug.reset"    // copy the factory version forward as the new one
	MethodRemove   = "snug.remove"   // remove an app and everything of it
	MethodOpen     = "snug.open"     // show an app in a runner tab

	MethodAgentGet     = "snug.agent.get"     // the agent app turns go to
	MethodAgentSet     = "snug.agent.set"     // choose it
	MethodAgentOffer   = "snug.agent.offer"   // a `broker mcp` whose host can sample offers it
	MethodAgentConfirm = "snug.agent.confirm" // confirm agent settings that came with an imported file

	MethodExport = "snug.export" // write the user's file (or one app's database) to a path
	MethodImport = "snug.import" // replace the apps and data with a user file
)

// Limits.
const (
	// MaxHTMLBytes bounds an app's HTML (UTF-8). An app is one file,
	// usually written by an agent; libraries come from the CDN allowlist.
	MaxHTMLBytes = 512 << 10
	// MaxAppRefChars bounds an app reference: its id, or its name.
	MaxAppRefChars = 128
	// MaxNoteChars bounds a version's note.
	MaxNoteChars = 200
	// MaxContractChars bounds the text of a runtime contract offered with
	// a version; the contract's own bound (2,560 UTF-16 units once
	// serialised) is checked by package snug/contract.
	MaxContractChars = 8192
)

// AppRef names an app: its id, or its display name (case-insensitive) when
// no other app has that name.
type AppRef struct {
	App string `json:"app" len:"1,128" jsonschema:"the app's id, or its display name"`
}

// AppsParams are snug.apps' params (none).
type AppsParams struct{}

// InstallParams are snug.install's params.
type InstallParams struct {
	HTML string `json:"html" len:"1,524288" jsonschema:"the app: one self-contained HTML file"`
	// DisplayName defaults to the HTML's <title>.
	DisplayName     string `json:"displayName,omitempty" len:"1,80"`
	Description     string `json:"description,omitempty" len:",400"`
	IconEmoji       string `json:"iconEmoji,omitempty" len:",8"`
	IconColor       string `json:"iconColor,omitempty" len:",32"`
	RuntimeContract string `json:"runtimeContract,omitempty" len:",8192" jsonschema:"the runtime contract JSON (Snug Part IV §18.1), checked strictly"`
}

// UpdateParams are snug.update's params.
type UpdateParams struct {
	App             string `json:"app" len:"1,128"`
	HTML            string `json:"html" len:"1,524288"`
	Note            string `json:"note,omitempty" len:",200"`
	RuntimeContract string `json:"runtimeContract,omitempty" len:",8192"`
	// DropContract writes the version without a runtime contract. By
	// default, when RuntimeContract is empty, the current version's is
	// copied forward (spec §18.2).
	DropContract bool `json:"dropContract,omitempty"`
}

// SourceParams are snug.source's params.
type SourceParams struct {
	App     string `json:"app" len:"1,128"`
	Version int    `json:"version,omitempty" range:"1,2147483647" jsonschema:"omit for the current version"`
}

// RevertParams are snug.revert's params.
type RevertParams struct {
	App     string `json:"app" len:"1,128"`
	Version int    `json:"version" range:"1,2147483647"`
}

// App is an installed app as clients see it.
type App struct {
	ID             string    `json:"id"`
	DisplayName    string    `json:"displayName"`
	Description    string    `json:"description,omitempty"`
	IconEmoji      string    `json:"iconEmoji,omitempty"`
	IconColor      string    `json:"iconColor,omitempty"`
	CurrentVersion int       `json:"currentVersion"`
	UsesDB         bool      `json:"usesDb"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// Open counts the runner tabs showing the app now.
	Open int `json:"open"`
}

// Version is one stored version of an app.
type Version struct {
	Version   int       `json:"version"`
	Note      string    `json:"note,omitempty"`
	Pinned    bool      `json:"pinned"`
	Current   bool      `json:"current"`
	CreatedAt time.Time `json:"createdAt"`
	HTMLBytes int       `json:"htmlBytes"`
}

// Source is snug.source's result.
type Source struct {
	App             string `json:"app"`
	Version         int    `json:"version"`
	HTML            string `json:"html"`
	RuntimeContract string `json:"runtimeContract,omitempty"`
}

// Saved is the result of the methods that write a version.
type Saved struct {
	App     App     `json:"app"`
	Version Version `json:"version"`
	// Reloaded counts the runner tabs that now show the new version.
	Reloaded int `json:"reloaded"`
}

// Opened is snug.open's result.
type Opened struct {
	App App `json:"app"`
	// Tab is the runner tab's id in the browser.
	Tab int `json:"tab"`
}

// Agent providers: where an app turn goes.
const (
	// AgentNone: no agent; app-messages are refused, storage works.
	AgentNone = "none"
	// AgentOpenAI: an OpenAI-compatible chat-completions endpoint the user
	// configured, with an optional key kept in snug_secrets.
	AgentOpenAI = "openai-compatible"
	// AgentSampling: the user's MCP host, through MCP sampling on a
	// `broker mcp` connection whose host supports it.
	AgentSampling = "mcp-sampling"
)

// AgentSetParams are snug.agent.set's params. Key is written to
// snug_secrets and never read back by any method.
type AgentSetParams struct {
	Provider string `json:"provider" enum:"none,openai-compatible,mcp-sampling"`
	Endpoint string `json:"endpoint,omitempty" len:",2048" jsonschema:"openai-compatible: the API base URL (…/v1) or its /chat/completions URL"`
	Model    string `json:"model,omitempty" len:",200"`
	Key      string `json:"key,omitempty" len:",4096" jsonschema:"openai-compatible: the API key, if the endpoint needs one"`
	// KeepKey keeps the stored key when Key is empty. Choosing another
	// provider removes the key.
	KeepKey bool `json:"keepKey,omitempty"`
	// MCPHost, for mcp-sampling, picks the MCP host by the name it gives
	// (clientInfo.name); empty takes the latest that offered sampling.
	MCPHost string `json:"mcpHost,omitempty" len:",200"`
}

// Agent is the configured agent, as snug.agent.get reports it: never the
// key, only whether there is one.
type Agent struct {
	Provider string `json:"provider"`
	Endpoint string `json:"endpoint,omitempty"`
	Model    string `json:"model,omitempty"`
	HasKey   bool   `json:"hasKey"`
	MCPHost  string `json:"mcpHost,omitempty"`
	// Samplers lists the MCP hosts offering sampling now.
	Samplers []string `json:"samplers"`
	// Unconfirmed is set when these settings came with an imported file:
	// app turns are refused until the user confirms them
	// (MethodAgentConfirm) or chooses anew.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// AgentConfirmParams are snug.agent.confirm's params: the settings the
// user saw and confirms. They must be the stored ones (STALE_TARGET
// otherwise: they changed since).
type AgentConfirmParams struct {
	Provider string `json:"provider" enum:"none,openai-compatible,mcp-sampling"`
	Endpoint string `json:"endpoint,omitempty" len:",2048"`
	Model    string `json:"model,omitempty" len:",200"`
	MCPHost  string `json:"mcpHost,omitempty" len:",200"`
}

// AgentOfferParams are snug.agent.offer's params: a `broker mcp` whose MCP
// host declared sampling offers to answer app turns (MethodSample).
type AgentOfferParams struct {
	Host string `json:"host" len:"1,200" jsonschema:"the MCP host's name (clientInfo.name)"`
}

// MethodSample is the broker's request to a client that offered sampling:
// one app turn, answered with the model's text.
const MethodSample = "snug.sample"

// SampleParams are snug.sample's params.
type SampleParams struct {
	System    string `json:"system"`
	User      string `json:"user"`
	MaxTokens int    `json:"maxTokens"`
}

// SampleResult is snug.sample's answer.
type SampleResult struct {
	Text  string `json:"text"`
	Model string `json:"model,omitempty"`
}

// Status is the hub's section of broker.status.
type Status struct {
	Database string   `json:"database"`
	Problem  string   `json:"problem,omitempty"`
	Apps     int      `json:"apps"`
	Runners  []Runner `json:"runners"`
	Agent    *Agent   `json:"agent,omitempty"`
}

// Runner is one app shown in a runner tab.
type Runner struct {
	App      string `json:"app"`
	Name     string `json:"name"`
	Version  int    `json:"version"`
	Instance string `json:"instance"` // the snug provider's instance
}

// MaxPathChars bounds a file path in params.
const MaxPathChars = 4096

// ExportParams are snug.export's params. The broker writes the file itself
// (readable by its owner only), so Path is absolute; an existing file is
// replaced only with Overwrite.
type ExportParams struct {
	Path string `json:"path" len:"1,4096" jsonschema:"the absolute path of the file to write"`
	// App exports only that app's database, as a standalone SQLite file
	// with its tables under their own names (no secrets, no protection).
	App string `json:"app,omitempty" len:",128"`
	// Secrets keeps the secrets (agent keys, connection credentials) in
	// the file; by default they are removed, leaving no byte behind.
	Secrets bool `json:"secrets,omitempty"`
	// Passphrase protects the file (SNUGENC1); the answer carries the
	// recovery key that opens it too.
	Passphrase string `json:"passphrase,omitempty" len:",1024"`
	Overwrite  bool   `json:"overwrite,omitempty"`
}

// Exported is snug.export's result.
type Exported struct {
	Path      string `json:"path"`
	Bytes     int    `json:"bytes"`
	App       string `json:"app,omitempty"`
	Secrets   bool   `json:"secrets"`
	Protected bool   `json:"protected"`
	// RecoveryKey opens a protected file without its passphrase. It is
	// shown once, here, and kept nowhere.
	RecoveryKey string `json:"recoveryKey,omitempty"`
}

// ImportParams are snug.import's params. A protected file needs its
// passphrase or its recovery key.
type ImportParams struct {
	Path        string `json:"path" len:"1,4096" jsonschema:"the absolute path of the user file to import"`
	Passphrase  string `json:"passphrase,omitempty" len:",1024"`
	RecoveryKey string `json:"recoveryKey,omitempty" len:",200"`
}

// Import outcomes (Imported.Status). Every one but ImportDone leaves the
// user's apps and data as they were.
const (
	ImportDone        = "imported"
	ImportLocked      = "locked"          // protected, and no given secret opens it
	ImportCorrupt     = "corrupt"         // protected, and damaged
	ImportUnsupported = "unsupported"     // from a newer version of Snug
	ImportNotUserFile = "not-a-user-file" // neither SQLite nor SNUGENC1, or not a readable user database
	ImportTooLarge    = "too-large"       // over the 64 MiB cap
	ImportUnreadable  = "unreadable"      // the path cannot be read
)

// Imported is snug.import's result.
type Imported struct {
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// The rest describes a done import.
	SchemaVersion    int                 `json:"schemaVersion,omitempty"`
	Apps             int                 `json:"apps"`
	ContractsKept    int                 `json:"contractsKept"`
	ContractsDropped int                 `json:"contractsDropped"`
	Connections      ImportedConnections `json:"connections"`
	SecretsImported  int                 `json:"secretsImported"`
	// Backup is the copy of the user database from before the import.
	Backup string `json:"backup,omitempty"`
	// AgentUnconfirmed: app turns wait until the user confirms the agent
	// settings that came with the file.
	AgentUnconfirmed bool `json:"agentUnconfirmed"`
}

// ImportedConnections says what became of the file's connections.
type ImportedConnections struct {
	Restored int      `json:"restored"`
	Declared int      `json:"declared"`
	Revoked  int      `json:"revoked"`
	Dropped  []string `json:"dropped"`
}

// ParamsTypes maps each client method to the zero value of its params
// type; the hub publishes their schemas (browser.ParamsSchema).
var ParamsTypes = map[string]any{
	MethodApps:         AppsParams{},
	MethodInstall:      InstallParams{},
	MethodUpdate:       UpdateParams{},
	MethodSource:       SourceParams{},
	MethodVersions:     AppRef{},
	MethodRevert:       RevertParams{},
	MethodReset:        AppRef{},
	MethodRemove:       AppRef{},
	MethodOpen:         AppRef{},
	MethodAgentGet:     AppsParams{},
	MethodAgentSet:     AgentSetParams{},
	MethodAgentOffer:   AgentOfferParams{},
	MethodAgentConfirm: AgentConfirmParams{},
	MethodExport:       ExportParams{},
	MethodImport:       ImportParams{},

	MethodConnections:       ConnectionsParams{},
	MethodConnectionDeclare: DeclareParams{},
	MethodConnectionSet:     CredentialParams{},
	MethodConnectionRevoke:  SlotParams{},
}
