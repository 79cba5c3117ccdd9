package interpreter

import (
	"context"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// luaResults runs a chunk returning values, in a fresh interpreter with the string library, bounded or as
// gopher-lua ships it; the values as strings, or the error.
func luaResults(t *testing.T, chunk string, bounded bool) ([]string, error) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	if bounded {
		boundStrings(L)
	}
	top := L.GetTop()
	if err := L.DoString(chunk); err != nil {
		return nil, err
	}
	var out []string
	for i := top + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i).String())
	}
	return out, nil
}

// TestBoundedGsubSameAsGopherLua: the bounded string.gsub returns what gopher-lua's does, for every kind of
// pattern and replacement Karmada's scripts use.
func TestBoundedGsubSameAsGopherLua(t *testing.T) {
	for _, chunk := range []string{
		`return string.gsub("hello world", "o", "0")`,
		`return string.gsub("hello world", "o", "0", 1)`,
		`return string.gsub("hello world", "(%w+)", "<%1>")`,
		`return string.gsub("hello world", "%w+", "%0 %0")`,
		`return string.gsub("hello", "", "-")`,
		`return string.gsub("abc", "%w", "%%")`,
		`return string.gsub("abc", "%w", "%x")`,
		`return string.gsub("abc", "%w", "a%")`,
		`return string.gsub("key=val, k2=v2", "(%w+)=(%w+)", "%2=%1")`,
		`return string.gsub("hello world", "()o", "%1")`,
		`return string.gsub("$name is $age", "%$(%w+)", {name = "ann", age = 7})`,
		`return string.gsub("$name is $unset", "%$(%w+)", {name = "ann"})`,
		`return string.gsub("a b c", "%w", {a = false, b = "B"})`,
		`return string.gsub("hello world", "(%w+) (%w+)", function(a, b) return b .. " " .. a end)`,
		`return string.gsub("abc", "%w", function(c) if c == "b" then return nil end return c:upper() end)`,
		`return string.gsub("abc", "%w", function(c) return 1 end)`,
		`return string.gsub("registry.io/app:v1", "^([^/]+)/", "mirror.local/")`,
		`return string.gsub("no match", "xyz", "!")`,
		`return string.gsub("x", "(", "!")`,
		`return string.gsub("abc", "%w", "%2")`,
	} {
		want, wantErr := luaResults(t, chunk, false)
		got, err := luaResults(t, chunk, true)
		if (err != nil) != (wantErr != nil) || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: got %q, %v; gopher-lua gives %q, %v", chunk, got, err, want, wantErr)
		}
	}
}

// TestLuaStringsBounded: a library call that would make a string far larger than its arguments is refused,
// in one call that the time limit could not stop; strings of ordinary size are not.
func TestLuaStringsBounded(t *testing.T) {
	for _, tc := range []struct {
		name, body, err string
	}{
		{"gsub multiplying a string", `local s = ("x"):rep(1000):gsub("x", ("y"):rep(2000)) return #s > 0`, "string.gsub: the result would exceed"},
		{"gsub through a table", `local s = ("x"):rep(1000):gsub("x", {x = ("y"):rep(2000)}) return #s > 0`, "string.gsub: the result would exceed"},
		{"gsub with captures", `local s = ("x"):rep(1024):gsub(".*", ("%0"):rep(2000)) return #s > 0`, "string.gsub: the result would exceed"},
		{"format padding", `return #string.format("%999999d", 1) > 0`, "invalid format (width too long)"},
		{"format precision", `return #string.format("%.999999f", 1) > 0`, "invalid format (precision too long)"},
		{"rep", `return #("x"):rep(2000000) > 0`, "string.rep: the result would exceed"},
		{"ordinary sizes", `return #string.format("%-10s|%5.2f", "a", 1.5) == 16 and #(("x"):rep(1000):gsub("x", "yy")) == 2000
			and ("x"):rep(1000000) ~= nil`, ""},
		{"gsub on an input longer than the bound", `local s = ("x"):rep(1000000) .. ("x"):rep(100000) return #(s:gsub("^x", "y")) == 1100000`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Lua{}.Compile(OpHealthInterpretation, "function InterpretHealth(obj)\n"+tc.body+"\nend")
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Eval(context.Background(), map[string]any{"object": map[string]any{}})
			switch {
			case tc.err == "" && (err != nil || out != true):
				t.Errorf("got %v, %v; want true", out, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, %v; want an error saying %q", out, err, tc.err)
			}
		})
	}
}
