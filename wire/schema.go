package wire

import (
	"encoding/json"
	"slices"
)

// SchemaID is the $id of the published schema.
const SchemaID = "https://github.com/dsh-browser/broker/blob/main/protocol/v1.schema.json"

type schema = map[string]any

func str(min, max int) schema {
	return schema{"type": "string", "minLength": min, "maxLength": max}
}

func name() schema {
	s := str(1, MaxNameLength)
	s["pattern"] = "^[A-Za-z][A-Za-z0-9_.:-]*$"
	return s
}

func obj(props schema, required ...string) schema {
	return schema{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func kindSchema() schema {
	s := str(1, MaxKindLength)
	s["pattern"] = kindPattern.String()
	return s
}

func nameListSchema() schema {
	return schema{"type": "array", "maxItems": MaxCapabilities, "uniqueItems": true, "items": name()}
}

func codeEnum() []string {
	out := make([]string, len(Codes))
	for i, c := range Codes {
		out[i] = string(c)
	}
	return out
}

// Schema returns the published JSON Schema (draft 2020-12) of the v1 wire:
// its root validates envelopes, $defs.hello and $defs.welcome validate the
// handshake payloads. [ParseEnvelope], [ParseHello] and [ParseWelcome]
// implement exactly this grammar; tests hold them to it.
func Schema() schema {
	id := str(1, MaxIDLength)
	helloCommon := func(role string) schema {
		return schema{
			"bootstrap": schema{"const": Bootstrap},
			"versions": schema{
				"type": "array", "minItems": 1, "maxItems": MaxVersions, "uniqueItems": true,
				"items": schema{"type": "integer", "minimum": 1, "maximum": MaxVersionValue},
			},
			"token":                str(1, MaxTokenLength),
			"requiredCapabilities": nameListSchema(),
			"role":                 schema{"const": role},
		}
	}
	client := helloCommon(RoleClient)
	client["journalKey"] = schema{"type": "string", "pattern": "^[a-f0-9]{64}$"}
	client["capabilities"] = nameListSchema()
	provider := helloCommon(RoleProvider)
	provider["capabilities"] = nameListSchema()
	provider["kind"] = kindSchema()
	provider["instance"] = obj(schema{
		"id":           str(1, MaxInstanceID),
		"family":       kindSchema(),
		"brand":        str(1, MaxInstanceText),
		"version":      str(1, MaxInstanceText),
		"profileLabel": str(1, MaxInstanceText),
	}, "id", "family", "brand", "version", "profileLabel")

	return schema{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         SchemaID,
		"title":       "DSH browser broker wire protocol v1",
		"description": "Generated from package wire by `go generate ./protocol`. Envelope validation is not method-payload authorization.",
		"oneOf": []schema{
			obj(schema{"type": schema{"const": TypeRequest}, "id": id, "method": name(), "params": schema{"type": "object"}},
				"type", "id", "method", "params"),
			obj(schema{"type": schema{"const": TypeResponse}, "id": id, "ok": schema{"const": true}, "value": schema{}},
				"type", "id", "ok", "value"),
			obj(schema{"type": schema{"const": TypeResponse}, "id": id, "ok": schema{"const": false}, "code": schema{"enum": codeEnum()}},
				"type", "id", "ok", "code"),
			obj(schema{"type": schema{"const": TypeEvent}, "event": name(), "value": schema{}},
				"type", "event", "value"),
			obj(schema{"type": schema{"const": TypeCancel}, "id": id},
				"type", "id"),
		},
		"$defs": schema{
			"hello": schema{"oneOf": []schema{
				obj(client, "bootstrap", "versions", "role"),
				obj(provider, "bootstrap", "versions", "role", "capabilities", "instance"),
			}},
			"welcome": obj(schema{
				"version":         schema{"type": "integer", "minimum": 1, "maximum": MaxVersionValue},
				"connectionEpoch": str(1, MaxEpochLength),
				"capabilities":    nameListSchema(),
			}, "version", "connectionEpoch", "capabilities"),
		},
	}
}

// SchemaJSON returns the published schema as indented JSON with a trailing
// newline: the exact bytes of protocol/v1.schema.json.
func SchemaJSON() []byte {
	data, err := json.MarshalIndent(Schema(), "", "  ")
	if err != nil {
		panic(err) // the schema is built from plain maps and slices
	}
	return append(data, '\n')
}

// Missing returns the names in want that are not in have.
func Missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}
