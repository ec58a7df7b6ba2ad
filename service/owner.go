package service

import (
	"time"

	"github.com/dsh-browser/broker/activity"
)

// Grant is a client's standing permission from a service, as the owner's
// console shows it: for a browser, a lease on one tab. It names places and
// times, never content.
type Grant struct {
	Kind      string    `json:"kind"` // the service's kind
	ID        string    `json:"id"`
	Conn      uint64    `json:"conn"` // the client connection holding it
	Tab       string    `json:"tab"`
	Origin    string    `json:"origin"`
	Scope     string    `json:"scope"` // browser: origin (that exact origin) or tab (the tab, any HTTP(S) origin)
	ExpiresAt time.Time `json:"expiresAt"`
}

// Overseen is implemented by a service whose clients hold grants that the
// owner sees and can end from the console. The broker finds it with a type
// assertion on the Service.
type Overseen interface {
	// Grants returns the live grants.
	Grants() []Grant
	// Stop ends every grant of client connection conn — of every client
	// when conn is 0 — and cancels its requests for one that wait for the
	// owner; it returns how many grants ended. The clients are told, as for
	// any grant that ends.
	Stop(conn uint64) int
}

// Overseer is implemented by a Host that keeps the owner informed (the
// broker). A service finds it with a type assertion on its Host; a host
// without it (a test's) oversees nothing.
type Overseer interface {
	// GrantsChanged tells the owner's console that a grant began or
	// ended. It does not block.
	GrantsChanged()
	// Activity is the owner's activity log (package activity), or nil.
	Activity() *activity.Log
}
