package interpreter

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Between JSON values and Lua tables. A JSON object is a table with string keys, a JSON list a table indexed
// from 1; numbers are Lua numbers, whole ones read back as int64 like the unstructured helpers expect.

// luaMaxDepth bounds how deep a value is converted: JSON objects are far shallower, a table that contains
// itself is not JSON.
const luaMaxDepth = 100

// observedVar names Retain's second argument, observedObj, which is no variable of the evaluation: Flotilla
// applies a manifest without reading the member's object first, so observedObj stands for the member's
// values instead (see observedPaths).
const observedVar = "observedObj"

// observedPaths is what an evaluation converted and where Retain's observedObj went: observedObj is a table
// whose every field is another such table, remembering its path, so a script reads any field of it (as
// Karmada's Retain scripts do, observedObj.spec.paused) and copying one into desiredObj at the same path
// says that the member owns that field.
type observedPaths struct {
	lists   map[*lua.LTable]bool   // tables made from JSON lists, so an empty one reads back as a list
	proxies map[*lua.LTable]string // observedObj and its fields, by path
	kept    [][2]string            // {where in the result, which observed path} for each proxy returned
}

func (o *observedPaths) proxy(L *lua.LState, path string) *lua.LTable {
	if o.proxies == nil {
		o.proxies = map[*lua.LTable]string{}
	}
	t := L.NewTable()
	o.proxies[t] = path
	meta := L.NewTable()
	meta.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.Push(o.proxy(L, joinPath(path, L.Get(2))))
		return 1
	}))
	L.SetMetatable(t, meta)
	return t
}

// retained is the dotted paths where the result holds the member's values, each at its own path.
func (o *observedPaths) retained() ([]any, error) {
	paths := []any{}
	for _, k := range o.kept {
		switch at, from := k[0], k[1]; {
		case at != from:
			return nil, fmt.Errorf("Retain copies observedObj.%s into %s: only a field's own observed value can be retained", from, at)
		case at == "" || strings.Contains(at, "["):
			return nil, fmt.Errorf("Retain keeps the observed value of %q: only fields of objects, reached by names without dots, can be retained", at)
		}
		paths = append(paths, k[0])
	}
	return paths, nil
}

// joinPath adds a key to a dotted path; a key that is not a plain name is bracketed, which no operation
// takes as a path.
func joinPath(path string, key lua.LValue) string {
	s, ok := key.(lua.LString)
	if !ok || s == "" || strings.Contains(string(s), ".") {
		return path + "[" + key.String() + "]"
	}
	if path == "" {
		return string(s)
	}
	return path + "." + string(s)
}

func toLua(L *lua.LState, v any, o *observedPaths, depth int) (lua.LValue, error) {
	if depth > luaMaxDepth {
		return nil, fmt.Errorf("the value is nested deeper than %d", luaMaxDepth)
	}
	switch v := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(v), nil
	case string:
		return lua.LString(v), nil
	case int64:
		return lua.LNumber(v), nil
	case int:
		return lua.LNumber(v), nil
	case float64:
		return lua.LNumber(v), nil
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, e := range v {
			lv, err := toLua(L, e, o, depth+1)
			if err != nil {
				return nil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	case []any:
		t := L.CreateTable(len(v), 0)
		if o.lists == nil {
			o.lists = map[*lua.LTable]bool{}
		}
		o.lists[t] = true
		for _, e := range v {
			lv, err := toLua(L, e, o, depth+1)
			if err != nil {
				return nil, err
			}
			t.Append(lv)
		}
		return t, nil
	}
	return nil, fmt.Errorf("%T is not a JSON value", v)
}

// fromLua reads a Lua value at path of a result as JSON, noting where observedObj's fields are.
func fromLua(v lua.LValue, path string, o *observedPaths, depth int) (any, error) {
	if depth > luaMaxDepth {
		return nil, fmt.Errorf("a value nested deeper than %d (a table that contains itself?)", luaMaxDepth)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		f := float64(v)
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return nil, fmt.Errorf("%v at %q, which is not a JSON number", f, path)
		case f == math.Trunc(f) && math.Abs(f) < 1<<53:
			return int64(f), nil
		}
		return f, nil
	case *lua.LTable:
		if from, ok := o.proxies[v]; ok {
			o.kept = append(o.kept, [2]string{path, from})
			return nil, nil
		}
		return tableFromLua(v, path, o, depth)
	}
	return nil, fmt.Errorf("a %s at %q, which is not a JSON value", v.Type(), path)
}

// tableFromLua reads a table as a list when it was one or has only the keys 1..n (n > 0), else as an object
// with string keys.
func tableFromLua(t *lua.LTable, path string, o *observedPaths, depth int) (any, error) {
	var keys []lua.LValue
	t.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
	n := t.MaxN()
	if o.lists[t] || n > 0 && n == len(keys) {
		list := make([]any, n)
		for i := range list {
			var err error
			if list[i], err = fromLua(t.RawGetInt(i+1), path+"["+strconv.Itoa(i)+"]", o, depth+1); err != nil {
				return nil, err
			}
		}
		return list, nil
	}
	m := make(map[string]any, len(keys))
	for _, k := range keys {
		s, ok := k.(lua.LString)
		if !ok {
			return nil, fmt.Errorf("a table at %q with key %v, neither a list nor an object with string keys", path, k)
		}
		var err error
		if m[string(s)], err = fromLua(t.RawGet(k), joinPath(path, k), o, depth+1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// changedFields adds to out the dotted path and new value of each field that differs between before and
// after, descending into objects so that a field changed deep inside is set alone.
func changedFields(prefix string, before, after map[string]any, out map[string]any) error {
	keys := slices.Collect(func(yield func(string) bool) {
		for k := range before {
			yield(k)
		}
		for k := range after {
			if _, ok := before[k]; !ok {
				yield(k)
			}
		}
	})
	for _, k := range keys {
		path := joinPath(prefix, lua.LString(k))
		b, a := before[k], after[k]
		if _, ok := after[k]; !ok {
			if b == nil {
				continue // a null field: Lua has no null, a table never holds nil
			}
			return fmt.Errorf("ReviseReplica removed %s; it may only set fields", path)
		}
		bm, bIsMap := b.(map[string]any)
		am, aIsMap := a.(map[string]any)
		switch {
		case bIsMap && aIsMap && !strings.Contains(path, "["):
			if err := changedFields(path, bm, am, out); err != nil {
				return err
			}
		case !reflect.DeepEqual(normalizeNumbers(b), normalizeNumbers(a)):
			if strings.Contains(path, "[") {
				return fmt.Errorf("ReviseReplica changed %s, which is no dotted field path", path)
			}
			out[path] = a
		}
	}
	return nil
}

// normalizeNumbers makes whole float64s int64, as a round trip through Lua does, so that an unchanged 1.0
// is not taken for a change.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	case int:
		return int64(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalizeNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalizeNumbers(e)
		}
		return out
	}
	return v
}
