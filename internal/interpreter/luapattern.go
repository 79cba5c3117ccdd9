package interpreter

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Lua patterns, matched for string.find, match, gmatch and gsub (luastrings.go) by Lua 5.1's backtracking
// matcher (lstrlib.c) that counts its steps and stops at the evaluation's time limit. gopher-lua's matcher
// (package pm) is one Go call the time limit cannot interrupt, and backtracking is polynomial in the subject
// with the pattern's repetitions as the degree: string.match("x"..(" "):rep(200000).."y", "^%s*(.-)%s*$")
// is some 4*10^10 steps in one call, hours (pm took 12 s for 8,000 spaces on the development machine, four
// times as long for each doubling). Refusing subjects over a few KiB would not bound it: pm took 3 s on 4,000
// spaces, and 3 s on 500 bytes of "a" against "^a*a*a*b". So the matcher looks at the context the
// instruction loop looks at, every patternCheckEvery steps. Its recursion is bounded by the pattern, never
// by the subject (pm recurses once per character a repetition takes, a million nested Go calls before it
// gives up on a megabyte string), to patternMaxDepth as in Lua 5.2. Unlike pm, it knows %f (frontier) and Lua's limit of
// 32 captures.

const (
	luaMaxCaptures    = 32      // LUA_MAXCAPTURES
	patternMaxDepth   = 200     // MAXCCALLS of Lua 5.2's lstrlib.c: nested calls of match
	patternCheckEvery = 1 << 12 // steps between two looks at the context: well under a millisecond
	capUnfinished     = -1      // a capture's length while it is open
	capPosition       = -2      // the length of a position capture, ()
)

// matcher matches one pattern against one subject, as many times as the library function needs.
type matcher struct {
	L *lua.LState
	// fn is the library function, for errors.
	fn       string
	src, pat string
	// level is the number of captures of the current match; capture their starts and lengths.
	level   int
	capture [luaMaxCaptures]struct{ start, len int }
	depth   int
	steps   int
	check   int
}

func newMatcher(L *lua.LState, fn, src, pat string) *matcher {
	return &matcher{L: L, fn: fn, src: src, pat: pat, check: patternCheckEvery}
}

// step counts n steps of matching and stops the script once its evaluation's time is up.
func (m *matcher) step(n int) {
	if m.steps += n; m.steps < m.check {
		return
	}
	m.check = m.steps + patternCheckEvery
	if ctx := m.L.Context(); ctx != nil && ctx.Err() != nil {
		m.fail("the pattern was still matching at the evaluation's time limit: %v", ctx.Err())
	}
}

// fail raises a Lua error naming the library function.
func (m *matcher) fail(format string, args ...any) {
	m.L.RaiseError("%s: %s", m.fn, fmt.Sprintf(format, args...))
}

// anchored says whether the pattern starts with ^: it matches only where the search starts.
func (m *matcher) anchored() bool { return len(m.pat) > 0 && m.pat[0] == '^' }

// next finds the first match starting at from or after (only at from for a pattern anchored with ^): its
// bounds, and whether there is one. The captures are the match's until the next call.
func (m *matcher) next(from int) (start, end int, ok bool) {
	p, anchor := 0, m.anchored()
	if anchor {
		p = 1
	}
	for s := from; s <= len(m.src); s++ {
		m.step(1)
		m.level = 0
		if e := m.match(s, p); e >= 0 {
			for _, c := range m.capture[:m.level] {
				if c.len == capUnfinished {
					m.fail("unfinished capture")
				}
			}
			return s, e, true
		}
		if anchor {
			break
		}
	}
	return 0, 0, false
}

// captured is capture i of the match from start to end: a string, or a position's number; the whole match
// for capture 0 of a pattern without captures.
func (m *matcher) captured(i, start, end int) lua.LValue {
	if i >= m.level {
		if i != 0 {
			m.fail("invalid capture index")
		}
		return lua.LString(m.src[start:end])
	}
	c := m.capture[i]
	switch c.len {
	case capUnfinished:
		m.fail("unfinished capture")
	case capPosition:
		return lua.LNumber(c.start + 1)
	}
	return lua.LString(m.src[c.start : c.start+c.len])
}

// captures are the match's captures, or the whole match when the pattern has none and whole is true.
func (m *matcher) captures(start, end int, whole bool) []lua.LValue {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	out := make([]lua.LValue, n)
	for i := range out {
		out[i] = m.captured(i, start, end)
	}
	return out
}

