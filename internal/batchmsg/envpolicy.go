package batchmsg

import (
	"fmt"
	"strings"
)

// The env policy: a job's env carries data for the sandbox (a task id, a
// split), never behaviour. A name that changes how a process in the
// container loads, starts, resolves names or whom it trusts is refused at
// intake, whatever its value, as is every name of the scheduler's own
// protocol and of AWS's and ECS's agents. This list is the one place the
// policy is written; docs/env-policy.md shows it (its test holds the two
// equal), and the intake and `evalsched validate` both apply it through
// Parse.
//
// A deployment may also name the only variables it wants (Config.EnvAllow,
// the template's EnvAllowlist): the list below applies either way.

// EnvRule refuses one variable name, or every name with a prefix.
type EnvRule struct {
	Name   string // a whole name, or a prefix when Prefix
	Prefix bool
	Why    string // what setting it changes, for the error
}

// Pattern is the rule as the docs and errors write it: "PATH" or "LD_*".
func (r EnvRule) Pattern() string {
	if r.Prefix {
		return r.Name + "*"
	}
	return r.Name
}

func (r EnvRule) matches(name string) bool {
	if r.Prefix {
		return strings.HasPrefix(name, r.Name)
	}
	return name == r.Name
}

// The reasons, one per group of names.
const (
	whyShell    = "the shell's startup: runs commands or changes how scripts are read"
	whyLoader   = "the dynamic loader: changes what code a process loads"
	whyPath     = "where commands are found"
	whyRuntime  = "a language runtime's options or module path: changes what code it runs"
	whyCommand  = "names a command other programs run"
	whyProxy    = "a proxy: routes the container's traffic, the gateway's key with it, through another host"
	whyTrust    = "TLS trust: changes which certificates are trusted, or leaks session keys"
	whyResolver = "the resolver: changes how host names resolve"
	whyOwn      = "the scheduler's own protocol (the launcher sets these)"
	whyAWS      = "the AWS SDKs' credentials, endpoints and CA bundle"
	whyECS      = "the ECS agent's and container metadata's"
)

