// Package static embeds the dashboard's CSS and JavaScript. Each file is
// served under a path carrying a hash of its content, so browsers may cache it
// for good and still see a new version at once.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
)

//go:embed *.css *.js *.svg
var files embed.FS

// Asset is one embedded file.
type Asset struct {
	Name string
	Hash string // first 16 hex digits of the SHA-256 of Body
	Body []byte
}

var assets = func() map[string]Asset {
	m := map[string]Asset{}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		m[e.Name()] = Asset{Name: e.Name(), Hash: hex.EncodeToString(sum[:8]), Body: body}
	}
	return m
}()

// Lookup returns the embedded file called name.
func Lookup(name string) (Asset, bool) {
	a, ok := assets[name]
	return a, ok
}

// Path is the URL of an embedded file, e.g. /static/3f2a.../app.css. It
// panics for a file that is not embedded: that is a programming error a test
// of any page catches.
func Path(name string) string {
	a, ok := assets[name]
	if !ok {
		panic("static: no embedded file " + name)
	}
	return path.Join("/static", a.Hash, a.Name)
}
