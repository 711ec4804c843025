package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotWindow is the seconds each point of the plot sums up.
const plotWindow = 5

var (
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	grey   = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// writePlot draws the drain under load over time, in three panels sharing the time axis: the
// cleanup rate (with the pacers' limit, and the unpaced drain for comparison), the claim's p99, and
// the users' p99 against their baseline.
func writePlot(path string, rep *report) error {
	d := rep.heavy
	s := seriesOf(d, plotWindow)
	rate := panel("cleanup rate, both replicas", "pastes/s")
	addLine(rate, "drain under load", s.t, s.rate, blue, false)
	addLine(rate, "the deployment's rate limit", s.t, s.limit, orange, true)
	if rep.unpaced != nil {
		u := seriesOf(rep.unpaced, plotWindow)
		addLine(rate, "unpaced drain, no load", u.t, u.rate, grey, false)
	}
	claim := panel("claim p99", "ms")
	addLine(claim, "claim p99", s.t, s.claimP99, blue, false)
	users := panel("foreground p99", "ms")
	addLine(users, "during the drain", s.t, s.fgP99, blue, false)
	end := d.samples[len(d.samples)-1].at.Sub(d.samples[0].at).Seconds()
	base := float64(statsOf(d.baseline).p99) / 1e6
	addLine(users, "baseline (no drain)", []float64{0, end}, []float64{base, base}, grey, true)
	users.X.Label.Text = "seconds since the runs started"
	for _, p := range []*plot.Plot{rate, claim, users} {
		p.X.Min, p.X.Max = 0, end
	}

	plots := [][]*plot.Plot{{rate}, {claim}, {users}}
	img := vgimg.New(vg.Points(800), vg.Points(900))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		plots[j][0].Draw(canvases[j][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func panel(title, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds a line, leaving out the windows with nothing to show (NaN).
func addLine(p *plot.Plot, name string, xs, ys []float64, c color.Color, dashed bool) {
	var pts plotter.XYs
	for i := range xs {
		if !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
			pts = append(pts, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	if len(pts) == 0 {
		return
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return
	}
	l.Color = c
	l.Width = vg.Points(1.2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
}

// writeFrontPlot draws the front: each step's users' p99 over its level with no drain against its
// drain rate (dashed: over the window's baseline), the budget, and the paced window's point.
func writeFrontPlot(path string, rep *report) error {
	p := panel("users' p99 against the drain's rate (the front)", "p99 / its level with no drain")
	p.X.Label.Text = "drain, pastes/s (both replicas)"
	xs, ys := frontLine(rep.frontOf(ownLevel))
	addLine(p, "steps at fixed budgets, each against the load alone just before it", xs, ys, blue, false)
	if s, err := plotter.NewScatter(xyOf(xs, ys)); err == nil {
		s.Color = blue
		p.Add(s)
	}
	_, ysOne := frontLine(rep.frontOf(oneLevel(rep.windowBaseline())))
	addLine(p, "the same steps against the window's baseline", xs, ysOne, blue, true)
	lo, top := slices.Min(xs), slices.Max(xs)
	addLine(p, fmt.Sprintf("budget %.1f×", rep.cfg.budget), []float64{lo, top}, []float64{rep.cfg.budget, rep.cfg.budget}, grey, true)
	d := rep.heavy
	if s, err := plotter.NewScatter(xyOf([]float64{settledRate(d)}, []float64{d.usersRatio()})); err == nil {
		s.Color, s.Shape, s.Radius = orange, draw.PyramidGlyph{}, vg.Points(5)
		p.Add(s)
		p.Legend.Add("the automatic pacing (the paced window: its second half's rate, its whole p99)", s)
	}
	if rep.replay != nil {
		r := rep.replayPoint(ownLevel)
		if s, err := plotter.NewScatter(xyOf([]float64{r.rate}, []float64{r.ratio})); err == nil {
			s.Color, s.Shape, s.Radius = orange, draw.BoxGlyph{}, vg.Points(4)
			p.Add(s)
			p.Legend.Add("the window's rate replayed as a step", s)
		}
	}
	if lo > 0 {
		// The steps double the rate: on a log axis they are evenly spaced, and the flat stretch up
		// to the knee is as wide as the steep one past it. Ticks at the steps' rates.
		var ticks plot.ConstantTicks
		for _, x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: fmt.Sprintf("%.0f", x)})
		}
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, ticks
		p.X.Label.Text += ", log scale"
	}
	if bottom := min(slices.Min(ys), slices.Min(ysOne)); bottom > 0 {
		// The unlimited step reads tens of times the baseline: on a log axis the budget's
		// neighbourhood keeps its room.
		var ticks plot.ConstantTicks
		for _, v := range []float64{1, 1.5, 2, 3, 5, 10, 20, 50, 100} {
			ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
		}
		p.Y.Min = min(1, bottom)
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, ticks
		p.Y.Label.Text += ", log scale"
	}
	p.Legend.Left = true
	return p.Save(vg.Points(700), vg.Points(450), path)
}

// frontLine is the front's points in the order of their rates.
func frontLine(points []frontPoint) (rates, ratios []float64) {
	for _, pt := range byRate(points) {
		rates, ratios = append(rates, pt.rate), append(ratios, pt.ratio)
	}
	return rates, ratios
}

func xyOf(xs, ys []float64) plotter.XYs {
	var out plotter.XYs
	for i := range xs {
		if !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
			out = append(out, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	return out
}