// DeniedEnv is the env policy's list of refused names, in the order the
// docs show it.
var DeniedEnv = []EnvRule{
	{"BASH_ENV", false, whyShell}, {"ENV", false, whyShell}, {"SHELLOPTS", false, whyShell},
	{"BASHOPTS", false, whyShell}, {"PS4", false, whyShell}, {"PROMPT_COMMAND", false, whyShell},
	{"IFS", false, whyShell}, {"CDPATH", false, whyShell}, {"GLOBIGNORE", false, whyShell},
	{"BASH_XTRACEFD", false, whyShell}, {"BASH_FUNC_", true, whyShell}, {"ZDOTDIR", false, whyShell},
	{"HOME", false, whyShell},

	{"LD_", true, whyLoader}, {"DYLD_", true, whyLoader}, {"GCONV_PATH", false, whyLoader},
	{"GLIBC_TUNABLES", false, whyLoader},

	{"PATH", false, whyPath},

	{"NODE_OPTIONS", false, whyRuntime}, {"NODE_PATH", false, whyRuntime}, {"NPM_CONFIG_", true, whyRuntime},
	{"PYTHONPATH", false, whyRuntime}, {"PYTHONSTARTUP", false, whyRuntime}, {"PYTHONHOME", false, whyRuntime},
	{"PYTHONINSPECT", false, whyRuntime}, {"PYTHONUSERBASE", false, whyRuntime}, {"PYTHONEXECUTABLE", false, whyRuntime},
	{"PYTHONWARNINGS", false, whyRuntime}, {"PYTHONBREAKPOINT", false, whyRuntime}, {"PYTHONPLATLIBDIR", false, whyRuntime},
	{"PYTHONSAFEPATH", false, whyRuntime}, {"PYTHONNOUSERSITE", false, whyRuntime}, {"PIP_", true, whyRuntime},
	{"PERL5LIB", false, whyRuntime}, {"PERLLIB", false, whyRuntime}, {"PERL5OPT", false, whyRuntime},
	{"PERL5DB", false, whyRuntime}, {"RUBYOPT", false, whyRuntime}, {"RUBYLIB", false, whyRuntime},
	{"GEM_HOME", false, whyRuntime}, {"GEM_PATH", false, whyRuntime},
	{"JAVA_TOOL_OPTIONS", false, whyRuntime}, {"_JAVA_OPTIONS", false, whyRuntime}, {"JDK_JAVA_OPTIONS", false, whyRuntime},
	{"JAVA_HOME", false, whyRuntime}, {"CLASSPATH", false, whyRuntime},
	{"GOFLAGS", false, whyRuntime}, {"GODEBUG", false, whyRuntime}, {"GOTOOLCHAIN", false, whyRuntime},
	{"GOENV", false, whyRuntime}, {"GOROOT", false, whyRuntime}, {"GOPATH", false, whyRuntime},
	{"GOPROXY", false, whyRuntime}, {"GOSUMDB", false, whyRuntime}, {"GONOSUMDB", false, whyRuntime},
	{"GOPRIVATE", false, whyRuntime}, {"GONOPROXY", false, whyRuntime}, {"GOINSECURE", false, whyRuntime},
	{"GOEXPERIMENT", false, whyRuntime}, {"DOTNET_STARTUP_HOOKS", false, whyRuntime},
	{"LUA_PATH", false, whyRuntime}, {"LUA_CPATH", false, whyRuntime},

	{"GIT_", true, whyCommand}, {"EDITOR", false, whyCommand}, {"VISUAL", false, whyCommand},
	{"PAGER", false, whyCommand}, {"SSH_ASKPASS", false, whyCommand}, {"SUDO_ASKPASS", false, whyCommand},

	{"HTTP_PROXY", false, whyProxy}, {"HTTPS_PROXY", false, whyProxy}, {"ALL_PROXY", false, whyProxy},
	{"NO_PROXY", false, whyProxy}, {"FTP_PROXY", false, whyProxy}, {"SOCKS_PROXY", false, whyProxy},
	{"SOCKS5_PROXY", false, whyProxy},

	{"SSL_CERT_FILE", false, whyTrust}, {"SSL_CERT_DIR", false, whyTrust}, {"SSLKEYLOGFILE", false, whyTrust},
	{"REQUESTS_CA_BUNDLE", false, whyTrust}, {"CURL_CA_BUNDLE", false, whyTrust}, {"NODE_EXTRA_CA_CERTS", false, whyTrust},
	{"NODE_TLS_REJECT_UNAUTHORIZED", false, whyTrust}, {"PYTHONHTTPSVERIFY", false, whyTrust},
	{"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", false, whyTrust},

	{"RES_OPTIONS", false, whyResolver}, {"LOCALDOMAIN", false, whyResolver}, {"HOSTALIASES", false, whyResolver},

	{"EVALSCHED_", true, whyOwn},
	{"AWS_", true, whyAWS},
	{"ECS_", true, whyECS},
}

// deniedEnv returns the rule that refuses name, if any.
func deniedEnv(name string) (EnvRule, bool) {
	for _, r := range DeniedEnv {
		if r.matches(name) {
			return r, true
		}
	}
	return EnvRule{}, false
}

// envPolicyRule returns the rule of the env policy that name breaks under
// the allowlist allow (nil: no allowlist), or "". The denylist comes first:
// an allowlist cannot let a refused name through.
func envPolicyRule(name string, allow []string) string {
	if r, ok := deniedEnv(name); ok {
		return fmt.Sprintf("refused by the env policy (%s: %s)", r.Pattern(), r.Why)
	}
	if allow != nil && !EnvAllowed(name, allow) {
		return fmt.Sprintf("not in the deployment's env allowlist (%s)", strings.Join(allow, ", "))
	}
	return ""
}

// EnvAllowed reports whether name is on the allowlist allow: an entry is a
// whole name, or a prefix ending in "*" ("TASK_*").
func EnvAllowed(name string, allow []string) bool {
	for _, a := range allow {
		if p, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(name, p) || a == name {
			return true
		}
	}
	return false
}

// ValidateEnvAllow checks an allowlist's entries: each a name of the
// character rule, optionally ending in "*" (a prefix, not empty).
func ValidateEnvAllow(allow []string) error {
	for _, a := range allow {
		p, _ := strings.CutSuffix(a, "*")
		if !validEnvName(p) {
			return fmt.Errorf("env allowlist: %q must be a name of [A-Z_][A-Z0-9_]*, or a prefix of one ending in *", a)
		}
	}
	return nil
}
