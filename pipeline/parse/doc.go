// Package parse turns a model's free-text reply into typed fields: a label
// from the task's answer space, a 0–1 confidence and free text fields.
//
// Extraction is driven by ordered rules (see Rule) declared in a Spec. For the
// label, the first rule whose text resolves to a label of the Space wins; when
// no rule does, the Result says Parsed=false with an empty Label. A miss is
// therefore always visible as "unparsed" and is never silently turned into a
// wrong answer: whenever the text is ambiguous (two different labels in the
// designated answer span, a negated mention, a value outside the space) the
// rule fails and the next one is tried.
//
// Matching principles, chosen because real replies break naive matching:
//
//   - Aliases are tried longest first and only as whole words, so "not
//     wrong" is never read as "wrong" and "unacceptable" never as
//     "acceptable". A hyphen or apostrophe between letters joins words
//     ("un-acceptable" does not contain "acceptable", "B's" is not B).
//   - Free search (match: search, phrase and contains rules) ignores a mention
//     preceded within the same clause by a negation ("isn't wrong",
//     "did not refuse", "nothing wrong"); such text resolves to no label
//     unless the space lists the negated form as an alias.
//   - In free search a one-letter alias only matches in upper case, so the
//     English article "a" is never read as option A. Exact matches (a whole
//     tag body, a whole line) stay case-insensitive.
//   - Tags and prefixes match ASCII letters case-insensitively; the last
//     occurrence wins unless a rule says occurrence: first. Prefixes count at
//     the start of a line, or mid-line before a colon when no line starts
//     with them (one-line replies).
//
// Compile a Spec once with Compile; the resulting Extractor is immutable and
// safe for concurrent use. Extract does no regexp compilation; tags, prefixes
// and alias search are hand-written byte and word scanners, and phrase
// regexps only run on short windows around trigger words, because Go's
// regexp is slow on case-insensitive patterns and Extract runs on every reply.
package parse
