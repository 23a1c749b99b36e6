package bill

import (
	"context"

	"github.com/evalsched/evalsched/internal/localservers"
)

// MeasureLocal measures the code at load l under the deployment of the SAM
// template at templatePath, against a DynamoDB Local it starts and stops
// (internal/localservers), and returns the bill: `evalsched cost`.
func MeasureLocal(ctx context.Context, l Load, templatePath string, o Options) (Bill, error) {
	dep, err := ReadTemplate(templatePath)
	if err != nil {
		return Bill{}, err
	}
	srv, err := localservers.StartDynamoDB()
	if err != nil {
		return Bill{}, err
	}
	defer srv.Stop()
	b, _, err := Run(ctx, srv.Endpoint, l, dep, o)
	return b, err
}
