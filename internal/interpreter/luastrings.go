package interpreter

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// A script's memory is bounded by the time limit alone where it grows a value one instruction at a time
// (s = s .. s, t[#t+1] = v): gopher-lua has no allocation hook and no way to intercept its concatenation
// operator, and the limit stops such a loop within one evaluation (about 100 MB at most, measured on the
// development machine). A library function is one Go call, which the time limit cannot interrupt: those that
// can make a result much larger than their arguments are bounded here instead. string.rep (boundedRep),
// string.gsub and string.format refuse a result over luaMaxString bytes (or over their input, if longer).

// boundStrings replaces the string library's amplifying functions with bounded ones.
func boundStrings(L *lua.LState) {
	strs := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	strs.RawSetString("rep", L.NewFunction(boundedRep))
	strs.RawSetString("gsub", L.NewFunction(boundedGsub))
	format := strs.RawGetString("format").(*lua.LFunction).GFunction
	strs.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		checkFormat(L, L.CheckString(1))
		return format(L)
	}))
}

// boundedRep is string.rep refusing a result over luaMaxString bytes.
func boundedRep(L *lua.LState) int {
	s, n := L.CheckString(1), L.CheckInt(2)
	if n > 0 && len(s) > 0 && n > luaMaxString/len(s) {
		L.RaiseError("string.rep: the result would exceed %d bytes", luaMaxString)
	}
	L.Push(lua.LString(strings.Repeat(s, max(n, 0))))
	return 1
}

// checkFormat refuses a string.format width or precision of more than two digits, as Lua 5.1 does: gopher-lua
// hands the format to Go's fmt, which pads up to a million bytes per verb.
func checkFormat(L *lua.LState, format string) {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			i++
		}
		for _, part := range []string{"width", "precision"} {
			digits := 0
			for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				digits++
			}
			if digits > 2 {
				L.RaiseError("invalid format (%s too long)", part)
			}
			if part == "width" && i < len(format) && format[i] == '.' {
				i++
			} else {
				break
			}
		}
	}
}

// boundedGsub is gopher-lua's string.gsub (the same matching, replacement and results) building its result
// in one pass and refusing one over luaMaxString bytes or its input's length, whichever is more. gopher-lua's
// own copies the whole string again for every match: a million matches in a megabyte take hours in one
// call.
func boundedGsub(L *lua.LState) int {
	str, pat := L.CheckString(1), L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl, limit := L.CheckAny(3), L.OptInt(4, -1)
	matches, err := pm.Find(pat, []byte(str), 0, limit)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	bound := max(luaMaxString, len(str))
	var out strings.Builder
	write := func(s string) {
		if out.Len()+len(s) > bound {
			L.RaiseError("string.gsub: the result would exceed %d bytes", bound)
		}
		out.WriteString(s)
	}
	last := 0
	for _, m := range matches {
		start, end := m.Capture(0), m.Capture(1)
		write(str[last:start])
		if value, ok := replacement(L, str, repl, m); ok {
			write(value)
		} else {
			write(str[start:end])
		}
		last = end
	}
	write(str[last:])
	L.Push(lua.LString(out.String()))
	L.Push(lua.LNumber(len(matches)))
	return 2
}

// replacement is what gsub puts in place of match m; ok is false when the match stays (a table or function
// replacement gave nil or false).
func replacement(L *lua.LState, str string, repl lua.LValue, m *pm.MatchData) (string, bool) {
	var value lua.LValue
	switch r := repl.(type) {
	case lua.LString:
		return expand(L, str, string(r), m), true
	case *lua.LTable:
		idx := 0
		if m.CaptureLength() > 2 {
			idx = 2
		}
		if m.IsPosCapture(idx) {
			value = L.GetTable(r, lua.LNumber(m.Capture(idx)))
		} else {
			value = L.GetField(r, str[m.Capture(idx):m.Capture(idx+1)])
		}
	case *lua.LFunction:
		L.Push(r)
		nargs := 0
		for i := 2; i < m.CaptureLength(); i += 2 {
			if m.IsPosCapture(i) {
				L.Push(lua.LNumber(m.Capture(i)))
			} else {
				L.Push(lua.LString(captured(L, str, m, i)))
			}
			nargs++
		}
		if nargs == 0 {
			L.Push(lua.LString(captured(L, str, m, 0)))
			nargs = 1
		}
		L.Call(nargs, 1)
		value = L.Get(-1)
		L.Pop(1)
	}
	if lua.LVIsFalse(value) {
		return "", false
	}
	return lua.LVAsString(value), true
}

// expand writes a string replacement for match m: %0-%9 are captures (%1 the whole match when there are
// none), %% is %, and % before anything else stays as written.
func expand(L *lua.LState, str, repl string, m *pm.MatchData) string {
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' || i == len(repl)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := repl[i]; {
		case d == '%':
			b.WriteByte('%')
		case d >= '0' && d <= '9':
			b.WriteString(captured(L, str, m, 2*int(d-'0')))
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
}

// captured is capture idx/2 of match m (0: the whole match; the first capture is the whole match when there
// is none); a position capture as its number.
func captured(L *lua.LState, str string, m *pm.MatchData, idx int) string {
	if idx > 2 && idx >= m.CaptureLength() {
		L.RaiseError("invalid capture index")
	}
	if idx >= m.CaptureLength() && idx == 2 {
		idx = 0
	}
	if m.IsPosCapture(idx) {
		return fmt.Sprint(m.Capture(idx))
	}
	return str[m.Capture(idx):m.Capture(idx+1)]
}
