// Package journal is a run's append-only record of model calls: every paid
// request is written here before anything else happens to it, so an apply
// killed with kill -9 resumes from the journal and never pays twice for the
// same request.
//
// It owns the file format (one JSON line a Record, hand-encoded and checked
// against encoding/json), the in-memory reply index (4 bytes of a key and a
// packed offset per reply, never a reply), the lock that keeps two applies
// off one journal, and the settlement of calls left in flight.
//
// Conventions:
//
//   - A record is an intent (Sent), an outcome (Resp or Err, carrying the
//     intent's ID) or a settlement (a failure written on open for an intent
//     that never got its outcome). Only outcomes with a usable reply serve
//     as cache entries; failures are kept so every attempt is accounted for,
//     never replayed.
//   - Keys are hex SHA-256 request keys computed by the engine; the journal
//     does not know what a request is, only its key.
//   - A line longer than MaxLine, or one damaged by a torn write, is
//     skipped unread and counted (Stats, Warnings): it reads as a miss.
//   - The journal knows nothing of studies, cases or stages beyond the names
//     a Record carries; it imports only pipeline/llm.
package journal
