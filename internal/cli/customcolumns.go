package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// customColumns prints -o custom-columns=HEADER:PATH,… (and custom-columns-file=FILE, a line of headers over
// a line of paths) as kubectl does: one column per JSONPath over each object, <none> where a path finds
// nothing, several values joined with commas. A path may leave out the braces and the leading dot.
type customColumns struct {
	headers   []string
	paths     []*jsonpath.JSONPath
	noHeaders bool
}

// newCustomColumns reads a spec of HEADER:PATH pairs separated by commas.
func newCustomColumns(spec string, noHeaders bool) (*customColumns, error) {
	var headers, paths []string
	for _, col := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(col, ":")
		if !ok || header == "" || path == "" {
			return nil, fmt.Errorf("column %q: want HEADER:PATH, such as NAME:.metadata.name", col)
		}
		headers, paths = append(headers, header), append(paths, path)
	}
	return compileColumns(headers, paths, noHeaders)
}

// newCustomColumnsFromFile reads a file of two lines: the headers, and under them the paths, each separated
// by spaces.
func newCustomColumnsFromFile(name string, noHeaders bool) (*customColumns, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines [][]string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if fields := strings.Fields(scanner.Text()); len(fields) > 0 {
			lines = append(lines, fields)
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(lines) != 2 || len(lines[0]) != len(lines[1]) {
		return nil, fmt.Errorf("%s: want a line of headers and a line of as many paths", name)
	}
	return compileColumns(lines[0], lines[1], noHeaders)
}

func compileColumns(headers, paths []string, noHeaders bool) (*customColumns, error) {
	p := &customColumns{headers: headers, noHeaders: noHeaders}
	for i, path := range paths {
		if !strings.HasPrefix(path, "{") {
			path = "{" + path + "}"
		}
		if !strings.HasPrefix(path, "{.") {
			path = "{." + path[1:]
		}
		jp := jsonpath.New(headers[i]).AllowMissingKeys(true)
		if err := jp.Parse(path); err != nil {
			return nil, fmt.Errorf("column %s: %w", headers[i], err)
		}
		p.paths = append(p.paths, jp)
	}
	return p, nil
}

// PrintObj prints obj, or each item of a List, as a row.
func (p *customColumns) PrintObj(obj runtime.Object, out io.Writer) error {
	w := printers.GetNewTabWriter(out)
	defer w.Flush()
	if !p.noHeaders {
		fmt.Fprintln(w, strings.ToUpper(strings.Join(p.headers, "\t")))
	}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	for _, item := range items {
		data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
		if err != nil {
			return err
		}
		cells := make([]string, len(p.paths))
		for i, jp := range p.paths {
			results, err := jp.FindResults(data)
			if err != nil {
				return fmt.Errorf("column %s: %w", p.headers[i], err)
			}
			var values []string
			for _, r := range results {
				for _, v := range r {
					values = append(values, fmt.Sprint(v.Interface()))
				}
			}
			cells[i] = "<none>"
			if len(values) > 0 {
				cells[i] = strings.Join(values, ",")
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return nil
}
