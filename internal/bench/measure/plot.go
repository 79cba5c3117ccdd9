package measure

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// BarChart draws p50, p90, p99 and max of each stage as grouped bars.
func BarChart(title string, stages []string, values map[string]map[string]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "seconds"
	width := vg.Points(12)
	for i, q := range []string{"p50", "p90", "p99", "max"} {
		bar := make(plotter.Values, len(stages))
		for j, s := range stages {
			bar[j] = values[s][q]
			p.Y.Max = max(p.Y.Max, bar[j]*1.3) // room for the legend
		}
		bars, err := plotter.NewBarChart(bar, width)
		if err != nil {
			return nil, err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = vg.Length(i-2)*width + width/2
		p.Add(bars)
		p.Legend.Add(q, bars)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(stages...)
	return p, nil
}

// LineChart draws one line per series, each point (x, y) of a result that point accepts.
func LineChart[R any](title, xLabel, yLabel string, results []R, point func(R) (series string, x, y float64, ok bool)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xLabel, yLabel
	series := map[string]plotter.XYs{}
	for _, r := range results {
		if name, x, y, ok := point(r); ok {
			series[name] = append(series[name], plotter.XY{X: x, Y: y})
		}
	}
	names := make([]string, 0, len(series))
	for name := range series {
		names = append(names, name)
	}
	slices.Sort(names)
	var args []any
	for _, name := range names {
		xys := series[name]
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		args = append(args, name, xys)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.ToLower(title), err)
	}
	p.Y.Min = 0
	p.Legend.Top = true
	return p, nil
}
