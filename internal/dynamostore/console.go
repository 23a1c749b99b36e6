package dynamostore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/evalsched/evalsched/internal/priority"
	"github.com/evalsched/evalsched/internal/scheduler"
)

// The operator's items are flat, with plain attribute names, so that they
// can be edited in the DynamoDB console:
//
//	models: model (key), enabled (Boolean), min_limit, max_limit,
//	        initial_limit, limit_pin, provider_concurrency (Number,
//	        integers), target_depth (Number), note (String, free text)
//	pins:   scope (key), tier, expires_at, note
//
// and on each model's state item (state table, pk MODELS#<bucket>, sk the
// model), written by the scheduler: learned_concurrency (Number, > 0) and
// learned_at (String, RFC 3339), the provider's concurrency as the gateway
// showed it (limits.State.Conc) and when. The operator may edit them (a
// value the provider no longer has) or delete them (forget it); a malformed
// edit is skipped with a warning, the model going on as if none were
// learned, and stays until fixed or until the pass learns a new one.
const (
	attrEnabled      = "enabled"
	attrMinLimit     = "min_limit"
	attrMaxLimit     = "max_limit"
	attrTargetDepth  = "target_depth"
	attrLimitPin     = "limit_pin"
	attrInitialLimit = "initial_limit"
	attrProviderConc = "provider_concurrency"
	attrNote         = "note"
	attrTier         = "tier"
	attrExpiresAt    = "expires_at"
	attrPaused       = "paused"
	attrLearnedConc  = "learned_concurrency"
	attrLearnedAt    = "learned_at"
)

// learned is a model's learned concurrency as its state item keeps it.
type learned struct {
	set  bool // read from the item's attributes (Snapshot)
	conc float64
	at   time.Time
}

// decodeLearned reads a state item's learned_concurrency and learned_at,
// as the operator may have edited them. Both missing: none (set false,
// and an older item's own state stands). A malformed edit is skipped: none
// is learned, and the warning says why. learned_at may be missing (a
// value the operator typed without a time): the value is then old
// (limits.State.LearnedFresh).
func decodeLearned(model string, it map[string]types.AttributeValue) (learned, string) {
	cav, hasConc := it[attrLearnedConc]
	aav, hasAt := it[attrLearnedAt]
	if !hasConc && !hasAt {
		return learned{}, ""
	}
	bad := func(format string, a ...any) (learned, string) {
		return learned{set: true}, fmt.Sprintf("model %q: state item's %s; the learned concurrency is skipped until it is fixed or learned again", model, fmt.Sprintf(format, a...))
	}
	if !hasConc {
		return bad("%s without %s", attrLearnedAt, attrLearnedConc)
	}
	var conc float64
	switch x := cav.(type) {
	case *types.AttributeValueMemberN:
		v, err := strconv.ParseFloat(x.Value, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
			return bad("%s %s must be a number ≥ 0", attrLearnedConc, x.Value)
		}
		conc = v
	case *types.AttributeValueMemberS:
		d, ok := priority.Decimal(x.Value)
		if !ok {
			return bad("%s is %s, want a Number", attrLearnedConc, describe(cav))
		}
		conc = float64(d)
	default:
		return bad("%s is %s, want a Number", attrLearnedConc, describe(cav))
	}
	l := learned{set: true, conc: conc}
	if hasAt {
		str, ok := aav.(*types.AttributeValueMemberS)
		if !ok {
			return bad("%s is %s, want a String (RFC 3339)", attrLearnedAt, describe(aav))
		}
		at, err := time.Parse(time.RFC3339Nano, str.Value)
		if err != nil {
			return bad("%s %q is not an RFC 3339 time", attrLearnedAt, str.Value)
		}
		l.at = at
	}
	if conc == 0 {
		l.at = time.Time{} // 0: none learned
	}
	return l, ""
}

var modelAttrs = []string{attrModel, attrEnabled, attrMinLimit, attrMaxLimit, attrTargetDepth, attrLimitPin, attrInitialLimit, attrProviderConc, attrNote}

