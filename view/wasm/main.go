//go:build js && wasm

// Command wasm is the viewer of a published bundle (promoral view
// --bundle): the view package compiled to WebAssembly. It opens the
// bundle's runs and answers the page's /api/* requests, which bundle.js
// hands it instead of the network.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall/js"

	"github.com/promoral/promoral/view"
)

func main() {
	bundle := js.Global().Get("promoralBundle")
	base, err := url.Parse(bundle.Get("base").String())
	if err != nil {
		bundle.Call("failed", err.Error())
		return
	}
	get := func(name string) ([]byte, error) {
		u := base.ResolveReference(&url.URL{Path: name})
		res, err := http.Get(u.String())
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", u, res.Status)
		}
		return io.ReadAll(res.Body)
	}
	h, err := view.OpenBundle(get)
	if err != nil {
		bundle.Call("failed", err.Error())
		return
	}
	promise := js.Global().Get("Promise")
	serve := js.FuncOf(func(this js.Value, args []js.Value) any {
		method, target, body := args[0].String(), args[1].String(), args[2].String()
		return promise.New(js.FuncOf(func(this js.Value, p []js.Value) any {
			resolve := p[0]
			// The answer may wait for a case file: off the event loop.
			go func() {
				status, ctype, out := view.Answer(h, method, target, []byte(body))
				resolve.Invoke(map[string]any{"status": status, "type": ctype, "body": string(out)})
			}()
			return nil
		}))
	})
	bundle.Call("ready", serve)
	select {}
}
