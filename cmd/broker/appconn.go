package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dsh-browser/broker/snug/apps"
	"github.com/dsh-browser/broker/snug/conn"
)

// appConnections is `broker app connections APP`: list an app's
// connections, show one, propose one from a file, set a credential from
// standard input (never from argv: it would show in ps and the shell's
// history), or revoke one. Approving is done in the app's tab, where the
// requirement is shown in full and the credential typed.
func appConnections(a *appCmd) int {
	show := a.fs.String("show", "", "print SLOT's requirement exactly as stored, and a staged change field by field")
	declare := a.fs.String("declare", "", "propose the connection requirement in FILE.json (Snug Part III §12.5)")
	credential := a.fs.String("credential", "", "SLOT.FIELD: read its value from standard input and store it")
	revoke := a.fs.String("revoke", "", "revoke SLOT: its credentials are deleted, the connection stays as revoked")
	pos, code, ok := a.parse(1, 1)
	if !ok {
		return code
	}
	app := pos[0]
	set := 0
	for _, s := range []string{*show, *declare, *credential, *revoke} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		return a.fail("choose one of --show, --declare, --credential and --revoke")
	}
	switch {
	case *declare != "":
		data, err := os.ReadFile(*declare)
		if err != nil {
			return a.fail("%v", err)
		}
		if _, err := conn.Parse(data); err != nil {
			return a.fail("%s: %v", *declare, err)
		}
		var c apps.Connection
		if code := a.call(apps.MethodConnectionDeclare, apps.DeclareParams{App: app, Requirement: string(data)}, &c); code != 0 {
			return code
		}
		if c.NeedsReapproval {
			fmt.Fprintf(a.stdout, "the change to %q waits for your approval; until then the approved one is used\n", c.Slot)
		} else {
			fmt.Fprintf(a.stdout, "proposed %q (%s); nothing is granted yet\n", c.Slot, c.Provider)
		}
		fmt.Fprintf(a.stdout, "approve it in the app's tab: broker app open %s, then Connections\n", app)
		return 0
	case *credential != "":
		slot, field, ok := strings.Cut(*credential, ".")
		if !ok || !conn.ValidSlot(slot) || field == "" {
			return a.fail("--credential takes SLOT.FIELD, as 'broker app connections %s --show SLOT' names them", app)
		}
		value, err := readSecret(a.stdin, a.stderr, fmt.Sprintf("%s of connection %s (input hidden; empty to remove it): ", field, slot))
		if err != nil {
			return a.fail("cannot read the value: %v", err)
		}
		var c apps.Connection
		if code := a.call(apps.MethodConnectionSet, apps.CredentialParams{App: app, Slot: slot, Field: field, Value: value}, &c); code != 0 {
			return code
		}
		verb := "stored"
		if value == "" {
			verb = "removed"
		}
		fmt.Fprintf(a.stdout, "%s the %s of %q (%s)\n", verb, field, slot, c.Status)
		return 0
	case *revoke != "":
		var c apps.Connection
		if code := a.call(apps.MethodConnectionRevoke, apps.SlotParams{App: app, Slot: *revoke}, &c); code != 0 {
			return code
		}
		fmt.Fprintf(a.stdout, "revoked %q: its credentials are deleted\n", c.Slot)
		return 0
	}
	var list []apps.Connection
	if code := a.call(apps.MethodConnections, apps.ConnectionsParams{App: app}, &list); code != 0 {
		return code
	}
	if *show != "" {
		for _, c := range list {
			if c.Slot == *show {
				a.printConnection(c)
				return 0
			}
		}
		return a.fail("the app has no connection %q", *show)
	}
	if len(list) == 0 {
		fmt.Fprintf(a.stdout, "No connections. Propose one with: broker app connections %s --declare FILE.json\n", app)
		return 0
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tPROVIDER\tKIND\tSTATUS\tHOSTS\tCREDENTIAL")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Slot, c.Provider, c.Kind, statusOf(c), strings.Join(hostsOf(c), " "), credentialsOf(c))
	}
	tw.Flush()
	return 0
}

func statusOf(c apps.Connection) string {
	switch {
	case c.NeedsReapproval:
		return "approved, change waiting"
	case c.Imported:
		return c.Status + " (imported: approve again)"
	}
	return c.Status
}

func hostsOf(c apps.Connection) []string {
	if c.Status == "approved" {
		return c.AllowedHosts
	}
	return c.Ceiling
}

// credentialsOf says which fields hold a value; never a value.
func credentialsOf(c apps.Connection) string {
	var have []string
	for f, ok := range c.Credentials {
		if ok {
			have = append(have, f)
		}
	}
	if len(have) == 0 {
		return "-"
	}
	return strings.Join(have, ",") + " set"
}

func (a *appCmd) printConnection(c apps.Connection) {
	fmt.Fprintf(a.stdout, "%s (%s): %s, version %d, proposed by %s\n", c.Slot, c.Provider, statusOf(c), c.RequirementVersion, c.Provenance)
	fmt.Fprintf(a.stdout, "hosts: %s\n", strings.Join(hostsOf(c), " "))
	fmt.Fprintf(a.stdout, "credential fields set: %s\n", credentialsOf(c))
	var pretty any
	json.Unmarshal(c.Requirement, &pretty)
	out, _ := json.MarshalIndent(pretty, "", "  ")
	fmt.Fprintf(a.stdout, "requirement:\n%s\n", out)
	if c.NeedsReapproval {
		fmt.Fprintln(a.stdout, "staged change (approve it in the app's tab):")
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FIELD\tBEFORE\tAFTER")
		for _, d := range c.Diff {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.Path, d.Old, d.New)
		}
		tw.Flush()
	}
}
