package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// usage: shot URL OUT.png [width height] [js-before-shot]
func main() {
	url, out := os.Args[1], os.Args[2]
	w, hgt := 1440, 1000
	if len(os.Args) > 4 {
		fmt.Sscan(os.Args[3], &w)
		fmt.Sscan(os.Args[4], &hgt)
	}
	js := ""
	if len(os.Args) > 5 {
		js = os.Args[5]
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath("/usr/bin/chromium"), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(w, hgt), chromedp.Flag("hide-scrollbars", true)}
	actx, c1 := chromedp.NewExecAllocator(context.Background(), opts...)
	defer c1()
	ctx, c2 := chromedp.NewContext(actx)
	defer c2()
	ctx, c3 := context.WithTimeout(ctx, 60*time.Second)
	defer c3()
	chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			for _, a := range e.Args {
				fmt.Println("console", e.Type, string(a.Value))
			}
		case *runtime.EventExceptionThrown:
			fmt.Println("exception", e.ExceptionDetails.Text, e.ExceptionDetails.Exception.Description)
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.Sleep(1500*time.Millisecond)); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if js != "" {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](js)); err != nil {
			fmt.Println(err)
		}
		chromedp.Do(ctx, chromedp.Sleep(1500*time.Millisecond))
	}
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	os.WriteFile(out, buf, 0o644)
}
