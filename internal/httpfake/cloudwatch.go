package httpfake

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// CloudWatch fakes GetMetricData and PutMetricData over smithy RPC v2 CBOR.
// Datapoints are put per metric name and dimension value (the model), by a
// test's Put or by the SDK's PutMetricData (see putmetricdata.go); the fake
// answers the query's statistic (Maximum, Sum or Average) of each period,
// newest first, like CloudWatch with ScanBy TimestampDescending.
type CloudWatch struct {
	mu     sync.Mutex
	srv    *httptest.Server
	points map[series][]point
	// Fail answers the next N calls with an InternalServiceFault, as a
	// passing CloudWatch fault would.
	Fail int
	// Calls counts GetMetricData calls; Queries the metric queries in them.
	Calls, Queries int
	// Requests keeps the decoded request bodies, for assertions on them.
	Requests []cbor.Map
	// puts keeps each PutMetricData call as received (Puts reads them).
	puts []Put
}

// series is one metric of one model.
type series struct{ metric, model string }

type point struct {
	at    time.Time
	value float64
}

// NewCloudWatch starts the fake on 127.0.0.1; Close stops it.
func NewCloudWatch() *CloudWatch {
	c := &CloudWatch{points: map[series][]point{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	return c
}

// URL is the endpoint to give the SDK client.
func (c *CloudWatch) URL() string { return c.srv.URL }

// Close stops the server.
func (c *CloudWatch) Close() { c.srv.Close() }

// Put records one datapoint of the model's QueueDepth (the gateway depth
// metric's default name) at time at.
func (c *CloudWatch) Put(model string, at time.Time, value float64) {
	c.PutMetric("QueueDepth", model, at, value)
}

// PutMetric records one datapoint of the named metric of the model.
func (c *CloudWatch) PutMetric(metric, model string, at time.Time, value float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := series{metric, model}
	c.points[k] = append(c.points[k], point{at, value})
}

func (c *CloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/operation/PutMetricData") {
		c.putMetricData(w, r, body)
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/operation/GetMetricData") {
		cwFail(w, "InvalidParameterValue", "httpfake: unsupported operation "+r.URL.Path)
		return
	}
	c.Calls++
	if c.Fail > 0 {
		c.Fail--
		cwFail(w, "InternalServiceFault", "try again")
		return
	}
	v, err := cbor.Decode(body)
	in, ok := v.(cbor.Map)
	if err != nil || !ok {
		cwFail(w, "InvalidParameterValue", fmt.Sprintf("bad cbor: %v", err))
		return
	}
	c.Requests = append(c.Requests, in)
	start, _ := cbor.AsTime(in["StartTime"])
	end, _ := cbor.AsTime(in["EndTime"])
	queries, _ := in["MetricDataQueries"].(cbor.List)
	if len(queries) > 500 {
		cwFail(w, "InvalidParameterValue", "The collection MetricDataQueries must not have a size greater than 500.")
		return
	}
	c.Queries += len(queries)
	ids := map[cbor.String]bool{}
	for _, q := range queries {
		qm, _ := q.(cbor.Map)
		id, _ := qm["Id"].(cbor.String)
		if !validID.MatchString(string(id)) || ids[id] {
			// CloudWatch's rule: unique, a lowercase letter first, then
			// letters, digits and underscores.
			cwFail(w, "ValidationError", fmt.Sprintf("httpfake: query id %q is not unique or not ^[a-z][a-zA-Z0-9_]*$", id))
			return
		}
		ids[id] = true
	}
	results := cbor.List{}
	for _, q := range queries {
		qm, _ := q.(cbor.Map)
		id, _ := qm["Id"].(cbor.String)
		stat, _ := qm["MetricStat"].(cbor.Map)
		metric, _ := stat["Metric"].(cbor.Map)
		name, _ := metric["MetricName"].(cbor.String)
		statName, _ := stat["Stat"].(cbor.String)
		period, _ := cbor.AsInt64(stat["Period"])
		if statName != "Maximum" && statName != "Sum" && statName != "Average" {
			cwFail(w, "InvalidParameterValue", fmt.Sprintf("httpfake: statistic %q not supported (Maximum, Sum, Average)", statName))
			return
		}
		if period <= 0 {
			period = 60
		}
		var model string
		dims, _ := metric["Dimensions"].(cbor.List)
		if len(dims) > 0 {
			s, _ := dims[0].(cbor.Map)["Value"].(cbor.String)
			model = string(s)
		}
		// The statistic per period bucket within [start, end), newest first.
		buckets := map[int64]float64{}
		counts := map[int64]int{}
		for _, p := range c.points[series{string(name), model}] {
			if p.at.Before(start) || !p.at.Before(end) {
				continue
			}
			b := p.at.Unix() / period * period
			old, ok := buckets[b]
			switch {
			case statName == "Sum" || statName == "Average":
				buckets[b] = old + p.value
			case !ok || p.value > old:
				buckets[b] = p.value
			}
			counts[b]++
		}
		if statName == "Average" {
			for b, n := range counts {
				buckets[b] /= float64(n)
			}
		}
		keys := make([]int64, 0, len(buckets))
		for k := range buckets {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Reverse(keys)
		ts, vals := cbor.List{}, cbor.List{}
		for _, k := range keys {
			ts = append(ts, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(k))})
			vals = append(vals, cbor.Float64(buckets[k]))
		}
		results = append(results, cbor.Map{"Id": id, "Label": cbor.String(model), "Timestamps": ts, "Values": vals, "StatusCode": cbor.String("Complete")})
	}
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}))
}

var validID = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`)

func cwFail(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	status := http.StatusBadRequest
	if code == "InternalServiceFault" {
		status = http.StatusInternalServerError
	}
	w.WriteHeader(status)
	_, _ = w.Write(cbor.Encode(cbor.Map{"__type": cbor.String(code), "message": cbor.String(msg)}))
}
