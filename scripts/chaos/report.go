package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// report is what the audit found.
type report struct {
	seed     uint64
	duration time.Duration
	faults   *faultLog
	survival *survivalLog
	checks   []checkRow
	infos    [][2]string
	notes    []string
}

type checkRow struct {
	name, explain string
	checked       int // -1: not a count of items
	violations    int
	example       string
	skipped       string
}

func (r *report) check(name, explain string, checked, violations int, example string) {
	r.checks = append(r.checks, checkRow{name: name, explain: explain, checked: checked, violations: violations, example: example})
}

func (r *report) skip(name, why string) {
	r.checks = append(r.checks, checkRow{name: name, skipped: why, checked: -1})
}

func (r *report) info(name, value string) { r.infos = append(r.infos, [2]string{name, value}) }
func (r *report) note(s string)           { r.notes = append(r.notes, s) }

func (r *report) violations() int {
	n := 0
	for _, c := range r.checks {
		n += c.violations
	}
	if r.survival != nil {
		r.survival.mu.Lock()
		for _, c := range r.survival.checks {
			n += c.failed
		}
		r.survival.mu.Unlock()
	}
	return n
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nFaults injected (seed %d, %s)\n\n", r.seed, r.duration)
	fmt.Fprintf(w, "| fault | hits | count | total time |\n| --- | --- | ---: | ---: |\n")
	total := 0
	r.faults.mu.Lock()
	for _, k := range allKinds() {
		hits := "one replica"
		if slices.Contains(clusterKinds, k) {
			hits = "whole cluster"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.0fs |\n", k, hits, r.faults.counts[k], r.faults.total[k].Seconds())
		total += r.faults.counts[k]
	}
	r.faults.mu.Unlock()
	fmt.Fprintf(w, "| all | | %d | |\n", total)

	fmt.Fprintf(w, "\nInvariants\n\n| invariant | checked | violations | first example |\n| --- | ---: | ---: | --- |\n")
	for _, c := range r.checks {
		if c.skipped != "" {
			fmt.Fprintf(w, "| %s | skipped | - | %s |\n", c.name, c.skipped)
			continue
		}
		checked := "-"
		if c.checked >= 0 {
			checked = fmt.Sprint(c.checked)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.name, checked, mark(c.violations), cell(c.example))
	}

	fmt.Fprintf(w, "\nSurvival (live replicas while the database was away or out of reach)\n\n| check | passed | failed | first failure |\n| --- | ---: | ---: | --- |\n")
	r.survival.mu.Lock()
	names := make([]string, 0, len(r.survival.checks))
	for n := range r.survival.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := r.survival.checks[n]
		fmt.Fprintf(w, "| %s | %d | %s | %s |\n", n, c.ok, mark(c.failed), cell(strings.Join(c.examples, "; ")))
	}
	r.survival.mu.Unlock()

	fmt.Fprintf(w, "\nFigures\n\n| what | value |\n| --- | ---: |\n")
	for _, i := range r.infos {
		fmt.Fprintf(w, "| %s | %s |\n", i[0], i[1])
	}
	for _, n := range r.notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
}

func mark(violations int) string {
	if violations == 0 {
		return "0"
	}
	return fmt.Sprintf("**%d**", violations)
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "/") }
