package dynamostore

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/admission"
	"github.com/evalsched/evalsched/internal/breaker"
	"github.com/evalsched/evalsched/internal/limits"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// A state packs into one binary attribute and reads back the same; a
// state stored as a map of attributes (before the packing) still reads.
func TestPackedStateRoundTrips(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := scheduler.ModelState{
		Limit: limits.State{Limit: 120, RaisedAt: at, RaisedBy: 10, Smoothed: 38.5, SeenAt: at.Add(-20 * time.Second),
			Ceiling: 300, CeilingAt: at, Recent: []limits.Sample{{At: at, Running: 100}, {At: at.Add(10 * time.Second), Running: 104}},
			Held: 130, AvgRunning: 101.5, AvgSince: at},
		Breaker:   breaker.State{Phase: breaker.Open, Since: at, Buckets: []breaker.Bucket{{Start: at, OK: 3, Failed: 1}}},
		Admission: admission.State{Credit: []float64{0.5, 0.25, 0}, LastProject: []string{"a/p", "", "b/q"}},
		Ended:     scheduler.EndRate{Sum: 4.5, At: at, Since: at.Add(-time.Hour)},
	}
	av, err := packedState{st}.MarshalDynamoDBAttributeValue()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := av.(*types.AttributeValueMemberB); !ok {
		t.Fatalf("got %T, want one binary attribute", av)
	}
	var got packedState
	if err := got.UnmarshalDynamoDBAttributeValue(av); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.ModelState, st) {
		t.Errorf("packed and read back:\n got  %+v\n want %+v", got.ModelState, st)
	}
	old, err := attributevalue.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var fromMap packedState
	if err := attributevalue.Unmarshal(old, &fromMap); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromMap.ModelState, st) {
		t.Errorf("stored as a map and read:\n got  %+v\n want %+v", fromMap.ModelState, st)
	}
	t.Logf("packed: %d bytes", len(av.(*types.AttributeValueMemberB).Value))
}
