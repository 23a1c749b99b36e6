#!/bin/sh
# The evalsched sandbox contract, as small as it gets.
#
# In: the scheduler sets, on the container named EVALSCHED_CONTAINER_NAME
# ("sandbox"), the job's own env from its batch message plus
#   EVALSCHED_JOB_ID   the job            EVALSCHED_MODEL    the model to drive
#   EVALSCHED_BATCH    account/project/batch
#   EVALSCHED_ATTEMPT  1, 2, … (a job is retried after infrastructure failures)
# This example also reads GATEWAY_URL (the task definition's or the job's env).
# Treat every value as data: never run it as a command.
#
# Out: the exit code is the result (internal/taskevent):
#   0        the job succeeded
#   75       the model's provider failed (429/5xx after our own retries):
#            EX_TEMPFAIL, EVALSCHED_PROVIDER_ERROR_EXIT_CODES; these feed the
#            model's breaker, which stops admission while the provider is down
#   other    the job failed on its own (a wrong answer, a bug); not retried
# A task stopped before this script ends (Spot reclaim, image pull, no
# capacity) is an infrastructure stop: evalsched runs the job again.
set -u

: "${EVALSCHED_JOB_ID:?set by the scheduler}"
: "${EVALSCHED_MODEL:?set by the scheduler}"
: "${EVALSCHED_ATTEMPT:=1}"

log() { # one JSON line per event, for CloudWatch Logs Insights
	printf '{"job":"%s","model":"%s","attempt":"%s","msg":"%s"}\n' \
		"$EVALSCHED_JOB_ID" "$EVALSCHED_MODEL" "$EVALSCHED_ATTEMPT" "$1"
}

if [ -z "${GATEWAY_URL:-}" ]; then
	log "GATEWAY_URL is not set"
	exit 2 # our own failure: retrying will not help
fi

# The "eval": one call through the gateway, retried on provider errors with
# backoff. A real harness makes many calls and grades the answers.
request=$(printf '{"model":"%s","messages":[{"role":"user","content":"Reply with the word ready."}]}' "$EVALSCHED_MODEL")
tries=0
while :; do
	tries=$((tries + 1))
	code=$(curl -sS -o answer.json -w '%{http_code}' --max-time 120 \
		-H 'content-type: application/json' --data "$request" \
		"$GATEWAY_URL/v1/chat/completions") || code=000
	case "$code" in
	2??) break ;;
	429 | 5?? | 000)
		if [ "$tries" -ge 5 ]; then
			log "provider failing: HTTP $code after $tries tries"
			exit 75
		fi
		sleep $((tries * tries)) ;;
	*)
		log "the gateway rejected the request: HTTP $code"
		exit 1 ;;
	esac
done

if grep -qi 'ready' answer.json; then
	log "succeeded"
	exit 0
fi
log "wrong answer"
exit 1
