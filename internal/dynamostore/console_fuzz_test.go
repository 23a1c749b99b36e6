package dynamostore

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/scheduler"
)

// attr makes an attribute value of the kind k (0 String, 1 Number, 2 Boolean,
// 3 Null) from text, as an operator could type it in the console.
func attr(k byte, text string) types.AttributeValue {
	switch k % 4 {
	case 0:
		return &types.AttributeValueMemberS{Value: text}
	case 1:
		return &types.AttributeValueMemberN{Value: text}
	case 2:
		return &types.AttributeValueMemberBOOL{Value: text != ""}
	default:
		return &types.AttributeValueMemberNULL{Value: true}
	}
}

// FuzzDecodeModel edits a model item in every way a console allows: any
// attribute of any kind with any text. The decoder never panics; it either
// accepts a configuration that keeps the limit controller's promises
// (0 ≤ min ≤ max, pin ≤ max, target ≥ 0) or skips the item with a warning
// that names the attribute or the rule.
func FuzzDecodeModel(f *testing.F) {
	f.Add("gpt-5.5", byte(1), "1", byte(1), "100", byte(1), "40", byte(2), "x", byte(0), "", "")
	f.Add("gpt-5.5", byte(0), "urgent", byte(1), "-3", byte(1), "1e400", byte(0), "true", byte(1), "max_limt", "7")
	f.Add("", byte(1), "10", byte(1), "5", byte(3), "", byte(2), "", byte(1), "", "")
	f.Fuzz(func(t *testing.T, model string, kMin byte, min string, kMax byte, max string, kTarget byte, target string,
		kEnabled byte, enabled string, kPin byte, extraName, extra string) {
		it := map[string]types.AttributeValue{
			attrModel:       &types.AttributeValueMemberS{Value: model},
			attrMinLimit:    attr(kMin, min),
			attrMaxLimit:    attr(kMax, max),
			attrTargetDepth: attr(kTarget, target),
			attrEnabled:     attr(kEnabled, enabled),
			attrLimitPin:    attr(kPin, min),
		}
		if extraName != "" {
			it[extraName] = attr(kPin, extra)
		}
		cfg, warning := decodeModel(it, scheduler.ModelConfig{Enabled: true, MinLimit: 1, MaxLimit: 10000, TargetDepth: 20})
		if warning != "" {
			known := false
			for _, a := range append(modelAttrs, "model", "unknown attribute") {
				known = known || strings.Contains(warning, a)
			}
			if !known {
				t.Fatalf("warning %q names no attribute", warning)
			}
			return
		}
		if cfg.MinLimit < 0 || cfg.MinLimit > cfg.MaxLimit || cfg.LimitPin > cfg.MaxLimit || cfg.TargetDepth < 0 || cfg.Name != model {
			t.Fatalf("accepted a broken configuration %+v from %v", cfg, it)
		}
	})
}
