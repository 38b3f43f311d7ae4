package web

import (
	"html/template"
	"net/http"

	"github.com/labstack/echo/v4"
)

// A placeholder overview until the templ dashboard lands: one table of
// services and their latest status.
var overviewTmpl = template.Must(template.New("overview").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Vigil</title>
<meta http-equiv="refresh" content="5"></head>
<body><h1>Vigil</h1><p>Served by {{.Instance}}.</p>
{{if .Services}}<table><thead><tr><th>Service</th><th>Status</th><th>Last slot</th><th>Checked by</th><th>Latency</th></tr></thead><tbody>
{{range .Services}}<tr><td>{{.Name}}</td><td>{{.Status}}</td><td>{{.LastSlotTime}}</td><td>{{.CheckedBy}}</td><td>{{.LatencyMS}} ms</td></tr>
{{end}}</tbody></table>{{else}}<p>No services: add one to vigil.yaml.</p>{{end}}
</body></html>`))

func (s *Server) showOverviewPage(c echo.Context) error {
	services, err := s.store.ServiceStatuses(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(http.StatusOK)
	return overviewTmpl.Execute(c.Response(), map[string]any{"Instance": s.instance, "Services": services})
}
