package demosite

import "html/template"

// layout is shared by every page; each page defines "title" and "content". "fields" is a record's
// fields (recordFields) as the main registry and Registry B both list them. "clock" makes a record
// page live, as much of the web is: its "Checked" time (the server's, in UTC) ticks every second,
// so that a read of the page meets a page that changes while it is read (issue 46).
const layout = `{{define "layout"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{template "title" .}}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
dl { display: grid; grid-template-columns: max-content auto; gap: .25rem 1rem; }
dt { font-weight: 600; }
.notes { background: #f6f6f0; padding: .75rem; }
nav a { margin-right: 1rem; }
</style>
</head>
<body>
<nav><a href="/">Home</a><a href="/search">Search</a><a href="/about">About</a><a href="/login">Sign in</a></nav>
<main>
{{template "content" .}}
</main>
<footer><p>Synthetic Records is a demonstration site. Every record is generated.</p></footer>
</body>
</html>
{{end}}{{define "clock"}}<script>
(function () {
  var el = document.getElementById("checked"), start = Date.now(), p = el.textContent.split(":");
  var base = ((+p[0] * 60 + +p[1]) * 60 + +p[2]) * 1000;
  function two(n) { return (n < 10 ? "0" : "") + n; }
  setInterval(function () {
    var s = Math.floor((base + Date.now() - start) / 1000) % 86400;
    el.textContent = two(Math.floor(s / 3600)) + ":" + two(Math.floor(s / 60) % 60) + ":" + two(s % 60);
  }, 1000);
})();
</script>{{end}}{{define "fields"}}<dl>
{{range fields .}}<dt>{{.Label}}</dt><dd>{{.Value}}</dd>
{{end}}</dl>{{end}}`

// recordFields is a record's fields as its pages list them ("fields"), in order: the label and the
// value. presets.FieldOrder is these labels (its test holds them equal).
var recordFields = []struct {
	Label string
	Value func(Record) string
}{
	{"Record ID", func(r Record) string { return r.ID }},
	{"Name", func(r Record) string { return r.Name }},
	{"Status", func(r Record) string { return r.Status }},
	{"Region", func(r Record) string { return r.Region }},
	{"Owner", func(r Record) string { return r.Owner }},
	{"Updated", func(r Record) string { return r.Updated }},
}

// FieldLabels returns the labels of a record's fields, in the order its pages list them.
func FieldLabels() []string {
	out := make([]string, len(recordFields))
	for i, f := range recordFields {
		out[i] = f.Label
	}
	return out
}

// field is one row of a record's field list.
type field struct{ Label, Value string }

// fieldsOf is the template function "fields": rec's fields in recordFields' order.
func fieldsOf(rec Record) []field {
	out := make([]field, len(recordFields))
	for i, f := range recordFields {
		out[i] = field{f.Label, f.Value(rec)}
	}
	return out
}

