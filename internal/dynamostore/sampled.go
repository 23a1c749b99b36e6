package dynamostore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/memstore"
	"github.com/evalsched/evalsched/internal/sampling"
)

// A sampled batch's items, beside its jobs (each job item carries its
// stratum):
//
//	SAMPLED#<a>#<p>#<b>  PARAMS            moe, confidence, min_per_stratum
//	  same pk            PART#<n>          the part's jobs per stratum (n 0: a batch of one message)
//	  same pk            STRATUM#<name>    results, passes: RecordResult adds to them
//
// A part's item is written whole, so a redelivered message writes the same
// counts again; the strata's sizes are the sums over the parts. The result
// counters move in the transaction that records the verdict on the job.
//
// What the DynamoDB store does not do yet (memstore does): release a
// sampled batch's jobs by stratum in keyed order in Neyman proportions
// (its jobs are claimed oldest first, in the order batchmsg.Message.Spec
// gives them: keyed random order within each message) and skip the rest
// once the stop rule holds (Sampled reports Estimate.Stop; nothing is
// skipped).

const (
	sampledPrefix  = "SAMPLED#"
	skParams       = "PARAMS"
	partPrefix     = "PART#"
	stratumPrefix  = "STRATUM#"
	attrStrataJobs = "strata"
)

func sampledPK(batch string) string { return sampledPrefix + strings.ReplaceAll(batch, "/", "#") }

// registerSampling writes a sampled message's parameters and its part's
// jobs per stratum.
func (s *Store) registerSampling(ctx context.Context, b memstore.BatchSpec) error {
	pk := sampledPK(b.Account + "/" + b.Project + "/" + b.Batch)
	strata := map[string]int{}
	for _, j := range b.Jobs {
		strata[j.Stratum]++
	}
	// Updates that set every attribute, not puts: the intake's role
	// updates items and never puts one.
	params, err := updateItem(s.tables.State, key(pk, skParams),
		expression.Set(name("moe"), value(b.Sampling.MOE)).
			Set(name("confidence"), value(b.Sampling.Confidence)).
			Set(name("min_per_stratum"), value(b.Sampling.MinPerStratum)), expression.ConditionBuilder{})
	if err != nil {
		return fmt.Errorf("register sampling: %w", err)
	}
	part, err := updateItem(s.tables.State, key(pk, partPrefix+strconv.Itoa(b.Part)),
		expression.Set(name(attrStrataJobs), value(strata)), expression.ConditionBuilder{})
	if err != nil {
		return fmt.Errorf("register sampling: %w", err)
	}
	if err := s.transact(ctx, []types.TransactWriteItem{params, part}, token()); err != nil {
		return fmt.Errorf("register sampling of %s/%s/%s part %d: %w", b.Account, b.Project, b.Batch, b.Part, err)
	}
	return nil
}

// countResult is the update that counts one verdict toward the job's
// stratum.
func (s *Store) countResult(j jobItem, pass bool) (types.TransactWriteItem, error) {
	passes := 0
	if pass {
		passes = 1
	}
	pk := sampledPK(j.Account + "/" + j.Project + "/" + j.Batch)
	return updateItem(s.tables.State, key(pk, stratumPrefix+j.Stratum),
		expression.Add(name("results"), value(1)).Add(name("passes"), value(passes)), expression.ConditionBuilder{})
}

// Sampled reads a sampled batch's state (account/project/batch): its
// parameters, the strata's sizes and results, the estimate ± half-width of
// the batch and of each stratum, and whether the stop rule holds (every
// part arrived). ok is false for a batch that is not sampled. One Query.
func (s *Store) Sampled(ctx context.Context, batch string) (memstore.SampledBatch, bool, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.State),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: sampledPK(batch)}},
		ConsistentRead:            aws.Bool(true),
	}, 0)
	if err != nil {
		return memstore.SampledBatch{}, false, fmt.Errorf("read sampling of %s: %w", batch, err)
	}
	var (
		p      sampling.Params
		found  bool
		strata = map[string]*sampling.Stratum{}
	)
	stratum := func(n string) *sampling.Stratum {
		if strata[n] == nil {
			strata[n] = &sampling.Stratum{Name: n}
		}
		return strata[n]
	}
	for _, it := range items {
		sk, _ := it["sk"].(*types.AttributeValueMemberS)
		if sk == nil {
			continue
		}
		switch {
		case sk.Value == skParams:
			var v struct {
				MOE  float64 `dynamodbav:"moe"`
				Conf float64 `dynamodbav:"confidence"`
				Min  int     `dynamodbav:"min_per_stratum"`
			}
			if err := attributevalue.UnmarshalMap(it, &v); err != nil {
				return memstore.SampledBatch{}, false, fmt.Errorf("read sampling of %s: %w", batch, err)
			}
			p, found = sampling.Params{MOE: v.MOE, Confidence: v.Conf, MinPerStratum: v.Min}, true
		case strings.HasPrefix(sk.Value, partPrefix):
			var v struct {
				Strata map[string]int `dynamodbav:"strata"`
			}
			if err := attributevalue.UnmarshalMap(it, &v); err != nil {
				return memstore.SampledBatch{}, false, fmt.Errorf("read sampling of %s: %w", batch, err)
			}
			for name, jobs := range v.Strata {
				stratum(name).Jobs += jobs
			}
		case strings.HasPrefix(sk.Value, stratumPrefix):
			var v struct {
				Results int `dynamodbav:"results"`
				Passes  int `dynamodbav:"passes"`
			}
			if err := attributevalue.UnmarshalMap(it, &v); err != nil {
				return memstore.SampledBatch{}, false, fmt.Errorf("read sampling of %s: %w", batch, err)
			}
			st := stratum(strings.TrimPrefix(sk.Value, stratumPrefix))
			st.Results, st.Passes = v.Results, v.Passes
			st.Released = st.Results // at least; the claims are not counted per stratum here
		}
	}
	if !found {
		return memstore.SampledBatch{}, false, nil
	}
	rule, err := sampling.NewRule(p)
	if err != nil {
		return memstore.SampledBatch{}, false, fmt.Errorf("read sampling of %s: %w", batch, err)
	}
	out := memstore.SampledBatch{Batch: batch, Params: p}
	var counts []sampling.Stratum
	for _, n := range slices.Sorted(maps.Keys(strata)) {
		c := *strata[n]
		counts = append(counts, c)
		out.Strata = append(out.Strata, memstore.SampledStratum{Stratum: c, Estimate: rule.Estimate([]sampling.Stratum{c})})
	}
	out.Estimate = rule.Estimate(counts)
	a, pr, b := splitBatch(batch)
	seen, total, err := s.BatchParts(ctx, a, pr, b)
	if err != nil {
		return memstore.SampledBatch{}, false, err
	}
	if total > 0 && len(seen) < total {
		out.Estimate.Stop = false // the strata's sizes are not all known yet
	}
	return out, true, nil
}

// splitBatch splits account/project/batch.
func splitBatch(id string) (string, string, string) {
	a, rest, _ := strings.Cut(id, "/")
	p, b, _ := strings.Cut(rest, "/")
	return a, p, b
}
