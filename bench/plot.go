package main

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// toolColors gives each tool the same color in every chart.
var toolColors = map[string]color.Color{
	sshfsDefault: color.RGBA{R: 0x9e, G: 0x9e, B: 0x9e, A: 0xff},
	sshfsTuned:   color.RGBA{R: 0x42, G: 0x85, B: 0xf4, A: 0xff},
	sshfsmKey:    color.RGBA{R: 0xe3, G: 0x74, B: 0x00, A: 0xff},
	localKey:     color.RGBA{R: 0x2e, G: 0x9e, B: 0x4f, A: 0xff},
}

// charts writes one bar chart per measured workload: one bar per tool at
// its median, error bars from min to max.
func (r *results) charts(dir string) error {
	for _, w := range workloads {
		var names []string
		var keys []string
		for _, t := range allTools("") {
			if _, ok := r.stat(w, t.key); ok {
				names = append(names, t.name)
				keys = append(keys, t.key)
			}
		}
		if len(keys) == 0 {
			continue
		}
		if err := r.chart(w, names, keys, filepath.Join(dir, w.id+".png")); err != nil {
			return fmt.Errorf("chart %s: %w", w.id, err)
		}
	}
	return nil
}

func (r *results) chart(w *workload, names, keys []string, path string) error {
	p := plot.New()
	better := "lower is better"
	if w.higher {
		better = "higher is better"
	}
	p.Title.Text = fmt.Sprintf("%s (%s)", r.title(w), better)
	p.Y.Label.Text = w.unit
	p.Y.Min = 0
	width := vg.Points(40)
	for i, k := range keys {
		s, _ := r.stat(w, k)
		bars, err := plotter.NewBarChart(plotter.Values{s.med}, width)
		if err != nil {
			return err
		}
		bars.XMin = float64(i)
		bars.Color = toolColors[k]
		bars.LineStyle.Width = 0
		errs := &plotter.YErrorBars{
			XYs:       plotter.XYs{{X: float64(i), Y: s.med}},
			YErrors:   plotter.YErrors{{Low: s.med - s.min, High: s.max - s.med}},
			LineStyle: plotter.DefaultLineStyle,
			CapWidth:  vg.Points(10),
		}
		label, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: float64(i), Y: s.max}},
			Labels: []string{fmtVal(s.med, w.unit)},
		})
		if err != nil {
			return err
		}
		label.Offset.X = -vg.Points(4 * float64(len(label.Labels[0])))
		label.Offset.Y = vg.Points(4)
		p.Add(bars, errs, label)
		if s.max > p.Y.Max {
			p.Y.Max = s.max
		}
	}
	p.Y.Max *= 1.15
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(keys))-0.4
	return p.Save(vg.Points(float64(120+90*len(keys))), vg.Points(300), path)
}
