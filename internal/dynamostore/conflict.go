package dynamostore

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/sampling"
)

// What Submit checks a batch's later messages against, kept on the batch
// item beside its lock: the terms of its first stored message ("terms", a
// map) and a digest of each stored part ("part_sums", a string set of
// "part:digest"). Both are written by the transaction that registers a
// message's jobs, under the lock, so a check under the lock sees every
// message registered before it. A batch item of an older release has
// neither: its later messages are checked job by job only.
const (
	attrTerms    = "terms"
	attrPartSums = "part_sums"
)

// termsItem is job.Terms as the batch item's "terms" map holds it.
type termsItem struct {
	Tier           int    `dynamodbav:"tier"`
	TaskDefinition string `dynamodbav:"task_definition"`
	TimeoutSeconds int    `dynamodbav:"timeout_seconds"`
	MaxAttempts    int    `dynamodbav:"max_attempts"`
	Parts          int    `dynamodbav:"parts"`
	// A sampled batch's stop rule (absent: not sampled).
	MOE           float64 `dynamodbav:"moe,omitempty"`
	Confidence    float64 `dynamodbav:"confidence,omitempty"`
	MinPerStratum int     `dynamodbav:"min_per_stratum,omitempty"`
	Window        int     `dynamodbav:"window,omitempty"`
}

func toTermsItem(t job.Terms) termsItem {
	return termsItem{
		Tier: t.Tier, TaskDefinition: t.TaskDefinition, TimeoutSeconds: t.TimeoutSeconds, MaxAttempts: t.MaxAttempts, Parts: t.Parts,
		MOE: t.Sampling.MOE, Confidence: t.Sampling.Confidence, MinPerStratum: t.Sampling.MinPerStratum, Window: t.Sampling.Window,
	}
}

func (ti termsItem) terms() job.Terms {
	return job.Terms{
		Tier: ti.Tier, TaskDefinition: ti.TaskDefinition, TimeoutSeconds: ti.TimeoutSeconds, MaxAttempts: ti.MaxAttempts, Parts: ti.Parts,
		Sampling: sampling.Params{MOE: ti.MOE, Confidence: ti.Confidence, MinPerStratum: ti.MinPerStratum, Window: ti.Window},
	}
}

// storedTerms reads the terms and the digest of part from a batch item;
// ok is false when the item has no terms.
func storedTerms(item map[string]types.AttributeValue, part int) (t job.Terms, sum string, ok bool) {
	av, found := item[attrTerms]
	if !found {
		return t, "", false
	}
	var ti termsItem
	if err := attributevalue.Unmarshal(av, &ti); err != nil {
		return t, "", false
	}
	if ss, found := item[attrPartSums].(*types.AttributeValueMemberSS); found {
		prefix := strconv.Itoa(part) + ":"
		for _, v := range ss.Value {
			if s, cut := strings.CutPrefix(v, prefix); cut {
				sum = s
			}
		}
	}
	return ti.terms(), sum, true
}

// partSumValue is the set of one part's digest, for ADD part_sums.
func partSumValue(b job.BatchSpec) *types.AttributeValueMemberSS {
	return &types.AttributeValueMemberSS{Value: []string{strconv.Itoa(b.Part) + ":" + b.PartSum()}}
}
