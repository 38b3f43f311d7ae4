package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Known keys, in the order messages list them.
var (
	rootFields      = []string{"scheduler", "groups", "services", "alerts", "maintenance_windows", "retention"}
	schedulerFields = []string{"lease", "max_attempts", "retry_base", "retry_cap", "workers", "poll", "spread", "allow_link_local"}
	groupFields     = []string{"name"}
	serviceFields   = append([]string{"name", "group", "url", "interval", "timeout", "enabled"}, probeFields...) // probe.go
)

// Parse reads a services file, applies defaults and validates the result. An empty file is
// valid and yields Default(). Any rejection is a *ValidationError listing every problem.
// ${NAME} references in webhook urls and headers are resolved from the process
// environment; ParseEnv takes the environment as KEY=VALUE lines instead.
//
// The file is walked as a yaml.Node tree rather than decoded into structs: that is what lets
// a message name the service a bad field belongs to, and lets durations be read as text so
// "interval: 30" is reported instead of being taken as 30 nanoseconds.
func Parse(data []byte) (*Config, error) {
	return ParseEnv(data, os.Environ())
}

// ParseEnv is Parse with the environment given as KEY=VALUE lines.
func ParseEnv(data []byte, env []string) (*Config, error) {
	root, syntax := parseYAML(data)
	if syntax != nil {
		return nil, newValidationError([]Problem{*syntax})
	}
	d := &decoder{lines: map[string]int{}, quiet: map[string]bool{}, env: envMap(env)}
	cfg := d.config(root)
	problems := append(d.problems, cfg.validate(d.lines, d.quiet)...)
	if invalid := newValidationError(problems); invalid != nil {
		return nil, invalid
	}
	return cfg, nil
}

// parseYAML returns the file's single document, or nil for an empty file.
func parseYAML(data []byte) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		p := syntaxProblem(data, err)
		return nil, &p
	}
	// A second document would be ignored by a plain Unmarshal; services in it would silently
	// never be probed.
	var extra yaml.Node
	err := dec.Decode(&extra)
	switch {
	case errors.Is(err, io.EOF):
	case err != nil:
		p := syntaxProblem(data, err)
		return nil, &p
	case !isEmptyDocument(&extra):
		p := newProblem(scope{}, "", extra.Line, "a second YAML document starts here",
			"keep the whole configuration in one document: remove the --- separator")
		return nil, &p
	}
	return &doc, nil
}

var yamlErrorLine = regexp.MustCompile(`^line (\d+): (.*)$`)

func syntaxProblem(data []byte, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlErrorLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		line = problemLine(data, err, line)
	}
	return newProblem(scope{}, "", line, "the file is not valid YAML: "+msg,
		"check the indentation (spaces, not tabs) and the quoting on this line and the ones above it")
}

// problemLine finds the line a YAML syntax error is on. yaml.v3 reports the line where the
// enclosing block starts (line 1 for a mis-indented key on line 40), which sends the
// operator to the wrong place. A prefix of the file that reaches the problem fails with
// exactly the same error and, in practice, a shorter one does not, so the shortest such
// prefix (cut at a line end, found by binary search) ends on the line with the problem.
// When no prefix matches, the reported line stands.
func problemLine(data []byte, err error, reported int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if reported < 1 || reported > len(lines) {
		return reported
	}
	ends := make([]int, len(lines)+1) // ends[k]: length of the first k lines
	for i, l := range lines {
		ends[i+1] = ends[i] + len(l)
	}
	k := reported + sort.Search(len(lines)-reported+1, func(i int) bool {
		perr := parseAll(data[:ends[reported+i]])
		return perr != nil && perr.Error() == err.Error()
	})
	if k > len(lines) {
		return reported
	}
	return k
}

// parseAll decodes every document in data and returns the first error.
func parseAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func isEmptyDocument(doc *yaml.Node) bool {
	return doc.Kind == yaml.DocumentNode && (len(doc.Content) == 0 || isNull(doc.Content[0]))
}