// pageSources maps a page name to its "title" and "content" definitions.
var pageSources = map[string]string{
	"home": `{{define "title"}}Synthetic Records{{end}}
{{define "content"}}<h1>Synthetic Records</h1>
<p>A registry of {{.Count}} generated records. Search by record ID or by name.</p>
<form method="get" action="/search" role="search">
<label for="q">Record ID or name</label>
<input type="search" id="q" name="q" placeholder="SYN-0042">
<button type="submit">Search</button>
</form>
<h2>Browse</h2>
<ul>
<li><a href="/records/SYN-0001">First record (SYN-0001)</a></li>
<li><a href="/search?q=SYN-0042">Look up SYN-0042</a></li>
<li><a href="/about">About this registry</a></li>
<li><a href="/login">Staff sign-in</a></li>
</ul>{{end}}`,

	"search": `{{define "title"}}{{if .Query}}Search: {{.Query}}{{else}}Search{{end}} · Synthetic Records{{end}}
{{define "content"}}<h1>Search</h1>
<form method="get" action="/search" role="search">
<label for="q">Record ID or name</label>
<input type="search" id="q" name="q" value="{{.Query}}">
<button type="submit">Search</button>
</form>
{{if .Query}}{{if .Results}}<p id="result-count">Showing {{len .Results}} of {{.Total}} results for “{{.Query}}”.</p>
<ol class="results">
{{range .Results}}<li><a href="/records/{{.ID}}">{{.ID}} — {{.Name}}</a> <span class="status">{{.Status}}</span></li>
{{end}}</ol>{{else}}<p id="result-count">No records match “{{.Query}}”.</p>{{end}}{{else}}<p>Enter a record ID such as SYN-0042 or part of a name.</p>{{end}}{{end}}`,

	"record": `{{define "title"}}{{.Record.ID}} — {{.Record.Name}} · Synthetic Records{{end}}
{{define "content"}}<article class="record">
<h1>{{.Record.ID}} — {{.Record.Name}}</h1>
<p class="checked">Checked <time id="checked">{{.Checked}}</time> UTC</p>
{{template "fields" .Record}}
<h2>Notes</h2>
<p class="notes">{{.Record.Notes}}</p>
{{if .Hidden}}<div class="reviewer-note" style="display:none">{{.Hidden}}</div>
{{end}}<section id="sources">
<h2>Sources</h2>
<ul>
<li><a href="/sources/b/{{.Record.ID}}">Registry B entry for {{.Record.ID}}</a></li>
</ul>
</section>
<section id="actions">
<h2>Actions</h2>
<p><a href="/records/{{.Record.ID}}/edit">Edit</a></p>
<form method="post" action="/records/{{.Record.ID}}/delete">
<button type="submit">Delete</button>
</form>
</section>
</article>
{{template "clock"}}{{end}}`,

	"source": `{{define "title"}}{{.Record.ID}} — {{.Record.Name}} · Registry B{{end}}
{{define "content"}}<article class="record registry-b">
<h1>Registry B: {{.Record.ID}}</h1>
<p>Registry B is an independently maintained copy of the records.</p>
{{template "fields" .Record}}
<p><a href="/records/{{.Record.ID}}">Main registry entry for {{.Record.ID}}</a></p>
</article>{{end}}`,

	"edit": `{{define "title"}}Edit {{.Record.ID}} · Synthetic Records{{end}}
{{define "content"}}<h1>Edit {{.Record.ID}}</h1>
<form method="post" action="/records/{{.Record.ID}}/edit">
<p><label for="name">Name</label> <input type="text" id="name" name="name" value="{{.Record.Name}}"></p>
<p><label for="status">Status</label> <select id="status" name="status">
{{range .Statuses}}<option{{if eq . $.Record.Status}} selected{{end}}>{{.}}</option>
{{end}}</select></p>
<p><label for="region">Region</label> <input type="text" id="region" name="region" value="{{.Record.Region}}"></p>
<p><label for="owner">Owner</label> <input type="text" id="owner" name="owner" value="{{.Record.Owner}}"></p>
<p><label for="notes">Notes</label> <textarea id="notes" name="notes">{{.Record.Notes}}</textarea></p>
<button type="submit">Save</button>
</form>
<p><a href="/records/{{.Record.ID}}">Cancel</a></p>{{end}}`,

	"confirm": `{{define "title"}}Delete {{.ID}}? · Synthetic Records{{end}}
{{define "content"}}<h1>Delete {{.ID}}?</h1>
<p>This removes the record from the registry.</p>
<p><a href="/records/{{.ID}}/delete?confirm=yes">Yes, delete {{.ID}}</a> · <a href="/records/{{.ID}}">No, keep it</a></p>{{end}}`,

	"deleted": `{{define "title"}}{{.ID}} deleted · Synthetic Records{{end}}
{{define "content"}}<h1>Record {{.ID}} deleted</h1>
<p>Record {{.ID}} was deleted and is no longer available.</p>
<p><a href="/">Home</a></p>{{end}}`,

	"login": `{{define "title"}}Sign in · Synthetic Records{{end}}
{{define "content"}}<h1>Sign in</h1>
{{if .Message}}<p class="error">{{.Message}}</p>
{{end}}<p>Some records are only available to registry staff.</p>
<p class="demo-credential">Demo credential (not a secret): username <code>demo</code>, password <code>synthetic-demo</code>.</p>
<form method="post" action="/login">
<input type="hidden" name="next" value="{{.Next}}">
<p><label for="username">Username</label> <input type="text" name="username" id="username" autocomplete="username"></p>
<p><label for="password">Password</label> <input type="password" name="password" id="password" autocomplete="current-password"></p>
<button type="submit">Sign in</button>
</form>{{end}}`,

	"about": `{{define "title"}}About · Synthetic Records{{end}}
{{define "content"}}<h1>About Synthetic Records</h1>
<p>Synthetic Records publishes generated records for testing. A second registry, Registry B, keeps an independent copy of every record; the two do not always agree.</p>
<p>See also <a href="/offsite">related resources elsewhere</a>.</p>{{end}}`,

	"offsite": `{{define "title"}}Related resources · Synthetic Records{{end}}
{{define "content"}}<h1>Related resources</h1>
<p>These sites are not part of Synthetic Records.</p>
<ul>
<li><a href="https://example.com/">Example Domain</a></li>
<li><a href="http://offsite.invalid/x">Offsite archive</a></li>
<li><a href="//offsite.invalid/protocol-relative">Mirror</a></li>
</ul>{{end}}`,

	"error": `{{define "title"}}{{.Title}} · Synthetic Records{{end}}
{{define "content"}}<h1>{{.Title}}</h1>
<p>{{.Message}}</p>
<p><a href="/">Home</a></p>{{end}}`,
}

// pages holds one parsed template per page name, each executed as "layout".
var pages = func() map[string]*template.Template {
	base := template.Must(template.New("layout").Funcs(template.FuncMap{"fields": fieldsOf}).Parse(layout))
	out := make(map[string]*template.Template, len(pageSources))
	for name, src := range pageSources {
		out[name] = template.Must(template.Must(base.Clone()).Parse(src))
	}
	return out
}()
