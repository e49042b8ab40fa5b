package tmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goodsign/monday"
	"golang.org/x/text/currency"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// locale is what the helpers need of a locale, worked out once per tag.
type locale struct {
	tag       language.Tag
	decimal   string // decimal separator
	group     string // grouping separator, "" for none
	primary   int    // digits in the group next to the decimal separator
	secondary int    // digits in the other groups (2 in en-IN)
	minus     string // before a negative number
	zero      rune   // the locale's digit zero
	curPos    curPattern
	printer   *message.Printer
	monday    monday.Locale
}

type curPattern uint8

const (
	curBefore      curPattern = iota // ¤1,234.50 (en, ja, zh, ko, he, ...)
	curBeforeSpace                   // ¤ 1.234,50 (nl, de-AT, de-CH, pt-BR, ...)
	curAfterSpace                    // 1.234,50 ¤ (de, fr, es, it, ...)
)

// Where CLDR puts the currency symbol in the standard currency format, by
// language and by language-region where the region differs.
var curPatterns = map[string]curPattern{
	"de": curAfterSpace, "fr": curAfterSpace, "es": curAfterSpace, "it": curAfterSpace,
	"pt": curAfterSpace, "ru": curAfterSpace, "pl": curAfterSpace, "cs": curAfterSpace,
	"sk": curAfterSpace, "sv": curAfterSpace, "fi": curAfterSpace, "da": curAfterSpace,
	"nb": curAfterSpace, "no": curAfterSpace, "nn": curAfterSpace, "hu": curAfterSpace,
	"ro": curAfterSpace, "bg": curAfterSpace, "uk": curAfterSpace, "el": curAfterSpace,
	"hr": curAfterSpace, "sl": curAfterSpace, "lt": curAfterSpace, "lv": curAfterSpace,
	"et": curAfterSpace, "ca": curAfterSpace, "is": curAfterSpace, "vi": curAfterSpace,
	"sr": curAfterSpace, "be": curAfterSpace, "kk": curAfterSpace, "tr": curBefore,
	"nl": curBeforeSpace, "de-AT": curBeforeSpace, "de-CH": curBeforeSpace, "de-LI": curBeforeSpace,
	"it-CH": curBeforeSpace, "pt-BR": curBeforeSpace, "es-MX": curBefore, "es-US": curBefore,
	"es-419": curBefore, "da-DK": curAfterSpace,
}

const nbsp = "\u00a0"

var (
	locMu    sync.Mutex
	locCache = map[string]*locale{}
)

const maxLocales = 512 // cached locales; more are worked out per render

// localeFor parses a BCP 47 tag ("" means en-US).
func localeFor(s string) (*locale, error) {
	if s == "" {
		s = "en-US"
	}
	tag, err := language.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a BCP 47 language tag like \"de-DE\"", s)
	}
	key := tag.String()
	locMu.Lock()
	l := locCache[key]
	locMu.Unlock()
	if l != nil {
		return l, nil
	}
	l = newLocale(tag)
	locMu.Lock()
	if len(locCache) < maxLocales {
		locCache[key] = l
	}
	locMu.Unlock()
	return l, nil
}

