package tmpl

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/mailgun/raymond/v2"

	"github.com/docrender/docrender/pkg/qr"
)

// renderState is one Render's state, reached from every helper through
// raymond's private data frame.
type renderState struct {
	loc     *locale
	line    int     // the last value site, for raymond's own errors
	iters   int     // #each iterations so far
	counted int     // output bytes so far (see account)
	scopes  []scope // the data paths of the contexts #each and #with entered
}

type scope struct {
	path  string
	alias string
}

func stateOf(o *raymond.Options) *renderState {
	st, _ := o.DataFrame().Get(stateKey).(*renderState)
	if st == nil {
		panic(&RenderError{Problem: "internal error: no render state"})
	}
	return st
}

// resolve names the data a path reads, from the current context.
func (st *renderState) resolve(p pathRef) string {
	parts := p.parts
	if p.data {
		if len(parts) > 0 && parts[0] == "root" {
			return joinPath("", parts[1:])
		}
		return "@" + strings.Join(parts, ".")
	}
	base := ""
	if len(parts) > 0 && p.depth == 0 {
		for i := len(st.scopes) - 1; i >= 0; i-- {
			if st.scopes[i].alias != "" && st.scopes[i].alias == parts[0] {
				return joinPath(st.scopes[i].path, parts[1:])
			}
		}
	}
	if i := len(st.scopes) - 1 - p.depth; i >= 0 {
		base = st.scopes[i].path
	}
	return joinPath(base, parts)
}

func joinPath(base string, parts []string) string {
	var b strings.Builder
	b.WriteString(base)
	for _, s := range parts {
		if _, err := strconv.Atoi(s); err == nil {
			b.WriteString("[" + s + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func (st *renderState) fail(s *site, path, format string, args ...any) {
	panic(&RenderError{Line: s.line, Path: path, Problem: fmt.Sprintf(format, args...)})
}

// add counts n bytes of output.
func (st *renderState) add(s *site, n int) {
	st.counted += n
	if st.counted > MaxOutputBytes {
		st.fail(s, "", "the filled template would be larger than %d bytes", MaxOutputBytes)
	}
}

// account counts the output of one block run whose inner values added
// st.counted-before already: the rest is the block's own text.
func (st *renderState) account(s *site, out string, before int) {
	if extra := len(out) - (st.counted - before); extra > 0 {
		st.add(s, extra)
	}
}

// fn is the raymond helper of a site, with the site's exact arity.
func (s *site) fn() any {
	switch s.kind {
	case siteValue:
		return func(v any, o *raymond.Options) any {
			st := stateOf(o)
			st.line = s.line
			out := s.value(st, v)
			st.add(s, len(out))
			return raymond.SafeString(out)
		}
	case siteBlock:
		return func(v any, o *raymond.Options) any {
			return s.block(stateOf(o), v, o)
		}
	}
	switch s.nargs {
	case 1:
		return func(a any, o *raymond.Options) any { return s.call(stateOf(o), a, nil) }
	default:
		return func(a, b any, o *raymond.Options) any { return s.call(stateOf(o), a, b) }
	}
}

// value prints v for where it lands.
func (s *site) value(st *renderState, v any) string {
	str, ok := stringOf(v)
	if !ok {
		st.fail(s, st.resolve(s.path), "a %s cannot be printed", typeName(v))
	}
	switch s.ctx {
	case ctxURL:
		str = filterURL(str)
	case ctxSrcset:
		str = filterSrcset(str)
	}
	return escapeHTML(str)
}

// stringOf is Handlebars' printing of a value: missing is empty, a list is
// its items joined by commas, an object is [object Object].
func stringOf(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case raymond.SafeString:
		return string(x), true
	case json.Number:
		return string(x), true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return formatFloat(x), true
	case float32:
		return formatFloat(float64(x)), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, ok := stringOf(e)
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), true
	case map[string]any:
		return "[object Object]", true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), true
	case reflect.String:
		return rv.String(), true
	case reflect.Map, reflect.Struct:
		return "[object Object]", true
	case reflect.Slice, reflect.Array:
		parts := make([]string, rv.Len())
		for i := range parts {
			s, ok := stringOf(rv.Index(i).Interface())
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), true
	}
	return "", false
}

func formatFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "missing value"
	case string:
		return "string"
	case json.Number, float64, float32, int, int64:
		return "number"
	case bool:
		return "boolean (" + strconv.FormatBool(x) + ")"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint,
		reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// truthy is Handlebars' truth: false, missing, "", 0 and [] are false;
// every object (even {}) is true.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return err != nil || f != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() != 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() != 0
	case reflect.String:
		return rv.Len() > 0
	case reflect.Slice, reflect.Array:
		return rv.Len() > 0
	case reflect.Pointer, reflect.Interface:
		return !rv.IsNil()
	}
	return true
}

