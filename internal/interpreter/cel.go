package interpreter

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// CEL is the Common Expression Language with the Kubernetes libraries the API server offers in its own CEL
// rules (quantities, lists, regular expressions, URLs, IPs, semantic versions, formats, sets, string
// extensions). Unlike the API server's environment it allows map literals of mixed value types, which the
// operations return ({"replicas": 3, "requests": {"cpu": "1"}}).
type CEL struct{}

var _ Language = CEL{}

var celEnvs = sync.OnceValues(func() (map[Operation]*cel.Env, error) {
	base, err := cel.NewEnv(
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		library.URLs(), library.Regex(), library.Lists(library.ListsVersion(1)), library.Quantity(),
		library.IP(), library.CIDR(), library.Format(), library.SemverLib(library.SemverVersion(1)),
		cel.Variable("object", cel.DynType),
	)
	if err != nil {
		return nil, err
	}
	envs := map[Operation]*cel.Env{}
	for op, sig := range signatures {
		var opts []cel.EnvOption
		for _, v := range sig.variables {
			t := cel.DynType
			switch v {
			case "replicas":
				t = cel.IntType
			case "statuses":
				t = cel.ListType(cel.MapType(cel.StringType, cel.DynType))
			}
			opts = append(opts, cel.Variable(v, t))
		}
		if envs[op], err = base.Extend(opts...); err != nil {
			return nil, err
		}
	}
	return envs, nil
})

// Compile parses and type-checks source as op's expression. The error carries the compiler's messages with
// line and column ("ERROR: <input>:1:8: undeclared reference to 'spec'").
func (CEL) Compile(op Operation, source string) (Program, error) {
	sig, ok := signatures[op]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", op)
	}
	envs, err := celEnvs()
	if err != nil {
		return nil, err
	}
	ast, issues := envs[op].Compile(source)
	if issues.Err() != nil {
		return nil, issues.Err()
	}
	if want := resultType(sig.result); !acceptable(ast.OutputType(), want) {
		return nil, fmt.Errorf("the expression returns %s; %s must return %s", ast.OutputType(), op, want)
	}
	prg, err := envs[op].Program(ast,
		cel.CostLimit(celconfig.PerCallLimit),
		cel.InterruptCheckFrequency(100),
		cel.CostTracking(&library.CostEstimator{}),
	)
	if err != nil {
		return nil, err
	}
	return celProgram{prg}, nil
}

func resultType(k resultKind) *cel.Type {
	switch k {
	case resultBool:
		return cel.BoolType
	case resultList:
		return cel.ListType(cel.DynType)
	}
	return cel.MapType(cel.StringType, cel.DynType)
}

// acceptable says whether a value of type got may be what an operation that returns want returns: the same
// kind of value, or one only known when it runs (a field of object).
func acceptable(got, want *cel.Type) bool {
	switch got.Kind() {
	case types.DynKind, types.AnyKind:
		return true
	case types.MapKind:
		return want.Kind() == types.MapKind && (got.Parameters()[0].Kind() == types.StringKind || got.Parameters()[0].Kind() == types.DynKind)
	}
	return got.Kind() == want.Kind()
}

type celProgram struct{ prg cel.Program }

func (p celProgram) Eval(ctx context.Context, vars map[string]any) (any, error) {
	out, _, err := p.prg.ContextEval(ctx, vars)
	if err != nil {
		return nil, err
	}
	// Through protobuf's JSON value, so that the result is plain JSON whatever CEL types it holds.
	native, err := out.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, fmt.Errorf("the result is not JSON: %w", err)
	}
	raw, err := protojson.Marshal(native.(*structpb.Value))
	if err != nil {
		return nil, err
	}
	var v any
	// utiljson keeps whole numbers int64, as the unstructured helpers expect.
	if err := utiljson.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
