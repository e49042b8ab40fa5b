package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// evaluate calls the JavaScript function fn with args in the page and
// decodes its (awaited) result into out, when out is not nil. It is one plain
// Runtime.evaluate: rod's Eval injects its helper script into every new
// document first, which cost more than the rest of a small render.
func evaluate(page *rod.Page, fn string, out any, args ...any) error {
	enc := make([]string, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		enc[i] = string(b)
	}
	res, err := proto.RuntimeEvaluate{
		Expression:    "(" + fn + ")(" + strings.Join(enc, ",") + ")",
		AwaitPromise:  true,
		ReturnByValue: true,
	}.Call(page)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("script failed: %s", res.ExceptionDetails.Text)
	}
	if out == nil {
		return nil
	}
	return res.Result.Value.Unmarshal(out)
}
