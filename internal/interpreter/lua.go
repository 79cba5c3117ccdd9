package interpreter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Lua runs operations written as Karmada's ResourceInterpreterCustomization writes them: a Lua script that
// defines one function per operation, with Karmada's names and arguments, so a Karmada customization works
// after changing only its apiVersion and kind; Karmada's kube helpers (kube.accuratePodRequirements,
// kube.getPodDependencies) are provided too. Each function's result is turned into what the operation
// returns in Flotilla (see luaFunctions).
//
// Scripts run sandboxed: only the base (without dofile, loadfile, load, loadstring, require, module, print,
// collectgarbage, getfenv and setfenv), table, string, math and kube libraries; no os, io, package, coroutine
// or debug. Each call gets a fresh interpreter with a bounded call stack and data stack, string.rep,
// string.gsub and string.format refuse results over luaMaxString (luastrings.go), and the time limit every
// evaluation has (evalTimeout) stops the instruction loop and the pattern matcher of string.find, match,
// gmatch and gsub (luapattern.go): a script cannot run forever nor grow a table or string past what that
// time allows.
type Lua struct{}

var _ Language = Lua{}

// luaFunction is what an operation's script must define: the function Karmada calls for it and how its
// result becomes the operation's.
type luaFunction struct {
	name string
	// args are the operation's variables passed as the function's arguments, in order.
	args []string
	// results is how many values the function returns.
	results int
	// adapt turns the function's results (as JSON values) into the operation's result. vars are the
	// evaluation's variables, for operations that return a changed copy of their input.
	adapt func(results []any, vars map[string]any, kept *observedPaths) (any, error)
}

var luaFunctions = map[Operation]luaFunction{
	// GetReplicas(obj) returns the replica count and its requirements (nodeClaim, resourceRequest, ...), of
	// which Flotilla reads resourceRequest.
	OpReplicaResource: {name: "GetReplicas", args: []string{"object"}, results: 2, adapt: func(r []any, _ map[string]any, _ *observedPaths) (any, error) {
		out := map[string]any{"replicas": r[0]}
		if req, ok := r[1].(map[string]any); ok && req["resourceRequest"] != nil {
			out["requests"] = req["resourceRequest"]
		}
		if req, ok := r[1].(map[string]any); ok && req["nodeClaim"] != nil {
			out["nodeClaim"] = req["nodeClaim"]
		}
		return out, nil
	}},
	// ReviseReplica(obj, desiredReplica) returns obj with the replicas written in; the fields it changed are
	// the ones set.
	OpReplicaRevision: {name: "ReviseReplica", args: []string{"object", "replicas"}, results: 1, adapt: func(r []any, vars map[string]any, _ *observedPaths) (any, error) {
		revised, ok := r[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ReviseReplica returned %T, want the object", r[0])
		}
		changes := map[string]any{}
		if err := changedFields("", vars["object"].(map[string]any), revised, changes); err != nil {
			return nil, err
		}
		return changes, nil
	}},
	// Retain(desiredObj, observedObj) returns desiredObj with the member's values copied in from observedObj:
	// the fields it copies are the ones members own.
	OpRetention: {name: "Retain", args: []string{"object", observedVar}, results: 1, adapt: func(r []any, _ map[string]any, kept *observedPaths) (any, error) {
		return kept.retained()
	}},
	// ReflectStatus(observedObj) returns the status to report.
	OpStatusReflection: {name: "ReflectStatus", args: []string{"object"}, results: 1, adapt: first},
	// AggregateStatus(desiredObj, statusItems) returns desiredObj with its new status.
	OpStatusAggregation: {name: "AggregateStatus", args: []string{"object", "statuses"}, results: 1, adapt: func(r []any, _ map[string]any, _ *observedPaths) (any, error) {
		obj, ok := r[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("AggregateStatus returned %T, want the object", r[0])
		}
		if status, found := obj["status"]; found {
			return status, nil
		}
		return map[string]any{}, nil
	}},
	// InterpretHealth(observedObj) returns whether it is healthy.
	OpHealthInterpretation: {name: "InterpretHealth", args: []string{"object"}, results: 1, adapt: first},
	// GetDependencies(desiredObj) returns a list of {apiVersion, kind, namespace, name}.
	OpDependencyInterpretation: {name: "GetDependencies", args: []string{"object"}, results: 1, adapt: func(r []any, _ map[string]any, _ *observedPaths) (any, error) {
		if m, ok := r[0].(map[string]any); ok && len(m) == 0 {
			return []any{}, nil // an empty table: no dependencies
		}
		return r[0], nil
	}},
}

