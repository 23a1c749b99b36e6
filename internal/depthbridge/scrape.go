package depthbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// maxScrapeBytes bounds what one scrape reads: an Envoy with thousands of
// clusters serves a few MB.
const maxScrapeBytes = 64 << 20

// accept asks for the text format only. expfmt parses OpenMetrics 1.0.0
// too, and Scrape reads it when a server sends it anyway, but with its
// reference parser (an ABNF grammar, about 5 ms a line here against
// microseconds for the text format): a few hundred lines would not fit in
// a second.
const accept = `text/plain;version=0.0.4;q=1,*/*;q=0.1`

// Scrape GETs one Prometheus endpoint and parses its exposition with
// expfmt, in the format the response's Content-Type names (the text format
// when it names none expfmt knows). Any failure to connect, a status other
// than 200, or a body that does not parse is an error: the caller then
// publishes nothing for the target's models.
// A non-empty token goes as a bearer token.
func Scrape(ctx context.Context, client *http.Client, url, token string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", accept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("scrape %s: HTTP %s", url, resp.Status)
	}
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() == expfmt.TypeUnknown {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	dec := expfmt.NewDecoder(io.LimitReader(resp.Body, maxScrapeBytes), format)
	out := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("scrape %s: parse %s: %w", url, format, err)
		}
		out[mf.GetName()] = mf
	}
}
