package lambdaboot

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestLoadNamesAMissingVariable(t *testing.T) {
	t.Setenv("EVALSCHED_DLQ_URL", "")
	_, err := Load(context.Background(), slog.Default(), []string{"EVALSCHED_DLQ_URL"})
	if err == nil || !strings.Contains(err.Error(), "EVALSCHED_DLQ_URL") {
		t.Fatalf("Load without EVALSCHED_DLQ_URL: err %v, want one naming it", err)
	}
}

func TestLoadGivesTheStoreItsLogger(t *testing.T) {
	t.Setenv("EVALSCHED_DLQ_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/dlq")
	t.Setenv("AWS_REGION", "us-east-1")
	log := slog.Default()
	env, err := Load(context.Background(), log, []string{"EVALSCHED_DLQ_URL"})
	if err != nil {
		t.Fatal(err)
	}
	if env.Config.DLQURL == "" || env.AWS.Region != "us-east-1" {
		t.Fatalf("env %+v: the variables did not reach it", env.Config)
	}
	if s := env.Store(); s.Log != log {
		t.Fatalf("the store's logger is %v, want the function's", s.Log)
	}
}
