package interpreter

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// A script's memory is bounded by the time limit alone where it grows a value one instruction at a time
// (s = s .. s, t[#t+1] = v): gopher-lua has no allocation hook and no way to intercept its concatenation
// operator, and the limit stops such a loop within one evaluation (about 100 MB at most, measured on the
// development machine). A library function is one Go call, which the time limit cannot interrupt: those that
// can make a result much larger than their arguments are bounded here instead. string.rep (boundedRep),
// string.gsub and string.format refuse a result over luaMaxString bytes (or over their input, if longer).
// Those that match patterns (find, match, gmatch, gsub) can take far longer than their arguments are
// long: they match with luapattern.go's matcher, which stops at the time limit.

// boundStrings replaces the string library's amplifying functions with bounded ones, and its pattern
// functions with ones that stop at the time limit.
func boundStrings(L *lua.LState) {
	strs := L.GetGlobal(lua.StringLibName).(*lua.LTable)
	strs.RawSetString("rep", L.NewFunction(boundedRep))
	strs.RawSetString("gsub", L.NewFunction(boundedGsub))
	strs.RawSetString("find", L.NewFunction(patternFind(true)))
	strs.RawSetString("match", L.NewFunction(patternFind(false)))
	gmatch := L.NewFunction(patternGmatch)
	strs.RawSetString("gmatch", gmatch)
	strs.RawSetString("gfind", gmatch) // gopher-lua's name of Lua 5.0
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

// patternSpecials are the characters that make a pattern more than plain text, as Lua's SPECIALS.
const patternSpecials = "^$*+?.([%-"

// patternFind is string.find (find true) or string.match, with gopher-lua's arguments and results and the
// matcher of luapattern.go.
func patternFind(find bool) lua.LGFunction {
	name := "string.match"
	if find {
		name = "string.find"
	}
	return func(L *lua.LState) int {
		str, pat := L.CheckString(1), L.CheckString(2)
		init := L.OptInt(3, 1)
		switch {
		case init < 0:
			init = max(len(str)+init, 0)
		case init > 0:
			init--
		}
		if init > len(str) {
			L.Push(lua.LNil)
			return 1
		}
		if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(pat, patternSpecials)) {
			i := strings.Index(str[init:], pat)
			if i < 0 {
				L.Push(lua.LNil)
				return 1
			}
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(pat)))
			return 2
		}
		m := newMatcher(L, name, str, pat)
		start, end, ok := m.next(init)
		if !ok {
			L.Push(lua.LNil)
			return 1
		}
		n := 0
		if find {
			L.Push(lua.LNumber(start + 1))
			L.Push(lua.LNumber(end))
			n = 2
		}
		for _, v := range m.captures(start, end, !find) {
			L.Push(v)
			n++
		}
		return n
	}
}

// patternGmatch is string.gmatch: an iterator that finds each match when the loop asks for it (gopher-lua's
// finds them all first). A pattern anchored with ^ matches at the start only, as in gopher-lua.
func patternGmatch(L *lua.LState) int {
	str, pat := L.CheckString(1), L.CheckString(2)
	from := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if from > len(str) {
			return 0
		}
		m := newMatcher(L, "string.gmatch", str, pat)
		start, end, ok := m.next(from)
		switch {
		case !ok || m.anchored():
			from = len(str) + 1
		case end == start:
			from = end + 1
		default:
			from = end
		}
		if !ok {
			return 0
		}
		captures := m.captures(start, end, true)
		for _, v := range captures {
			L.Push(v)
		}
		return len(captures)
	}))
	return 1
}

// boundedGsub is string.gsub, with gopher-lua's replacements and results, building its result in one pass
// and refusing one over luaMaxString bytes or its input's length, whichever is more: gopher-lua's copies the
// whole string again for every match, and a million matches in a megabyte take hours in one call. As in Lua,
// a count of replacements less than one replaces nothing (gopher-lua's replaces everything for 0).
func boundedGsub(L *lua.LState) int {
	str, pat := L.CheckString(1), L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl, limit := L.CheckAny(3), L.OptInt(4, len(str)+1)
	m := newMatcher(L, "string.gsub", str, pat)
	bound := max(luaMaxString, len(str))
	var out strings.Builder
	write := func(s string) {
		if out.Len()+len(s) > bound {
			L.RaiseError("string.gsub: the result would exceed %d bytes", bound)
		}
		out.WriteString(s)
	}
	n, s := 0, 0
	for n < limit && s <= len(str) {
		start, end, ok := m.next(s)
		if !ok {
			break
		}
		n++
		write(str[s:start])
		if value, ok := replacement(L, m, repl, start, end); ok {
			write(value)
		} else {
			write(str[start:end])
		}
		s = end
		if end == start { // an empty match: the next one starts after the next character
			write(str[end:min(end+1, len(str))])
			s++
		}
		if m.anchored() {
			break
		}
	}
	if s < len(str) {
		write(str[s:])
	}
	L.Push(lua.LString(out.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// replacement is what gsub puts in place of the match from start to end; ok is false when the match stays
// (a table or function replacement gave nil or false).
func replacement(L *lua.LState, m *matcher, repl lua.LValue, start, end int) (string, bool) {
	var value lua.LValue
	switch r := repl.(type) {
	case lua.LString:
		return expand(m, string(r), start, end), true
	case *lua.LTable:
		value = L.GetTable(r, m.captured(0, start, end))
	case *lua.LFunction:
		L.Push(r)
		captures := m.captures(start, end, true)
		for _, v := range captures {
			L.Push(v)
		}
		L.Call(len(captures), 1)
		value = L.Get(-1)
		L.Pop(1)
	}
	if lua.LVIsFalse(value) {
		return "", false
	}
	return lua.LVAsString(value), true
}

// expand writes a string replacement for the match from start to end: %0 is the match, %1-%9 its captures
// (%1 the whole match when there are none), %% is %, and % before anything else stays as written.
func expand(m *matcher, repl string, start, end int) string {
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
		case d == '0':
			b.WriteString(m.src[start:end])
		case d >= '1' && d <= '9':
			b.WriteString(lua.LVAsString(m.captured(int(d-'1'), start, end)))
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
}
