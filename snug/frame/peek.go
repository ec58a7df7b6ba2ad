package frame

import "encoding/json"

// peekMembers returns the raw values of the top-level members "type" and
// "requestId" of data (the last of each, as a decoder keeps them), scanning
// the bytes without decoding anything else. data must be valid JSON;
// isObject is false when it is not an object.
func peekMembers(data []byte) (rawType, rawID []byte, isObject bool) {
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, nil, false
	}
	i++
	for {
		i = skipSpace(data, i)
		switch data[i] {
		case '}':
			return rawType, rawID, true
		case ',':
			i++
			continue
		}
		keyEnd := skipString(data, i)
		key := data[i:keyEnd]
		i = skipSpace(data, keyEnd) + 1 // past ':'
		i = skipSpace(data, i)
		end := skipValue(data, i)
		switch keyName(key) {
		case "type":
			rawType = data[i:end]
		case "requestId":
			rawID = data[i:end]
		}
		i = end
	}
}

// keyName decodes a member name short enough to be one peekMembers wants.
func keyName(quoted []byte) string {
	if len(quoted) > 64 {
		return ""
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return ""
	}
	return s
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at data[i].
func skipString(data []byte, i int) int {
	for j := i + 1; ; j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// skipValue returns the index just past the value starting at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch data[j] {
			case '"':
				j = skipString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' &&
		data[j] != ' ' && data[j] != '\t' && data[j] != '\r' && data[j] != '\n' {
		j++
	}
	return j
}