func first(r []any, _ map[string]any, _ *observedPaths) (any, error) { return r[0], nil }

// Bounds of the sandbox besides the time limit.
const (
	luaCallStack     = 200     // nested Lua calls
	luaRegistry      = 1024    // data stack slots to start with
	luaRegistryMax   = 1 << 16 // and at most
	luaMaxString     = 1 << 20 // bytes string.rep, gsub and format may produce
	luaChunkName     = "luaScript"
	luaRemovedGlobal = "dofile loadfile load loadstring require module print collectgarbage getfenv setfenv _printregs"
)

// Compile parses the script, runs its top level (which defines the functions) in the sandbox and checks that
// it defines op's function. Errors carry the line ("luaScript line:3(column:7) near 'end'"). The top level
// runs within evalTimeout, as it does before every evaluation: admission, which compiles every operation of
// a customization, spends at most that per operation on a script that would not finish.
func (Lua) Compile(op Operation, source string) (Program, error) {
	fn, ok := luaFunctions[op]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", op)
	}
	chunk, err := parse.Parse(strings.NewReader(source), luaChunkName)
	if err != nil {
		return nil, err
	}
	proto, err := lua.Compile(chunk, luaChunkName)
	if err != nil {
		return nil, err
	}
	p := luaProgram{proto: proto, fn: fn}
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	L, err := p.load(ctx, &observedPaths{})
	if err != nil {
		return nil, err
	}
	L.Close()
	return p, nil
}

type luaProgram struct {
	proto *lua.FunctionProto
	fn    luaFunction
}

// load returns a sandboxed interpreter that has run the script's top level, with the operation's function
// defined; o is what the evaluation converts.
func (p luaProgram) load(ctx context.Context, o *observedPaths) (*lua.LState, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: luaCallStack, RegistrySize: luaRegistry,
		RegistryMaxSize: luaRegistryMax, MinimizeStackMemory: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range strings.Fields(luaRemovedGlobal) {
		L.SetGlobal(name, lua.LNil)
	}
	boundStrings(L)
	openKube(L, o)
	L.SetContext(ctx)
	L.Push(L.NewFunctionFromProto(p.proto))
	if err := L.PCall(0, 0, nil); err != nil {
		L.Close()
		return nil, luaError(err)
	}
	if L.GetGlobal(p.fn.name).Type() != lua.LTFunction {
		L.Close()
		return nil, fmt.Errorf("the script does not define function %s", p.fn.name)
	}
	return L, nil
}

func (p luaProgram) Eval(ctx context.Context, vars map[string]any) (any, error) {
	kept := &observedPaths{}
	L, err := p.load(ctx, kept)
	if err != nil {
		return nil, err
	}
	defer L.Close()
	args := make([]lua.LValue, len(p.fn.args))
	for i, name := range p.fn.args {
		if name == observedVar {
			args[i] = kept.proxy(L, "")
			continue
		}
		if args[i], err = toLua(L, vars[name], kept, 0); err != nil {
			return nil, err
		}
	}
	if err := L.CallByParam(lua.P{Fn: L.GetGlobal(p.fn.name), NRet: p.fn.results, Protect: true}, args...); err != nil {
		return nil, luaError(err)
	}
	results := make([]any, p.fn.results)
	for i := range results {
		if results[i], err = fromLua(L.Get(-p.fn.results+i), "", kept, 0); err != nil {
			return nil, fmt.Errorf("%s returned %w", p.fn.name, err)
		}
	}
	return p.fn.adapt(results, vars, kept)
}

// luaError is a Lua error without the interpreter's stack traceback, which names only Go and chunk frames.
func luaError(err error) error {
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Object != nil {
		return errors.New(apiErr.Object.String())
	}
	return err
}