// decoder turns the node tree into a Config, reporting what it cannot read. What it can
// read but is out of range is left to Config.validate, which also serves configs built in
// code.
type decoder struct {
	problems []Problem
	lines    map[string]int  // field path -> line, so validate can point into the file
	quiet    map[string]bool // paths already reported; validate must not judge the default left there
	env      map[string]string
}

// config walks the document. Sections are read in a fixed order, not file order, because a
// service's default timeout depends on the scheduler's lease.
func (d *decoder) config(doc *yaml.Node) *Config {
	cfg := Default()
	if doc == nil || isEmptyDocument(doc) {
		return cfg
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		d.problems = append(d.problems, newProblem(scope{}, "", root.Line,
			"the file is "+kindName(root)+", not a mapping of sections",
			"start the file with the sections scheduler:, groups:, services: and alerts:"))
		return cfg
	}
	f := d.fields(scope{}, root, rootFields)

	if sf := d.section(f, "scheduler", "write it as scheduler: {lease: 30s, workers: 8}", schedulerFields); sf != nil {
		sc := scope{path: "scheduler"}
		s := &cfg.Scheduler
		d.duration(sf, sc, "lease", &s.Lease)
		d.integer(sf, sc, "max_attempts", &s.MaxAttempts)
		d.duration(sf, sc, "retry_base", &s.RetryBase)
		d.duration(sf, sc, "retry_cap", &s.RetryCap)
		d.integer(sf, sc, "workers", &s.Workers)
		d.duration(sf, sc, "poll", &s.Poll)
		d.duration(sf, sc, "spread", &s.Spread)
		d.boolean(sf, sc, "allow_link_local", &s.AllowLinkLocal)
	}

	for i, item := range d.list(f, "groups", `write each group as an item "- name: core"`) {
		path := fmt.Sprintf("groups[%d]", i)
		cfg.Groups = append(cfg.Groups, Group{})
		g := &cfg.Groups[i]
		gf := d.item(item, path, groupFields, `write each group as "- name: core"`)
		if gf == nil {
			continue
		}
		d.text(gf, scope{path: path, owner: path}, "name", &g.Name)
		d.report(itemScope("group", path, g.Name), item, gf, groupFields)
	}

	// A service without a timeout gets one derived from the lease; when the lease itself is
	// wrong that derived value is meaningless, and only the lease should be reported.
	leaseBroken := d.quiet["scheduler.lease"] || cfg.Scheduler.Lease < minLease
	for i, item := range d.list(f, "services", `write each service as an item starting with "- name: inventory"`) {
		path := fmt.Sprintf("services[%d]", i)
		cfg.Services = append(cfg.Services, Service{
			Interval: DefaultInterval,
			Timeout:  cfg.Scheduler.DefaultTimeout(),
			Enabled:  true,
		})
		s := &cfg.Services[i]
		sf := d.item(item, path, serviceFields, `write each service as "- name: inventory" followed by its url:, interval: and timeout:`)
		if sf == nil {
			continue
		}
		d.text(sf, scope{path: path, owner: path}, "name", &s.Name)
		sc := itemScope("service", path, s.Name)
		d.report(sc, item, sf, serviceFields)
		d.text(sf, sc, "group", &s.Group)
		d.text(sf, sc, "url", &s.URL)
		d.duration(sf, sc, "interval", &s.Interval)
		d.duration(sf, sc, "timeout", &s.Timeout)
		d.boolean(sf, sc, "enabled", &s.Enabled)
		d.probe(sf, sc, s, cfg.Scheduler.AllowLinkLocal) // probe.go
		if _, set := sf.values["timeout"]; !set && leaseBroken {
			d.quiet[sc.field("timeout")] = true
		}
	}

	d.alerts(f, &cfg.Alerts)     // alerts.go
	d.maintenanceWindows(f, cfg) // maintenance.go
	d.retention(f, cfg)          // retention.go
	return cfg
}

// mappingFields is one mapping of the file with merge keys expanded.
type mappingFields struct {
	scope     scope
	values    map[string]*yaml.Node // known key -> value, aliases resolved
	lines     map[string]int        // known key -> line of the key
	unknown   []*yaml.Node          // keys that are not fields here
	repeated  []*yaml.Node          // keys written twice in one mapping
	badMerges []*yaml.Node          // values of << that are not mappings
}

