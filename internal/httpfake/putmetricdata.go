package httpfake

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// PutMetricData's limits, as CloudWatch enforces them: at most 1,000
// metrics per request, and 1 MB of request body (before compression: the
// SDK gzips a body of 10 KiB or more, and the limit is on what it
// compressed).
const (
	MaxPutDatums = 1000
	MaxPutBytes  = 1 << 20
)

// Put is one PutMetricData call as the fake received it.
type Put struct {
	Namespace string
	Bytes     int  // the request body's size, decompressed
	Gzip      bool // the SDK compressed it
	Data      []Datum
}

// Datum is one MetricDatum of a Put.
type Datum struct {
	MetricName        string
	Dimensions        map[string]string
	Value             float64
	Timestamp         time.Time
	StorageResolution int64
	Unit              string
}

// Puts returns a copy of the PutMetricData calls received so far.
func (c *CloudWatch) Puts() []Put {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Put(nil), c.puts...)
}

// putMetricData records the call's datums as points of their metric and
// model (the value of the datum's first dimension), which GetMetricData
// then answers from, and refuses what CloudWatch refuses: more than 1,000
// datums, a body over 1 MB, a datum without a name, or a value that is not
// a finite number. A refused call stores nothing.
func (c *CloudWatch) putMetricData(w http.ResponseWriter, r *http.Request, body []byte) {
	put := Put{Gzip: r.Header.Get("Content-Encoding") == "gzip"}
	if put.Gzip {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			cwFail(w, "InvalidParameterValue", fmt.Sprintf("httpfake: bad gzip body: %v", err))
			return
		}
	}
	put.Bytes = len(body)
	if put.Bytes > MaxPutBytes {
		cwFail(w, "RequestEntityTooLarge", fmt.Sprintf("Request size %d exceeded %d bytes", put.Bytes, MaxPutBytes))
		return
	}
	v, err := cbor.Decode(body)
	in, ok := v.(cbor.Map)
	if err != nil || !ok {
		cwFail(w, "InvalidParameterValue", fmt.Sprintf("bad cbor: %v", err))
		return
	}
	ns, _ := in["Namespace"].(cbor.String)
	put.Namespace = string(ns)
	data, _ := in["MetricData"].(cbor.List)
	if put.Namespace == "" || len(data) == 0 {
		cwFail(w, "MissingParameter", "httpfake: Namespace and MetricData are required")
		return
	}
	if len(data) > MaxPutDatums {
		cwFail(w, "InvalidParameterValue", fmt.Sprintf("The collection MetricData must not have a size greater than %d.", MaxPutDatums))
		return
	}
	for i, d := range data {
		dm, _ := d.(cbor.Map)
		name, _ := dm["MetricName"].(cbor.String)
		value, verr := cbor.AsFloat64(dm["Value"])
		if name == "" || verr != nil || math.IsNaN(value) || math.IsInf(value, 0) {
			cwFail(w, "InvalidParameterValue", fmt.Sprintf("httpfake: MetricData[%d]: a MetricName and a finite Value are required", i))
			return
		}
		at, _ := cbor.AsTime(dm["Timestamp"])
		res, _ := cbor.AsInt64(dm["StorageResolution"])
		unit, _ := dm["Unit"].(cbor.String)
		datum := Datum{MetricName: string(name), Dimensions: map[string]string{}, Value: value, Timestamp: at, StorageResolution: res, Unit: string(unit)}
		dims, _ := dm["Dimensions"].(cbor.List)
		for _, x := range dims {
			xm, _ := x.(cbor.Map)
			k, _ := xm["Name"].(cbor.String)
			v, _ := xm["Value"].(cbor.String)
			datum.Dimensions[string(k)] = string(v)
		}
		put.Data = append(put.Data, datum)
	}
	for i, d := range put.Data {
		var model string
		if dims, _ := data[i].(cbor.Map)["Dimensions"].(cbor.List); len(dims) > 0 {
			s, _ := dims[0].(cbor.Map)["Value"].(cbor.String)
			model = string(s)
		}
		k := series{d.MetricName, model}
		c.points[k] = append(c.points[k], point{d.Timestamp, d.Value})
	}
	c.puts = append(c.puts, put)
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(cbor.Map{}))
}
