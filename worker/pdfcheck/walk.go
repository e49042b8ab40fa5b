package pdfcheck

import (
	"bytes"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// fileSpec is an embedded file's specification found by the walk.
type fileSpec struct {
	nr     int // object number, 0 when direct
	d      types.Dict
	object string
	inAF   bool // direct, inside an AF array
}

// sigDict is a signature dictionary found by the walk.
type sigDict struct {
	d      types.Dict
	object string
}

// objectWalk is what the walk over every object reachable from the trailer
// collects for the rules that need context.
type objectWalk struct {
	files []fileSpec
	sigs  []sigDict
}

// walkObjects visits every object reachable from the trailer's Root and
// Info once (as pdfcpu writes them), applying the rules that hold for
// every object of its kind wherever it is: string, name and number limits
// (6.1.13), stream keys and filters (6.1.7), actions (6.5.1), images and
// form XObjects (6.2.8, 6.2.9), and collecting file specifications, AF
// arrays and signature dictionaries.
func (c *checker) walkObjects() *objectWalk {
	w := &objectWalk{}
	seen := map[int]bool{}
	type item struct {
		o     types.Object
		nr    int // indirect object holding it
		depth int
		key   string // the key it is the value of
	}
	var stack []item
	push := func(o types.Object, nr, depth int, key string) {
		if ref, ok := o.(types.IndirectRef); ok {
			n := ref.ObjectNumber.Value()
			if seen[n] || len(seen) >= maxTreeNodes {
				return
			}
			seen[n] = true
			e := c.x.Table[n]
			if e == nil || e.Free || e.Object == nil {
				return
			}
			stack = append(stack, item{e.Object, n, 0, key})
			return
		}
		if depth > maxDepth {
			c.limit("depth", "object "+strconv.Itoa(nr), "objects nested deeper than %d levels are not checked", maxDepth)
			return
		}
		stack = append(stack, item{o, nr, depth, key})
	}
	for _, ref := range []*types.IndirectRef{c.x.Root, c.x.Info} {
		if ref != nil {
			push(*ref, 0, 0, "")
		}
	}
	if c.x.Root == nil && c.catalog != nil {
		push(c.catalog, 0, 0, "")
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		obj := "object " + strconv.Itoa(it.nr)
		switch v := it.o.(type) {
		case types.StringLiteral:
			if len(v) > 32767 {
				if b, err := types.Unescape(string(v)); err == nil && len(b) > 32767 && c.pdfa() {
					c.report("6.1.13-3", obj, "a string of %d bytes (at most 32767)", len(b))
				}
			}
		case types.HexLiteral:
			if len(v)/2 > 32767 && c.pdfa() {
				c.report("6.1.13-3", obj, "a string of %d bytes (at most 32767)", len(v)/2)
			}
		case types.Name:
			if c.pdfa() && len(unescapeName(string(v))) > 127 {
				c.report("6.1.13-4", obj, "a name of %d bytes (at most 127)", len(unescapeName(string(v))))
			}
		case types.Float:
			if f := math.Abs(float64(v)); c.pdfa() && (f > 3.403e38 || f != 0 && f < 1.175e-38) {
				rule := "6.1.13-2"
				if f < 1 {
					rule = "6.1.13-5"
				}
				c.report(rule, obj, "a real number %g outside the range PDF/A allows", float64(v))
			}
		case types.Integer:
			if c.pdfa() && (int64(v) > math.MaxInt32 || int64(v) < math.MinInt32) {
				c.report("6.1.13-1", obj, "an integer %d outside the 32-bit range", int64(v))
			}
		case types.Array:
			for _, x := range v {
				if it.key == "AF" {
					if ref, ok := x.(types.IndirectRef); ok {
						c.af[ref.ObjectNumber.Value()] = true
					} else if d, ok := x.(types.Dict); ok && d["EF"] != nil {
						w.files = append(w.files, fileSpec{d: d, object: obj, inAF: true})
						continue
					}
				}
				push(x, it.nr, it.depth+1, "")
			}
		case types.StreamDict:
			c.checkStreamDict(v, obj)
			for _, k := range slices.Sorted(maps.Keys(v.Dict)) {
				push(v.Dict[k], it.nr, it.depth+1, k)
			}
		case types.Dict:
			c.checkDict(w, v, it.nr, it.depth, obj)
			for _, k := range slices.Sorted(maps.Keys(v)) {
				push(v[k], it.nr, it.depth+1, k)
			}
		}
	}
	return w
}

// checkDict applies the per-dictionary rules of the walk.
func (c *checker) checkDict(w *objectWalk, d types.Dict, nr, depth int, obj string) {
	if isAction(d) && c.pdfa() {
		c.checkAction(d, obj)
	}
	if d["EF"] != nil {
		fs := fileSpec{d: d, object: obj}
		if depth == 0 {
			fs.nr = nr
		}
		w.files = append(w.files, fs)
	}
	if d["ByteRange"] != nil && d["Contents"] != nil {
		w.sigs = append(w.sigs, sigDict{d: d, object: obj})
	}
}

// actionTypes are the action types of ISO 32000-1 Table 198 plus the
// deprecated set-state and no-op ones; allowedActions are those 6.5.1-1
// permits.
var (
	actionTypes = map[string]bool{"GoTo": true, "GoToR": true, "GoToE": true, "Launch": true, "Thread": true,
		"URI": true, "Sound": true, "Movie": true, "Hide": true, "Named": true, "SubmitForm": true, "ResetForm": true,
		"ImportData": true, "JavaScript": true, "SetOCGState": true, "Rendition": true, "Trans": true,
		"GoTo3DView": true, "SetState": true, "NOP": true}
	allowedActions = map[string]bool{"GoTo": true, "GoToR": true, "GoToE": true, "Thread": true, "URI": true,
		"Named": true, "SubmitForm": true}
	allowedNamed = map[string]bool{"NextPage": true, "PrevPage": true, "FirstPage": true, "LastPage": true}
)

// isAction: a dictionary of Type Action, or without a Type whose S names
// an action type.
func isAction(d types.Dict) bool {
	s := d.NameEntry("S")
	if s == nil || !actionTypes[*s] {
		return false
	}
	t := d.NameEntry("Type")
	return t == nil || *t == "Action"
}

// checkAction: 6.5.1-1 (allowed action types), 6.5.1-2 (named actions).
func (c *checker) checkAction(d types.Dict, obj string) {
	s := *d.NameEntry("S")
	if !allowedActions[s] {
		c.report("6.5.1-1", obj, "a %s action (PDF/A allows GoTo, GoToR, GoToE, Thread, URI, Named and SubmitForm)", s)
		return
	}
	if s == "Named" {
		n := d.NameEntry("N")
		if n == nil || !allowedNamed[*n] {
			name := "(none)"
			if n != nil {
				name = *n
			}
			c.report("6.5.1-2", obj, "the named action %s (PDF/A allows NextPage, PrevPage, FirstPage and LastPage)", name)
		}
	}
}

// allowedFilters are the standard filters of ISO 32000-1 Table 6 but
// LZWDecode and Crypt (6.1.7.2-1).
var allowedFilters = map[string]bool{"ASCIIHexDecode": true, "ASCII85Decode": true, "FlateDecode": true,
	"RunLengthDecode": true, "CCITTFaxDecode": true, "JBIG2Decode": true, "DCTDecode": true, "JPXDecode": true}

// checkStreamDict: 6.1.7.1-3 (no F, FFilter, FDecodeParms), 6.1.7.2-1
// (filters), 6.2.8 (images), 6.2.9 (form XObjects).
func (c *checker) checkStreamDict(sd types.StreamDict, obj string) {
	if !c.pdfa() {
		return
	}
	d := sd.Dict
	for _, k := range []string{"F", "FFilter", "FDecodeParms"} {
		if d[k] != nil {
			c.report("6.1.7.1-3", obj, "a stream dictionary has the %s key", k)
		}
	}
	for _, f := range c.filterNames(d["Filter"]) {
		if !allowedFilters[f] {
			if f == "Crypt" && c.identityCrypt(d) {
				continue
			}
			c.report("6.1.7.2-1", obj, "the stream filter %s is not allowed", f)
		}
	}
	switch st := d.NameEntry("Subtype"); {
	case st == nil:
	case *st == "Image":
		c.checkImageDict(d, obj)
	case *st == "Form":
		if d["OPI"] != nil || d["PS"] != nil {
			c.report("6.2.9-1", obj, "a form XObject has an OPI or PS key")
		} else if s2 := d.NameEntry("Subtype2"); s2 != nil && *s2 == "PS" {
			c.report("6.2.9-1", obj, "a form XObject has Subtype2 PS")
		}
		if d["Ref"] != nil {
			c.report("6.2.9-2", obj, "a reference XObject")
		}
	case *st == "PS":
		c.report("6.2.9-3", obj, "a PostScript XObject")
	}
}

func (c *checker) identityCrypt(d types.Dict) bool {
	parms, _ := c.x.Dereference(d["DecodeParms"])
	var pd types.Dict
	switch p := parms.(type) {
	case types.Dict:
		pd = p
	case types.Array:
		for _, x := range p {
			if xd, err := c.x.DereferenceDict(x); err == nil && xd != nil && xd["Name"] != nil {
				pd = xd
			}
		}
	}
	if pd == nil {
		return true // the default crypt filter is Identity
	}
	n := pd.NameEntry("Name")
	return n == nil || *n == "Identity"
}

func (c *checker) filterNames(o types.Object) []string {
	o, _ = c.x.Dereference(o)
	switch f := o.(type) {
	case types.Name:
		return []string{string(f)}
	case types.Array:
		var out []string
		for _, x := range f {
			x, _ = c.x.Dereference(x)
			if n, ok := x.(types.Name); ok {
				out = append(out, string(n))
			}
		}
		return out
	}
	return nil
}

// checkImageDict: 6.2.8-1…5 and the device colour space of an image
// (6.2.4.3).
func (c *checker) checkImageDict(d types.Dict, obj string) {
	if d["Alternates"] != nil {
		c.report("6.2.8-1", obj, "an image has Alternates")
	}
	if d["OPI"] != nil {
		c.report("6.2.8-2", obj, "an image has an OPI key")
	}
	if b := c.boolean(d["Interpolate"]); b {
		c.report("6.2.8-3", obj, "an image has Interpolate true")
	}
	mask := c.boolean(d["ImageMask"])
	if bpc, ok := c.integer(d["BitsPerComponent"]); ok {
		if mask && bpc != 1 {
			c.report("6.2.8-5", obj, "an image mask has BitsPerComponent %d", bpc)
		} else if !mask && bpc != 1 && bpc != 2 && bpc != 4 && bpc != 8 && bpc != 16 {
			c.report("6.2.8-4", obj, "an image has BitsPerComponent %d", bpc)
		}
	}
	if !mask {
		cs, _ := c.x.Dereference(d["ColorSpace"])
		if n, ok := cs.(types.Name); ok {
			c.deviceColour(string(n), nil, obj)
		}
	}
}

// deviceColour: 6.2.4.3-2/3/4, a device colour space needs a matching
// PDF/A output intent or a Default colour space in res.
func (c *checker) deviceColour(space string, res types.Dict, obj string) {
	if !c.pdfa() {
		return
	}
	var def string
	switch space {
	case "DeviceRGB", "RGB":
		def = "DefaultRGB"
	case "DeviceCMYK", "CMYK":
		def = "DefaultCMYK"
	case "DeviceGray", "G":
		def = "DefaultGray"
	default:
		return
	}
	if res != nil {
		if csd, err := c.x.DereferenceDict(res["ColorSpace"]); err == nil && csd != nil && csd[def] != nil {
			return
		}
	}
	switch def {
	case "DefaultRGB":
		if c.outCS != "RGB " {
			c.report("6.2.4.3-2", obj, "DeviceRGB is used without an RGB PDF/A output intent")
		}
	case "DefaultCMYK":
		if c.outCS != "CMYK" {
			c.report("6.2.4.3-3", obj, "DeviceCMYK is used without a CMYK PDF/A output intent")
		}
	default:
		if c.outCS == "" {
			c.report("6.2.4.3-4", obj, "DeviceGray is used without a PDF/A output intent")
		}
	}
}

func (c *checker) boolean(o types.Object) bool {
	o, _ = c.x.Dereference(o)
	b, ok := o.(types.Boolean)
	return ok && bool(b)
}

func (c *checker) integer(o types.Object) (int64, bool) {
	o, _ = c.x.Dereference(o)
	switch v := o.(type) {
	case types.Integer:
		return int64(v), true
	case types.Float:
		return int64(v), float64(int64(v)) == float64(v)
	}
	return 0, false
}

func (c *checker) number(o types.Object) (float64, bool) {
	o, _ = c.x.Dereference(o)
	switch v := o.(type) {
	case types.Integer:
		return float64(v), true
	case types.Float:
		return float64(v), true
	}
	return 0, false
}

func (c *checker) name(o types.Object) string {
	o, _ = c.x.Dereference(o)
	if n, ok := o.(types.Name); ok {
		return unescapeName(string(n))
	}
	return ""
}

// text is a text string's value; ok is false when o is not a string.
func (c *checker) text(o types.Object) (string, bool) {
	o, _ = c.x.Dereference(o)
	switch v := o.(type) {
	case types.StringLiteral:
		s, err := types.StringLiteralToString(v)
		return s, err == nil
	case types.HexLiteral:
		s, err := types.HexLiteralToString(v)
		return s, err == nil
	}
	return "", false
}

// unescapeName expands a name's #xx escapes (pdfcpu keeps them).
func unescapeName(s string) string {
	if !strings.Contains(s, "#") {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mimeType is 6.8-1's pattern for an embedded file's Subtype.
var mimeType = regexp.MustCompile(`^[-\w+.]+/[-\w+.]+$`)
