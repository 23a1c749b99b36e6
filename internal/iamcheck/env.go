package iamcheck

import "slices"

// T is what Setenv needs of a test (testing.TB has it).
type T interface {
	Helper()
	Fatal(args ...any)
	Setenv(key, value string)
}

// Setenv gives the process the environment Lambda gives the function:
// the variables template.yaml sets (overrides win: the local stand-ins'
// queue URLs, say), fake credentials and region, and endpoints (e.g.
// AWS_ENDPOINT_URL_DYNAMODB) pointing the SDK at the stand-ins. It returns
// what it set. t.Setenv restores the environment when the test ends.
func (s *Stack) Setenv(t T, fn string, overrides map[string]string) map[string]string {
	t.Helper()
	env, err := s.Environment(fn)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_REGION": s.Region, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		env[k] = v
	}
	for k, v := range overrides {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Setenv(k, env[k])
	}
	return env
}