// fields reads mapping n of the item at sc and reports its unknown and repeated keys at once.
// Items read their name first and report later (see item and report), so that those
// messages can name the service.
func (d *decoder) fields(sc scope, n *yaml.Node, known []string) *mappingFields {
	f := &mappingFields{scope: sc, values: map[string]*yaml.Node{}, lines: map[string]int{}}
	f.collect(n, known, map[*yaml.Node]bool{})
	d.report(sc, n, f, known)
	return f
}

// collect adds the keys of n, then those of the mappings it merges. A key already present
// wins, which gives YAML's merge rule: keys written in place override merged ones, and an
// earlier merge source overrides a later one. visited stops alias cycles and keeps a
// mapping that is merged many times from being walked many times.
func (f *mappingFields) collect(n *yaml.Node, known []string, visited map[*yaml.Node]bool) {
	if visited[n] {
		return
	}
	visited[n] = true
	here := map[string]bool{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Kind == yaml.ScalarNode && key.ShortTag() == "!!merge" {
			merges = append(merges, value)
			continue
		}
		if key.Kind != yaml.ScalarNode || !slices.Contains(known, key.Value) {
			f.unknown = append(f.unknown, key)
			continue
		}
		if here[key.Value] {
			f.repeated = append(f.repeated, key)
			continue
		}
		here[key.Value] = true
		if _, set := f.values[key.Value]; !set {
			f.values[key.Value] = resolve(value)
			f.lines[key.Value] = key.Line
		}
	}
	for _, m := range merges {
		m = resolve(m)
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, src := range sources {
			if src = resolve(src); src.Kind == yaml.MappingNode {
				f.collect(src, known, visited)
			} else {
				f.badMerges = append(f.badMerges, src)
			}
		}
	}
}

// report records the lines of f's fields and reports its unknown and repeated keys.
func (d *decoder) report(sc scope, n *yaml.Node, f *mappingFields, known []string) {
	f.scope = sc
	if sc.path != "" {
		d.lines[sc.path] = n.Line
	}
	for key, line := range f.lines {
		d.lines[sc.field(key)] = line
	}
	for _, key := range f.unknown {
		knownList := "the known fields are " + strings.Join(known, ", ")
		if key.Kind != yaml.ScalarNode {
			d.problems = append(d.problems, newProblem(sc, "", key.Line,
				"a key is "+kindName(key)+", not a field name", knownList))
			continue
		}
		fix := knownList
		if s := suggest(key.Value, known); s != "" {
			fix = fmt.Sprintf("did you mean %q? %s", s, knownList)
		}
		d.problems = append(d.problems, newProblem(sc, key.Value, key.Line,
			"unknown field "+quote(key.Value), fix))
	}
	for _, key := range f.repeated {
		d.problems = append(d.problems, newProblem(sc, key.Value, key.Line,
			quote(key.Value)+" is set more than once", "keep only one of them"))
	}
	for _, m := range f.badMerges {
		d.problems = append(d.problems, newProblem(sc, "<<", m.Line,
			"the merge key << is given "+kindName(m),
			"merge a mapping, e.g. <<: *service_defaults, or a list of them"))
	}
}

// section returns the fields of the mapping under key, or nil when it is absent or empty.
func (d *decoder) section(parent *mappingFields, key, example string, known []string) *mappingFields {
	n, ok := parent.values[key]
	if !ok || isNull(n) {
		return nil
	}
	sc := scope{path: parent.scope.field(key)}
	if n.Kind != yaml.MappingNode {
		d.fail(parent.scope, key, n, fmt.Sprintf("%s is %s, not a mapping", key, kindName(n)), example)
		return nil
	}
	return d.fields(sc, n, known)
}

// list returns the items of the sequence under key; absent or empty (services: with every
// entry commented out) means none.
func (d *decoder) list(parent *mappingFields, key, example string) []*yaml.Node {
	n, ok := parent.values[key]
	if !ok || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(parent.scope, key, n, fmt.Sprintf("%s is %s, not a list", key, kindName(n)), example)
		return nil
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, item := range n.Content {
		items[i] = resolve(item)
	}
	return items
}

