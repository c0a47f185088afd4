package transport
import ("testing";"time";"net/http";"net/http/httptest";"io";"context";"sync";"fmt";"sort";"net";"sync/atomic"
 "github.com/promoral/promoral/pipeline/llm";"github.com/promoral/promoral/pipeline/providers")
func TestZZLatency(t *testing.T){
	reply := openAIReply("fine")
	var smu sync.Mutex; var srvLat []time.Duration
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0:=time.Now()
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(100 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
		smu.Lock(); srvLat=append(srvLat, time.Since(t0)); smu.Unlock()
	}))
	srv.Start()
	var conns atomic.Int64
	srv.Config.ConnState = func(c net.Conn, st http.ConnState){ if st == http.StateNew { conns.Add(1) } }
	defer srv.Close()
	defer func(){ t.Logf("connections opened: %d", conns.Load()) }()
	p, _ := providers.New(providers.Config{Provider: providers.OpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-bench"})
	tr := New(p, Options{Concurrency: 64})
	var mu sync.Mutex; var lats []time.Duration
	jobs := make(chan int); var wg sync.WaitGroup; t0:=time.Now()
	for range 256 { wg.Go(func(){ for i := range jobs { r := &llm.Request{Model:"gpt-4.1", Messages: []llm.Message{{Role:"user",Content:fmt.Sprint(i)}}}
		tr.Do(context.Background(), r, func(a Attempt){ mu.Lock(); lats=append(lats,a.Latency); mu.Unlock() }) } }) }
	for i := range 1600 { jobs <- i }; close(jobs); wg.Wait()
	el := time.Since(t0)
	sort.Slice(lats, func(i,j int)bool{return lats[i]<lats[j]}); sort.Slice(srvLat, func(i,j int)bool{return srvLat[i]<srvLat[j]})
	var sum time.Duration; for _, l := range lats { sum += l }
	t.Logf("rps %.1f; client lat p50 %v p90 %v p99 %v mean %v; server p50 %v p99 %v", 1600/el.Seconds(), lats[800], lats[1440], lats[1584], sum/1600, srvLat[800], srvLat[1584])
}