func newLocale(tag language.Tag) *locale {
	p := message.NewPrinter(tag)
	l := &locale{tag: tag, printer: p, decimal: ".", primary: 3, secondary: 3, minus: "-", zero: '0'}
	// Read the separators off a sample: -1,234,567.891 in the locale.
	sample := p.Sprint(number.Decimal(-1234567.891, number.MinFractionDigits(3), number.MaxFractionDigits(3)))
	var runs, seps []string
	var cur strings.Builder
	inDigits := false
	first := true
	for _, r := range sample {
		d := unicode.IsDigit(r)
		if d && first {
			l.minus = sample[:strings.IndexRune(sample, r)]
			l.zero = r - 1
			first = false
		}
		if first {
			continue
		}
		if d != inDigits && cur.Len() > 0 {
			if inDigits {
				runs = append(runs, cur.String())
			} else {
				seps = append(seps, cur.String())
			}
			cur.Reset()
		}
		inDigits = d
		cur.WriteRune(r)
	}
	if cur.Len() > 0 && inDigits {
		runs = append(runs, cur.String())
	}
	if len(seps) >= 1 && len(runs) == len(seps)+1 {
		l.decimal = seps[len(seps)-1]
		if len(seps) >= 2 {
			l.group = seps[0]
			l.primary = utf8.RuneCountInString(runs[len(runs)-2])
			l.secondary = l.primary
			if len(runs) >= 4 {
				l.secondary = utf8.RuneCountInString(runs[len(runs)-3])
			}
		} else {
			l.group = ""
		}
	}
	base, _ := tag.Base()
	region, _ := tag.Region()
	l.curPos = curBefore
	if p, ok := curPatterns[base.String()+"-"+region.String()]; ok {
		l.curPos = p
	} else if p, ok := curPatterns[base.String()]; ok {
		l.curPos = p
	}
	l.monday = mondayLocale(base.String(), region.String())
	return l
}

var mondayLocales = func() map[string]monday.Locale {
	m := map[string]monday.Locale{}
	for _, l := range monday.ListLocales() {
		m[string(l)] = l
	}
	return m
}()

// mondayLocale picks monday's locale for a language and region: the exact
// one, else the language's main one (de_DE for de-AT), else en_US.
func mondayLocale(base, region string) monday.Locale {
	if l, ok := mondayLocales[base+"_"+region]; ok {
		return l
	}
	if l, ok := mondayLocales[base+"_"+strings.ToUpper(base)]; ok {
		return l
	}
	var cands []string
	for k := range mondayLocales {
		if strings.HasPrefix(k, base+"_") {
			cands = append(cands, k)
		}
	}
	if len(cands) > 0 {
		sort.Strings(cands)
		return mondayLocales[cands[0]]
	}
	return monday.LocaleEnUS
}

// decimal is an exact number from data.
type decimal struct {
	r     *big.Rat
	scale int // digits after the point as written (capped)
}

var numberRE = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

const maxScale = 20

// Bounds of a number's mantissa: big.Rat's conversion of a long digit
// string is superlinear, and no amount needs more than a few dozen digits.
const (
	maxDigits        = 64  // significant digits
	maxMantissaBytes = 512 // as written, leading and trailing zeros included
)

// significantDigits counts the digits of a mantissa (sign, digits, point)
// without its leading zeros and the trailing zeros of its fraction.
func significantDigits(mant string) int {
	mant = strings.TrimLeft(mant, "+-")
	if strings.IndexByte(mant, '.') >= 0 {
		mant = strings.TrimRight(mant, "0")
	}
	n, lead := 0, true
	for i := 0; i < len(mant); i++ {
		c := mant[i]
		if c < '0' || c > '9' || lead && c == '0' {
			continue
		}
		lead = false
		n++
	}
	return n
}

// numberOf reads a number: a JSON number, a Go number, or a string that
// holds one. The exponent is bounded (a number like 1e999999999 would
// take seconds to expand).
func numberOf(v any) (decimal, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = strings.TrimSpace(x)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	default:
		return decimal{}, fmt.Errorf("needs a number, not a %s", typeName(v))
	}
	if !numberRE.MatchString(s) {
		return decimal{}, fmt.Errorf("%q is not a number", clip(s))
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > 400 || e < -400 {
			return decimal{}, fmt.Errorf("%q is out of range", clip(s))
		}
		mant, exp = s[:i], e
	}
	if len(mant) > maxMantissaBytes || significantDigits(mant) > maxDigits {
		return decimal{}, fmt.Errorf("%q has more than %d significant digits", clip(s), maxDigits)
	}
	scale := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		scale = len(mant) - i - 1
	}
	scale -= exp
	scale = max(0, min(scale, maxScale))
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return decimal{}, fmt.Errorf("%q is not a number", clip(s))
	}
	return decimal{r: r, scale: scale}, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// decimalsOf reads formatNumber's decimals: an integer 0..20.
