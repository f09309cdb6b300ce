// Package idptest runs real identity providers in the test process, for tests of single
// sign-on: the OpenID Provider of github.com/zitadel/oidc (its example server, with a login
// form) and crewjam/saml's samlidp. Browser walks their pages like a person with a cookie jar:
// it follows redirects, reads forms and submits them.
package idptest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// Browser is an HTTP client with cookies that follows redirects, except to a URL under StopAt
// (the dashboard a sign-in ends on), whose redirect it hands back unfollowed.
type Browser struct {
	Client *http.Client
}

// NewBrowser returns a browser that stops before following a redirect to a URL starting with
// stopAt.
func NewBrowser(stopAt string) *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{Client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), stopAt) {
			return http.ErrUseLastResponse
		}
		if len(via) > 10 {
			return http.ErrUseLastResponse
		}
		return nil
	}}}
}

// Page is an answer read in full, with the URL it came from and the browser that read it.
type Page struct {
	Browser *Browser
	URL     *url.URL
	Status  int
	Header  http.Header
	Body    string
}

// Location is the redirect a stopped page holds, or nil.
func (p *Page) Location() *url.URL {
	loc := p.Header.Get("Location")
	if loc == "" {
		return nil
	}
	u, err := p.URL.Parse(loc)
	if err != nil {
		return nil
	}
	return u
}

// Do sends req and reads the final answer.
func (b *Browser) Do(t testing.TB, req *http.Request) *Page {
	t.Helper()
	res, err := b.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Page{Browser: b, URL: res.Request.URL, Status: res.StatusCode, Header: res.Header, Body: string(body)}
}

// Get visits a URL.
func (b *Browser) Get(t testing.TB, u string) *Page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.Do(t, req)
}

// Post sends a form.
func (b *Browser) Post(t testing.TB, u string, form url.Values) *Page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.Do(t, req)
}

// Form reads the page's first form: where it posts and the values its inputs hold.
func (p *Page) Form(t testing.TB) (action *url.URL, values url.Values) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(p.Body))
	if err != nil {
		t.Fatal(err)
	}
	values = url.Values{}
	var form *html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch {
			case n.Data == "form" && form == nil:
				form = n
				action, _ = p.URL.Parse(attr(n, "action"))
			case n.Data == "input" && form != nil && attr(n, "name") != "":
				if typ := attr(n, "type"); typ != "submit" && typ != "button" {
					values.Set(attr(n, "name"), attr(n, "value"))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if form == nil {
		t.Fatalf("no form on %s (status %d): %.500s", p.URL, p.Status, p.Body)
	}
	return action, values
}

// Submit fills the page's first form with fields and posts it.
func (b *Browser) Submit(t testing.TB, p *Page, fields map[string]string) *Page {
	t.Helper()
	action, values := p.Form(t)
	for k, v := range fields {
		values.Set(k, v)
	}
	return b.Post(t, action.String(), values)
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}
