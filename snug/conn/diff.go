package conn

import (
	"sort"
	"strconv"
)

// Change is one field of a requirement that differs between two versions:
// its path (fields[1].label, declaredApiHosts[2], …) and its values as
// JSON text, "" where the field is absent.
type Change struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Diff lists, field by field, how next differs from prev: what the user
// reviews before re-approving a staged edit. Leaves are compared by their
// canonical JSON; paths are in sort order.
func Diff(prev, next *Requirement) []Change {
	a, b := map[string]string{}, map[string]string{}
	flatten(prev.tree(), "", a)
	flatten(next.tree(), "", b)
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out []Change
	for _, p := range sorted {
		if a[p] != b[p] {
			out = append(out, Change{Path: p, Old: a[p], New: b[p]})
		}
	}
	return out
}

func flatten(v any, path string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			child := k
			if path != "" {
				child = path + "." + k
			}
			flatten(x, child, out)
		}
	case []any:
		for i, x := range v {
			flatten(x, path+"["+strconv.Itoa(i)+"]", out)
		}
	default:
		out[path] = encodeCanonical(v)
	}
}
