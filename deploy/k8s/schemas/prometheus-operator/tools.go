// Package schemas only pins the Prometheus Operator API module that controller-gen reads.
package schemas

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)