func (s *site) block(st *renderState, v any, o *raymond.Options) any {
	switch s.helper {
	case "if":
		if truthy(v) {
			return o.Fn()
		}
		return o.Inverse()
	case "unless":
		if !truthy(v) {
			return o.Fn()
		}
		return o.Inverse()
	case "with":
		if !truthy(v) {
			return o.Inverse()
		}
		st.scopes = append(st.scopes, scope{path: st.resolve(s.path), alias: s.alias})
		out := o.FnWith(v)
		st.scopes = st.scopes[:len(st.scopes)-1]
		return out
	}
	return s.each(st, v, o)
}

// nilCtx is the context of a null item: its fields are missing, and a
// lookup does not fall through to the parent.
var nilCtx = map[string]any(nil)

func (s *site) each(st *renderState, v any, o *raymond.Options) any {
	if v == nil {
		return o.Inverse()
	}
	path := st.resolve(s.path)
	var b strings.Builder
	run := func(i, n int, key, item any, ipath string) {
		st.iters++
		if st.iters > MaxIterations {
			st.fail(s, ipath, "more than %d iterations of #each in one render", MaxIterations)
		}
		frame := o.NewDataFrame()
		frame.Set("index", i)
		frame.Set("key", key)
		frame.Set("first", i == 0)
		frame.Set("last", i == n-1)
		if item == nil {
			item = nilCtx
		}
		st.scopes = append(st.scopes, scope{path: ipath, alias: s.alias})
		before := st.counted
		out := o.FnCtxData(item, frame)
		st.scopes = st.scopes[:len(st.scopes)-1]
		st.account(s, out, before)
		b.WriteString(out)
	}
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return o.Inverse()
		}
		for i, item := range x {
			run(i, len(x), i, item, path+"["+strconv.Itoa(i)+"]")
		}
		return b.String()
	case map[string]any:
		if len(x) == 0 {
			return o.Inverse()
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			run(i, len(keys), k, x[k], joinPath(path, []string{k}))
		}
		return b.String()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		n := rv.Len()
		if n == 0 {
			return o.Inverse()
		}
		for i := 0; i < n; i++ {
			run(i, n, i, rv.Index(i).Interface(), path+"["+strconv.Itoa(i)+"]")
		}
		return b.String()
	case reflect.Map:
		if rv.Len() == 0 {
			return o.Inverse()
		}
		keys := rv.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i], _ = stringOf(k.Interface())
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
		for i, j := range idx {
			run(i, len(idx), names[j], rv.MapIndex(keys[j]).Interface(), joinPath(path, []string{names[j]}))
		}
		return b.String()
	}
	st.fail(s, path, "#each needs a list or an object, not a %s", typeName(v))
	return nil
}

// call runs a helper. b is nil for one-argument calls.
func (s *site) call(st *renderState, a, b any) any {
	path := st.resolve(s.path)
	switch s.helper {
	case "lookup":
		return lookup(a, b)
	case "qr":
		str, ok := stringOf(a)
		if !ok || isContainer(a) {
			st.fail(s, path, "qr needs a text or a number, not a %s", typeName(a))
		}
		if str == "" {
			return ""
		}
		u, err := qr.DataURL(qr.NewOptions(str))
		if err != nil {
			st.fail(s, path, "qr: %s", strings.TrimPrefix(err.Error(), "data "))
		}
		return u
	case "formatNumber":
		if isEmpty(a) {
			return ""
		}
		n, err := numberOf(a)
		if err != nil {
			st.fail(s, path, "formatNumber: %s", err)
		}
		d := n.scale
		if s.nargs == 2 {
			if d, err = decimalsOf(b); err != nil {
				st.fail(s, path, "formatNumber: %s", err)
			}
		}
		return st.loc.formatNumber(n, d)
	case "formatCurrency":
		if isEmpty(a) {
			return ""
		}
		n, err := numberOf(a)
		if err != nil {
			st.fail(s, path, "formatCurrency: %s", err)
		}
		code, _ := stringOf(b)
		cur, err := currencyOf(code)
		if err != nil {
			st.fail(s, path, "formatCurrency: %s", err)
		}
		return st.loc.formatCurrency(n, cur)
	case "formatDate":
		if isEmpty(a) {
			return ""
		}
		str, ok := a.(string)
		if !ok {
			st.fail(s, path, "formatDate needs a date like \"2024-03-01\" or \"2024-03-01T10:00:00Z\", not a %s", typeName(a))
		}
		t, err := parseDate(str)
		if err != nil {
			st.fail(s, path, "formatDate: %s", err)
		}
		layout, ok := b.(string)
		if !ok || layout == "" {
			st.fail(s, path, "formatDate: the layout must be a string like \"2 January 2006\"")
		}
		return st.loc.formatDate(t, layout)
	}
	st.fail(s, path, "unknown helper %s", s.helper)
	return nil
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && s == ""
}

