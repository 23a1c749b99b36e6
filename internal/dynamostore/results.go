package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/job"
	"github.com/evalsched/evalsched/internal/resulttoken"
)

// The result attributes of a job item: its sandbox's verdict, written by
// RecordResult alone (no other write touches them).
type resultAttrs struct {
	Attempt int      `dynamodbav:"result_attempt"`
	Pass    bool     `dynamodbav:"result_pass"`
	Score   *float64 `dynamodbav:"result_score,omitempty"`
	At      string   `dynamodbav:"result_at"`
}

// RecordResult records a job's verdict on its item with one conditional
// write, the semantics of memstore's: only for the job's current attempt,
// once a job has run (CLAIMED … FAILED; not WAITING, CANCELLED or SKIPPED),
// only with the attempt's result token (r.Token, compared by DynamoDB in
// the same condition), and not over a verdict of the same or a later
// attempt, so a stale attempt's result and SQS's redelivery change
// nothing. A sampled job's first verdict then goes to its place in the
// batch's release log (sequence.go), which counts it once whatever
// repeats. It reports whether the result
// was recorded; an unknown job is job.ErrUnknownJob (the sender named
// a job that does not exist) and a result for the current attempt without
// its token job.ErrWrongToken (a sandbox speaking for another job):
// both are the dead-letter queue's.
func (s *Store) RecordResult(ctx context.Context, jobID string, r job.Result) (bool, error) {
	j, ok, err := s.readJob(ctx, jobID)
	switch {
	case err != nil:
		return false, fmt.Errorf("result for %s: %w", jobID, err)
	case !ok:
		return false, fmt.Errorf("result for %s: %w", jobID, job.ErrUnknownJob)
	case r.Token == "":
		return false, refusal(jobID, j, r) // no token matches none: nothing to write
	}
	up := expression.Set(name("result_attempt"), value(r.Attempt)).
		Set(name("result_pass"), value(r.Pass)).
		Set(name("result_at"), value(stamp(r.At)))
	if r.Score != nil {
		up = up.Set(name("result_score"), value(*r.Score))
	} else {
		up = up.Remove(name("result_score"))
	}
	// Guard: a verdict is kept only for the attempt the job is at (make
	// mutate: result-attempt), and only once the job was claimed (make
	// mutate: result-state): a result for an attempt not reached, or for
	// a job still waiting, is refused. Without either
	// TestRecordResultPerAttempt fails.
	cond := name("attempt").Equal(value(r.Attempt)).
		And(name("state").In(value(job.Claimed), value(job.Launched), value(job.Running),
			value(job.Succeeded), value(job.Failed)))
	// Guard: only the attempt's own sandbox holds its result token (the
	// claim drew it; the launcher gave it to that task alone), so a
	// sandbox cannot speak for a job whose id and attempt it derived.
	// Checked here, in the write, never on a read before it: a new claim
	// between the two draws a new token. Without it
	// TestForgedResultsRaceTheTrueOne fails (make mutate: result-token).
	cond = cond.And(name(attrResultToken).Equal(value(r.Token.Reveal())))
	sampled := j.Stratum != "" && j.ReleasePos != nil
	if sampled {
		// Guard: a sampled job's first verdict is its outcome in the
		// release log, once and final: two deliveries that both read no
		// result race, and the second is refused; a later attempt's
		// verdict (a task lost after it reported) is refused too, as in
		// memstore (why: memstore's RecordResult). Without it
		// TestRacingResultDeliveriesCountOnce fails (make mutate:
		// result-counted-once).
		cond = cond.And(name("result_attempt").AttributeNotExists())
	} else {
		// Guard: a repeated or earlier attempt's verdict never replaces the
		// one recorded. Without it TestRecordResultPerAttempt fails (make
		// mutate: result-stale).
		cond = cond.And(expression.Or(name("result_attempt").AttributeNotExists(), name("result_attempt").LessThan(value(r.Attempt))))
	}
	it, err := updateItem(s.tables.State, key(jobPK(jobID), skJob), up, cond)
	if err != nil {
		return false, fmt.Errorf("result for %s: %w", jobID, err)
	}
	// A refused write returns the item as it was, so the refusal is
	// told apart without another read: a forgery, or stale.
	it.Update.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	u := it.Update
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: u.ReturnValuesOnConditionCheckFailure,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		if err := refusalOf(jobID, ccf.Item, r); err != nil || !sampled {
			return false, err
		}
		// A repeat: the verdict is in, but a crash may have come before
		// its log entry. Log the verdict as recorded (not this message's:
		// the write refused it), once more; the entry is the same.
		var old jobItem
		if attributevalue.UnmarshalMap(ccf.Item, &old) != nil || old.ResultAttempt == 0 || old.ReleasePos == nil {
			return false, nil
		}
		return false, s.logResult(ctx, old, old.ResultPass, r.At)
	case err != nil:
		return false, fmt.Errorf("result for %s: %w", jobID, err)
	}
	if sampled {
		if err := s.logResult(ctx, j, r.Pass, r.At); err != nil {
			return true, fmt.Errorf("result for %s: recorded; %w", jobID, err)
		}
	}
	return true, nil
}

// logResult writes a sampled job's verdict at its place in the release
// log, then counts the log's completed prefix and stops the batch if the
// rule holds (stopIfDone). Idempotent: a repeat writes the same entry.
func (s *Store) logResult(ctx context.Context, j jobItem, pass bool, at time.Time) error {
	outcome := outcomeFail
	if pass {
		outcome = outcomePass
	}
	if err := s.writeLog(ctx, j.batchID(), j.Stratum, *j.ReleasePos, outcome); err != nil {
		return err
	}
	if err := s.stopIfDone(ctx, j, at); err != nil {
		return fmt.Errorf("stop rule: %w", err)
	}
	return nil
}

// refusalOf reads why a result's write was refused from the job item as
// the write found it (refusal).
func refusalOf(jobID string, old map[string]types.AttributeValue, r job.Result) error {
	var j jobItem
	if len(old) == 0 || attributevalue.UnmarshalMap(old, &j) != nil {
		return nil
	}
	return refusal(jobID, j, r)
}

// refusal says why a result is refused by the job item j: one for the
// job's current attempt, run, without that attempt's token is a forgery
// (job.ErrWrongToken, compared in constant time); anything else is a
// stale or repeated result (nil).
func refusal(jobID string, j jobItem, r job.Result) error {
	switch j.State {
	case job.Claimed, job.Launched, job.Running, job.Succeeded, job.Failed:
		if j.Attempt == r.Attempt && !resulttoken.Equal(r.Token, j.ResultToken) {
			return fmt.Errorf("result for %s attempt %d: %w", jobID, r.Attempt, job.ErrWrongToken)
		}
	}
	return nil
}

// JobResult reads the verdict recorded for a job (ok false: none yet).
func (s *Store) JobResult(ctx context.Context, jobID string) (job.Result, bool, error) {
	res, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.State), Key: key(jobPK(jobID), skJob), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("result_attempt, result_pass, result_score, result_at"),
	})
	if err != nil {
		return job.Result{}, false, fmt.Errorf("read result of %s: %w", jobID, err)
	}
	if _, has := res.Item["result_attempt"]; !has {
		return job.Result{}, false, nil
	}
	var a resultAttrs
	if err := attributevalue.UnmarshalMap(res.Item, &a); err != nil {
		return job.Result{}, false, fmt.Errorf("read result of %s: %w", jobID, err)
	}
	at, _ := parseStamp(a.At)
	return job.Result{Attempt: a.Attempt, Pass: a.Pass, Score: a.Score, At: at}, true, nil
}