// PutModel writes a model's operator item, replacing the one there, as an
// operator's console edit would.
func (s *Store) PutModel(ctx context.Context, cfg scheduler.ModelConfig) error {
	if err := checkName("model", cfg.Name); err != nil {
		return fmt.Errorf("put model: %w", err)
	}
	item := map[string]types.AttributeValue{
		attrModel:        &types.AttributeValueMemberS{Value: cfg.Name},
		attrEnabled:      &types.AttributeValueMemberBOOL{Value: cfg.Enabled},
		attrMinLimit:     number(int64(cfg.MinLimit)),
		attrMaxLimit:     number(int64(cfg.MaxLimit)),
		attrTargetDepth:  &types.AttributeValueMemberN{Value: strconv.FormatFloat(cfg.TargetDepth, 'f', -1, 64)},
		attrLimitPin:     number(int64(cfg.LimitPin)),
		attrInitialLimit: number(int64(cfg.InitialLimit)),
	}
	if cfg.ProviderConcurrency != 0 {
		item[attrProviderConc] = number(int64(cfg.ProviderConcurrency))
	}
	if _, reason := decodeModel(item, s.defaults); reason != "" {
		return fmt.Errorf("put model %q: %s", cfg.Name, reason)
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Models), Item: item})
	if err != nil {
		return fmt.Errorf("put model %q: %w", cfg.Name, err)
	}
	return nil
}

// PutPin writes a pin item, replacing the one of the same scope. A tier or
// expires_at that reads as a number is stored as a Number, anything else as
// the String typed; the pass judges it (priority.Compile).
func (s *Store) PutPin(ctx context.Context, p priority.Pin) error {
	if p.Scope == "" {
		return fmt.Errorf("put pin: scope is empty")
	}
	item := map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: p.Scope}}
	for name, text := range map[string]string{attrTier: p.Tier, attrExpiresAt: p.ExpiresAt} {
		switch {
		case text == "":
		case isNumber(text):
			item[name] = &types.AttributeValueMemberN{Value: text}
		default:
			item[name] = &types.AttributeValueMemberS{Value: text}
		}
	}
	if p.Note != "" {
		item[attrNote] = &types.AttributeValueMemberS{Value: p.Note}
	}
	if err := s.carryLegacyPause(ctx, p.Scope); err != nil {
		return fmt.Errorf("put pin %q: %w", p.Scope, err)
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Pins), Item: item})
	if err != nil {
		return fmt.Errorf("put pin %q: %w", p.Scope, err)
	}
	return nil
}

// SetPaused pauses or resumes a scope: it writes or deletes the scope's
// pause item (pk PAUSES, sk the scope), apart from its pin, so a pin's
// tier, removal or expiry never touches a pause. A pause written by an
// older version as the paused attribute of a pin item is lifted from there
// either way: pause moves it to its own item, resume removes it.
func (s *Store) SetPaused(ctx context.Context, scope string, paused bool, now time.Time) error {
	var err error
	if paused {
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.tables.State),
			Item: map[string]types.AttributeValue{
				attrPK: &types.AttributeValueMemberS{Value: pkPauses}, attrSK: &types.AttributeValueMemberS{Value: scope},
				attrScope: &types.AttributeValueMemberS{Value: scope}, "since": &types.AttributeValueMemberS{Value: stamp(now)},
			},
		})
	} else {
		_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.tables.State), Key: key(pkPauses, scope)})
	}
	if err == nil {
		err = s.dropLegacyPause(ctx, scope)
	}
	if err != nil {
		return fmt.Errorf("set paused of %q: %w", scope, err)
	}
	return nil
}

// dropLegacyPause removes the paused attribute an older version wrote on
// the scope's pin item: the item goes if the pause was all it held, else
// only the attribute.
func (s *Store) dropLegacyPause(ctx context.Context, scope string) error {
	k := map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.tables.Pins), Key: k,
		// Guard: the item goes only if the pause was all it held, never a pin's
		// tier. Without it TestLegacyPauseOnAPinItem fails (make mutate:
		// legacy-pause-delete).
		ConditionExpression:      aws.String("attribute_exists(#p) AND attribute_not_exists(#t)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPaused, "#t": attrTier},
	})
	if !isConditionFailed(err) {
		return err
	}
	// Guard (its condition): never creates a pin item that was not there.
	// Without it TestLegacyPauseOnAPinItem fails (make mutate:
	// legacy-pause-remove).
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.Pins), Key: k,
		UpdateExpression:         aws.String("REMOVE #p"),
		ConditionExpression:      aws.String("attribute_exists(#p)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPaused},
	})
	if isConditionFailed(err) {
		return nil
	}
	return err
}

// carryLegacyPause keeps a pause an older version wrote on a pin item when
// that item is replaced or deleted: it becomes a pause item first.
func (s *Store) carryLegacyPause(ctx context.Context, scope string) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Pins), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}},
	})
	if err != nil || !legacyPaused(out.Item) {
		return err
	}
	return s.SetPaused(ctx, scope, true, time.Now())
}

