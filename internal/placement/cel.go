package placement

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/library"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// CostLimit bounds one evaluation of one expression on one Cluster, in CEL's cost units (about one per
// field read, comparison or list element visited). A Placement is decided over the whole fleet on each
// change, so an expression may read a Cluster's fields and walk its API list (a few thousand units), but
// not run comprehensions nested over it: an expression over the limit does not select the Cluster.
const CostLimit = 100_000

// celEnv is the environment of predicate expressions: the variable cluster (the Cluster as a map), with
// the Kubernetes libraries the API server offers in its own rules that make sense on a Cluster
// (quantities, lists, regular expressions, semantic versions, string extensions).
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		library.Lists(library.ListsVersion(1)), library.Quantity(), library.Regex(), library.SemverLib(library.SemverVersion(1)),
		cel.Variable("cluster", cel.MapType(cel.StringType, cel.DynType)),
	)
})

// expression is one compiled CEL expression and the path of its field, for messages.
type expression struct {
	field   string
	program cel.Program
}

// compileExpressions compiles a predicate's expressions; field is the path of the list. The error names the
// expression's index and carries the compiler's message.
func compileExpressions(sources []string, field string) ([]expression, error) {
	out := make([]expression, len(sources))
	for i, source := range sources {
		e, err := compileExpression(source, fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.field, err)
		}
		out[i] = e
	}
	return out, nil
}

// compileExpression compiles one expression, whose field is path, with the cost limit.
func compileExpression(source, path string) (expression, error) {
	e := expression{field: path}
	env, err := celEnv()
	if err != nil {
		return e, err
	}
	ast, issues := env.Compile(source)
	if issues.Err() != nil {
		return e, issues.Err()
	}
	if t := ast.OutputType(); t.Kind() != types.BoolKind && t.Kind() != types.DynKind {
		return e, fmt.Errorf("the expression returns %s; a predicate must return bool", t)
	}
	e.program, err = env.Program(ast, cel.CostLimit(CostLimit), cel.CostTracking(&library.CostEstimator{}))
	return e, err
}

// evaluate says whether every expression is true of cluster (the Cluster as a map); an expression that
// fails, or returns something other than a bool, selects nothing and says why.
func evaluate(expressions []expression, cluster map[string]any) (bool, string) {
	vars := map[string]any{"cluster": cluster}
	for _, e := range expressions {
		out, _, err := e.program.Eval(vars)
		if err != nil {
			return false, fmt.Sprintf("%s failed: %v", e.field, err)
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, fmt.Sprintf("%s returned %v, not a bool", e.field, out.Value())
		}
		if !b {
			return false, ""
		}
	}
	return true, ""
}

// asMap is a Cluster as CEL expressions see it: its metadata, spec and status as JSON would have them
// (quantities as strings, for quantity()).
func asMap(c *clusterv1alpha1.Cluster) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(c)
}