func isContainer(v any) bool {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		return true
	}
	return false
}

func lookup(obj, key any) any {
	k, _ := stringOf(key)
	switch x := obj.(type) {
	case nil:
		return nil
	case map[string]any:
		return x[k]
	case []any:
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(x) {
			return x[i]
		}
		return nil
	}
	rv := reflect.ValueOf(obj)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			v := rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key()))
			if v.IsValid() {
				return v.Interface()
			}
		}
	case reflect.Slice, reflect.Array:
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < rv.Len() {
			return rv.Index(i).Interface()
		}
	}
	return nil
}

// ---- escaping and filters ----

var htmlEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;",
	"`", "&#96;", "=", "&#61;", "\x00", "\uFFFD",
)

// escapeHTML escapes a value for HTML text and quoted attribute values.
// raymond's own escape leaves ` and = alone, so values never reach it: every
// value site returns a raymond.SafeString escaped here.
func escapeHTML(s string) string {
	if !strings.ContainsAny(s, "&<>\"'`=\x00") {
		return s
	}
	return htmlEscaper.Replace(s)
}

// unsafeURL replaces a URL that did not pass the filter.
const unsafeURL = "about:invalid"

// filterURL lets through http, https, mailto and tel URLs, relative URLs
// and data:image/ URLs of raster types; anything else is unsafeURL. Like
// a browser, it ignores leading and trailing spaces and control
// characters, and tabs and newlines anywhere, before finding the scheme.
func filterURL(s string) string {
	if isSafeURL(s) {
		return s
	}
	return unsafeURL
}

func isSafeURL(s string) bool {
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	t = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, t)
	i := strings.IndexAny(t, ":/?#")
	if i < 0 || t[i] != ':' {
		return true // no scheme: relative
	}
	switch strings.ToLower(t[:i]) {
	case "http", "https", "mailto", "tel":
		return true
	case "data":
		rest := strings.ToLower(t[i+1:])
		for _, typ := range []string{"image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/avif", "image/bmp"} {
			if strings.HasPrefix(rest, typ) && len(rest) > len(typ) && (rest[len(typ)] == ';' || rest[len(typ)] == ',') {
				return true
			}
		}
	}
	return false
}

// filterSrcset filters every candidate URL of a srcset value and keeps
// only descriptors like 2x or 640w, so that a value can neither bring an
// unsafe URL nor start a candidate the filter did not see.
func filterSrcset(s string) string {
	cands := strings.Split(s, ",")
	for i, c := range cands {
		f := strings.Fields(c)
		if len(f) == 0 {
			continue
		}
		u := filterURL(f[0])
		if len(f) > 1 {
			if len(f) == 2 && isDescriptor(f[1]) {
				u += " " + f[1]
			}
		}
		lead := ""
		if strings.HasPrefix(c, " ") && i > 0 {
			lead = " "
		}
		cands[i] = lead + u
	}
	return strings.Join(cands, ",")
}

func isDescriptor(d string) bool {
	if len(d) < 2 {
		return false
	}
	switch d[len(d)-1] {
	case 'w', 'x', 'h':
	default:
		return false
	}
	_, err := strconv.ParseFloat(d[:len(d)-1], 64)
	return err == nil && !strings.ContainsAny(d, "eE+-")
}