// legacyPaused tells a pin item an older version paused.
func legacyPaused(it map[string]types.AttributeValue) bool {
	return strings.EqualFold(text(it[attrPaused]), "true")
}

// readPauses reads the pause items (one Query), sorted by scope.
func (s *Store) readPauses(ctx context.Context) ([]scheduler.Pause, error) {
	items, err := s.query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.State), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pkPauses}},
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("read pauses: %w", err)
	}
	out := make([]scheduler.Pause, 0, len(items))
	for _, it := range items {
		since, _ := parseStamp(text(it["since"]))
		out = append(out, scheduler.Pause{Scope: text(it[attrScope]), Since: since})
	}
	return out, nil
}

// DeletePin removes a pin item (a pause stays).
func (s *Store) DeletePin(ctx context.Context, scope string) error {
	if err := s.carryLegacyPause(ctx, scope); err != nil {
		return fmt.Errorf("delete pin %q: %w", scope, err)
	}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.tables.Pins),
		Key:       map[string]types.AttributeValue{attrScope: &types.AttributeValueMemberS{Value: scope}},
	})
	if err != nil {
		return fmt.Errorf("delete pin %q: %w", scope, err)
	}
	return nil
}

// readModelConfigs scans the models table. A valid item maps to its config;
// a malformed one maps to nil, to its reason in skipped, and adds a warning
// naming the item, the attribute and the rule (sorted by model name).
func (s *Store) readModelConfigs(ctx context.Context) (configs map[string]*scheduler.ModelConfig, warnings []string, skipped map[string]string, err error) {
	items, err := s.scan(ctx, s.tables.Models)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read model items: %w", err)
	}
	configs, skipped = make(map[string]*scheduler.ModelConfig, len(items)), map[string]string{}
	for _, it := range items {
		name := text(it[attrModel])
		cfg, reason := decodeModel(it, s.defaults)
		if reason != "" {
			configs[name], skipped[name] = nil, reason
			warnings = append(warnings, fmt.Sprintf("model item %q skipped: %s; its jobs wait until it is fixed", name, reason))
			continue
		}
		configs[name] = &cfg
	}
	slices.Sort(warnings)
	return configs, warnings, skipped, nil
}

// decodeModel validates a model item strictly. A missing attribute takes the
// default; a present one must have its type and range, and an unknown
// attribute (a typo such as "max_limt") is an error, not silently ignored.
// It returns a non-empty reason when the item must be skipped.
func decodeModel(it map[string]types.AttributeValue, defaults scheduler.ModelConfig) (scheduler.ModelConfig, string) {
	cfg := defaults
	cfg.Name = text(it[attrModel])
	if err := checkName("model", cfg.Name); err != nil {
		return cfg, err.Error()
	}
	var unknown []string
	for name := range it {
		if !slices.Contains(modelAttrs, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return cfg, fmt.Sprintf("unknown attribute %q (known: %s)", unknown[0], strings.Join(modelAttrs, ", "))
	}
	if av, ok := it[attrEnabled]; ok {
		b, isBool := av.(*types.AttributeValueMemberBOOL)
		if !isBool {
			return cfg, fmt.Sprintf("%s is %s, want a Boolean", attrEnabled, describe(av))
		}
		cfg.Enabled = b.Value
	}
	ints := []struct {
		name string
		dst  *int
		min  int64
	}{
		{attrMinLimit, &cfg.MinLimit, 0},
		{attrMaxLimit, &cfg.MaxLimit, 1},
		{attrLimitPin, &cfg.LimitPin, 0},
		{attrInitialLimit, &cfg.InitialLimit, 0},
		{attrProviderConc, &cfg.ProviderConcurrency, 0},
	}
	for _, f := range ints {
		av, ok := it[f.name]
		if !ok {
			continue
		}
		v, reason := integer(av)
		switch {
		case reason != "":
			return cfg, fmt.Sprintf("%s is %s, want %s", f.name, describe(av), reason)
		case v < f.min:
			return cfg, fmt.Sprintf("%s %d must be an integer ≥ %d", f.name, v, f.min)
		}
		*f.dst = int(v)
	}
	if av, ok := it[attrTargetDepth]; ok {
		var v float64
		switch x := av.(type) {
		case *types.AttributeValueMemberS: // decimal digits, as every numeric field takes
			d, ok := priority.Decimal(x.Value)
			if !ok {
				return cfg, fmt.Sprintf("%s is %s, want a Number or a String of decimal digits", attrTargetDepth, describe(av))
			}
			v = float64(d)
		case *types.AttributeValueMemberN:
			var err error
			v, err = strconv.ParseFloat(x.Value, 64)
			if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
				return cfg, fmt.Sprintf("%s %s must be a number ≥ 0", attrTargetDepth, x.Value)
			}
		default:
			return cfg, fmt.Sprintf("%s is %s, want a Number or a String of decimal digits", attrTargetDepth, describe(av))
		}
		cfg.TargetDepth = v
	}
	if av, ok := it[attrNote]; ok {
		if _, isStr := av.(*types.AttributeValueMemberS); !isStr {
			return cfg, fmt.Sprintf("%s is %s, want a String", attrNote, describe(av))
		}
	}
	if cfg.MinLimit > cfg.MaxLimit {
		return cfg, fmt.Sprintf("%s %d is above %s %d", attrMinLimit, cfg.MinLimit, attrMaxLimit, cfg.MaxLimit)
	}
	if cfg.LimitPin > cfg.MaxLimit {
		return cfg, fmt.Sprintf("%s %d is above %s %d", attrLimitPin, cfg.LimitPin, attrMaxLimit, cfg.MaxLimit)
	}
	return cfg, ""
}