func decimalsOf(v any) (int, error) {
	var n int
	switch x := v.(type) {
	case int:
		n = x
	case float64:
		if x != float64(int(x)) {
			return 0, fmt.Errorf("decimals must be a whole number, not %v", x)
		}
		n = int(x)
	case json.Number, string:
		s, _ := stringOf(x)
		i, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("decimals must be a whole number, not %q", clip(s))
		}
		n = i
	default:
		return 0, fmt.Errorf("decimals must be a whole number, not a %s", typeName(v))
	}
	if n < 0 || n > maxScale {
		return 0, fmt.Errorf("decimals must be between 0 and %d, not %d", maxScale, n)
	}
	return n, nil
}

// round gives the digits of |r| rounded half away from zero to d decimals.
func round(r *big.Rat, d int) (neg bool, intPart, frac string) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil)))
	num := new(big.Int).Abs(scaled.Num())
	den := scaled.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Lsh(m, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	s := q.String()
	if len(s) <= d {
		s = strings.Repeat("0", d-len(s)+1) + s
	}
	return r.Sign() < 0 && q.Sign() != 0, s[:len(s)-d], s[len(s)-d:]
}

// digits formats rounded digits with the locale's separators and digits.
func (l *locale) digits(intPart, frac string) string {
	var b strings.Builder
	if l.group != "" && len(intPart) > l.primary {
		// Groups from the left: the head (1..secondary digits), then
		// secondary-sized groups, then the primary group.
		head := intPart[:len(intPart)-l.primary]
		first := len(head) % l.secondary
		if first == 0 {
			first = l.secondary
		}
		b.WriteString(head[:first])
		for i := first; i < len(head); i += l.secondary {
			b.WriteString(l.group)
			b.WriteString(head[i : i+l.secondary])
		}
		b.WriteString(l.group)
		b.WriteString(intPart[len(intPart)-l.primary:])
	} else {
		b.WriteString(intPart)
	}
	if frac != "" {
		b.WriteString(l.decimal)
		b.WriteString(frac)
	}
	s := b.String()
	if l.zero == '0' {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return l.zero + (r - '0')
		}
		return r
	}, s)
}

func (l *locale) formatNumber(n decimal, d int) string {
	neg, i, f := round(n.r, d)
	s := l.digits(i, f)
	if neg {
		return l.minus + s
	}
	return s
}

func currencyOf(code string) (currency.Unit, error) {
	if len(code) != 3 {
		return currency.Unit{}, fmt.Errorf("%q is not an ISO 4217 currency code like \"EUR\"", clip(code))
	}
	u, err := currency.ParseISO(code)
	if err != nil {
		return currency.Unit{}, fmt.Errorf("%q is not an ISO 4217 currency code like \"EUR\"", code)
	}
	return u, nil
}

func (l *locale) formatCurrency(n decimal, cur currency.Unit) string {
	scale, _ := currency.Standard.Rounding(cur)
	neg, i, f := round(n.r, scale)
	num := l.digits(i, f)
	sym := l.printer.Sprint(currency.Symbol(cur))
	minus := ""
	if neg {
		minus = l.minus
	}
	switch l.curPos {
	case curBeforeSpace:
		return sym + nbsp + minus + num
	case curAfterSpace:
		return minus + num + nbsp + sym
	}
	return minus + sym + num
}

// parseDate reads RFC 3339 (in its own offset) or YYYY-MM-DD.
func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New(strconv.Quote(clip(s)) + " is not a date like \"2024-03-01\" or \"2024-03-01T10:00:00Z\"")
}

func (l *locale) formatDate(t time.Time, layout string) string {
	return monday.Format(t, layout, l.monday)
}
