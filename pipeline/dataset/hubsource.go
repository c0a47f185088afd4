package dataset

import (
	"context"
	"errors"
)

// HubSource finds the local files of the datasets one run file names by
// hub reference: in the shared dataset cache, verified against the run's
// lock file, or (when allowed) fetched from the hub. pipeline/hub provides
// it and registers it from init (see RegisterHub), so that loading a study
// needs no network code: a program that loads studies naming hub datasets
// imports pipeline/hub (cmd/promoral does, and internal/studytest for the
// tests).
type HubSource interface {
	// Files returns the verified local files of the dataset that the task
	// reads by ref, fetching them when allowed and needed. A dataset the
	// cache lacks, when fetching is not allowed, is an error that Is
	// ErrNotCached; a hub that cannot be reached at all, one that holds
	// an *Unreachable.
	Files(task string, ref *Hub) ([]string, error)
	// Entry is the lock's entry for the task's dataset when the lock was
	// made for ref (nil when there is none).
	Entry(task string, ref *Hub) *LockEntry
	// OfflineHint says how to bring the run file's datasets to a machine
	// without network (after an *Unreachable error).
	OfflineHint() string
}

// HubOptions open a HubSource for one run file.
type HubOptions struct {
	// RunFile is the run file; its lock file lies beside it and the
	// messages' commands name it.
	RunFile string
	// Fetch allows downloads; without it a dataset not in the cache is an
	// ErrNotCached error.
	Fetch bool
	// Update names the tasks whose datasets are resolved again, replacing
	// their lock entries (data pull --update).
	Update map[string]bool
	// Progress follows downloads (may be nil); Ctx stops them (nil: never).
	Progress Progress
	Ctx      context.Context
}

// Progress follows a download: Start is called once per file with its
// size (0 when unknown) and the bytes already there (a resumed part); the
// returned add is called as bytes arrive and end when the file is done.
type Progress interface {
	Start(label string, size, have int64) (add func(n int), end func(err error))
}

// LockEntry is what a loaded study keeps of a dataset's lock entry: the
// commit its reference resolved to and, in the order of the files Files
// returned, each file's size and sha256.
type LockEntry struct {
	Commit string
	Files  []LockedFile
}

// LockedFile is one file of a LockEntry.
type LockedFile struct {
	Size   int64
	SHA256 string
}

// ErrNotCached is what the error of a dataset the cache lacks Is, when
// fetching is not allowed. The error itself says how to fetch it.
var ErrNotCached = errors.New("dataset not in the cache")

// Unreachable says the hub could not be reached at all: errors.As finds it
// in such an error of HubSource.Files.
type Unreachable struct {
	Ref      string // the dataset asked for
	Endpoint string // the address tried
	Cause    string // the reason in a few words: host not found, timed out
}

func (u *Unreachable) Error() string {
	return "cannot reach the dataset hub at " + u.Endpoint + " (" + u.Cause + ") for " + u.Ref
}

// ErrNoHub is OpenHub's error when no HubSource is registered.
var ErrNoHub = errors.New("this program was built without the dataset hub " +
	"(github.com/promoral/promoral/pipeline/hub), so it cannot read datasets named by hub reference")

var openHub func(HubOptions) (HubSource, error)

// RegisterHub makes open the way OpenHub opens a HubSource. pipeline/hub
// calls it from init; it panics when called with nil or twice.
func RegisterHub(open func(HubOptions) (HubSource, error)) {
	if open == nil {
		panic("dataset: RegisterHub with nil")
	}
	if openHub != nil {
		panic("dataset: RegisterHub called twice")
	}
	openHub = open
}

// OpenHub opens the registered HubSource for a run file: it reads the
// run's lock file (an error when that cannot be read). Without a
// registered one it returns ErrNoHub.
func OpenHub(o HubOptions) (HubSource, error) {
	if openHub == nil {
		return nil, ErrNoHub
	}
	return openHub(o)
}
