package override

import (
	"fmt"
	"strconv"
	"strings"
)

// parsePointer splits a JSON pointer (RFC 6901) into its unescaped tokens.
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// getString returns the string at pointer p in obj.
func getString(obj map[string]any, p string) (string, error) {
	v, err := get(obj, p)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is not a string", p)
	}
	return s, nil
}

func get(obj map[string]any, p string) (any, error) {
	tokens, err := parsePointer(p)
	if err != nil {
		return nil, err
	}
	var cur any = obj
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, fmt.Errorf("%s does not exist", p)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%s does not exist", p)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s does not exist", p)
		}
	}
	return cur, nil
}

// setString replaces the existing string at pointer p in obj.
func setString(obj map[string]any, p, value string) error {
	tokens, err := parsePointer(p)
	if err != nil {
		return err
	}
	parent, err := get(obj, "/"+strings.Join(escape(tokens[:len(tokens)-1]), "/"))
	if len(tokens) == 1 {
		parent, err = obj, nil
	}
	if err != nil {
		return err
	}
	last := tokens[len(tokens)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[last].(string); !ok {
			return fmt.Errorf("%s is not a string", p)
		}
		c[last] = value
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return fmt.Errorf("%s does not exist", p)
		}
		if _, ok := c[i].(string); !ok {
			return fmt.Errorf("%s is not a string", p)
		}
		c[i] = value
	default:
		return fmt.Errorf("%s does not exist", p)
	}
	return nil
}

func escape(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	return out
}
