package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
)

// outputFormats is what -o takes on the commands that list: a table ("" or wide), or an object format
// printed by cli-runtime's printers, as kubectl prints it.
const outputFormats = "wide, name, yaml, json, jsonpath=TEMPLATE or go-template=TEMPLATE"

// tableOutput says whether format is printed as a table rather than as objects.
func tableOutput(format string) bool { return format == "" || format == "wide" }

func validateOutput(format string) error {
	if tableOutput(format) {
		return nil
	}
	_, err := objectPrinter(format)
	return err
}

// objectPrinter is cli-runtime's printer of an object format: name prints KIND.GROUP/NAME lines, jsonpath=
// and go-template= take kubectl's templates.
func objectPrinter(format string) (printers.ResourcePrinter, error) {
	kind, template, _ := strings.Cut(format, "=")
	switch kind {
	case "name":
		return &printers.NamePrinter{}, nil
	case "json":
		return &printers.JSONPrinter{}, nil
	case "yaml":
		return &printers.YAMLPrinter{}, nil
	case "jsonpath":
		if template == "" {
			return nil, fmt.Errorf("--output %q: jsonpath= needs a template, such as jsonpath='{.items[*].metadata.name}'", format)
		}
		p, err := printers.NewJSONPathPrinter(template)
		if err != nil {
			return nil, fmt.Errorf("--output %q: %w", format, err)
		}
		return p, nil
	case "go-template":
		if template == "" {
			return nil, fmt.Errorf("--output %q: go-template= needs a template, such as go-template='{{range .items}}{{.metadata.name}} {{end}}'", format)
		}
		p, err := printers.NewGoTemplatePrinter([]byte(template))
		if err != nil {
			return nil, fmt.Errorf("--output %q: %w", format, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("--output %q: want %s", format, outputFormats)
}

// printObject prints obj, an object or a List carrying apiVersion and kind, in an object format.
func printObject(out io.Writer, format string, obj any) error {
	p, err := objectPrinter(format)
	if err != nil {
		return err
	}
	// Through JSON into unstructured, so that typed objects, Lists of them and plain maps print alike.
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	u, err := runtime.Decode(unstructured.UnstructuredJSONScheme, data)
	if err != nil {
		return fmt.Errorf("printing %T: %w", obj, err)
	}
	return p.PrintObj(u, out)
}