// match matches the pattern from p against the subject from s, and returns where the match ends, or -1.
func (m *matcher) match(s, p int) int {
	if m.depth++; m.depth > patternMaxDepth {
		m.fail("pattern too complex")
	}
	defer func() { m.depth-- }()
	for {
		m.step(1)
		if p == len(m.pat) {
			return s
		}
		switch m.pat[p] {
		case '(':
			if p+1 < len(m.pat) && m.pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '$':
			if p+1 == len(m.pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 == len(m.pat) {
				break // malformed: classEnd says so
			}
			switch d := m.pat[p+1]; {
			case d == 'b':
				if s = m.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case d == 'f':
				p += 2
				if p == len(m.pat) || m.pat[p] != '[' {
					m.fail("missing '[' after '%%f' in pattern")
				}
				ep := m.classEnd(p)
				previous, current := byte(0), byte(0)
				if s > 0 {
					previous = m.src[s-1]
				}
				if s < len(m.src) {
					current = m.src[s]
				}
				if m.matchBracketClass(previous, p, ep-1) || !m.matchBracketClass(current, p, ep-1) {
					return -1
				}
				p = ep
				continue
			case d >= '0' && d <= '9':
				if s = m.matchCapture(s, d); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		}
		// A single character class, with its repetition if any.
		ep := m.classEnd(p)
		var suffix byte
		if ep < len(m.pat) {
			suffix = m.pat[ep]
		}
		if !m.singleMatch(s, p, ep) {
			if suffix == '*' || suffix == '?' || suffix == '-' { // may match nothing
				p = ep + 1
				continue
			}
			return -1
		}
		switch suffix {
		case '?':
			if e := m.match(s+1, ep+1); e >= 0 {
				return e
			}
			p = ep + 1
		case '+':
			return m.maxExpand(s+1, p, ep)
		case '*':
			return m.maxExpand(s, p, ep)
		case '-':
			return m.minExpand(s, p, ep)
		default:
			s, p = s+1, ep
		}
	}
}

// maxExpand matches as many characters of class p as it can from s, then the rest of the pattern, giving
// back one character at a time until the rest matches.
func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for m.singleMatch(s+i, p, ep) {
		i++
	}
	m.step(i)
	for ; i >= 0; i-- {
		if e := m.match(s+i, ep+1); e >= 0 {
			return e
		}
	}
	return -1
}

// minExpand matches the rest of the pattern from s, taking one more character of class p each time it
// does not match.
func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if e := m.match(s, ep+1); e >= 0 {
			return e
		}
		if !m.singleMatch(s, p, ep) {
			return -1
		}
		s++
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= luaMaxCaptures {
		m.fail("too many captures")
	}
	m.capture[m.level].start, m.capture[m.level].len = s, what
	m.level++
	e := m.match(s, p)
	if e < 0 {
		m.level--
	}
	return e
}

func (m *matcher) endCapture(s, p int) int {
	l := m.level - 1
	for ; l >= 0 && m.capture[l].len != capUnfinished; l-- {
	}
	if l < 0 {
		m.fail("invalid pattern capture")
	}
	m.capture[l].len = s - m.capture[l].start
	e := m.match(s, p)
	if e < 0 {
		m.capture[l].len = capUnfinished
	}
	return e
}

// matchBalance matches %bxy at s: x, then everything up to the y that balances it.
func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		m.fail("malformed pattern (missing arguments to '%%b')")
	}
	if s >= len(m.src) || m.src[s] != m.pat[p] {
		return -1
	}
	open, close, depth := m.pat[p], m.pat[p+1], 1
	for i := s + 1; i < len(m.src); i++ {
		switch m.src[i] {
		case close:
			if depth--; depth == 0 {
				m.step(i - s)
				return i + 1
			}
		case open:
			depth++
		}
	}
	m.step(len(m.src) - s)
	return -1
}

// matchCapture matches %1-%9 at s: the same text as that capture.
func (m *matcher) matchCapture(s int, d byte) int {
	l := int(d) - '1'
	if l < 0 || l >= m.level || m.capture[l].len == capUnfinished {
		m.fail("invalid capture index %%%d", l+1)
	}
	c := m.capture[l]
	if c.len < 0 || len(m.src)-s < c.len || m.src[s:s+c.len] != m.src[c.start:c.start+c.len] {
		return -1
	}
	m.step(c.len)
	return s + c.len
}

// classEnd returns where the single character class at p ends.
func (m *matcher) classEnd(p int) int {
	c := m.pat[p]
	p++
	switch c {
	case '%':
		if p == len(m.pat) {
			m.fail("malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if p < len(m.pat) && m.pat[p] == '^' {
			p++
		}
		for { // the first character is never the closing ], so []] is a set of ]
			if p >= len(m.pat) {
				m.fail("malformed pattern (missing ']')")
			}
			c := m.pat[p]
			p++
			if c == '%' && p < len(m.pat) {
				p++ // an escape, such as %]
			}
			if p < len(m.pat) && m.pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

// singleMatch says whether the subject's character at s is of the class from p to ep.
func (m *matcher) singleMatch(s, p, ep int) bool {
	if s >= len(m.src) {
		return false
	}
	c := m.src[s]
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, m.pat[p+1])
	case '[':
		return m.matchBracketClass(c, p, ep-1)
	}
	return m.pat[p] == c
}

// matchBracketClass says whether c is in the set from p (its [) to ec (its ]).
func (m *matcher) matchBracketClass(c byte, p, ec int) bool {
	in := true
	if m.pat[p+1] == '^' {
		in = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case m.pat[p] == '%':
			p++
			if matchClass(c, m.pat[p]) {
				return in
			}
		case m.pat[p+1] == '-' && p+2 < ec:
			p += 2
			if m.pat[p-2] <= c && c <= m.pat[p] {
				return in
			}
		case m.pat[p] == c:
			return in
		}
	}
	return !in
}

// matchClass says whether c is of the class %cl (%a, %d, ...; upper case for the complement), or is cl for
// any other character, as C's <ctype.h> says in the C locale.
func matchClass(c, cl byte) bool {
	lower := cl
	if 'A' <= cl && cl <= 'Z' {
		lower = cl + 'a' - 'A'
	}
	isLower, isUpper, isDigit := 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9'
	var res bool
	switch lower {
	case 'a':
		res = isLower || isUpper
	case 'c':
		res = c < 0x20 || c == 0x7f
	case 'd':
		res = isDigit
	case 'l':
		res = isLower
	case 'p':
		res = c > 0x20 && c < 0x7f && !isLower && !isUpper && !isDigit
	case 's':
		res = c == ' ' || ('\t' <= c && c <= '\r')
	case 'u':
		res = isUpper
	case 'w':
		res = isLower || isUpper || isDigit
	case 'x':
		res = isDigit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if lower != cl {
		return !res
	}
	return res
}
