package promoral

// Version is promoral's version: the manifest of every run records it and
// the report's footer names it.
const Version = "0.1.0"
