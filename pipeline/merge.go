package pipeline

import "time"

// MergedShard is one shard a merge joined, as the merged manifest lists it.
type MergedShard struct {
	Dir        string    `json:"dir"`
	Shard      string    `json:"shard"`
	Generation string    `json:"generation"`
	Cases      int       `json:"cases"`
	Errors     int       `json:"errors"`
	Kept       int       `json:"kept"`
	CallsNew   int       `json:"calls_new"`
	CostUSD    float64   `json:"cost_usd"`
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
}
