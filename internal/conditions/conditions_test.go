package conditions_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/conditions"
)

func TestEvaluate(t *testing.T) {
	t.Parallel()
	health := []byte(`{"status":"UP","uptime":42.5,"checks":[{"name":"db","ok":true},{"name":"cache","ok":false}]}`)
	ok := conditions.Observation{StatusCode: 200, ResponseTime: 120 * time.Millisecond, Body: health,
		CertificateValid: 100 * time.Hour, HasCertificate: true, Connected: true}
	scenarios := []struct {
		name      string
		condition string
		obs       conditions.Observation
		pass      bool
		observed  string // when failing
	}{
		{"status equal", "[STATUS] == 200", ok, true, ""},
		{"status equal fails", "[STATUS] == 201", ok, false, "200"},
		{"status not equal", "[STATUS] != 500", ok, true, ""},
		{"status not equal fails", "[STATUS] != 200", ok, false, "200"},
		{"status less", "[STATUS] < 300", ok, true, ""},
		{"status less fails", "[STATUS] < 200", ok, false, "200"},
		{"status less or equal", "[STATUS] <= 200", ok, true, ""},
		{"status less or equal fails", "[STATUS] <= 199", ok, false, "200"},
		{"status greater", "[STATUS] > 199", ok, true, ""},
		{"status greater fails", "[STATUS] > 200", ok, false, "200"},
		{"status greater or equal", "[STATUS] >= 200", ok, true, ""},
		{"status greater or equal fails", "[STATUS] >= 201", ok, false, "200"},
		{"response time ms", "[RESPONSE_TIME] < 500", ok, true, ""},
		{"response time ms fails", "[RESPONSE_TIME] < 100", ok, false, "120ms"},
		{"response time duration", "[RESPONSE_TIME] <= 120ms", ok, true, ""},
		{"response time duration fails", "[RESPONSE_TIME] > 1s", ok, false, "120ms"},
		{"body pattern", "[BODY] == pat(*\"UP\"*)", ok, true, ""},
		{"body pattern fails", "[BODY] == pat(*DOWN*)", ok, false, ""},
		{"body not pattern", "[BODY] != pat(*DOWN*)", ok, true, ""},
		{"body exact", "[BODY] == OK", conditions.Observation{Body: []byte("OK")}, true, ""},
		{"body exact fails", "[BODY] == OK", conditions.Observation{Body: []byte("NOT OK")}, false, `"NOT OK"`},
		{"json string", "[BODY].status == UP", ok, true, ""},
		{"json string fails", "[BODY].status == DOWN", ok, false, `"UP"`},
		{"json not equal", "[BODY].status != DOWN", ok, true, ""},
		{"json array bool", "[BODY].checks[0].ok == true", ok, true, ""},
		{"json array bool fails", "[BODY].checks[1].ok == true", ok, false, `"false"`},
		{"json number greater", "[BODY].uptime > 40", ok, true, ""},
		{"json number less fails", "[BODY].uptime < 40", ok, false, `"42.5"`},
		{"json number ordered on text fails", "[BODY].status > 1", ok, false, `"UP"`},
		{"json pattern", "[BODY].checks[1].name == pat(ca*)", ok, true, ""},
		{"json missing field", "[BODY].nope == x", ok, false, "no such field"},
		{"json index out of range", "[BODY].checks[7].ok == true", ok, false, "no such field"},
		{"json not json", "[BODY].status == UP", conditions.Observation{Body: []byte("<html>")}, false, "a body that is not JSON"},
		{"certificate", "[CERTIFICATE_EXPIRATION] > 72h", ok, true, ""},
		{"certificate fails", "[CERTIFICATE_EXPIRATION] > 200h", ok, false, "100h0m0s"},
		{"certificate missing", "[CERTIFICATE_EXPIRATION] > 1h", conditions.Observation{}, false, "no certificate"},
		{"connected", "[CONNECTED] == true", ok, true, ""},
		{"connected fails", "[CONNECTED] == true", conditions.Observation{}, false, "false"},
		{"not connected", "[CONNECTED] != true", conditions.Observation{}, true, ""},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			c, err := conditions.Parse(sc.condition)
			require.NoError(t, err)
			f := conditions.Evaluate([]conditions.Condition{c}, sc.obs)
			if sc.pass {
				require.Nil(t, f)
				return
			}
			require.NotNil(t, f)
			require.Equal(t, sc.condition, f.Condition)
			if sc.observed != "" {
				require.Equal(t, sc.observed, f.Observed)
			}
		})
	}
}

