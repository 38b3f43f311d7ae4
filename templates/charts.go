package templates

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// The charts are plain SVG computed here: no script, no CDN. The plot area of
// both charts is the same, so their buckets line up one above the other.
const (
	chartW, chartH = 720.0, 170.0
	plotL, plotR   = 52.0, 712.0
	plotT, plotB   = 10.0, 150.0
)

type tick struct {
	Y     string
	Label string
}

type point struct{ X, Y string }

type latencyChart struct {
	Avg, Max string  // SVG path data; a gap where a bucket has no result
	Points   []point // the averages, marked so a lone bucket shows too
	Ticks    []tick
	Label    string // the chart in words, for screen readers
	Empty    bool
}

type availabilityBar struct {
	X, W         string
	UpY, UpH     string
	DownY, DownH string
	Empty        bool
	Title        string
}

type availabilityChart struct {
	Bars  []availabilityBar
	Ticks []tick
	Label string
	Empty bool
}

func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func bucketX(i, n int) (left, width float64) {
	w := (plotR - plotL) / float64(n)
	return plotL + float64(i)*w, w
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func newLatencyChart(s monitoring.Series, rangeLabel string) latencyChart {
	var c latencyChart
	var top, sum float64
	var n int64
	for _, p := range s.Points {
		if p.Total > 0 {
			top = max(top, p.MaxLatencyMS)
			sum += p.AvgLatencyMS * float64(p.Total)
			n += p.Total
		}
	}
	if n == 0 {
		c.Empty = true
		c.Label = "No results over " + rangeLabel + "."
		return c
	}
	yMax := niceCeil(top)
	y := func(ms float64) float64 { return plotB - ms/yMax*(plotB-plotT) }
	var avg, mx strings.Builder
	prev := false
	for i, p := range s.Points {
		if p.Total == 0 {
			prev = false
			continue
		}
		left, w := bucketX(i, len(s.Points))
		x := coord(left + w/2)
		cmd := "L"
		if !prev {
			cmd = "M"
		}
		fmt.Fprintf(&avg, "%s%s %s ", cmd, x, coord(y(p.AvgLatencyMS)))
		c.Points = append(c.Points, point{X: x, Y: coord(y(p.AvgLatencyMS))})
		fmt.Fprintf(&mx, "%s%s %s ", cmd, x, coord(y(p.MaxLatencyMS)))
		prev = true
	}
	c.Avg, c.Max = strings.TrimSpace(avg.String()), strings.TrimSpace(mx.String())
	for _, v := range []float64{0, yMax / 2, yMax} {
		c.Ticks = append(c.Ticks, tick{Y: coord(y(v)), Label: tickLatency(v)})
	}
	c.Label = fmt.Sprintf("Latency over %s: average %s, highest %s.", rangeLabel, latency(sum/float64(n)), latency(top))
	return c
}

func newAvailabilityChart(s monitoring.Series, rangeLabel string) availabilityChart {
	var c availabilityChart
	var up, total int64
	h := plotB - plotT
	for i, p := range s.Points {
		left, w := bucketX(i, len(s.Points))
		bar := availabilityBar{X: coord(left + w*0.1), W: coord(w * 0.8)}
		end := p.Start.Add(s.Bucket)
		if p.Total == 0 {
			bar.Empty = true
			bar.UpY, bar.UpH = coord(plotB-2), "2"
			bar.Title = fmt.Sprintf("%s – %s: no results", timeText(p.Start), timeText(end))
		} else {
			upH := h * float64(p.Up) / float64(p.Total)
			bar.UpY, bar.UpH = coord(plotB-upH), coord(upH)
			bar.DownY, bar.DownH = coord(plotT), coord(h-upH)
			bar.Title = fmt.Sprintf("%s – %s: %s UP (%d of %d), %d DOWN", timeText(p.Start), timeText(end),
				percent(monitoring.Ratio{Up: p.Up, Total: p.Total}), p.Up, p.Total, p.Total-p.Up)
		}
		up += p.Up
		total += p.Total
		c.Bars = append(c.Bars, bar)
	}
	for _, v := range []float64{0, 50, 100} {
		c.Ticks = append(c.Ticks, tick{Y: coord(plotB - v/100*h), Label: strconv.Itoa(int(v)) + "%"})
	}
	if total == 0 {
		c.Empty = true
		c.Label = "No results over " + rangeLabel + "."
		return c
	}
	c.Label = fmt.Sprintf("Availability over %s: %s (%d of %d checks UP).", rangeLabel,
		percent(monitoring.Ratio{Up: up, Total: total}), up, total)
	return c
}

// tickLatency labels an axis tick: round values of niceCeil, so no rounding.
func tickLatency(ms float64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(ms/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(ms, 'f', -1, 64) + " ms"
}
