package templates

import "github.com/vigilhq/vigil/internal/monitoring"

// Ranges are the service page's chart ranges, by their query value.
var Ranges = []string{"1h", "24h", "7d", "30d"}

// ServiceView is the service page's data.
type ServiceView struct {
	Detail     monitoring.ServiceDetail
	Deliveries map[int64][]monitoring.DeliveryRow // by alert id
	Range      string                             // one of Ranges
	FirstHref  string                             // "" on the first results page
	NextHref   string                             // "" on the last results page
}

// JobsView is the jobs page's data.
type JobsView struct {
	Page      monitoring.JobPage
	State     string
	Service   string
	Limit     int
	FirstHref string
	NextHref  string
}

// InstancesView is the replicas page's data.
type InstancesView struct {
	List monitoring.InstanceList
	Self string // the replica serving the page
}

// AlertsView is the alerts page's data.
type AlertsView struct {
	Page       monitoring.AlertPage
	Deliveries map[int64][]monitoring.DeliveryRow // by alert id
	Service    string
	FirstHref  string
	NextHref   string
}

// ErrorView is an error page's data.
type ErrorView struct {
	Code    int
	Title   string
	Message string
}