func TestEvaluateReturnsFirstFailure(t *testing.T) {
	t.Parallel()
	conds, err := conditions.ParseAll([]string{"[STATUS] == 200", "[BODY].status == UP", "[RESPONSE_TIME] < 10"})
	require.NoError(t, err)
	f := conditions.Evaluate(conds, conditions.Observation{StatusCode: 200, Body: []byte(`{"status":"DOWN"}`)})
	require.Equal(t, &conditions.Failure{Condition: "[BODY].status == UP", Observed: `"DOWN"`}, f)
	require.Nil(t, conditions.Evaluate(nil, conditions.Observation{}))
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	scenarios := []struct{ condition, message string }{
		{"", "empty"},
		{"[STATUS] 200", "no comparison operator"},
		{"[STATUS] ==", "nothing to compare"},
		{"[STAUTS] == 200", "unknown placeholder"},
		{"[status] == 200", "placeholders are upper case: [STATUS]"},
		{"[body].ok == true", "placeholders are upper case: [BODY]"},
		{"[STATUS] == OK", "compares with a number"},
		{"[STATUS] == 42", "not an HTTP status code"},
		{"[RESPONSE_TIME] < fast", "milliseconds"},
		{"[CERTIFICATE_EXPIRATION] > 72", "duration such as 72h"},
		{"[CONNECTED] == yes", "true or false"},
		{"[CONNECTED] < true", "only be compared with =="},
		{"[BODY] < pat(*x*)", "pattern can only"},
		{"[BODY] == pat(*x*", "not closed"},
		{"[BODY] == pat([)", "malformed"},
		{"[BODY]. == x", "needs a field name"},
		{"[BODY].a[x] == 1", "bad index"},
		{"[BODY].a..b == 1", "empty field name"},
		{"[BODY].n > many", "compares with a number"},
	}
	for _, sc := range scenarios {
		_, err := conditions.Parse(sc.condition)
		require.Error(t, err, sc.condition)
		require.Contains(t, err.Error(), sc.message, sc.condition)
	}
	_, err := conditions.ParseAll([]string{"[STATUS] == 200", "[NOPE] == 1"})
	require.ErrorContains(t, err, `condition "[NOPE] == 1"`)
}

func TestConditionString(t *testing.T) {
	t.Parallel()
	c, err := conditions.Parse("[BODY].status == UP")
	require.NoError(t, err)
	require.Equal(t, "[BODY].status == UP", c.String())
	require.True(t, c.NeedsBody())
	c, err = conditions.Parse("[STATUS] == 200")
	require.NoError(t, err)
	require.False(t, c.NeedsBody())
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"[STATUS] == 200", "[BODY].checks[0].ok == true", "[BODY] == pat(*UP*)",
		"[RESPONSE_TIME] < 500", "[CERTIFICATE_EXPIRATION] > 72h", "[CONNECTED] != false", "[BODY].a[1][2] >= 3"} {
		f.Add(s, []byte(`{"a":[[0,1,2],[0,1,5]],"checks":[{"ok":true}]}`))
	}
	f.Fuzz(func(t *testing.T, raw string, body []byte) {
		c, err := conditions.Parse(raw)
		if err != nil {
			if err.Error() == "" || strings.Contains(err.Error(), "\n") {
				t.Fatalf("unhelpful error %q", err)
			}
			return
		}
		if c.String() != raw {
			t.Fatalf("String() = %q, want %q", c.String(), raw)
		}
		// A parsed condition must evaluate without panicking on any body.
		f := conditions.Evaluate([]conditions.Condition{c}, conditions.Observation{Body: body, StatusCode: 200})
		if f != nil && f.Condition != raw {
			t.Fatalf("failure names %q, want %q", f.Condition, raw)
		}
	})
}
