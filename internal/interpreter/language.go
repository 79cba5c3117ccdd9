package interpreter

import (
	"context"
	"fmt"
	"time"
)

// Operation is one thing a customization can say about a kind. Each has its inputs (the variables its
// expression reads) and the kind of value it must produce.
type Operation string

// The operations, named as in the InterpreterCustomization API.
const (
	OpReplicaResource          Operation = "replicaResource"
	OpReplicaRevision          Operation = "replicaRevision"
	OpRetention                Operation = "retention"
	OpStatusReflection         Operation = "statusReflection"
	OpStatusAggregation        Operation = "statusAggregation"
	OpHealthInterpretation     Operation = "healthInterpretation"
	OpDependencyInterpretation Operation = "dependencyInterpretation"
)

// Result kinds an operation may produce.
type resultKind int

const (
	resultMap resultKind = iota
	resultList
	resultBool
)

// signature is what an operation's expression reads and must produce.
type signature struct {
	// variables beyond `object`, which every operation reads.
	variables []string
	result    resultKind
}

var signatures = map[Operation]signature{
	OpReplicaResource:          {result: resultMap},
	OpReplicaRevision:          {variables: []string{"replicas"}, result: resultMap},
	OpRetention:                {result: resultList},
	OpStatusReflection:         {result: resultMap},
	OpStatusAggregation:        {variables: []string{"statuses"}, result: resultMap},
	OpHealthInterpretation:     {result: resultBool},
	OpDependencyInterpretation: {result: resultList},
}

// Language compiles operations written in one expression language. CEL is the one Flotilla speaks; another
// (Karmada's Lua) fits behind the same two methods.
type Language interface {
	// Compile checks source as the expression of op and returns a program, or an error that says where the
	// source is wrong.
	Compile(op Operation, source string) (Program, error)
}

// Program is a compiled operation.
type Program interface {
	// Eval runs the program with its variables (`object` and the operation's others, as JSON values:
	// map[string]any, []any, int64, float64, string, bool) and returns its result as a JSON value.
	Eval(ctx context.Context, vars map[string]any) (any, error)
}

// evalTimeout bounds one evaluation in time, besides the cost limit each language enforces: a customization
// that is merely slow must not hold a controller's worker.
const evalTimeout = 100 * time.Millisecond

// run evaluates p within evalTimeout, turning a panic of the language runtime into an error: a broken
// customization fails its bindings, never the controller.
func run(p Program, vars map[string]any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("evaluation panicked: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	return p.Eval(ctx, vars)
}