// integer reads a Number holding an integer, or a String of decimal digits
// (the console makes typing a number as a String easy; "9" means 9 in every
// numeric field, as in a pin's tier); the reason names what is wanted.
func integer(av types.AttributeValue) (int64, string) {
	if str, ok := av.(*types.AttributeValueMemberS); ok {
		v, ok := priority.Decimal(str.Value)
		if !ok {
			return 0, "an integer Number or a String of decimal digits"
		}
		return v, ""
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, "an integer Number or a String of decimal digits"
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(n.Value, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, "an integer"
		}
		v = int64(f)
	}
	return v, ""
}

// readPins scans the pins table, sorted by scope, keeping each attribute's
// raw text: a tier typed as the String "urgent" reaches priority.Compile as
// "urgent" and is reported there. A pin item an older version paused (its
// paused attribute) yields a pause too, with a warning saying how to move
// it; an item that held only that pause is not a pin.
func (s *Store) readPins(ctx context.Context) ([]priority.Pin, []scheduler.Pause, []string, error) {
	items, err := s.scan(ctx, s.tables.Pins)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read pins: %w", err)
	}
	pins := make([]priority.Pin, 0, len(items))
	var legacy []scheduler.Pause
	var warnings []string
	for _, it := range items {
		scope := text(it[attrScope])
		if _, paused := it[attrPaused]; paused {
			if legacyPaused(it) {
				legacy = append(legacy, scheduler.Pause{Scope: scope})
				warnings = append(warnings, fmt.Sprintf("pin item %q holds a pause in its paused attribute, as versions before pauses had their own items wrote it: "+
					"it still pauses; run evalsched pause (or resume) on the scope once to move it apart from the pin", scope))
			}
			if _, hasTier := it[attrTier]; !hasTier {
				continue // the item only paused
			}
		}
		pins = append(pins, priority.Pin{
			Scope: scope, Tier: text(it[attrTier]),
			ExpiresAt: text(it[attrExpiresAt]), Note: text(it[attrNote]),
		})
	}
	slices.SortFunc(pins, func(a, b priority.Pin) int { return strings.Compare(a.Scope, b.Scope) })
	slices.Sort(warnings)
	return pins, legacy, warnings, nil
}

// text renders an attribute as the text an operator typed: a String or a
// Number as is, a Boolean as true/false, a missing one as "".
func text(av types.AttributeValue) string {
	switch v := av.(type) {
	case nil:
		return ""
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return strconv.FormatBool(v.Value)
	case *types.AttributeValueMemberNULL:
		return ""
	default:
		return describe(av)
	}
}

// describe names an attribute's type and value for a warning.
func describe(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("the String %q", v.Value)
	case *types.AttributeValueMemberN:
		return "the Number " + v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("the Boolean %t", v.Value)
	case *types.AttributeValueMemberNULL:
		return "Null"
	case *types.AttributeValueMemberL:
		return "a List"
	case *types.AttributeValueMemberM:
		return "a Map"
	case *types.AttributeValueMemberSS, *types.AttributeValueMemberNS, *types.AttributeValueMemberBS:
		return "a Set"
	case *types.AttributeValueMemberB:
		return "Binary"
	default:
		return "of unknown type"
	}
}

func number(v int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil && !strings.ContainsAny(s, "xXpP_") && !strings.EqualFold(s, "inf") && !strings.EqualFold(s, "nan") &&
		!strings.EqualFold(s, "+inf") && !strings.EqualFold(s, "-inf") && !strings.EqualFold(s, "infinity")
}