// item returns the fields of one list entry without reporting them yet: the caller reads
// the name first and then calls report with a scope that names the entry. An entry that is
// not a mapping is reported and made quiet, so validate does not add "name is missing".
func (d *decoder) item(n *yaml.Node, path string, known []string, example string) *mappingFields {
	sc := scope{path: path} // the message starts with the path already
	if n.Kind != yaml.MappingNode {
		what := fmt.Sprintf("%s is %s, not a mapping", path, kindName(n))
		if isNull(n) {
			what = path + ` is an empty entry (a lone "-")`
		}
		d.problems = append(d.problems, newProblem(sc, "", n.Line, what, example))
		d.quiet[path] = true
		return nil
	}
	f := &mappingFields{scope: sc, values: map[string]*yaml.Node{}, lines: map[string]int{}}
	f.collect(n, known, map[*yaml.Node]bool{})
	return f
}

// fail reports a value that cannot be read and makes its field quiet, so validate does not
// also complain about the default left in its place.
func (d *decoder) fail(sc scope, key string, n *yaml.Node, what, fix string) {
	d.problems = append(d.problems, newProblem(sc, key, n.Line, what, fix))
	d.quiet[sc.field(key)] = true
}

// scalar returns the value node of key when it is present, reporting lists and mappings.
func (d *decoder) scalar(f *mappingFields, sc scope, key, example string) (*yaml.Node, bool) {
	n, ok := f.values[key]
	if !ok {
		return nil, false
	}
	if n.Kind != yaml.ScalarNode {
		d.fail(sc, key, n, fmt.Sprintf("%s is %s, not a single value", key, kindName(n)), "write it as "+example)
		return nil, false
	}
	return n, true
}

// text reads a string field. Any scalar is taken as written (name: 2024 is the name "2024");
// an empty value is left for validate to report as missing, or as "no group".
func (d *decoder) text(f *mappingFields, sc scope, key string, dst *string) {
	n, ok := d.scalar(f, sc, key, key+": some text")
	if !ok {
		return
	}
	if isNull(n) {
		*dst = ""
		return
	}
	*dst = n.Value
}

// value returns the value node of a typed (non-text) key when it is present and not empty.
func (d *decoder) value(f *mappingFields, sc scope, key, example string) (*yaml.Node, bool) {
	n, ok := d.scalar(f, sc, key, example)
	if ok && isNull(n) {
		d.fail(sc, key, n, key+" has no value", "write e.g. "+example+", or delete the line to use the default")
		return nil, false
	}
	return n, ok
}

var plainNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func (d *decoder) duration(f *mappingFields, sc scope, key string, dst *time.Duration) {
	n, ok := d.value(f, sc, key, key+": 30s")
	if !ok {
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		fix := "write a duration with a unit, such as 30s, 1m30s or 500ms"
		if plainNumber.MatchString(n.Value) {
			fix = fmt.Sprintf("add a unit, e.g. write %ss for %s seconds", n.Value, n.Value)
		}
		d.fail(sc, key, n, fmt.Sprintf("%s %s is not a duration", key, quote(n.Value)), fix)
		return
	}
	*dst = v
}

func (d *decoder) integer(f *mappingFields, sc scope, key string, dst *int) {
	n, ok := d.value(f, sc, key, key+": 3")
	if !ok {
		return
	}
	var v int
	// The tag check keeps 8.5 from being truncated to 8 by Decode.
	if n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		d.fail(sc, key, n, fmt.Sprintf("%s %s is not a whole number", key, quote(n.Value)),
			fmt.Sprintf("write a number without quotes or unit, e.g. %s: 3", key))
		return
	}
	*dst = v
}

func (d *decoder) boolean(f *mappingFields, sc scope, key string, dst *bool) {
	n, ok := d.value(f, sc, key, key+": true")
	if !ok {
		return
	}
	var v bool
	if n.Decode(&v) != nil {
		d.fail(sc, key, n, fmt.Sprintf("%s %s is not true or false", key, quote(n.Value)),
			fmt.Sprintf("write %s: true or %s: false", key, key))
		return
	}
	*dst = v
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "an empty value"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return "a single value"
	}
	return "not a value"
}
