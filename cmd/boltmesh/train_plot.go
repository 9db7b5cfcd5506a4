package main

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writeTrainPlots writes DIR/train-loss.svg and DIR/train-accuracy.svg:
// the loss and the test accuracy at each epoch's end against the time
// since the run began, one line for the run's world size.
func writeTrainPlots(dir string, rep *trainReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	var loss, acc plotter.XYs
	for _, ep := range rep.Epochs {
		loss = append(loss, plotter.XY{X: ep.ElapsedS, Y: ep.Loss})
		acc = append(acc, plotter.XY{X: ep.ElapsedS, Y: 100 * ep.TestAccuracy})
	}
	name := fmt.Sprintf("%d ranks", rep.World)
	for _, c := range []struct {
		file, title, ylabel string
		xys                 plotter.XYs
	}{
		{"train-loss.svg", "MNIST MLP: training loss", "mean loss of the epoch", loss},
		{"train-accuracy.svg", "MNIST MLP: test accuracy", "test accuracy (%)", acc},
	} {
		p := plot.New()
		p.Title.Text = c.title
		p.X.Label.Text = "time (s)"
		p.Y.Label.Text = c.ylabel
		p.Legend.Top = true
		if err := plotutil.AddLinePoints(p, name, c.xys); err != nil {
			return fmt.Errorf("--plot: %s: %w", c.file, err)
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, c.file)); err != nil {
			return fmt.Errorf("--plot: %s: %w", c.file, err)
		}
	}
	return nil
}
