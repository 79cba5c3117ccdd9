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

// TestPatternFunctionsSameAsGopherLua: string.gsub, find, match and gmatch, matching with luapattern.go's
// matcher, return what gopher-lua's do, for every kind of pattern and replacement Karmada's scripts use.
// string.match's results are counted: without a match, gopher-lua's returns nothing where Lua's (and
// Flotilla's) returns nil.
func TestPatternFunctionsSameAsGopherLua(t *testing.T) {
	gmatch := func(s, p string) string {
		return `local t = {} for a, b in string.gmatch(` + s + `, ` + p + `) do t[#t+1] = tostring(a) .. "," .. tostring(b) end
			return table.concat(t, "|"), #t`
	}
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
		`return string.gsub("  trim me  ", "^%s*(.-)%s*$", "%1")`,
		`return string.gsub("a,b,,c", ",", ";", 2)`,
		`return string.gsub("abc", "%w*", "-")`,
		`return string.gsub("abc", "x*", "-")`,
		`return string.gsub("THE (quick) fox", "%((%w+)%)", "<%1>")`,
		`return string.gsub("f(a(b)c) g(d)", "%b()", "[]")`,

		`return string.find("hello world", "wor")`,
		`return string.find("hello world", "o", 6)`,
		`return string.find("hello world", "o", -3)`,
		`return string.find("hello world", "l+")`,
		`return string.find("a.b", ".", 1, true)`,
		`return string.find("a+b", "+", 1, true)`,
		`return string.find("hello", "(h)(e)")`,
		`return string.find("hello", "()ll()")`,
		`return string.find("hello", "xyz")`,
		`return string.find("hello", "l", 10)`,
		`return string.find("key = value", "^(%w+)%s*=%s*(%w+)$")`,
		`return string.find("[x]", "[]]")`,
		`return string.find("a-b", "[a%-]+")`,
		`return string.find("x^y", "[%^]")`,
		`return string.find("x^y", "[^x]")`,
		`return string.find("abc123", "[a-c]+%d")`,
		`return string.find("hello", "(l)%1")`,
		`return string.find("hello", "$")`,
		`return string.find("a$b", "$b")`,
		`return string.find("hello", "h?el")`,
		`return string.find("hello", "x?h")`,
		`return string.find("aaa", "a-b")`,
		`return string.find("aaab", "a-b")`,
		`return string.find("x", "[")`,

		`local r = {string.match("v1.22.3", "^v(%d+)%.(%d+)%.(%d+)$")} return #r, unpack(r)`,
		`local r = {string.match("registry.io/app:v1", "([^/]+)$")} return #r, unpack(r)`,
		`local r = {string.match("registry.io/app:v1", ":(.*)")} return #r, unpack(r)`,
		`local r = {string.match("  padded  ", "^%s*(.-)%s*$")} return #r, unpack(r)`,
		`local r = {string.match("500m", "^(%d+)m$")} return #r, unpack(r)`,
		`local r = {string.match("1.5Gi", "^([%d%.]+)(%a*)$")} return #r, unpack(r)`,
		`local r = {string.match("hello", "l+", 4)} return #r, unpack(r)`,
		`local r = {string.match("hello", "l+", -1)} return #r, unpack(r)`,
		`local r = {string.match("hello", "xyz")} return #r, unpack(r)`,
		`local r = {string.match("hello", "()ll()")} return #r, unpack(r)`,
		`local r = {string.match("Ready=True", "(%u%l+)=(%a+)")} return #r, unpack(r)`,
		`local r = {string.match("tab	and space", "%s(%S+)")} return #r, unpack(r)`,
		`local r = {string.match("A1_b2", "[%w_]+")} return #r, unpack(r)`,
		`local r = {string.match("a.b-c", "%p")} return #r, unpack(r)`,
		`local r = {string.match("x{a{b}c}y", "%b{}")} return #r, unpack(r)`,
		`local r = {string.match("x", "(")} return #r, unpack(r)`,
		`local r = {string.match("x", "x)")} return #r, unpack(r)`,

		gmatch(`"one two  three"`, `"%a+"`),
		gmatch(`"k1=v1, k2=v2"`, `"(%w+)=(%w+)"`),
		gmatch(`"abc"`, `""`),
		gmatch(`"abc"`, `"x*"`),
		gmatch(`"a,b,,c"`, `"([^,]*)"`),
		gmatch(`"hello"`, `"()l"`),
		gmatch(`"aaa"`, `"^a"`),
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

// TestPatternsLikeLua: where gopher-lua's matcher departs from Lua 5.1, or fails on a long subject,
// luapattern.go's does what Lua does.
func TestPatternsLikeLua(t *testing.T) {
	for _, tc := range []struct {
		chunk, want, err string
	}{
		{chunk: `return string.find("THE (quick) fox", "%f[%a]%a+", 5)`, want: "6|10"},
		{chunk: `return string.gsub("hello", "l", "L", 0)`, want: "hello|0"},
		{chunk: `return string.find("abc", "", 2)`, want: "2|1"},
		{chunk: `return string.match((" "):rep(1000000), "^%s*$") == (" "):rep(1000000)`, want: "true"},
		{chunk: `return string.find("x", "%")`, err: "string.find: malformed pattern (ends with '%')"},
		{chunk: `return string.find("x", "[x")`, err: "string.find: malformed pattern (missing ']')"},
		{chunk: `return string.find("x", "%bx")`, err: "string.find: malformed pattern (missing arguments to '%b')"},
		{chunk: `return string.match("x", ("()"):rep(33))`, err: "string.match: too many captures"},
		{chunk: `return string.match(("a"):rep(300), ("a?"):rep(300))`, err: "string.match: pattern too complex"},
	} {
		got, err := luaResults(t, tc.chunk, true)
		switch {
		case tc.err == "" && (err != nil || strings.Join(got, "|") != tc.want):
			t.Errorf("%s: got %q, %v; want %s", tc.chunk, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %q, %v; want an error saying %q", tc.chunk, got, err, tc.err)
		}
	}
}
